#!/usr/bin/env python3
"""Cluster failover: SIGKILL the leader of three daemons on one PostgreSQL database behind
HAProxy and time how long its clients take to resume through the balancer (ADR 0012,
docs/deploy-cluster.md). `scripts/bench failover` runs it.

Subcommands:
  run     T trials; progress on stderr; a summary and, as the last stdout line, one JSON object.
  report  The markdown section from the last JSON line of a results file.

It reuses the end-to-end fixtures of Tests/e2e (imported, not copied): `pgserver.PostgresServer`
(durable=False: fsync off, as the cluster tests run it) once for the whole run, `haproxy.HAProxy`,
`janus_config.free_tcp_ports`, and `webhook_harness.base_env` / `user_token` for the daemons'
environment and the users' HS256 tokens. Each trial:

1. A fresh database; three `switchboard serve --host 127.0.0.1 --port P --admin-port A
   --state-dir DIR --config FILE` (ports chosen free, a state directory each, store.kind
   postgres, store.postgres_lease_ms L) and HAProxy in TCP mode in front of them, checking
   `GET /readyz` on each admin port every --check-ms (fall 2, rise 2). The first daemon starts
   and leads; each of the two others starts after a pause drawn from 0 to L/3 (a chosen phase:
   started together, the standbys' tries, every L/3, fall in step with the leader's renewals,
   as often, and a standby tries just after the lease lapses, which daemons started apart
   do not). It waits until one daemon printed its ready line, the two others printed that they stand by, and HAProxy
   reports the leader UP and the others DOWN.
2. N clients (users u0..uN-1, a token each) open /v1/connect through HAProxy; clients 2k and
   2k+1 send `call.join` (type default, id T<trial>-<k>, create: true). Each keeps its
   resume_token, its session id and the seq of the last event it read.
3. After a pause drawn uniformly from 0 to a third of the lease (the renewal period; a chosen
   phase, not a wait for a condition: without it the kill came straight after the joins, and two
   of the first trials found a lease renewed ~2 ms before), t0: the leader is SIGKILLed. The lease it had left is read from the database right after
   (leader.lease_until against the kill's wall-clock time: one host, one clock). Every client,
   once its socket drops, reconnects through HAProxy in a loop (at once, then every
   --backoff-ms) with its resume_token and last_seq in the auth frame, until `connection.ok`
   or --reconnect-timeout after t0. A client's sample is t0 → `connection.ok` with
   `resumed: true`; its session must still be listed in `sessions`. Meanwhile the run notes
   when a standby logs that it leads, when it prints its ready line (the takeover), and when
   HAProxy first reports it UP (its stats socket polled every 20 ms).
4. The clients close, the daemons get SIGTERM (SIGKILL 20 s later), HAProxy stops.

Nothing sleeps to wait for a condition: every wait polls with a deadline (the one sleep is the
clients' back-off between reconnect attempts). Only 127.0.0.1 is used. Every process started
here is ended here, by PID; a trial that exceeds --trial-timeout is abandoned (cleaned up) and
fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_relay import BenchError, add_report_parser, bench_main  # noqa: E402 - one error type and command line for the cluster drivers

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "Tests" / "e2e"
HOST = "127.0.0.1"
NODES = 3
CALL_TYPE = "default"
READY = re.compile(r"ws://[0-9.]+:([0-9]+)/")
LEADS = "leading the PostgreSQL database"
STANDS_BY = "standing by: another node leads"
#: Per-address caps the daemon applies (every client arrives from HAProxy, i.e. 127.0.0.1):
#: lifted, as scripts/bench lifts them for its other loads; kept only if the binary knows them.
LIFTED_CAPS = {
    "LIMITS_CONNECTIONS_PER_IP": 1000000, "LIMITS_CONNECT_RATE_PER_IP": 100000, "LIMITS_CONNECT_BURST_PER_IP": 100000,
    "TRANSPORT_MAX_CONNECTIONS_PER_ADDRESS": 1000000, "TRANSPORT_MAX_PENDING_PER_ADDRESS": 100000,
}




def log(message: str) -> None:
    print(f"[cluster-failover] {message}", file=sys.stderr, flush=True)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def percentile(ordered: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of an ascending list; None when empty."""
    if not ordered:
        return None
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


