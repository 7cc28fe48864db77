#!/usr/bin/env python3
"""SFU failover timing against a running Switchboard: SFU death to all its calls reassigned.

Subcommands:
  run     T trials against a running daemon (scripts/bench placement starts one with an
          admin token, an API secret and placement.stale_after_ms 1200); prints a summary
          and, as the last stdout line, one JSON object.
  report  Turn the JSON line of a run into the markdown section (5) of the placement
          benchmark.

A run registers two SFUs in one region (POST /v1/sfus, each with a secret of its own) and
heartbeats them (POST /v1/sfus/{id}/heartbeat, `Authorization: Bearer <its secret>`). C × P
connections open /v1/connect, each with its own HS256 user token minted with the daemon's API
secret. Then each trial:

1. Both SFUs heartbeat at once and every --heartbeat-ms after. P connections per call send
   `call.join` (type `default`, create: true, location {"region": R}) for each of C fresh call
   ids; each answer names the call's `sfu`. The SFU that dies is A in even trials and B in odd
   ones; the calls placed on it are the ones measured.
2. The dying SFU gets its last heartbeat: t0 is the arrival of its answer. From t0 on only the
   surviving SFU heartbeats, at t0 and every --heartbeat-ms.
3. GET /v1/sfus/{dying} every --poll-ms until its `calls` is 0 (the SFU table moved them);
   then GET /v1/calls/default/{id}?events=0 for every measured call not yet seen on the
   surviving SFU, spread over --poll-connections keep-alive connections, round after round,
   until each reports it. The trial's sample is the arrival of the last such answer − t0: an
   upper bound, by at most one round of requests (the table's figure is kept as well).
4. Every participant of a measured call is due one `call.sfu_changed` naming the surviving
   SFU: they are counted, and the receipt of the last one − t0 is the event latency.
5. The admin API ends every call of the trial (POST /v1/calls/default/{id}/end), so both SFUs
   hold no call when the next trial starts.

The SFUs are deleted at the end. Requests go only to loopback addresses, every wait has a
timeout, and the whole run has a time limit.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import secrets
import statistics
import sys
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from calls_load import (CallClient, RequestError, add_connect_options, cid_data, command_parser, connect_all,
                        install_uvloop, percentile, read_secret, wait_until)
from relay_load import raise_fd_limit

CALL_TYPE = "default"


class BenchError(Exception):
    """A failure the run reports in one line (exit status 1)."""


# ---------------------------------------------------------------- admin API

class AdminHTTP:
    """HTTP/1.1 with keep-alive to the admin port on one connection, one request at a time."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    def close(self) -> None:
        """Drop the connection (the next request opens another)."""
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def _exchange(self, request: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(request)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("connection closed")
        status, length, close = int(status_line.split()[1]), 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        body = await self.reader.readexactly(length) if length else b""
        if close:
            self.close()
        return status, body

    async def request(self, method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
        """(status, JSON answer); a connection the daemon closed while idle is reopened once."""
        data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAuthorization: Bearer {token}\r\n"
                + ("Content-Type: application/json\r\n" if body is not None else "")
                + f"Content-Length: {len(data)}\r\n\r\n")
        for attempt in (1, 2):
            reused = self.writer is not None
            try:
                status, payload = await asyncio.wait_for(self._exchange(head.encode() + data), self.timeout)
                break
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, IndexError) as error:
                self.close()
                if attempt == 2 or not reused or isinstance(error, TimeoutError):
                    raise BenchError(f"admin API at http://{self.host}:{self.port}: {method} {path}: "
                                     f"{type(error).__name__}: {error}") from error
        try:
            return status, json.loads(payload) if payload else {}
        except ValueError as error:
            raise BenchError(f"admin API: {method} {path} answered {status} with a body that is not JSON") from error


ADMIN_TOKEN_HINT = "is $SWITCHBOARD_ADMIN_TOKEN (--admin-token-env) the daemon's admin.token?"


