#!/usr/bin/env python3
"""Load client for Switchboard's benchmarks, speaking the PeerJS wire.

Modes (see --help):
  echo   N connections to ws://HOST:PORT/echo, each sending an OFFER-sized
         message and waiting for the echo, closed loop with a window of W
         messages in flight per connection. Latency is the round trip.
  relay  N pairs of PeerJS clients on /peerjs?key=..&id=<uuid>&token=..; A
         sends an OFFER to B, B bounces an equally sized ANSWER to A, and so
         on, W messages in flight per pair. Latency is one hop (sender's send
         to receiver's receive, same host clock). Each relayed message is one
         message through the server.
  idle   M connections (PeerJS by default) that only send HEARTBEAT every
         5 s; reports the server's RSS per socket.

The load runs in several processes (default: one per core). The parent
coordinates them over pipes, samples the server's CPU time and RSS from /proc
when given --server-pid, prints a summary and, as its last stdout line, one
JSON object for machine consumption.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import os
import random
import resource
import sys
import time
import uuid
from array import array

try:
    import picows
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("relay_load.py needs picows: pip install picows (uvloop is optional but faster)")

from messages import HEARTBEAT, Template, extract_ts
from procstat import machine_delta, read_cpu_ticks, read_server
from summary import print_idle, print_load, summarize_idle, summarize_load

TEXT = picows.WSMsgType.TEXT


# ---------------------------------------------------------------- client side

class Stats:
    """Counters and latency samples (µs) of one load process."""

    def __init__(self) -> None:
        self.received = 0
        self.bad = 0
        self.measuring = False
        self.sending = False
        self.in_flight = 0
        self.latencies = array("q")

    def record(self, now_ns: int, ts: int | None) -> None:
        """Count one received message and, inside the window, its latency."""
        self.received += 1
        self.in_flight -= 1
        if ts is None:
            self.bad += 1
        elif self.measuring:
            self.latencies.append((now_ns - ts) // 1000)


class Listener(picows.WSListener):
    """One socket: reassembles text messages and passes them to `handler`."""

    def __init__(self, handler) -> None:
        super().__init__()
        self.handler = handler
        self.parts: list[bytes] | None = None
        self.first: asyncio.Future = asyncio.get_running_loop().create_future()
        self.closed = False

    def on_ws_frame(self, transport, frame) -> None:
        """Route data frames; answer close frames."""
        kind = frame.msg_type
        if kind == picows.WSMsgType.CLOSE:
            self.closed = True
            transport.send_close(frame.get_close_code())
            transport.disconnect()
            self._fail_first(ConnectionError(f"closed by server: {frame.get_close_code()}"))
            return
        if kind not in (TEXT, picows.WSMsgType.BINARY, picows.WSMsgType.CONTINUATION):
            return
        if not frame.fin or self.parts is not None:
            self._collect(frame)
            return
        self._deliver(frame.get_payload_as_memoryview())

    def on_ws_disconnected(self, transport) -> None:
        """Remember the socket is gone."""
        self.closed = True
        self._fail_first(ConnectionError("disconnected"))

    def _collect(self, frame) -> None:
        """Accumulate a fragmented message; deliver it on the last fragment."""
        if self.parts is None:
            self.parts = []
        self.parts.append(frame.get_payload_as_bytes())
        if frame.fin:
            whole = b"".join(self.parts)
            self.parts = None
            self._deliver(memoryview(whole))

    def _deliver(self, payload: memoryview) -> None:
        """The first message resolves `first`; later ones go to the handler."""
        if not self.first.done():
            self.first.set_result(bytes(payload))
        else:
            self.handler(payload)

    def _fail_first(self, error: Exception) -> None:
        """Fail a handshake still waiting for its first message."""
        if not self.first.done():
            self.first.set_exception(error)
            self.first.exception()  # mark retrieved: nobody may be waiting


class Peer:
    """A load client: sends its template and answers each message it gets."""

    def __init__(self, stats: Stats, template: Template) -> None:
        self.stats = stats
        self.template = template
        self.transport = None
        self.listener: Listener | None = None

    def send(self) -> None:
        """Send one message stamped with the current time."""
        self.stats.in_flight += 1
        self.transport.send(TEXT, self.template.render(time.monotonic_ns()))

    def on_message(self, payload: memoryview) -> None:
        """Record a received message and keep the loop going."""
        self.stats.record(time.monotonic_ns(), extract_ts(payload))
        if self.stats.sending:
            self.send()


def peerjs_url(base: str, peer_id: str, key: str) -> str:
    """The PeerJS WebSocket address for one client."""
    return f"{base}/peerjs?key={key}&id={peer_id}&token={uuid.uuid4().hex[:10]}"


async def connect(url: str, handler, timeout: float, expect_open: bool, tries: int = 3):
    """Open a socket (bounded retries); with expect_open, await {"type":"OPEN"}."""
    for attempt in range(tries):
        try:
            return await asyncio.wait_for(_connect_once(url, handler, expect_open), timeout)
        except (TimeoutError, OSError, picows.WSError):
            if attempt == tries - 1:
                raise
            await asyncio.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


async def _connect_once(url: str, handler, expect_open: bool):
    """One handshake; returns (transport, listener)."""
    transport, listener = await picows.ws_connect(lambda: Listener(handler), url)
    if expect_open:
        first = await listener.first
        if b'"OPEN"' not in first:
            transport.disconnect()
            raise RefusedError(first.decode(errors="replace"))
    else:
        # no greeting on the echo path: route every message to the handler
        listener.first.set_result(b"")
    return transport, listener


class RefusedError(Exception):
    """The server answered the handshake with something other than OPEN."""


async def attach(peer: Peer, url: str, opts, sem: asyncio.Semaphore, expect_open: bool) -> None:
    """Connect `peer` to `url` under the connection-rate semaphore."""
    async with sem:
        peer.transport, peer.listener = await connect(
            url, peer.on_message, opts.connect_timeout, expect_open)


# ---------------------------------------------------------------- worker setup

def share(total: int, parts: int, index: int) -> int:
    """How many of `total` items the worker `index` of `parts` handles."""
    return total // parts + (1 if index < total % parts else 0)


def message_size(rng: random.Random, opts) -> int:
    """A message size in [min_bytes, max_bytes]."""
    return rng.randint(opts.min_bytes, opts.max_bytes)


async def setup_echo(opts, count: int, stats: Stats, rng: random.Random) -> list[tuple[Peer, Peer]]:
    """Echo connections; each is its own partner (the server sends it back)."""
    sem = asyncio.Semaphore(opts.connect_concurrency)
    peers = []
    for _ in range(count):
        own = str(uuid.uuid4())
        peers.append(Peer(stats, Template("OFFER", own, "mc_" + own[:8], message_size(rng, opts))))
    await asyncio.gather(*(attach(p, f"{opts.url}/echo", opts, sem, False) for p in peers))
    return [(p, p) for p in peers]


async def setup_relay(opts, count: int, stats: Stats, rng: random.Random) -> list[tuple[Peer, Peer]]:
    """PeerJS pairs (A, B), both registered and greeted with OPEN."""
    sem = asyncio.Semaphore(opts.connect_concurrency)
    pairs, tasks = [], []
    for _ in range(count):
        a_id, b_id = str(uuid.uuid4()), str(uuid.uuid4())
        size, connection_id = message_size(rng, opts), "mc_" + uuid.uuid4().hex[:12]
        a = Peer(stats, Template("OFFER", b_id, connection_id, size))
        b = Peer(stats, Template("ANSWER", a_id, connection_id, size))
        pairs.append((a, b))
        tasks.append(attach(a, peerjs_url(opts.url, a_id, opts.key), opts, sem, True))
        tasks.append(attach(b, peerjs_url(opts.url, b_id, opts.key), opts, sem, True))
    await asyncio.gather(*tasks)
    return pairs


# ---------------------------------------------------------------- worker run

async def pipe_recv(pipe):
    """Await the next object from the parent without blocking the loop."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def readable() -> None:
        loop.remove_reader(pipe.fileno())
        if not future.done():
            future.set_result(pipe.recv())

    loop.add_reader(pipe.fileno(), readable)
    return await future