async def poll(condition, timeout: float, what: str, interval: float = 0.02):
    """Poll ``condition()`` (a plain function) until truthy and return it; BenchError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(interval)  # the pause between polls, not a wait for the condition


# ---------------------------------------------------------------- daemons

class Node:
    """One ``switchboard serve`` process. A thread of its own reads its output, so each line's
    arrival time is taken as it arrives, however busy the clients' event loop is; the lines go
    to ``log_path`` with those times."""

    def __init__(self, name: str, binary: Path, port: int, admin_port: int, state_dir: Path, config: Path,
                 env: dict[str, str], log_path: Path) -> None:
        self.name, self.binary, self.port, self.admin_port = name, binary, port, admin_port
        self.state_dir, self.config, self.env, self.log_path = state_dir, config, env, log_path
        self.process: subprocess.Popen | None = None
        self.pump: threading.Thread | None = None
        self.lead_at: float | None = None
        self.ready_at: float | None = None
        self.standby_at: float | None = None
        self.generation: int | None = None
        self.killed = False

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(self.binary), "serve", "--host", HOST, "--port", str(self.port), "--admin-port", str(self.admin_port),
             "--state-dir", str(self.state_dir), "--config", str(self.config)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
            cwd=self.state_dir, start_new_session=True)
        self.pump = threading.Thread(target=self._pump, name=f"switchboard-{self.name}", daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with open(self.log_path, "w", encoding="utf-8") as out:
            out.write(f"# {self.name}: pid {self.process.pid}, port {self.port}, admin port {self.admin_port}; "
                      f"[monotonic s] before each line\n")
            for raw in self.process.stdout:
                at = time.monotonic()
                line = raw.decode(errors="replace")
                out.write(f"[{at:.6f}] {line}")
                if self.lead_at is None and LEADS in line:
                    found = re.search(r"generation=(\d+)", line)
                    self.generation = int(found.group(1)) if found else None
                    self.lead_at = at
                if self.standby_at is None and STANDS_BY in line:
                    self.standby_at = at
                if self.ready_at is None and READY.search(line):
                    self.ready_at = at
            self.process.stdout.close()
            out.write(f"# exited with {self.process.wait()}\n")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL by PID (reaped by ``stop``)."""
        if self.running():
            os.kill(self.pid, signal.SIGKILL)
            self.killed = True

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM by PID, SIGKILL after ``timeout``; reaps it and lets its output be read to the end."""
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) ignored SIGTERM for {timeout:.0f} s: SIGKILL")
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait(timeout)
        if self.pump is not None:
            self.pump.join(timeout)


# ---------------------------------------------------------------- clients

class Client:
    """One /v1/connect connection of one user, and what became of it after the kill."""

    def __init__(self, index: int, user: str, token: str) -> None:
        self.index, self.user, self.token = index, user, token
        self.ws = None
        self.resume_token: str | None = None
        self.connection_id: str | None = None
        self.session_id: str | None = None
        self.last_seq = 0
        self.requests = 0
        self.watcher: asyncio.Task | None = None
        self.dropped_at: float | None = None
        self.resumed_at: float | None = None
        self.attempts = 0
        self.outcome: str | None = None
        self.last_error: str | None = None
        self.replay_complete: bool | None = None
        self.trace: list[tuple[float, float, str]] = []  # reconnect attempts: start, end (monotonic s), result

    def note(self, frame: dict) -> None:
        seq = frame.get("seq")
        if isinstance(seq, int) and frame.get("type") not in ("response", "error", "pong"):
            self.last_seq = max(self.last_seq, seq)


async def open_socket(port: int, client: Client, timeout: float, resume: bool) -> tuple[object, dict]:
    """A socket through the balancer, authenticated (resuming when ``resume``); (socket, connection.ok data)."""
    from websockets.asyncio.client import connect

    deadline = time.monotonic() + timeout
    ws = await connect(f"ws://{HOST}:{port}/v1/connect", open_timeout=timeout, proxy=None, max_size=None,
                       ping_interval=None, close_timeout=1)
    try:
        auth: dict = {"type": "auth", "id": "auth", "token": client.token}
        if resume:
            auth.update(resume_token=client.resume_token, last_seq=client.last_seq)
        await ws.send(json.dumps(auth))
        frame = json.loads(await asyncio.wait_for(ws.recv(), max(0.05, deadline - time.monotonic())))
        if frame.get("type") != "connection.ok":
            raise BenchError(f"{client.user}: auth answered {frame}")
        return ws, frame["data"]
    except BaseException:
        ws.transport.abort()
        raise


async def request(client: Client, kind: str, data: dict, timeout: float) -> dict:
    """One request on the client's socket; its answer frame (events read meanwhile update last_seq)."""
    client.requests += 1
    rid = f"{client.user}-{client.requests}"
    await client.ws.send(json.dumps({"id": rid, "type": kind, "data": data}))
    deadline = time.monotonic() + timeout
    while True:
        frame = json.loads(await asyncio.wait_for(client.ws.recv(), max(0.05, deadline - time.monotonic())))
        client.note(frame)
        if frame.get("id") == rid:
            return frame