def expect(answer: tuple[int, dict], statuses: tuple[int, ...], what: str, hint: str = ADMIN_TOKEN_HINT) -> dict:
    """The answer's JSON when its status is one of `statuses`; else a BenchError that says why."""
    status, body = answer
    if status in statuses:
        return body
    error = body.get("error") or {}
    why = f" ({hint})" if status == 401 else ""
    raise BenchError(f"{what}: HTTP {status} {error.get('code', '')}: {error.get('message', body)}{why}")


@dataclass
class SFU:
    """An SFU this run registered, with the secret it heartbeats with."""

    id: str
    secret: str


async def heartbeat(admin: AdminHTTP, sfu: SFU) -> None:
    """One heartbeat with load 0, authenticated with the SFU's own secret."""
    expect(await admin.request("POST", f"/v1/sfus/{sfu.id}/heartbeat", sfu.secret, {"load": 0}),
           (200,), f"heartbeat of {sfu.id}", "the SFU's secret was refused")


class Heartbeats:
    """Heartbeats a set of SFUs at once and every `interval` s, on a connection of its own."""

    def __init__(self, admin: AdminHTTP, interval: float) -> None:
        self.admin = admin
        self.interval = interval
        self.task: asyncio.Task | None = None
        self.stopping = asyncio.Event()

    async def start(self, sfus: list[SFU]) -> None:
        """Stop beating the current set; beat `sfus` now (awaited) and every interval after."""
        await self.stop()
        for sfu in sfus:
            await heartbeat(self.admin, sfu)
        self.stopping = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(sfus, time.monotonic() + self.interval))

    async def _run(self, sfus: list[SFU], due: float) -> None:
        while True:
            try:
                await asyncio.wait_for(self.stopping.wait(), max(0.0, due - time.monotonic()))
                return
            except TimeoutError:
                pass
            for sfu in sfus:
                await heartbeat(self.admin, sfu)
            due += self.interval

    def check(self) -> None:
        """Raise the heartbeat task's error, if it failed."""
        if self.task is not None and self.task.done() and not self.task.cancelled():
            self.task.result()

    async def stop(self) -> None:
        """Stop beating; no heartbeat is in flight when this returns."""
        if self.task is not None:
            self.stopping.set()
            task, self.task = self.task, None
            await task


# ---------------------------------------------------------------- clients

class FailoverClient(CallClient):
    """A CallClient that keeps every `call.sfu_changed` with its receipt time."""

    def __init__(self, index: int, user: str) -> None:
        super().__init__(index, user)
        self.sfu_changes: list[tuple[int, bytes]] = []

    def on_message(self, payload: memoryview) -> None:
        now = time.monotonic_ns()
        frame = bytes(payload)
        if b'"call.sfu_changed"' in frame:
            self.sfu_changes.append((now, frame))
        else:
            super().on_message(frame)


# ---------------------------------------------------------------- one trial

def ms(ns: int) -> float:
    """Nanoseconds as milliseconds, to 0.1 ms."""
    return round(ns / 1e6, 1)


