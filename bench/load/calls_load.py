#!/usr/bin/env python3
"""Load client for Switchboard's call protocol (/v1/connect): joins and fan-out.

Subcommands:
  run     One run against a running daemon: phase 1 (steady joins), then
          phase 2 (fan-out), then print a summary and, as the last stdout
          line, one JSON object.
  report  Turn the JSON lines of several runs into a markdown table of medians.

Connections go to --url, a base URL, or to a comma-separated list of base URLs
(several daemons of one cluster, e.g. a leader and the nodes relaying to it):
connection i, in phase 1 and phase 2 alike, connects to url[i % n]. With one URL
every connection goes to it, as before.

Phase 1, steady joins. U connections, each authenticated with its own user token
(HS256, minted here with the daemon's API secret). An open-loop pacer issues
`call.join` (type `default`, create: true) at R per second in total, round-robin
over the connections; the schedule does not wait for answers. Connections 2p and
2p+1 form pair p and, in round r, both join the call `s<p>r<r>`: the first join
creates it, the second also fans out `call.participant_joined` to the first. On
its next turn a connection first leaves the call it is in (`call.leave`, which
fans out `call.participant_left` while its partner is still there), then joins
the next one. Latency is the client's send to the client's receipt of the
response (CLOCK_MONOTONIC). Joins scheduled in the warm-up are not measured.

Phase 2, fan-out. N connections join the call `default:fanout`. One of them
sends M `call.send_event` requests, F per second, each with a sequence number
and a timestamp in `custom`. Every participant, the sender included, gets a
`call.custom` event. For each message: the time from the send to the receipt by
the LAST of the N participants, and the median over the N.

Receipt times of `call.custom` are taken when the frame arrives and the frames
are parsed after the phase, so the client's own per-frame cost (a few µs per
receiver, serial in this one process) is all it adds to the last receiver.

The load runs in one process on one event loop (uvloop when installed). Its
time and counts are bounded: the pacer stops at the end of the window, and every
wait for answers has a timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import hashlib
import hmac
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from array import array

try:
    import picows
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("calls_load.py needs picows: pip install picows (uvloop is optional but faster)")

from procstat import machine_delta, read_cpu_ticks, read_server, stat_cpu_us
from relay_load import Listener, raise_fd_limit

TEXT = picows.WSMsgType.TEXT
CALL_TYPE = "default"
FANOUT_CALL = "fanout"
STORE_FILES = ("switchboard.sqlite", "switchboard.sqlite-wal", "switchboard.sqlite-shm")


# ---------------------------------------------------------------- tokens

def b64url(data: bytes) -> str:
    """Unpadded base64url, as JWTs use."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def mint_token(secret: bytes, user: str, ttl: int, kid: str) -> str:
    """An HS256 user token for `user`, as `switchboard token --user U` makes."""
    now = int(time.time())
    header = {"alg": "HS256", "typ": "JWT", "kid": kid}
    claims = {"user_id": user, "sub": user, "iat": now, "exp": now + ttl}
    signing_input = ".".join(b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims))
    signature = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


# ---------------------------------------------------------------- client

class RequestError(Exception):
    """The daemon answered a request with an error frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class CallClient:
    """One authenticated /v1/connect socket.

    Requests are numbered per socket; each pending request remembers its send
    time and a callback `done(ok, latency_ns, message, context)` that runs when
    its answer arrives. Events are counted by type; while `capture_custom` is
    set, `call.custom` frames are kept raw with their receipt time.
    """

    def __init__(self, index: int, user: str) -> None:
        self.index = index
        self.user = user
        self.transport = None
        self.listener: Listener | None = None
        self.next_id = 0
        self.pending: dict[int, tuple[int, object, object]] = {}
        self.events: collections.Counter = collections.Counter()
        self.capture_custom = False
        self.customs: list[tuple[int, bytes]] = []
        self.current_call: str | None = None

    async def connect(self, base_url: str, token: str, timeout: float) -> None:
        """Open the socket with the token in the query and await `connection.ok`."""
        url = f"{base_url}/v1/connect?token={token}"
        self.transport, self.listener = await asyncio.wait_for(
            picows.ws_connect(lambda: Listener(self.on_message), url), timeout)
        first = json.loads(await asyncio.wait_for(self.listener.first, timeout))
        if first.get("type") != "connection.ok":
            self.transport.disconnect()
            raise ConnectionError(f"user {self.user}: expected connection.ok, got {first}")

    def request(self, type_: str, data: dict, done, context=None) -> None:
        """Send one request; `done` runs when its answer arrives."""
        self.next_id += 1
        frame = json.dumps({"id": self.next_id, "type": type_, "data": data}, separators=(",", ":"))
        self.pending[self.next_id] = (time.monotonic_ns(), done, context)
        self.transport.send(TEXT, frame.encode())

    def ask(self, type_: str, data: dict) -> asyncio.Future:
        """Send one request; a future of its answer's `data` (RequestError on an error frame)."""
        future = asyncio.get_running_loop().create_future()

        def done(ok: bool, _latency: int, message: dict, _context) -> None:
            if future.done():
                return
            if ok:
                future.set_result(message.get("data"))
            else:
                error = message.get("error") or {}
                future.set_exception(RequestError(error.get("code", "?"), error.get("message", "")))

        self.request(type_, data, done)
        return future

    def on_message(self, payload: memoryview) -> None:
        """Route a frame: answers to their request, events to the counters."""
        now = time.monotonic_ns()
        frame = bytes(payload)
        if self.capture_custom and b'"call.custom"' in frame:
            self.customs.append((now, frame))
            return
        message = json.loads(frame)
        kind = message.get("type")
        if kind in ("response", "error", "pong") and message.get("id") in self.pending:
            sent, done, context = self.pending.pop(message["id"])
            done(kind != "error", now - sent, message, context)
        else:
            self.events[kind] += 1

    def close(self) -> None:
        """Close the socket with a normal close frame."""
        if self.transport is not None and not self.listener.closed:
            self.transport.send_close(picows.WSCloseCode.OK)
            self.transport.disconnect()