class Window:
    """Snapshots taken at the start and the end of the measurement window."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self.marks: list[tuple[int, float, float, int]] = []

    def mark(self) -> None:
        """Record (wall ns, user s, system s of this process, messages so far)."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.marks.append((time.monotonic_ns(), usage.ru_utime, usage.ru_stime,
                           self.stats.received))

    def open(self) -> None:
        """Start measuring."""
        self.mark()
        self.stats.measuring = True

    def close(self) -> None:
        """Stop measuring and sending."""
        self.mark()
        self.stats.measuring = False
        self.stats.sending = False


async def drive_load(pairs, stats: Stats, opts, t0_ns: int, t1_ns: int) -> Window:
    """Start the closed loops, measure between t0 and t1, then drain."""
    loop = asyncio.get_running_loop()
    window = Window(stats)
    now = time.monotonic_ns()
    loop.call_later(max(0, t0_ns - now) / 1e9, window.open)
    loop.call_later(max(0, t1_ns - now) / 1e9, window.close)
    if opts.rate > 0:
        await paced_sends(pairs, opts.rate / opts.procs, t1_ns)
    else:
        stats.sending = True
        for starter, _ in pairs:
            for _ in range(opts.window):
                starter.send()
        await asyncio.sleep(max(0, t1_ns - time.monotonic_ns()) / 1e9)
    while len(window.marks) < 2:  # the close timer may trail the sleep slightly
        await asyncio.sleep(0.001)
    await drain(stats, opts.drain_timeout)
    return window