class Run:
    """The SFUs, the heartbeats and the clients of a run; `trial` measures one failover."""

    def __init__(self, opts, admin: AdminHTTP, keeper: Heartbeats, sfus: list[SFU],
                 clients: list[FailoverClient]) -> None:
        self.opts = opts
        self.admin = admin
        self.keeper = keeper
        self.sfus = sfus
        self.clients = clients
        self.tag = sfus[0].id.rsplit("-", 1)[0]
        self.lanes = [AdminHTTP(admin.host, admin.port, admin.timeout) for _ in range(opts.poll_connections)]

    def close(self) -> None:
        """Close the per-call request connections."""
        for lane in self.lanes:
            lane.close()

    async def per_call(self, calls: list[str], work) -> list:
        """`await work(connection, call)` for every call, spread over the --poll-connections connections."""
        async def lane(connection: AdminHTTP, part: list[str]) -> list:
            return [await work(connection, call) for call in part]

        count = len(self.lanes)
        parts = await asyncio.gather(*(lane(c, calls[k::count]) for k, c in enumerate(self.lanes)))
        return [result for part in parts for result in part]

    async def place(self, trial: int) -> tuple[list[str], dict[str, str], float]:
        """Both SFUs fresh; every call joined by its P participants: (ids, id → SFU id, ms taken)."""
        opts = self.opts
        ids = [f"{self.tag}-t{trial}-c{i}" for i in range(opts.calls)]
        location = {"region": opts.region}
        start = time.monotonic_ns()
        joins = [self.clients[i * opts.participants + p].ask("call.join", cid_data(call, create=True, location=location))
                 for i, call in enumerate(ids) for p in range(opts.participants)]
        try:
            answers = await asyncio.wait_for(asyncio.gather(*joins), opts.join_timeout)
        except TimeoutError as error:
            raise BenchError(f"trial {trial}: {len(joins)} joins not all answered within {opts.join_timeout:g} s") from error
        except RequestError as error:
            raise BenchError(f"trial {trial}: call.join refused: {error}") from error
        placed: dict[str, str] = {}
        for k, answer in enumerate(answers):
            call = ids[k // opts.participants]
            sfu = (answer.get("sfu") or {}).get("id")
            if placed.setdefault(call, sfu) != sfu:
                raise BenchError(f"trial {trial}: the joins of {call} named SFUs {placed[call]} and {sfu}")
        return ids, placed, ms(time.monotonic_ns() - start)

    async def wait_moved(self, trial: int, t0: int, dying: SFU, surviving: SFU, measured: list[str]) -> dict:
        """Poll until every measured call reports the surviving SFU; the figures of the trial."""
        opts = self.opts
        deadline = t0 + int(opts.failover_timeout * 1e9)
        pending, table_ns, rounds = set(measured), None, 0
        sfu_path = f"/v1/sfus/{dying.id}"
        while True:
            self.keeper.check()
            if time.monotonic_ns() > deadline:
                view = expect(await self.admin.request("GET", sfu_path, opts.admin_token), (200,), f"GET {sfu_path}")
                raise BenchError(
                    f"trial {trial}: {len(pending)} of {len(measured)} calls not reported on {surviving.id} "
                    f"{opts.failover_timeout:g} s after {dying.id}'s last heartbeat ({dying.id}: state "
                    f"{view.get('state')}, {view.get('calls')} calls); is the daemon's placement.stale_after_ms "
                    f"{opts.stale_after_ms}?")
            if table_ns is None:
                view = expect(await self.admin.request("GET", sfu_path, opts.admin_token), (200,), f"GET {sfu_path}")
                if view.get("calls") != 0:
                    await asyncio.sleep(opts.poll_ms / 1000)
                    continue
                table_ns = time.monotonic_ns() - t0
            rounds += 1
            round_start, asked = time.monotonic_ns(), sorted(pending)
            for call, now_on in zip(asked, await self.per_call(asked, self.call_sfu)):
                if now_on == surviving.id:
                    pending.discard(call)
                elif now_on != dying.id:
                    raise BenchError(f"trial {trial}: call {call} is on {now_on!r}, neither {dying.id} nor {surviving.id}")
            if not pending:
                done = time.monotonic_ns()
                return {"moved_ms": ms(done - t0), "table_ms": ms(table_ns), "poll_rounds": rounds,
                        "last_round_ms": ms(done - round_start)}
            await asyncio.sleep(opts.poll_ms / 1000)

    async def call_sfu(self, connection: AdminHTTP, call: str) -> str | None:
        """The id of the SFU that GET /v1/calls/{type}/{id} reports for the call."""
        path = f"/v1/calls/{CALL_TYPE}/{call}?events=0"
        detail = expect(await connection.request("GET", path, self.opts.admin_token), (200,), f"GET {path}")
        return (detail.get("sfu") or {}).get("id")

    async def end_call(self, connection: AdminHTTP, call: str) -> None:
        """POST /v1/calls/{type}/{id}/end (an ended call's 409 is fine)."""
        path = f"/v1/calls/{CALL_TYPE}/{call}/end"
        expect(await connection.request("POST", path, self.opts.admin_token), (200, 409), f"POST {path}")

    def sfu_changed(self, t0: int, surviving: SFU, measured: list[str]) -> dict:
        """The `call.sfu_changed` events received since the death: counts and the last due one's latency."""
        due = {f"{CALL_TYPE}:{call}" for call in measured}
        last, good, other = None, 0, 0
        for client in self.clients:
            for received, frame in client.sfu_changes:
                data = json.loads(frame).get("data") or {}
                if data.get("call_cid") in due and (data.get("sfu") or {}).get("id") == surviving.id:
                    good += 1
                    last = received if last is None else max(last, received)
                else:
                    other += 1
        expected = len(measured) * self.opts.participants
        return {"sfu_changed_events": good, "sfu_changed_expected": expected, "sfu_changed_other": other,
                "sfu_changed_ms": ms(last - t0) if last is not None and good >= expected else None}

    async def end_calls(self, trial: int, ids: list[str]) -> None:
        """End every call of the trial; wait until neither SFU holds a call."""
        await self.per_call(ids, self.end_call)

        async def empty() -> bool:
            for sfu in self.sfus:
                view = expect(await self.admin.request("GET", f"/v1/sfus/{sfu.id}", self.opts.admin_token), (200,), "GET SFU")
                if view.get("calls") != 0:
                    return False
            return True

        deadline = time.monotonic() + self.opts.failover_timeout
        while not await empty():
            if time.monotonic() > deadline:
                raise BenchError(f"trial {trial}: the SFUs still hold calls {self.opts.failover_timeout:g} s after they ended")
            await asyncio.sleep(self.opts.poll_ms / 1000)

    async def trial(self, trial: int) -> dict:
        """Place, kill one SFU, time the move and the events, end the calls."""
        opts = self.opts
        dying, surviving = (self.sfus[0], self.sfus[1]) if trial % 2 == 0 else (self.sfus[1], self.sfus[0])
        await self.keeper.start([dying, surviving])
        ids, placed, place_ms = await self.place(trial)
        strays = {sfu for sfu in placed.values() if sfu not in (dying.id, surviving.id)}
        if strays:
            raise BenchError(f"trial {trial}: calls placed on {sorted(map(str, strays))}, not on this run's SFUs "
                             f"(another SFU in region {opts.region}, or none registered?)")
        measured = [call for call in ids if placed[call] == dying.id]
        if not measured:
            raise BenchError(f"trial {trial}: all {len(ids)} calls went to {surviving.id}; none to time on {dying.id}")
        for client in self.clients:
            client.sfu_changes.clear()
        await self.keeper.stop()
        await heartbeat(self.admin, dying)
        t0 = time.monotonic_ns()
        await self.keeper.start([surviving])
        moved = await self.wait_moved(trial, t0, dying, surviving, measured)
        await wait_until(lambda: sum(len(c.sfu_changes) for c in self.clients) >= len(measured) * opts.participants,
                         opts.event_timeout)
        record = {"trial": trial, "dying": dying.id, "surviving": surviving.id, "calls_moved": len(measured),
                  "place_ms": place_ms, **moved, **self.sfu_changed(t0, surviving, measured)}
        await self.end_calls(trial, ids)
        return record


# ---------------------------------------------------------------- run

def spread_ms(samples: list[float]) -> dict:
    """Median, p99 (nearest rank) and max of ms samples."""
    ordered = sorted(samples)
    return {"median": round(statistics.median(ordered), 1) if ordered else None,
            "p99": percentile(ordered, 0.99), "max": ordered[-1] if ordered else None}


async def run(opts) -> dict:
    """Register the SFUs, connect, run the trials, clean up; the record of the run."""
    admin = AdminHTTP(opts.admin_host, opts.admin_port, opts.request_timeout)
    tag = f"fo{secrets.token_hex(3)}"
    sfus = [SFU(f"{tag}-a", secrets.token_hex(16)), SFU(f"{tag}-b", secrets.token_hex(16))]
    registered: list[SFU] = []
    keeper = Heartbeats(AdminHTTP(opts.admin_host, opts.admin_port, opts.request_timeout), opts.heartbeat_ms / 1000)
    clients: list[FailoverClient] = []
    try:
        for sfu in sfus:
            body = {"id": sfu.id, "url": f"wss://{sfu.id}.invalid/ws", "region": opts.region,
                    "capacity": 100_000, "secret": sfu.secret}
            expect(await admin.request("POST", "/v1/sfus", opts.admin_token, body), (201,), f"registering SFU {sfu.id}")
            registered.append(sfu)
        await keeper.start(sfus)
        try:
            clients = await connect_all(opts, opts.calls * opts.participants, FailoverClient)
        except Exception as error:  # picows and asyncio raise several kinds; all end the run here
            raise BenchError(f"connecting {opts.calls * opts.participants} clients to {opts.url}/v1/connect: "
                             f"{type(error).__name__}: {error} (is $SWITCHBOARD_AUTH_API_SECRET the daemon's API secret?)") from error
        trials = []
        current = Run(opts, admin, keeper, sfus, clients)
        try:
            for trial in range(opts.trials):
                trials.append(await current.trial(trial))
                print(f"trial {trial}: {trials[-1]['calls_moved']} calls {trials[-1]['dying']} → {trials[-1]['surviving']} "
                      f"in {trials[-1]['moved_ms']} ms (SFU table {trials[-1]['table_ms']} ms, last call.sfu_changed "
                      f"{trials[-1]['sfu_changed_ms']} ms)", file=sys.stderr, flush=True)
        finally:
            current.close()
    finally:
        for client in clients:
            client.close()
        try:
            await keeper.stop()
        except BenchError:
            pass
        for sfu in registered:  # best effort: the daemon keeps no SFU of ours
            try:
                await admin.request("DELETE", f"/v1/sfus/{sfu.id}", opts.admin_token)
            except BenchError:
                pass
        admin.close()
        keeper.admin.close()
    return summarize(opts, trials)


def summarize(opts, trials: list[dict]) -> dict:
    """The JSON record: per-trial samples and their median, p99 and max."""
    moved = [t["moved_ms"] for t in trials]
    table = [t["table_ms"] for t in trials]
    events = [t["sfu_changed_ms"] for t in trials if t["sfu_changed_ms"] is not None]
    record = {"mode": "failover", "label": opts.label, "trials": len(trials), "calls_per_trial": opts.calls,
              "participants_per_call": opts.participants, "stale_after_ms": opts.stale_after_ms,
              "heartbeat_ms": opts.heartbeat_ms, "target_ms": 2 * opts.heartbeat_ms,
              "samples_ms": moved, "table_samples_ms": table, "sfu_changed_samples_ms": events,
              "calls_moved": [t["calls_moved"] for t in trials],
              "sfu_changed_events": sum(t["sfu_changed_events"] for t in trials),
              "sfu_changed_expected": sum(t["sfu_changed_expected"] for t in trials),
              "sfu_changed_other": sum(t["sfu_changed_other"] for t in trials),
              "place_ms_median": spread_ms([t["place_ms"] for t in trials])["median"],
              "poll_rounds_max": max((t["poll_rounds"] for t in trials), default=None),
              "last_round_ms_median": spread_ms([t["last_round_ms"] for t in trials])["median"]}
    for prefix, samples in (("", moved), ("table_", table), ("sfu_changed_", events)):
        for key, value in spread_ms(samples).items():
            record[f"{prefix}{key}_ms"] = value
    record["met"] = record["max_ms"] is not None and record["max_ms"] <= record["target_ms"]
    record["detail"] = trials
    return record


def print_summary(record: dict) -> None:
    """A few human-readable lines (the JSON line follows)."""
    moved = record["calls_moved"]
    print(f"{record['trials']} trials of {record['calls_per_trial']} calls × {record['participants_per_call']} participants, "
          f"{min(moved)}–{max(moved)} calls on the dying SFU; stale_after {record['stale_after_ms']} ms, "
          f"heartbeat every {record['heartbeat_ms']} ms")
    print(f"all its calls reported on the surviving SFU (GET /v1/calls): median {record['median_ms']} ms, "
          f"p99 {record['p99_ms']} ms, max {record['max_ms']} ms after the last heartbeat "
          f"(target ≤ {record['target_ms']} ms: {'met' if record['met'] else 'MISSED'}); its last round of "
          f"requests took {record['last_round_ms_median']} ms (median)")
    print(f"SFU table at 0 calls (GET /v1/sfus/{{id}}): median {record['table_median_ms']} ms, p99 {record['table_p99_ms']} ms, "
          f"max {record['table_max_ms']} ms")
    print(f"last participant's call.sfu_changed: median {record['sfu_changed_median_ms']} ms, "
          f"p99 {record['sfu_changed_p99_ms']} ms, max {record['sfu_changed_max_ms']} ms; events "
          f"{record['sfu_changed_events']}/{record['sfu_changed_expected']} due, {record['sfu_changed_other']} others")


# ---------------------------------------------------------------- report

def cell(value) -> str:
    """A ms figure with thousands separators, n/a when missing."""
    return "n/a" if value is None else f"{value:,.0f}"


def report(path: str) -> str:
    """Section (5) of the placement report, from the last JSON line in `path`."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        return "no failover run recorded"
    r = records[-1]
    moved = r["calls_moved"]
    target = f"≤ {r['target_ms']:,} ({'met' if r['met'] else 'missed'})"
    lines = [
        (f"**(5) SFU death to all its calls reassigned** (a release daemon, heartbeats over real HTTP, "
         f"stale_after {r['stale_after_ms']:,} ms, heartbeat every {r['heartbeat_ms']:,} ms; {r['trials']} trials of "
         f"{r['calls_per_trial']} calls × {r['participants_per_call']} participants on 2 SFUs of one region, "
         f"{min(moved)}–{max(moved)} calls on the one that dies; ms after its last heartbeat)"),
        "",
        "| failover measure | median ms | p99 ms | max ms | target ms |",
        "|---|---|---|---|---|",
        (f"| every moved call reported on the surviving SFU (GET /v1/calls/{{type}}/{{id}}; an upper bound: the last "
         f"round of requests took {cell(r['last_round_ms_median'])} ms) | {cell(r['median_ms'])} | "
         f"{cell(r['p99_ms'])} | {cell(r['max_ms'])} | {target} |"),
        (f"| SFU table: no call left on the dead SFU (GET /v1/sfus/{{id}}) | {cell(r['table_median_ms'])} | "
         f"{cell(r['table_p99_ms'])} | {cell(r['table_max_ms'])} | |"),
        (f"| last participant's call.sfu_changed ({r['sfu_changed_events']:,} of {r['sfu_changed_expected']:,} due "
         f"received, {r['sfu_changed_other']:,} others) | {cell(r['sfu_changed_median_ms'])} | "
         f"{cell(r['sfu_changed_p99_ms'])} | {cell(r['sfu_changed_max_ms'])} | |"),
        "",
        f"Samples (ms): {', '.join(f'{v:,.0f}' for v in r['samples_ms'])}",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def loopback(url: str, schemes: tuple[str, ...], flag: str, p: argparse.ArgumentParser) -> tuple[str, int]:
    """(host, port) of a URL that must name a loopback address and a port."""
    parts = urlsplit(url)
    try:
        host_ok = parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname or "").is_loopback
        port = parts.port
    except ValueError:
        host_ok, port = False, None
    if parts.scheme not in schemes or not host_ok or not port:
        p.error(f"{flag} must be {schemes[0]}://<loopback address>:<port>, not {url!r}")
    return parts.hostname, port


def parse_args(argv: list[str]):
    """Subcommand and options."""
    p, sub = command_parser(__doc__)
    r = sub.add_parser("run", help="T failover trials against a running daemon")
    r.add_argument("--url", required=True, help="the client listener, e.g. ws://127.0.0.1:9000")
    r.add_argument("--admin-url", required=True, help="the admin API, e.g. http://127.0.0.1:9001")
    r.add_argument("--trials", type=int, default=20, help="failovers, alternating which SFU dies (default 20)")
    r.add_argument("--calls", type=int, default=200, help="calls placed per trial (default 200)")
    r.add_argument("--participants", type=int, default=2, help="connections joining each call (default 2)")
    r.add_argument("--heartbeat-ms", type=int, default=1000, help="heartbeat interval of the SFUs (default 1000)")
    r.add_argument("--stale-after-ms", type=int, default=1200,
                   help="the daemon's placement.stale_after_ms (recorded; default 1200)")
    r.add_argument("--region", default="fra", help="region of both SFUs and the calls' location hint (default fra)")
    r.add_argument("--poll-ms", type=float, default=5, help="pause between polls of the admin API (default 5)")
    r.add_argument("--poll-connections", type=int, default=8,
                   help="admin connections the per-call requests are spread over (default 8)")
    r.add_argument("--failover-timeout", type=float, default=10, help="give up on a trial after this long (default 10 s)")
    r.add_argument("--event-timeout", type=float, default=5, help="wait this long for call.sfu_changed (default 5 s)")
    r.add_argument("--join-timeout", type=float, default=30, help="wait this long for a trial's joins (default 30 s)")
    r.add_argument("--request-timeout", type=float, default=5, help="one admin request (default 5 s)")
    r.add_argument("--admin-token-env", default="SWITCHBOARD_ADMIN_TOKEN",
                   help="environment variable holding the admin token (default SWITCHBOARD_ADMIN_TOKEN)")
    add_connect_options(r)
    q = sub.add_parser("report", help="markdown section (5) from the JSON line of a run")
    q.add_argument("results")
    opts = p.parse_args(argv)
    if opts.command == "run":
        read_secret(opts, p)
        loopback(opts.url, ("ws",), "--url", p)
        opts.admin_host, opts.admin_port = loopback(opts.admin_url, ("http",), "--admin-url", p)
        opts.admin_token = os.environ.get(opts.admin_token_env, "")
        if not opts.admin_token:
            p.error(f"${opts.admin_token_env} must hold the daemon's admin token")
        if min(opts.trials, opts.calls, opts.participants, opts.heartbeat_ms, opts.poll_connections) < 1 or opts.poll_ms <= 0:
            p.error("--trials, --calls, --participants, --heartbeat-ms, --poll-ms and --poll-connections must be positive")
    return opts


def main(argv: list[str]) -> int:
    """One run (summary, then the JSON line) or the report; exit 1 with one line on a failure."""
    opts = parse_args(argv)
    if opts.command == "report":
        print(report(opts.results))
        return 0
    raise_fd_limit(opts.calls * opts.participants + 64)
    install_uvloop()
    # A bound on the whole run, whatever the daemon does.
    per_trial = opts.join_timeout + 3 * opts.failover_timeout + opts.event_timeout + 10
    limit = opts.connect_timeout + opts.trials * per_trial + 30
    try:
        record = asyncio.run(asyncio.wait_for(run(opts), limit))
    except BenchError as error:
        print(f"failover_timing.py: {error}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(f"failover_timing.py: the run exceeded its limit of {limit:.0f} s", file=sys.stderr)
        return 1
    print_summary(record)
    print(json.dumps(record, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