async def watch(client: Client) -> None:
    """Read the socket until it drops (the kill), noting seqs; then note the time."""
    try:
        async for text in client.ws:
            client.note(json.loads(text))
    except Exception:  # noqa: BLE001 - any end of the socket is the drop
        pass
    client.dropped_at = time.monotonic()


async def recover(client: Client, port: int, deadline: float, backoff: float) -> None:
    """After the socket drops: reconnect through the balancer and resume until ``deadline``."""
    left = deadline - time.monotonic()
    done, _ = await asyncio.wait({client.watcher}, timeout=max(0.0, left))
    if not done:
        client.outcome = "never_dropped"
        return
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            client.outcome = "timed_out"
            return
        client.attempts += 1
        began = time.monotonic()
        try:
            ws, hello = await open_socket(port, client, min(5.0, left), resume=True)
        except Exception as error:  # noqa: BLE001 - refused, closed by the balancer, timed out: try again
            client.last_error = f"{type(error).__name__}: {error}"[:200]
            client.trace.append((began, time.monotonic(), type(error).__name__))
            await asyncio.sleep(backoff)  # back-off between reconnect attempts, not a wait for a condition
            continue
        at = time.monotonic()
        client.trace.append((began, at, "connection.ok"))
        client.ws = ws
        client.replay_complete = hello.get("replay_complete")
        if not hello.get("resumed"):
            client.outcome = "new_connection"  # the resume token matched nothing
        elif client.session_id not in hello.get("sessions", []):
            client.outcome = "resumed_without_session"
        else:
            client.outcome = "resumed"
            client.resumed_at = at
        return


async def close_clients(clients: list[Client]) -> None:
    async def close(client: Client) -> None:
        if client.watcher is not None and not client.watcher.done():
            client.watcher.cancel()
        if client.ws is None:
            return
        try:
            await asyncio.wait_for(client.ws.close(), 2)
        except Exception:  # noqa: BLE001
            client.ws.transport.abort()

    await asyncio.gather(*(close(c) for c in clients), return_exceptions=True)


# ---------------------------------------------------------------- one trial