async def connect_all(opts, count: int, client_class=CallClient) -> list[CallClient]:
    """`count` authenticated clients (`client_class`, a CallClient), users bench-0 … bench-(count-1).

    Every attempt finishes before a failure is raised (the first one), and then the sockets that
    did open are closed.
    """
    secret = opts.secret.encode()
    sem = asyncio.Semaphore(opts.connect_concurrency)
    clients = [client_class(i, f"bench-{i}") for i in range(count)]

    # `calls_load.py run --url A,B,C`: connection i goes to urls[i % n] (other users of this
    # function set only opts.url).
    urls = getattr(opts, "urls", None) or [opts.url]

    async def one(client: CallClient) -> None:
        async with sem:
            token = mint_token(secret, client.user, 3600, opts.kid)
            await client.connect(urls[client.index % len(urls)], token, opts.connect_timeout)

    outcomes = await asyncio.gather(*(one(c) for c in clients), return_exceptions=True)
    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    if failures:
        for client in clients:
            client.close()
        raise failures[0]
    return clients


async def wait_until(condition, timeout: float, step: float = 0.005) -> bool:
    """Poll `condition` until it holds or `timeout` passes; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(step)
    return True


def cid_data(call_id: str, **extra) -> dict:
    """The `data` of a request on the call `default:<call_id>`."""
    return {"type": CALL_TYPE, "id": call_id, **extra}


# ---------------------------------------------------------------- statistics

def percentile(sorted_values, fraction: float):
    """Nearest-rank percentile of an ascending sequence; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def spread(values_ns) -> dict:
    """p50, p99 and max of nanosecond samples, in µs."""
    ordered = sorted(values_ns)

    def to_us(value):
        return None if value is None else round(value / 1000, 1)

    return {"p50": to_us(percentile(ordered, 0.50)), "p99": to_us(percentile(ordered, 0.99)),
            "max": to_us(ordered[-1] if ordered else None), "n": len(ordered)}


class CpuSampler:
    """Samples the daemon's CPU time (/proc/PID/stat, all threads) every `period` s."""

    def __init__(self, pid: int | None, period: float = 0.5) -> None:
        self.pid = pid
        self.period = period
        self.samples: list[tuple[int, int]] = []
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        """Begin sampling (no-op without a PID)."""
        if self.pid is not None:
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.samples.append((time.monotonic_ns(), stat_cpu_us(f"/proc/{self.pid}/stat")))
            await asyncio.sleep(self.period)

    def stop(self) -> None:
        """Stop sampling."""
        if self.task is not None:
            self.task.cancel()

    def peak_pct(self) -> float | None:
        """The highest CPU % (of one core) over any sampling period."""
        peaks = [100 * (c1 - c0) / ((t1 - t0) / 1000)
                 for (t0, c0), (t1, c1) in zip(self.samples, self.samples[1:]) if t1 > t0]
        return round(max(peaks), 1) if peaks else None


async def idle_cpu(pid: int | None, seconds: float) -> float | None:
    """The daemon's CPU % over `seconds` with no requests (timers and bookkeeping only)."""
    if pid is None or seconds <= 0:
        return None
    t0, c0 = time.monotonic_ns(), stat_cpu_us(f"/proc/{pid}/stat")
    await asyncio.sleep(seconds)  # the measured idle period, not a readiness wait
    t1, c1 = time.monotonic_ns(), stat_cpu_us(f"/proc/{pid}/stat")
    return round(100 * (c1 - c0) / ((t1 - t0) / 1000), 1)


# ---------------------------------------------------------------- phase 1