async def paced_sends(pairs, rate: float, t1_ns: int) -> None:
    """Open loop: the pairs' first peers send `rate` messages a second in turn until t1, on
    schedule whatever the answers do; the receivers only record (latency is one way)."""
    period_ns = int(1e9 / rate)
    due = time.monotonic_ns()
    sent = 0
    while due < t1_ns:
        pairs[sent % len(pairs)][0].send()
        sent += 1
        due += period_ns
        delay = due - time.monotonic_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)


async def drain(stats: Stats, timeout: float) -> None:
    """Wait (bounded) for messages still in flight after sending stopped."""
    deadline = time.monotonic() + timeout
    while stats.in_flight > 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def close_all(peers) -> None:
    """Close every socket with a normal close frame."""
    for peer in peers:
        if peer.transport is not None and not peer.listener.closed:
            peer.transport.send_close(picows.WSCloseCode.OK)
            peer.transport.disconnect()


def unique_peers(pairs) -> list[Peer]:
    """Each peer once (echo pairs hold the same peer twice)."""
    seen, out = set(), []
    for pair in pairs:
        for peer in pair:
            if id(peer) not in seen:
                seen.add(id(peer))
                out.append(peer)
    return out


def load_result(stats: Stats, window: Window) -> dict:
    """What one worker reports after a load run."""
    (w0, u0, s0, n0), (w1, u1, s1, n1) = window.marks[0], window.marks[1]
    return {
        "messages": n1 - n0,
        "wall_ns": w1 - w0,
        "user_ns": int((u1 - u0) * 1e9),
        "sys_ns": int((s1 - s0) * 1e9),
        "bad": stats.bad,
        "lost": max(0, stats.in_flight),
        "latency_counts": dict(collections.Counter(stats.latencies)),
    }


async def run_load_worker(index: int, opts, pipe) -> None:
    """One process of the echo or relay mode."""
    stats, rng = Stats(), random.Random(opts.seed + index)
    count = share(opts.count, opts.procs, index)
    setup = setup_echo if opts.mode == "echo" else setup_relay
    pairs = await setup(opts, count, stats, rng) if count else []
    pipe.send(("ready", len(pairs)))
    command = await pipe_recv(pipe)
    if command[0] != "start":
        close_all(unique_peers(pairs))
        return
    window = await drive_load(pairs, stats, opts, command[1], command[2])
    close_all(unique_peers(pairs))
    pipe.send(("result", load_result(stats, window)))


# ---------------------------------------------------------------- idle mode

class IdleClient:
    """A connection that only sends HEARTBEAT every interval."""

    def __init__(self, counters: collections.Counter) -> None:
        self.counters = counters
        self.transport = None
        self.listener: Listener | None = None

    def on_message(self, payload: memoryview) -> None:
        """Count what the server sends (echoed heartbeats on the echo path)."""
        self.counters["frames_received"] += 1

    def beat(self, loop: asyncio.AbstractEventLoop, interval: float) -> None:
        """Send a heartbeat and schedule the next one."""
        if self.listener.closed:
            self.counters["closed_by_server"] += 1
            return
        self.transport.send(TEXT, HEARTBEAT)
        self.counters["heartbeats"] += 1
        loop.call_later(interval, self.beat, loop, interval)