class Trial:
    def __init__(self, opts, fx, pg, number: int, binary: Path, log_dir: Path) -> None:
        self.opts, self.fx, self.pg, self.number, self.binary, self.log_dir = opts, fx, pg, number, binary, log_dir
        self.nodes: dict[str, Node] = {}
        self.lb = None
        self.clients: list[Client] = []
        self.phase: float | None = None
        self.standby_phases: list[float | None] = []
        self.dir = Path(tempfile.mkdtemp(prefix="sb-cluster-failover-"))

    async def run(self) -> dict:
        try:
            return await self._run()
        finally:
            await self.cleanup()

    async def cleanup(self) -> None:
        await close_clients(self.clients)
        await asyncio.gather(*(asyncio.to_thread(node.stop) for node in self.nodes.values()), return_exceptions=True)
        if self.lb is not None:
            await asyncio.to_thread(self.lb.close)
        shutil.rmtree(self.dir, ignore_errors=True)

    def leaders(self) -> list[str]:
        return [name for name, node in self.nodes.items() if node.ready_at is not None and node.running()]

    def check_alive(self) -> None:
        for name, node in self.nodes.items():
            if not node.killed and node.returncode is not None:
                raise BenchError(f"daemon {name} exited with {node.returncode}; log: {node.log_path}")

    async def start_daemons(self, standby: str) -> None:
        """A fresh database, three daemons on it with ``store.postgres_standby`` ``standby`` (the
        first started alone and waited for until it leads), and HAProxy in front of them."""
        opts, fx = self.opts, self.fx
        database = f"cluster_t{self.number}"
        url = await asyncio.to_thread(self.pg.create_database, database)
        self.database = database
        config = fx.write_config(self.dir / "switchboard.json", {})
        ports = fx.free_tcp_ports(2 * NODES)
        env = fx.base_env(STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=opts.lease_ms,
                          STORE_POSTGRES_STANDBY=standby, **fx.lifted_caps)
        for i in range(NODES):
            name = f"n{i}"
            state_dir = self.dir / name
            state_dir.mkdir()
            self.nodes[name] = Node(name, self.binary, ports[2 * i], ports[2 * i + 1], state_dir, config, env,
                                    self.log_dir / f"trial{self.number}-{name}.log")
        # The first daemon leads; each other one starts after a pause drawn from 0 to a third of the
        # lease. Standbys try every third of a lease and the leader renews as often: started at
        # once, their tries fell in step with its renewals, so a standby nearly always tried just
        # after the lease lapsed (it took the lead 6-101 ms after the lapse in 22 of 23 trials).
        # Started apart, as daemons on separate machines are, its next try is anywhere in the third.
        names = list(self.nodes)
        first = self.nodes[names[0]]
        first.start()
        await poll(lambda: (self.check_alive(), first.ready_at)[1], opts.start_timeout, f"{names[0]} leading")
        self.standby_phases = []
        for name in names[1:]:
            pause = random.uniform(0, opts.lease_ms / 3000)
            self.standby_phases.append(ms(pause))
            await asyncio.sleep(pause)  # a random phase against the leader's renewals, not a wait for a condition
            self.nodes[name].start()
        self.lb = fx.HAProxy({n: f"{HOST}:{node.port}" for n, node in self.nodes.items()},
                             ready_ports={n: node.admin_port for n, node in self.nodes.items()},
                             check_inter_ms=opts.check_ms)
        await asyncio.to_thread(self.lb.start)

    async def wait_balanced(self, wanted: dict[str, str]) -> None:
        """Polls HAProxy's stats until it reports ``wanted`` (server → UP or DOWN)."""
        deadline = time.monotonic() + self.opts.start_timeout
        while (states := await asyncio.to_thread(self.lb.backend_states)) != wanted:
            self.check_alive()
            if time.monotonic() >= deadline:
                raise BenchError(f"HAProxy did not reach {wanted} within {self.opts.start_timeout:.0f} s: {states}")
            await asyncio.sleep(0.02)  # the pause between polls

    async def start_cluster(self) -> str:
        """Idle standbys (they bind no port until they lead; the default is relay, which
        cluster_node_loss.py measures): one daemon leads and HAProxy sends clients to it alone."""
        await self.start_daemons("idle")

        def one_leads():
            self.check_alive()
            serving = self.leaders()
            if len(serving) > 1:
                raise BenchError(f"{serving} all serve")
            standing = [n for n, node in self.nodes.items() if node.standby_at is not None]
            return serving[0] if serving and len(standing) == NODES - 1 else None

        leader = await poll(one_leads, self.opts.start_timeout, "one daemon leading and two standing by")
        await self.wait_balanced({n: "UP" if n == leader else "DOWN" for n in self.nodes})
        return leader

    def first_port(self, client: Client) -> int:
        """Where a client first connects: the balancer (cluster_node_loss.py picks a node)."""
        return self.lb.port

    async def connect_clients(self) -> None:
        opts, fx = self.opts, self.fx
        self.clients = [Client(i, f"u{i}", fx.user_token(f"u{i}")) for i in range(opts.clients)]
        gate = asyncio.Semaphore(50)

        async def connect(client: Client) -> None:
            async with gate:
                client.ws, hello = await open_socket(self.first_port(client), client, opts.request_timeout, resume=False)
            client.resume_token, client.connection_id = hello["resume_token"], hello["connection_id"]

        async def join(client: Client) -> None:
            call_id = f"T{self.number}-{client.index // 2}"
            answer = await request(client, "call.join", {"type": CALL_TYPE, "id": call_id, "create": True},
                                   opts.request_timeout)
            if answer.get("type") != "response":
                raise BenchError(f"{client.user}: call.join {call_id} -> {answer}")
            client.session_id = answer["data"]["session_id"]

        await asyncio.wait_for(asyncio.gather(*(connect(c) for c in self.clients)), opts.start_timeout)
        await asyncio.wait_for(asyncio.gather(*(join(c) for c in self.clients)), opts.start_timeout)

    async def lease_left(self, kill_wall: float) -> tuple[float | None, int | None]:
        """The lease the killed leader had left at the kill (ms), and the generation it held."""
        try:
            row = await asyncio.to_thread(
                self.pg.psql, "SELECT generation, (extract(epoch FROM lease_until) * 1000)::bigint FROM leader",
                database=self.database)
            generation, until_ms = row.split("|")
            return round(int(until_ms) - kill_wall * 1000, 1), int(generation)
        except Exception as error:  # noqa: BLE001 - a figure missing, not a failed trial
            log(f"trial {self.number}: could not read the lease: {error}")
            return None, None

    async def watch_balancer(self, old: str, until: float, result: dict) -> None:
        """Poll HAProxy's stats until another server is UP: when the old one went DOWN, the new one UP."""
        def sample() -> tuple[dict, float]:  # the time taken in the thread, as the answer arrives
            try:
                return self.lb.backend_states(), time.monotonic()
            except OSError:
                return {}, time.monotonic()

        while time.monotonic() < until:
            states, at = await asyncio.to_thread(sample)
            if "old_down_at" not in result and states.get(old, "").startswith("DOWN"):
                result["old_down_at"] = at
            up = [n for n, s in states.items() if n != old and s == "UP"]
            if up:
                result["new_up_at"], result["new_up"] = at, up[0]
                return
            await asyncio.sleep(0.02)  # the pause between polls

    async def _run(self) -> dict:
        opts = self.opts
        began = time.monotonic()
        leader = await self.start_cluster()
        old = self.nodes[leader]
        log(f"trial {self.number}: {leader} leads (pid {old.pid}); HAProxy on {HOST}:{self.lb.port} sees it alone UP "
            f"after {time.monotonic() - began:.1f} s")
        await self.connect_clients()
        for client in self.clients:
            client.watcher = asyncio.create_task(watch(client))
        phase = self.phase = random.uniform(0, opts.lease_ms / 3000)
        log(f"trial {self.number}: {len(self.clients)} clients connected through HAProxy and joined "
            f"{(len(self.clients) + 1) // 2} calls; SIGKILL {leader} in {phase * 1000:.0f} ms (random phase of its renewals)")
        await asyncio.sleep(phase)  # a random point of the renewal cycle to kill at, not a wait for a condition
        self.check_alive()

        t0 = time.monotonic()
        kill_wall = time.time()
        old.kill()
        deadline = t0 + opts.reconnect_timeout
        balancer: dict = {}
        balancer_task = asyncio.create_task(self.watch_balancer(leader, deadline, balancer))
        recovering = [asyncio.create_task(recover(c, self.lb.port, deadline, opts.backoff_ms / 1000)) for c in self.clients]
        left_ms, old_generation = await self.lease_left(kill_wall)
        await asyncio.gather(*recovering)
        await asyncio.wait({balancer_task}, timeout=max(0.0, deadline - time.monotonic()) + 1)
        balancer_task.cancel()
        self.check_alive()
        successors = [(n, node) for n, node in self.nodes.items() if n != leader and node.lead_at is not None]
        name, new = successors[0] if successors else (None, None)
        return self.figures(t0, leader, name, new, balancer, left_ms, old_generation)

    def figures(self, t0: float, leader: str, name: str | None, new: Node | None, balancer: dict,
                left_ms: float | None, old_generation: int | None) -> dict:
        opts = self.opts
        samples = sorted((c.resumed_at - t0) * 1000 for c in self.clients if c.outcome == "resumed")
        drops = sorted((c.dropped_at - t0) * 1000 for c in self.clients if c.dropped_at is not None)
        attempts = sorted(c.attempts for c in self.clients)
        firsts = sorted((c.trace[0][1] - c.trace[0][0]) * 1000 for c in self.clients if c.trace)
        lead = ms(new.lead_at - t0) if new and new.lead_at else None
        ready = ms(new.ready_at - t0) if new and new.ready_at else None
        up = ms(balancer["new_up_at"] - t0) if "new_up_at" in balancer else None
        p50 = round(statistics.median(samples), 1) if samples else None
        failed = [c for c in self.clients if c.outcome != "resumed"]
        return {
            "trial": self.number, "clients": len(self.clients), "lease_ms": opts.lease_ms, "killed": leader,
            "kill_phase_ms": ms(self.phase), "standby_start_pauses_ms": self.standby_phases,
            "successor": name, "successor_generation": new.generation if new else None,
            "killed_generation": old_generation, "balancer_up": balancer.get("new_up"),
            "resumed": len(samples), "outcomes": dict(Counter(c.outcome for c in self.clients)),
            "failed_errors": [f"{n} × {o}: {e}" for (o, e), n in Counter((c.outcome, c.last_error) for c in failed).most_common(5)],
            "resume_min_ms": round(samples[0], 1) if samples else None, "resume_p50_ms": p50,
            "resume_p90_ms": round(percentile(samples, 0.9), 1) if samples else None,
            "resume_max_ms": round(samples[-1], 1) if samples else None,
            "resume_over_lease": round(p50 / opts.lease_ms, 3) if p50 is not None else None,
            "drop_p50_ms": round(statistics.median(drops), 1) if drops else None,
            "drop_max_ms": round(drops[-1], 1) if drops else None,
            "attempts_p50": statistics.median(attempts) if attempts else None, "attempts_max": attempts[-1] if attempts else None,
            "first_attempt_p50_ms": round(statistics.median(firsts), 1) if firsts else None,
            "replay_incomplete": sum(1 for c in self.clients if c.replay_complete is False),
            "lease_left_ms": left_ms,
            "lapse_to_lead_ms": round(lead - left_ms, 1) if lead is not None and left_ms is not None else None,
            "kill_to_lead_ms": lead, "lead_to_ready_ms": round(ready - lead, 1) if ready and lead else None,
            "takeover_ms": ready,
            "old_down_ms": ms(balancer["old_down_at"] - t0) if "old_down_at" in balancer else None,
            "balancer_up_ms": up, "ready_to_up_ms": round(up - ready, 1) if up is not None and ready is not None else None,
            "up_to_first_resume_ms": round(samples[0] - up, 1) if samples and up is not None else None,
            "up_to_p50_resume_ms": round(p50 - up, 1) if p50 is not None and up is not None else None,
            # The first client's reconnect attempts: [start, end] ms after the kill, and how each ended.
            "client0_attempts": [[ms(a - t0), ms(b - t0), what] for a, b, what in self.clients[0].trace[:50]],
        }