class SteadyJoins:
    """Phase 1: the open-loop pacer, the per-request bookkeeping and the result."""

    def __init__(self, clients: list[CallClient], opts) -> None:
        self.clients = clients
        self.opts = opts
        self.period_ns = int(1e9 / opts.rate)
        self.join_ns = array("q")
        self.join_at_ns = array("q")
        self.join_sched_ns = array("q")
        self.leave_ns = array("q")
        self.errors: collections.Counter = collections.Counter()
        self.joins_offered = 0
        self.joins_ok = 0
        self.joins_done_in_window = 0
        self.joins_outstanding = 0
        self.leaves_outstanding = 0
        self.max_lag_ns = 0
        self.t_measure = self.t_end = 0
        self.rounds = 0
        #: Per call id: [first join scheduled in the window, joins sent, joins OK, leaves sent,
        #: leaves OK] (--calls-out: what the webhook check expects of each call).
        self.calls: dict[str, list] = {}
        #: Wall-clock time (ns) of each mark, to compare with the daemon's wall-clock timestamps.
        self.wall_ns: dict[str, int] = {}

    def measured(self, t_ns: int) -> bool:
        """Whether a time (a request's schedule, an answer's arrival) is in the measurement window."""
        return self.t_measure <= t_ns < self.t_end

    def issue(self, k: int, scheduled_ns: int) -> None:
        """The k-th scheduled join: leave the current call, join the next one."""
        users = len(self.clients)
        client = self.clients[k % users]
        call_id = f"s{(k % users) // 2}r{k // users}"
        if client.current_call is not None:
            self.leaves_outstanding += 1
            self.calls[client.current_call][3] += 1
            client.request("call.leave", cid_data(client.current_call), self.left, (scheduled_ns, client.current_call))
            client.current_call = None
        self.joins_outstanding += 1
        if self.measured(scheduled_ns):
            self.joins_offered += 1
        entry = self.calls.setdefault(call_id, [self.measured(scheduled_ns), 0, 0, 0, 0])
        entry[1] += 1
        client.request("call.join", cid_data(call_id, create=True), self.joined, (client, call_id, scheduled_ns))

    def joined(self, ok: bool, latency_ns: int, message: dict, context) -> None:
        """A join's answer."""
        client, call_id, scheduled_ns = context
        self.joins_outstanding -= 1
        if ok:
            client.current_call = call_id
            self.calls[call_id][2] += 1
            if self.measured(time.monotonic_ns()):
                self.joins_done_in_window += 1
        if not self.measured(scheduled_ns):
            return
        if ok:
            self.joins_ok += 1
            self.join_ns.append(latency_ns)
            self.join_at_ns.append(scheduled_ns)
            self.join_sched_ns.append(time.monotonic_ns() - scheduled_ns)
        else:
            self.errors["join:" + (message.get("error") or {}).get("code", "?")] += 1

    def left(self, ok: bool, latency_ns: int, message: dict, context: tuple[int, str]) -> None:
        """A leave's answer."""
        scheduled_ns, call_id = context
        self.leaves_outstanding -= 1
        if ok:
            self.calls[call_id][4] += 1
        if not self.measured(scheduled_ns):
            return
        if ok:
            self.leave_ns.append(latency_ns)
        else:
            self.errors["leave:" + (message.get("error") or {}).get("code", "?")] += 1

    async def pace(self, start: int) -> None:
        """Issue the joins due from `start` (monotonic ns) until the end of the window."""
        k = 0
        while True:
            due = start + k * self.period_ns
            if due >= self.t_end:
                return
            now = time.monotonic_ns()
            if due > now:
                await asyncio.sleep((due - now) / 1e9)
                continue
            if due >= self.t_measure:
                self.max_lag_ns = max(self.max_lag_ns, now - due)
            self.issue(k, due)
            k += 1
            self.rounds = math.ceil(k / len(self.clients))

    async def run(self, server_pid: int | None) -> dict:
        """Pace, measure the window (client and server CPU), drain, leave every call."""
        loop = asyncio.get_running_loop()
        marks: dict[str, tuple] = {}

        def mark(name: str) -> None:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            marks[name] = (time.monotonic_ns(), usage.ru_utime + usage.ru_stime,
                           read_server(server_pid), read_cpu_ticks())
            self.wall_ns[name] = time.time_ns()

        start = time.monotonic_ns() + 10_000_000
        self.t_measure = start + int(self.opts.warmup * 1e9)
        self.t_end = self.t_measure + int(self.opts.seconds * 1e9)
        sampler = CpuSampler(server_pid)
        loop.call_later((self.t_measure - time.monotonic_ns()) / 1e9, mark, "open")
        loop.call_later((self.t_measure - time.monotonic_ns()) / 1e9, sampler.start)
        loop.call_later((self.t_end - time.monotonic_ns()) / 1e9, mark, "close")
        step_ns = int(self.opts.series_seconds * 1e9)
        if step_ns > 0:
            for index, at in enumerate(range(self.t_measure, self.t_end + 1, step_ns)):
                loop.call_later((at - time.monotonic_ns()) / 1e9, mark, f"series-{index}")
        await self.pace(start)
        await wait_until(lambda: "close" in marks, 2.0)
        sampler.stop()
        drained = await wait_until(lambda: self.joins_outstanding + self.leaves_outstanding <= 0, self.opts.drain_timeout)
        await self.leave_all()
        out = self.result(marks, sampler, drained)
        out["server_idle_cpu_pct"] = await idle_cpu(server_pid, self.opts.idle_seconds)
        return out

    async def leave_all(self) -> None:
        """Every connection leaves the call it is in (bounded wait)."""
        leaving = [c.current_call for c in self.clients if c.current_call]
        asks = [c.ask("call.leave", cid_data(c.current_call)) for c in self.clients if c.current_call]
        for client in self.clients:
            client.current_call = None
        for call_id in leaving:
            self.calls[call_id][3] += 1
        if asks:
            done, _ = await asyncio.wait(asks, timeout=self.opts.drain_timeout)
            for call_id, future in zip(leaving, asks, strict=True):
                # A failed final leave is not part of the measurement; --calls-out counts it.
                if future in done and future.exception() is None:
                    self.calls[call_id][4] += 1

    def write_calls(self, path: str) -> None:
        """--calls-out: the window in wall-clock ns and every call's requests (JSON)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"window_wall_ns": [self.wall_ns["open"], self.wall_ns["close"]], "call_type": CALL_TYPE,
                       "calls": self.calls}, f, separators=(",", ":"))

    def result(self, marks: dict, sampler: CpuSampler, drained: bool) -> dict:
        """The phase's figures."""
        (w0, c0, s0, m0), (w1, c1, s1, m1) = marks["open"], marks["close"]
        wall_s = (w1 - w0) / 1e9
        join, leave, sched = spread(self.join_ns), spread(self.leave_ns), spread(self.join_sched_ns)
        middle = (self.t_measure + self.t_end) // 2
        halves = [spread(lat for lat, at in zip(self.join_ns, self.join_at_ns, strict=True) if first == (at < middle))
                  for first in (True, False)]
        out = {
            "joins_offered": self.joins_offered, "joins_ok": self.joins_ok,
            "joins_per_s": round(self.joins_done_in_window / wall_s, 1),
            "join_p50_us": join["p50"], "join_p99_us": join["p99"], "join_max_us": join["max"],
            "join_p99_from_schedule_us": sched["p99"],
            "join_p99_first_half_us": halves[0]["p99"], "join_p99_second_half_us": halves[1]["p99"],
            "calls_created": math.ceil(len(self.clients) / 2) * self.rounds,
            "leave_p50_us": leave["p50"], "leave_p99_us": leave["p99"],
            "errors": sum(self.errors.values()), "error_codes": dict(self.errors),
            "unanswered": max(0, self.joins_outstanding) + max(0, self.leaves_outstanding),
            "drained": drained, "pacer_max_lag_us": round(self.max_lag_ns / 1000, 1),
            "client_cpu_pct": round(100 * (c1 - c0) / wall_s, 1),
            "events": dict(sum((c.events for c in self.clients), collections.Counter())),
            "server_cpu_peak_pct": sampler.peak_pct(),
        }
        if s0 is not None and s1 is not None:
            out["server_cpu_pct"] = round(100 * (s1.cpu_us - s0.cpu_us) / (wall_s * 1e6), 1)
            top = max((s1.threads[t] - s0.threads.get(t, 0) for t in s1.threads), default=0)
            out["server_top_thread_pct"] = round(100 * top / (wall_s * 1e6), 1)
            out["server_cpu_us_per_join"] = round((s1.cpu_us - s0.cpu_us) / max(1, self.joins_done_in_window), 1)
            out["server_rss_kib"] = s1.rss_kib
            # Everything the daemon wrote to storage in the window (WAL, checkpoints), per join.
            out["server_written_bytes_per_join"] = round((s1.write_bytes - s0.write_bytes) / max(1, self.joins_done_in_window))
        out["series"] = self.series(marks)
        machine = machine_delta(m0, m1)
        out["machine_busy_pct"] = machine["machine_busy_pct"]
        if "server_cpu_pct" in out:
            out["other_pct"] = round(machine["machine_busy_pct"] - out["server_cpu_pct"] - out["client_cpu_pct"], 1)
        return out


    def series(self, marks: dict) -> list[dict]:
        """Per interval of --series-seconds: join p99 (joins scheduled in it), daemon CPU and bytes
        written per join answered OK in it: what drifts over a long window."""
        points = sorted((int(name.split("-")[1]), value) for name, value in marks.items() if name.startswith("series-"))
        rows = []
        for (_, (w0, _c0, s0, _m0)), (index, (w1, _c1, s1, _m1)) in zip(points, points[1:]):
            latencies = [lat for lat, at in zip(self.join_ns, self.join_at_ns, strict=True) if w0 <= at < w1]
            row = {"end_s": round((w1 - self.t_measure) / 1e9), "joins": len(latencies), "join_p99_us": spread(latencies)["p99"]}
            if s0 is not None and s1 is not None and latencies:
                row["server_cpu_us_per_join"] = round((s1.cpu_us - s0.cpu_us) / len(latencies), 1)
                row["server_written_bytes_per_join"] = round((s1.write_bytes - s0.write_bytes) / len(latencies))
            rows.append(row)
        return rows