async def open_idle(client: IdleClient, url: str, opts, sem, expect_open: bool) -> bool:
    """Connect one idle client; False (counted) when it fails or is refused."""
    try:
        async with sem:
            client.transport, client.listener = await connect(
                url, client.on_message, opts.connect_timeout, expect_open)
        return True
    except RefusedError as refusal:
        client.counters["refused"] += 1
        client.counters["refusal:" + str(refusal)[:120]] += 1
    except (TimeoutError, OSError, picows.WSError, ConnectionError) as error:
        client.counters["failed"] += 1
        client.counters["error:" + type(error).__name__] += 1
    return False


async def run_idle_worker(index: int, opts, pipe) -> None:
    """One process of the idle mode: connect, heartbeat, hold, close."""
    loop = asyncio.get_running_loop()
    counters: collections.Counter = collections.Counter()
    sem = asyncio.Semaphore(opts.connect_concurrency)
    peerjs = opts.target == "peerjs"
    clients = [IdleClient(counters) for _ in range(share(opts.count, opts.procs, index))]
    urls = [peerjs_url(opts.url, str(uuid.uuid4()), opts.key) if peerjs else f"{opts.url}/echo"
            for _ in clients]
    opened = (open_idle(c, u, opts, sem, peerjs) for c, u in zip(clients, urls, strict=True))
    ok = await asyncio.gather(*opened)
    live = [c for c, good in zip(clients, ok, strict=True) if good]
    for client in live:
        loop.call_later(random.uniform(0, opts.heartbeat), client.beat, loop, opts.heartbeat)
    pipe.send(("ready", len(live)))
    await pipe_recv(pipe)
    counters["still_open"] = sum(1 for c in live if not c.listener.closed)
    close_all(live)
    pipe.send(("result", dict(counters)))


# ---------------------------------------------------------------- processes

def worker_main(index: int, opts, pipe) -> None:
    """Process entry point: pick the event loop, run the mode, report errors."""
    try:
        import uvloop  # optional, noticeably cheaper per message
        uvloop.install()
    except ImportError:
        pass
    run = run_idle_worker if opts.mode == "idle" else run_load_worker
    try:
        asyncio.run(run(index, opts, pipe))
    except Exception as error:  # report, then exit non-zero
        pipe.send(("error", f"worker {index}: {type(error).__name__}: {error}"))
        sys.exit(1)


class Workers:
    """The load processes and their pipes."""

    def __init__(self, opts) -> None:
        ctx = multiprocessing.get_context("fork")
        self.pipes, self.procs = [], []
        for index in range(opts.procs):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(index, opts, child_end), daemon=True)
            proc.start()
            child_end.close()
            self.pipes.append(parent_end)
            self.procs.append(proc)

    def gather(self, kind: str, timeout: float) -> list:
        """One message of `kind` from every worker, within `timeout` seconds."""
        deadline, out = time.monotonic() + timeout, []
        for pipe in self.pipes:
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"no '{kind}' from a worker within {timeout:.0f} s")
            message = pipe.recv()
            if message[0] == "error":
                raise RuntimeError(message[1])
            out.append(message[1])
        return out

    def broadcast(self, message) -> None:
        """Send `message` to every worker."""
        for pipe in self.pipes:
            pipe.send(message)

    def stop(self, grace: float = 5.0) -> None:
        """Join the workers; terminate (by their PIDs) any still running."""
        deadline = time.monotonic() + grace
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(2)