# ---------------------------------------------------------------- the run

class Fixtures:
    """The Tests/e2e fixtures this run uses, imported with TEST_SWITCHBOARD_BIN set to the daemon."""

    def __init__(self, binary: Path) -> None:
        os.environ["TEST_SWITCHBOARD_BIN"] = str(binary)
        sys.path.insert(0, str(E2E))
        import conftest
        import haproxy
        import pgserver
        import webhook_harness
        from janus_config import free_tcp_ports

        reason = pgserver.missing_requirements() or haproxy.missing_requirements()
        if reason:
            raise BenchError(reason)
        self.PostgresServer = pgserver.PostgresServer
        self.HAProxy = haproxy.HAProxy
        self.free_tcp_ports = free_tcp_ports
        self.base_env = webhook_harness.base_env
        self.user_token = webhook_harness.user_token
        self.write_config = webhook_harness.write_config
        self.lifted_caps = {k: v for k, v in LIFTED_CAPS.items() if conftest.binary_accepts(**{f"SWITCHBOARD_{k}": str(v)})}
        for key in sorted(set(LIFTED_CAPS) - set(self.lifted_caps)):
            log(f"{binary} does not know SWITCHBOARD_{key}; left out")


async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise BenchError(f"not executable: {binary}")
    log_dir = Path(opts.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    fx = Fixtures(binary)
    trials = []
    log(f"{opts.trials} trials: {opts.clients} clients, 3 daemons ({binary}), store.postgres_lease_ms {opts.lease_ms}, "
        f"HAProxy checks every {opts.check_ms} ms; daemon logs in {log_dir}")
    pg = await asyncio.to_thread(fx.PostgresServer, durable=False)
    await asyncio.to_thread(pg.start)
    try:
        for number in range(1, opts.trials + 1):
            trial = Trial(opts, fx, pg, number, binary, log_dir)
            try:
                result = await asyncio.wait_for(trial.run(), opts.trial_timeout)
            except asyncio.TimeoutError:
                raise BenchError(f"trial {number} took over {opts.trial_timeout:.0f} s; logs: {log_dir}") from None
            trials.append(result)
            log(f"trial {number}: {result['resumed']}/{result['clients']} resumed; kill → resumed median "
                f"{result['resume_p50_ms']} ms, max {result['resume_max_ms']} ms; takeover (kill → ready line) "
                f"{result['takeover_ms']} ms; lease left at the kill {result['lease_left_ms']} ms; HAProxy UP at "
                f"{result['balancer_up_ms']} ms; outcomes {result['outcomes']}")
    finally:
        await asyncio.to_thread(pg.close)
    return summarize(opts, binary, trials)


def summarize(opts, binary: Path, trials: list[dict]) -> dict:
    keys = ("resume_p50_ms", "resume_max_ms", "resume_min_ms", "resume_p90_ms", "resumed", "takeover_ms", "resume_over_lease",
            "lease_left_ms", "lapse_to_lead_ms", "kill_to_lead_ms", "lead_to_ready_ms", "ready_to_up_ms", "balancer_up_ms",
            "up_to_first_resume_ms", "up_to_p50_resume_ms", "old_down_ms", "drop_p50_ms", "attempts_p50",
            "first_attempt_p50_ms")
    record = {"mode": "cluster-failover", "trials": len(trials), "clients": opts.clients, "lease_ms": opts.lease_ms,
              "check_ms": opts.check_ms, "backoff_ms": opts.backoff_ms, "binary": str(binary),
              "medians": {key: median([t[key] for t in trials]) for key in keys},
              "resumed_min": min((t["resumed"] for t in trials), default=0),
              "detail": trials}
    p50 = record["medians"]["resume_p50_ms"]
    record["medians"]["ratio_p50_to_lease"] = round(p50 / opts.lease_ms, 2) if p50 is not None else None
    return record


def print_summary(record: dict) -> None:
    m = record["medians"]
    print(f"{record['trials']} trials, {record['clients']} clients, lease {record['lease_ms']} ms: kill → resumed median "
          f"{m['resume_p50_ms']} ms (max {m['resume_max_ms']} ms), {m['resumed']:g} resumed (fewest in a trial: "
          f"{record['resumed_min']}), takeover {m['takeover_ms']} ms, median ÷ lease {m['ratio_p50_to_lease']}")


# ---------------------------------------------------------------- report

def cell(value, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def report(path: str, command: str | None) -> str:
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        return "no cluster failover run recorded"
    r = records[-1]
    m, detail = r["medians"], r["detail"]

    def row(label: str, key: str, digits: int = 0, unit: str = " ms") -> str:
        each = " / ".join(cell(t.get(key), digits) for t in detail)
        return f"| {label} | {cell(m.get(key), digits)}{unit if m.get(key) is not None else ''} | {each} |"

    lease = r["lease_ms"]
    ratio_each = " / ".join(cell(t.get("resume_over_lease"), 2) for t in detail)
    lines = [
        (f"**Cluster failover: the leader SIGKILLed** (3 daemons on one PostgreSQL database behind HAProxy; "
         f"`store.postgres_lease_ms` **{lease:,}**; HAProxy checks `GET /readyz` every {r['check_ms']} ms, fall 2 rise 2; "
         f"{r['clients']} clients through HAProxy, in calls of 2, reconnecting every {r['backoff_ms']} ms once dropped and "
         f"resuming with their `resume_token`; the kill at a random point of the leader's renewals; "
         f"{r['trials']} trials; ms after the kill)"),
        "",
        "| measure | median of trials | trials |",
        "|---|---|---|",
        row("kill → `connection.ok` resumed, median over clients", "resume_p50_ms"),
        row("kill → `connection.ok` resumed, max over clients", "resume_max_ms"),
        f"| clients resumed (session kept) | {cell(m['resumed'])} of {r['clients']} | "
        + " / ".join(str(t["resumed"]) for t in detail) + " |",
        row("takeover: kill → the new leader's ready line", "takeover_ms"),
        f"| median kill → resumed ÷ lease | {cell(m['ratio_p50_to_lease'], 2)} | {ratio_each} |",
        "",
        "Where the time goes (each row from the kill's clock; medians of trials):",
        "",
        "| phase | median | trials |",
        "|---|---|---|",
        row("lease the dead leader had left at the kill (renewed every lease ÷ 3)", "lease_left_ms"),
        row("lease lapsed → a standby takes the lead (each tries every lease ÷ 3, at random phases)", "lapse_to_lead_ms"),
        row("takes the lead → ready line (starts from the database, binds)", "lead_to_ready_ms"),
        row("ready line → HAProxy reports it UP (rise 2; its stats polled every 20 ms)", "ready_to_up_ms"),
        row("UP → first client resumed", "up_to_first_resume_ms"),
        row("UP → median client resumed", "up_to_p50_resume_ms"),
        row("(kill → clients' sockets dropped, median)", "drop_p50_ms"),
        row("(kill → HAProxy reports the dead leader DOWN: fall 2)", "old_down_ms"),
        row("(a client's first reconnect attempt, start to end, median)", "first_attempt_p50_ms"),
        row("(reconnect attempts per client, median)", "attempts_p50", unit=""),
    ]
    odd = [t for t in detail if t["resumed"] < t["clients"]]
    for t in odd:
        lines.append("")
        lines.append(f"Trial {t['trial']}: {t['resumed']} of {t['clients']} resumed; outcomes {t['outcomes']}; "
                     f"errors: {t['failed_errors']}")
    if command:
        lines += ["", f"Command: `{command}`; daemon: `{r['binary']}`"]
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def trial_parser(doc: str, clients: int, trials: int) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """`run` (a trial's options) and `report RESULTS [--command C]`: the parser, and its `run`
    subparser for a driver's own options (cluster_node_loss.py's `--kill`)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    sub = p.add_subparsers(dest="subcommand", required=True)
    r = sub.add_parser("run", help="T trials")
    r.add_argument("--switchboard-bin", required=True, help="the daemon to run (three of it per trial)")
    r.add_argument("--clients", type=int, default=clients, help=f"clients, users u0..uN-1, in calls of 2 (default {clients})")
    r.add_argument("--trials", type=int, default=trials, help=f"trials, each on a fresh database and daemons (default {trials})")
    r.add_argument("--lease-ms", type=int, default=2000, help="store.postgres_lease_ms (default 2000)")
    r.add_argument("--check-ms", type=int, default=100, help="HAProxy's health-check interval (default 100)")
    r.add_argument("--backoff-ms", type=float, default=50, help="a client's pause between reconnect attempts (default 50)")
    r.add_argument("--reconnect-timeout", type=float, default=None,
                   help="a client gives up this long after the kill (default 4 leases + 20 s)")
    r.add_argument("--start-timeout", type=float, default=60, help="bound on a trial's start and joins (default 60 s)")
    r.add_argument("--request-timeout", type=float, default=10, help="bound on one connect or request (default 10 s)")
    r.add_argument("--trial-timeout", type=float, default=None, help="bound on one whole trial (default: derived)")
    r.add_argument("--log-dir", required=True, help="daemon logs go here (trialN-nI.log)")
    add_report_parser(sub)
    return p, r


def checked(p: argparse.ArgumentParser, opts):
    """``opts`` with the derived timeouts set; a bad count or lease is a usage error."""
    if opts.subcommand == "run":
        if opts.clients < 1 or opts.trials < 1 or opts.lease_ms < 100:
            p.error("--clients and --trials must be positive, --lease-ms at least 100")
        if opts.reconnect_timeout is None:
            opts.reconnect_timeout = 4 * opts.lease_ms / 1000 + 20
        if opts.trial_timeout is None:
            opts.trial_timeout = 3 * opts.start_timeout + opts.reconnect_timeout + 60
    return opts


def main(argv: list[str]) -> int:
    p, _ = trial_parser(__doc__, 100, 5)
    return bench_main("cluster failover", checked(p, p.parse_args(argv)), run, report, print_summary)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