# ---------------------------------------------------------------- phase 2

async def fanout(clients: list[CallClient], opts) -> dict:
    """Phase 2: N participants in one call; last-receiver latency of `call.custom`."""
    members = clients[:opts.fanout]
    n = len(members)
    for client in members:
        client.events.clear()
    joins = await asyncio.wait_for(asyncio.gather(
        *(c.ask("call.join", cid_data(FANOUT_CALL, create=True)) for c in members)), opts.connect_timeout)
    assert len(joins) == n
    expected_joined = n * (n - 1) // 2
    settled = await wait_until(
        lambda: sum(c.events["call.participant_joined"] for c in members) >= expected_joined, opts.drain_timeout)
    for client in members:
        client.customs.clear()
        client.capture_custom = True

    sender, sent_ns, answers = members[0], {}, array("q")
    send_errors: collections.Counter = collections.Counter()

    def answered(ok: bool, latency_ns: int, message: dict, _context) -> None:
        if ok:
            answers.append(latency_ns)
        else:
            send_errors[(message.get("error") or {}).get("code", "?")] += 1

    period_ns = int(1e9 / opts.fanout_rate)
    start = time.monotonic_ns() + 10_000_000
    for i in range(opts.fanout_messages):
        delay = start + i * period_ns - time.monotonic_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)
        now = time.monotonic_ns()
        sent_ns[i] = now
        custom = {"n": i, "ts_us": now // 1000}
        sender.request("call.send_event", cid_data(FANOUT_CALL, custom=custom), answered)
    total = n * opts.fanout_messages
    complete = await wait_until(lambda: sum(len(c.customs) for c in members) >= total, opts.drain_timeout)
    for client in members:
        client.capture_custom = False

    result = fanout_result(members, sent_ns)
    result.update({"fanout_participants": n, "fanout_settled": settled, "fanout_complete": complete,
                   "fanout_send_p50_us": spread(answers)["p50"], "fanout_send_errors": dict(send_errors)})
    leaves = [c.ask("call.leave", cid_data(FANOUT_CALL)) for c in members]
    done, _ = await asyncio.wait(leaves, timeout=opts.drain_timeout)
    for future in done:
        future.exception()
    return result


def fanout_result(members: list[CallClient], sent_ns: dict[int, int]) -> dict:
    """Per message: latency to the last receiver and the median receiver, then their spread."""
    receipts: dict[int, list[int]] = collections.defaultdict(list)
    for client in members:
        for received, frame in client.customs:
            custom = json.loads(frame)["data"]["custom"]
            if custom.get("n") in sent_ns:
                receipts[custom["n"]].append(received - sent_ns[custom["n"]])
    last, middle, missing = [], [], 0
    for i in sent_ns:
        got = receipts.get(i, [])
        missing += len(members) - len(got)
        if len(got) == len(members):  # a message someone never got has no "last receiver"
            last.append(max(got))
            middle.append(statistics.median(got))
    last_spread, middle_spread = spread(last), spread(middle)
    return {"fanout_messages": len(sent_ns), "fanout_missing": missing,
            "fanout_last_p50_us": last_spread["p50"], "fanout_last_p99_us": last_spread["p99"],
            "fanout_last_max_us": last_spread["max"], "fanout_median_p50_us": middle_spread["p50"]}


# ---------------------------------------------------------------- run

def store_sizes(directory: str | None) -> dict:
    """Sizes (bytes) of the SQLite files in the daemon's state directory."""
    if not directory:
        return {}
    out = {}
    for name in STORE_FILES:
        try:
            out[name] = os.path.getsize(os.path.join(directory, name))
        except OSError:
            out[name] = 0
    return out


async def run(opts) -> dict:
    """Connect, phase 1, phase 2, store sizes, close."""
    clients = await connect_all(opts, max(opts.users, opts.fanout))
    try:
        steady = SteadyJoins(clients[:opts.users], opts)
        record = await steady.run(opts.server_pid)
        if opts.calls_out:
            steady.write_calls(opts.calls_out)
        if opts.fanout > 0:
            record.update(await fanout(clients, opts))
    finally:
        for client in clients:
            client.close()
    sizes = store_sizes(opts.store_dir)
    record["store_bytes"] = sizes
    record["store_mib"] = round(sum(sizes.values()) / 2**20, 2) if sizes else None
    return record


def print_summary(record: dict) -> None:
    """A few human-readable lines (the JSON line follows)."""
    print(f"joins scheduled in the window: {record['joins_ok']:,}/{record['joins_offered']:,} answered OK; "
          f"{record['joins_per_s']:,.0f}/s answered in the window; p50 {record['join_p50_us']} µs, p99 {record['join_p99_us']} µs, "
          f"max {record['join_max_us']} µs; errors {record['errors']} {record['error_codes'] or ''}")
    print(f"server CPU {record.get('server_cpu_pct')} % (peak {record.get('server_cpu_peak_pct')} %), "
          f"client CPU {record['client_cpu_pct']} %, machine busy {record.get('machine_busy_pct')} %, "
          f"pacer max lag {record['pacer_max_lag_us']} µs")
    if "fanout_participants" in record:
        print(f"fan-out to {record['fanout_participants']}: last receiver p50 {record['fanout_last_p50_us']} µs, "
              f"p99 {record['fanout_last_p99_us']} µs; missing {record['fanout_missing']}")
    print(f"store: {record['store_bytes']}")


# ---------------------------------------------------------------- report

# (label, key, format) of the report's rows.
REPORT_ROWS = [
    ("joins/s achieved (answered OK in the window)", "joins_per_s", "{:,.0f}"),
    ("join p50 ms", "join_p50_us", "ms"),
    ("**join p99 ms** (target < 5)", "join_p99_us", "ms"),
    ("join max ms", "join_max_us", "ms"),
    ("join p99 from schedule ms", "join_p99_from_schedule_us", "ms"),
    ("join p99 ms, 1st / 2nd half of the window", ("join_p99_first_half_us", "join_p99_second_half_us"), "ms"),
    ("leave p50 ms", "leave_p50_us", "ms"),
    ("errors", "errors", "{:,.0f}"),
    ("server CPU % (window mean)", "server_cpu_pct", "{:.0f}"),
    ("server CPU % (peak 0.5 s)", "server_cpu_peak_pct", "{:.0f}"),
    ("server CPU µs per join answered (its leave and events included)", "server_cpu_us_per_join", "{:.0f}"),
    ("calls created in phase 1 (≈; empty calls stay live 5 min)", "calls_created", "{:,.0f}"),
    ("server CPU % idle after phase 1", "server_idle_cpu_pct", "{:.1f}"),
    ("server RSS MiB", "server_rss_kib", "kib"),
    ("**bytes written to storage per join** (WAL + checkpoints; target <= 8 KiB)", "server_written_bytes_per_join", "{:,.0f}"),
    ("store files MiB (db+wal+shm) at end", "store_mib", "{:.2f}"),
    ("client CPU %", "client_cpu_pct", "{:.0f}"),
    ("other tenants % (machine − server − client)", "other_pct", "{:.0f}"),
    ("fan-out: last receiver p50 ms", "fanout_last_p50_us", "ms"),
    ("**fan-out: last receiver p99 ms**", "fanout_last_p99_us", "ms"),
    ("fan-out: median receiver p50 ms", "fanout_median_p50_us", "ms"),
    ("fan-out: deliveries missing", "fanout_missing", "{:,.0f}"),
]

# Rows of a variant with webhooks on (bench/load/webhook_receiver.py analyze); values in ms are ms.
WEBHOOK_ROWS = [
    ("**webhooks received per s** (arrivals in the window)", "wh_received_per_s", "{:,.0f}"),
    ("webhooks created per s (created_at in the window)", "wh_created_per_s", "{:,.0f}"),
    ("**delivery delay p50 ms** (receiver arrival − created_at)", "wh_delay_p50_ms", "{:,.1f}"),
    ("**delivery delay p99 ms**", "wh_delay_p99_ms", "{:,.1f}"),
    ("delivery delay max ms", "wh_delay_max_ms", "{:,.1f}"),
    ("delivery delay p99 ms, 1st / 2nd half of the window", ("wh_delay_p99_first_half_ms", "wh_delay_p99_second_half_ms"), "{:,.1f}"),
    ("**webhooks missing** / expected (calls of the window)", ("wh_missing", "wh_expected"), "{:,.0f}"),
    ("calls checked / with a failed or unanswered request", ("wh_calls_checked", "wh_calls_uncertain"), "{:,.0f}"),
    ("unexpected / duplicates / seq gaps / out of order", ("wh_unexpected", "wh_duplicates", "wh_seq_gaps", "wh_out_of_order"), "{:,.0f}"),
    ("signatures verified / bad", ("wh_verified", "wh_bad_signatures"), "{:,.0f}"),
    ("verify µs per message (standardwebhooks)", "wh_verify_us_mean", "{:.1f}"),
    ("receiver CPU % / µs per request", ("wh_receiver_cpu_pct", "wh_receiver_cpu_us_per_request"), "{:.1f}"),
    ("daemon: webhook queue depth at window start / end / max", ("webhook_queue_at_open", "webhook_queue_at_close", "webhook_queue_max"), "{:,.0f}"),
    ("daemon: attempts in flight, mean / max (0.5 s samples)", ("webhook_in_flight_mean", "webhook_in_flight_max"), "{:,.1f}"),
    ("daemon: attempts not 2xx", "wh_attempts_not_2xx", "{:,.0f}"),
    ("daemon: delivery delay mean ms (its histogram, all messages)", "webhook_daemon_delivery_mean_ms", "{:,.1f}"),
    ("drain after the load s / pending left", ("webhook_drain_s", "webhook_pending_left"), "{:,.2f}"),
]


def cell(value, fmt: str) -> str:
    """One formatted value."""
    if value is None:
        return "n/a"
    if fmt == "ms":
        return f"{value / 1000:,.2f}"
    if fmt == "kib":
        return f"{value / 1024:,.1f}"
    return fmt.format(value)


def machine_facts(binary: str) -> str:
    """nproc, CPU model, kernel, Swift, the daemon binary."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    try:
        swift = subprocess.run(["swift", "--version"], capture_output=True, text=True, timeout=30, check=False).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        swift = "swift: unknown"
    return (f"- nproc: {os.cpu_count()}; CPU: {model}; kernel: {platform.release()}\n"
            f"- {swift}; daemon: {binary}")


def report(path: str, command: str, binary: str) -> str:
    """The markdown table of medians over the runs in `path`, with every run's value; one table
    per label when the runs carry several (variants alternated within one invocation)."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        return "no runs recorded"
    labels = list(dict.fromkeys(r.get("label", "switchboard") for r in records))
    if len(labels) > 1:
        if set(labels) == {"webhooks=off", "webhooks=on"}:
            labels = ["webhooks=off", "webhooks=on"]
        tables = "\n\n".join(f"### {label}\n\n" + report_table([r for r in records if r.get("label", "switchboard") == label], command, binary)
                             for label in labels)
        return tables + webhook_comparison(records)
    return report_table(records, command, binary)


def webhook_comparison(records: list[dict]) -> str:
    """With webhooks off and on: the medians side by side, join p99 on/off per run and of the
    medians (target < 1.10), and each run's delivery delay p99 over the window (drift)."""
    off = [r for r in records if r.get("label") == "webhooks=off"]
    on = [r for r in records if r.get("label") == "webhooks=on"]
    if not off or not on:
        return ""

    def median(rs, key):
        values = [r[key] for r in rs if r.get(key) is not None]
        return statistics.median(values) if values else None

    lines = ["", "", "### webhooks on against off", "",
             f"| measure | off (median of {len(off)}) | on (median of {len(on)}) | on / off |", "|---|---|---|---|"]
    for label, key, fmt in [("join p50 ms", "join_p50_us", "ms"), ("**join p99 ms**", "join_p99_us", "ms"),
                            ("join max ms", "join_max_us", "ms"), ("joins/s achieved", "joins_per_s", "{:,.0f}"),
                            ("server CPU µs per join", "server_cpu_us_per_join", "{:.0f}"),
                            ("bytes written per join", "server_written_bytes_per_join", "{:,.0f}"),
                            ("server CPU % (window mean)", "server_cpu_pct", "{:.0f}"),
                            ("fan-out: last receiver p99 ms", "fanout_last_p99_us", "ms")]:
        a, b = median(off, key), median(on, key)
        ratio = f"{b / a:.2f}" if a and b is not None else "n/a"
        lines.append(f"| {label} | {cell(a, fmt)} | {cell(b, fmt)} | {ratio} |")
    # Runs pair up in file order: run k's off and on ran back to back.
    per_run = [b["join_p99_us"] / a["join_p99_us"] for a, b in zip(off, on)
               if a.get("join_p99_us") and b.get("join_p99_us") is not None]
    a, b = median(off, "join_p99_us"), median(on, "join_p99_us")
    ratio = b / a if a and b is not None else None
    lines += ["", f"**join p99 on/off: {ratio:.2f}** (ratio of the medians; target < 1.10: "
                  f"{'met' if ratio < 1.10 else 'NOT met'}); per run: {', '.join(f'{x:.2f}' for x in per_run)}, "
                  f"median {statistics.median(per_run):.2f}." if ratio is not None and per_run else "join p99 on/off: n/a"]
    for index, r in enumerate(on):
        series = r.get("wh_delay_series") or []
        if series:
            lines.append(f"Run {index + 1} (on), delivery delay p99 ms per {series[0]['end_s']:g} s of the window (by created_at): "
                         + ", ".join(cell(p.get("p99_ms"), "{:,.0f}") for p in series) + ".")
        if r.get("wh_missing"):
            lines.append(f"Run {index + 1} (on): {r['wh_missing']} missing {r.get('wh_missing_by_type')}, e.g. "
                         + "; ".join(r.get("wh_missing_examples") or []))
        if r.get("wh_bad_signatures"):
            lines.append(f"Run {index + 1} (on): bad signatures, e.g. " + "; ".join(r.get("wh_bad_signature_examples") or []))
    return "\n".join(lines)


def report_table(records: list[dict], command: str, binary: str) -> str:
    """The table of one variant's runs."""
    first = records[0]
    header = ["measure", f"median of {len(records)}"] + [f"run {i + 1}" for i in range(len(records))]
    lines = [
        (f"**Calls**: {first['users']} connections, joins offered at {first['rate']:,.0f}/s for "
         f"{first['seconds']:g} s after {first['warmup']:g} s warm-up; fan-out to {first['fanout']} "
         f"participants, {first['fanout_messages']} messages at {first['fanout_rate']:g}/s; "
         f"store.synchronous {first.get('synchronous', '?')}"),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    if "wh_received" in first:
        every = first.get("wh_verify_every") or 0
        checked = "none" if not every else "every one" if every == 1 else f"every {every}th"
        lines[1:1] = ["", (f"Webhooks: one endpoint to bench/load/webhook_receiver.py on 127.0.0.1 (204 at once); "
                           f"signatures checked inline: {checked} ({first.get('wh_verifier')}).")]
    rows = REPORT_ROWS + (WEBHOOK_ROWS if any("wh_received" in r for r in records) else [])
    for label, key, fmt in rows:
        keys = key if isinstance(key, tuple) else (key,)
        cells = []
        for one in keys:
            values = [r.get(one) for r in records]
            present = [v for v in values if v is not None]
            cells.append([cell(statistics.median(present) if present else None, fmt)] + [cell(v, fmt) for v in values])
        lines.append("| " + " | ".join([label] + [" / ".join(column) for column in zip(*cells, strict=True)]) + " |")
    for index, r in enumerate(records):
        if r.get("series"):
            lines += ["", f"Run {index + 1}, per interval (drift):", "",
                      "| window end s | joins | join p99 ms | CPU µs per join | bytes per join |", "|---|---|---|---|---|"]
            lines += [f"| {p['end_s']} | {p['joins']:,} | {cell(p.get('join_p99_us') and p['join_p99_us'] / 1000, '{:.2f}')} | "
                      f"{cell(p.get('server_cpu_us_per_join'), '{:,.0f}')} | {cell(p.get('server_written_bytes_per_join'), '{:,.0f}')} |"
                      for p in r["series"]]
    codes = collections.Counter()
    for r in records:
        codes.update(r.get("error_codes") or {})
    lines += ["", f"Error codes over all runs: {dict(codes) or 'none'}", "",
              f"Command: `{command}`", machine_facts(binary)]
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def command_parser(doc: str):
    """A parser of subcommands whose help is a module docstring: its first paragraph, then the rest."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=doc.split("\n\n", 1)[1])
    return p, p.add_subparsers(dest="command", required=True)


def add_connect_options(r) -> None:
    """The options of clients that authenticate on /v1/connect with tokens they mint."""
    r.add_argument("--secret-env", default="SWITCHBOARD_AUTH_API_SECRET",
                   help="environment variable holding the API secret (default SWITCHBOARD_AUTH_API_SECRET)")
    r.add_argument("--kid", default=os.environ.get("SWITCHBOARD_AUTH_API_KEY", "switchboard"),
                   help="the tokens' kid, the daemon's auth.api_key (default switchboard)")
    r.add_argument("--label", default="switchboard")
    r.add_argument("--connect-timeout", type=float, default=20.0)
    r.add_argument("--connect-concurrency", type=int, default=50)


def read_secret(opts, p) -> None:
    """opts.url without a trailing slash; opts.secret from the environment, or a usage error."""
    opts.url = opts.url.rstrip("/")
    opts.secret = os.environ.get(opts.secret_env, "")
    if len(opts.secret.encode()) < 32:
        p.error(f"${opts.secret_env} must hold the daemon's API secret (at least 32 bytes)")


def install_uvloop() -> None:
    """Use uvloop when it is installed: noticeably cheaper per message."""
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass


def parse_args(argv: list[str]):
    """Subcommand and options."""
    p, sub = command_parser(__doc__)
    r = sub.add_parser("run", help="one run against a running daemon")
    r.add_argument("--url", required=True,
                   help="server base, e.g. ws://127.0.0.1:9000; or a comma-separated list of bases (the "
                        "daemons of one cluster): connection i goes to the (i mod n)-th")
    r.add_argument("--rate", type=float, default=1000, help="joins per second in total (default 1000)")
    r.add_argument("--seconds", type=float, default=10, help="measurement window (default 10)")
    r.add_argument("--series-seconds", type=float, default=0,
                   help="also report join p99, CPU and bytes per join per interval of this length (default 0: none)")
    r.add_argument("--warmup", type=float, default=2, help="paced joins before measuring (default 2)")
    r.add_argument("--users", type=int, default=200, help="connections, one user each (default 200)")
    r.add_argument("--fanout", type=int, default=50, help="participants of the fan-out call (default 50; 0: no fan-out phase)")
    r.add_argument("--fanout-messages", type=int, default=200, help="call.send_event messages (default 200)")
    r.add_argument("--fanout-rate", type=float, default=20, help="fan-out messages per second (default 20)")
    add_connect_options(r)
    r.add_argument("--server-pid", type=int, help="sample this process's CPU time and RSS")
    r.add_argument("--store-dir", help="the daemon's state directory, to report the store's size")
    r.add_argument("--synchronous", default="normal", help="the daemon's store.synchronous (recorded only)")
    r.add_argument("--calls-out", help="write phase 1's window (wall clock) and every call's joins and leaves "
                   "(sent, answered OK) to this file, for webhook_receiver.py analyze")
    r.add_argument("--idle-seconds", type=float, default=2.0,
                   help="after phase 1, sample the daemon's CPU this long with no requests (default 2)")
    r.add_argument("--drain-timeout", type=float, default=5.0, help="wait for answers still due (default 5)")
    q = sub.add_parser("report", help="markdown table of medians from JSON lines")
    q.add_argument("results")
    q.add_argument("--command", dest="command_line", default="scripts/bench calls",
                   help="the command line to print under the table")
    q.add_argument("--binary", default="release build in .build-bench", help="the daemon binary, for the facts")
    opts = p.parse_args(argv)
    if opts.command == "run":
        opts.urls = [url.strip().rstrip("/") for url in opts.url.split(",")]
        if not all(opts.urls):
            p.error("--url: a base URL, or a comma-separated list of them without empty items")
        read_secret(opts, p)
        if opts.users < 1 or opts.fanout < 0 or opts.rate <= 0 or opts.fanout_rate <= 0:
            p.error("--users, --rate and --fanout-rate must be positive, --fanout 0 or more (0: no fan-out phase)")
    return opts


def main(argv: list[str]) -> int:
    """Run one benchmark (summary, then the JSON line) or print the report."""
    opts = parse_args(argv)
    if opts.command == "report":
        print(report(opts.results, opts.command_line, opts.binary))
        return 0
    raise_fd_limit(max(opts.users, opts.fanout) + 64)
    install_uvloop()
    record = {"mode": "calls", "label": opts.label, "rate": opts.rate, "seconds": opts.seconds,
              "warmup": opts.warmup, "users": opts.users, "fanout": opts.fanout,
              "fanout_rate": opts.fanout_rate, "synchronous": opts.synchronous}
    # A bound on the whole run, whatever the daemon does.
    limit = (opts.connect_timeout + opts.warmup + opts.seconds + opts.fanout_messages / opts.fanout_rate
             + 6 * opts.drain_timeout + 30)
    record.update(asyncio.run(asyncio.wait_for(run(opts), limit)))
    record["fanout_messages"] = record.get("fanout_messages", opts.fanout_messages)
    print_summary(record)
    print(json.dumps(record, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