def sleep_until(t_ns: int) -> None:
    """Sleep until the monotonic clock reaches t_ns (a schedule, not a readiness wait)."""
    delay = (t_ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


def raise_fd_limit(needed: int) -> int:
    """Raise RLIMIT_NOFILE's soft limit towards the hard one; return the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard == resource.RLIM_INFINITY else max(soft, min(hard, needed))
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------- parent

def run_load(opts) -> dict:
    """Coordinate a load run: connect, warm up, measure, collect."""
    workers = Workers(opts)
    try:
        workers.gather("ready", opts.connect_timeout * 3)
        start = time.monotonic_ns()
        t0 = start + int(opts.warmup * 1e9)
        t1 = t0 + int(opts.seconds * 1e9)
        workers.broadcast(("start", t0, t1))
        sleep_until(t0)
        before, ticks0 = read_server(opts.server_pid), read_cpu_ticks()
        sleep_until(t1)
        after, ticks1 = read_server(opts.server_pid), read_cpu_ticks()
        results = workers.gather("result", opts.drain_timeout + 30)
    finally:
        workers.stop()
    return summarize_load(opts, results, before, after, machine_delta(ticks0, ticks1))


def run_idle(opts) -> dict:
    """Coordinate an idle run: baseline RSS, connect all, hold, measure, close."""
    samples = {"before": read_server(opts.server_pid)}
    workers = Workers(opts)
    try:
        workers.gather("ready", opts.connect_timeout * 3 + opts.count / 500)
        samples["connected"] = read_server(opts.server_pid)
        time.sleep(opts.hold)  # the measured hold period, not a readiness wait
        samples["held"] = read_server(opts.server_pid)
        workers.broadcast(("stop",))
        results = workers.gather("result", 60)
    finally:
        workers.stop()
    return summarize_idle(opts, results, samples)


def parse_args(argv: list[str]):
    """Command-line options; `count` means pairs, connections or sockets by mode."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("mode", choices=("echo", "relay", "idle"))
    p.add_argument("--url", required=True, help="server base, e.g. ws://127.0.0.1:9000")
    p.add_argument("--procs", type=int, default=os.cpu_count() or 1,
                   help="client processes (default: number of cores)")
    p.add_argument("--connections", type=int, default=100, help="echo: connections (default 100)")
    p.add_argument("--pairs", type=int, default=50, help="relay: PeerJS pairs (default 50)")
    p.add_argument("--sockets", type=int, default=10000, help="idle: sockets (default 10000)")
    p.add_argument("--window", type=int, default=1,
                   help="messages in flight per echo connection / relay pair (default 1)")
    p.add_argument("--rate", type=float, default=0,
                   help="relay: messages a second in total, open loop (default 0: closed loop with --window)")
    p.add_argument("--seconds", type=float, default=10.0, help="measurement window (default 10)")
    p.add_argument("--warmup", type=float, default=2.0, help="load before measuring (default 2)")
    p.add_argument("--min-bytes", type=int, default=2048)
    p.add_argument("--max-bytes", type=int, default=4096)
    p.add_argument("--hold", type=float, default=12.0, help="idle: seconds to hold (default 12)")
    p.add_argument("--heartbeat", type=float, default=5.0, help="idle: heartbeat period (default 5)")
    p.add_argument("--target", choices=("peerjs", "echo"), default="peerjs",
                   help="idle: connect to /peerjs (default) or /echo")
    p.add_argument("--key", default="peerjs", help="PeerJS API key (default peerjs)")
    p.add_argument("--server-pid", type=int, help="sample this process's CPU time and RSS")
    p.add_argument("--label", default="server", help="name of the server in the output")
    p.add_argument("--connect-timeout", type=float, default=20.0)
    p.add_argument("--connect-concurrency", type=int, default=200,
                   help="handshakes in progress per process (default 200)")
    p.add_argument("--drain-timeout", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    opts = p.parse_args(argv)
    opts.url = opts.url.rstrip("/")
    opts.count = {"echo": opts.connections, "relay": opts.pairs, "idle": opts.sockets}[opts.mode]
    opts.procs = max(1, min(opts.procs, opts.count))
    if not (0 < opts.min_bytes <= opts.max_bytes):
        p.error("need 0 < --min-bytes <= --max-bytes")
    return opts


def main(argv: list[str]) -> int:
    """Run one benchmark and print its summary and JSON line."""
    opts = parse_args(argv)
    per_proc = opts.count // opts.procs + 1
    limit = raise_fd_limit(2 * per_proc + 64 if opts.mode != "echo" else per_proc + 64)
    if limit < per_proc * (2 if opts.mode == "relay" else 1) + 32:
        print(f"warning: open-files limit {limit} is low for this run", file=sys.stderr)
    record = run_idle(opts) if opts.mode == "idle" else run_load(opts)
    (print_idle if opts.mode == "idle" else print_load)(record)
    print(json.dumps(record, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
