"""The crowd benchmark's client processes (see crowd_load.py).

crowd   idle PeerJS sockets from one loopback source address (127.0.0.10 + index): opened at a
        bounded rate on command, each sending HEARTBEAT every --heartbeat s (0: nothing at all).
        Pings are answered by hand (auto-pong off) so they can be counted; sockets the server
        closes are counted as dropped. On "close" every socket is closed at once.
relay   PeerJS pairs from 127.0.0.1 in one of three modes, switched on command: "load" (the
        closed loop of relay_load.py, --window messages in flight per pair), "probe" (open loop,
        --probe-rate messages/s in total, no answers: latency without load) and "idle".
        Every message is counted in the 100 ms bucket of its arrival (crowd_stats.py).

Each process talks to the parent over a pipe: (command, ...) in, (kind, payload) out.
"""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import os
import random
import resource
import sys
import time
import uuid

import picows

from crowd_stats import BUCKET_NS, quantize
from messages import HEARTBEAT
from relay_load import (Listener, RefusedError, Stats, close_all, peerjs_url, pipe_recv, setup_relay, share,
                        unique_peers)

TEXT, PING = picows.WSMsgType.TEXT, picows.WSMsgType.PING
BEAT_SLOT_S = 0.1  # heartbeats go out in slots of this length, spread over --heartbeat


def reply(pipe, message) -> None:
    """Send to the parent with the pipe blocking (the loop's add_reader may leave it
    non-blocking, and a large result would then fail half-written)."""
    os.set_blocking(pipe.fileno(), True)
    pipe.send(message)


# ---------------------------------------------------------------- crowd

class CrowdListener(Listener):
    """An idle socket: pongs each ping (counted); data messages are only counted."""

    def __init__(self, counters: collections.Counter) -> None:
        super().__init__(self.count_message)
        self.counters = counters

    def count_message(self, payload: memoryview) -> None:
        self.counters["messages"] += 1

    def on_ws_frame(self, transport, frame) -> None:
        if frame.msg_type == PING:
            self.counters["pings"] += 1
            transport.send_pong(frame.get_payload_as_bytes())
            return
        super().on_ws_frame(transport, frame)


class Crowd:
    """One process's share of the crowd."""

    def __init__(self, opts, index: int) -> None:
        self.opts, self.source = opts, source_address(opts.source_base, index)
        self.counters: collections.Counter = collections.Counter()
        self.sockets: list[tuple] = []  # (transport, listener)
        self.closing = False
        self.beating = False

    async def grow(self, target: int, rate: float) -> None:
        """Open sockets up to `target`, starting one every 1/rate s, with bounded handshakes in flight."""
        loop, sem = asyncio.get_running_loop(), asyncio.Semaphore(self.opts.connect_concurrency)
        start, tasks = loop.time(), []
        if self.opts.heartbeat > 0 and not self.beating:
            self.beating = True
            loop.call_later(BEAT_SLOT_S, self.beat, 0, max(1, round(self.opts.heartbeat / BEAT_SLOT_S)))
        for k in range(max(0, target - len(self.sockets))):
            delay = start + k / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await sem.acquire()
            tasks.append(asyncio.ensure_future(self.open_one(sem)))
        await asyncio.gather(*tasks)

    async def open_one(self, sem: asyncio.Semaphore) -> None:
        """One socket, greeted with OPEN within --connect-timeout; failures are counted."""
        url = peerjs_url(self.opts.url, str(uuid.uuid4()), self.opts.key)
        transport = None
        try:
            transport, listener = await asyncio.wait_for(picows.ws_connect(
                lambda: CrowdListener(self.counters), url, local_addr=(self.source, 0),
                enable_auto_pong=False, websocket_handshake_timeout=self.opts.connect_timeout),
                self.opts.connect_timeout)
            first = await asyncio.wait_for(listener.first, self.opts.connect_timeout)
            if b'"OPEN"' not in first:
                raise RefusedError(first[:80].decode(errors="replace"))
            self.sockets.append((transport, listener))
        except (TimeoutError, OSError, picows.WSError, ConnectionError, RefusedError) as error:
            self.counters["failed"] += 1
            self.counters["error:" + type(error).__name__] += 1
            if transport is not None:
                transport.disconnect()
        finally:
            sem.release()

    def beat(self, tick: int, slots: int) -> None:
        """Every BEAT_SLOT_S, a heartbeat on each socket of slot tick % slots: one timer per
        process instead of one per socket keeps the load generator's CPU down."""
        if self.closing:
            return
        sent = 0
        for transport, listener in self.sockets[tick % slots::slots]:
            if not listener.closed:
                transport.send(TEXT, HEARTBEAT)
                sent += 1
        self.counters["heartbeats"] += sent
        asyncio.get_running_loop().call_later(BEAT_SLOT_S, self.beat, tick + 1, slots)

    def snapshot(self) -> dict:
        """Counters, open and dropped sockets, and this process's CPU seconds."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        dropped = 0 if self.closing else sum(1 for _, listener in self.sockets if listener.closed)
        out = dict(self.counters)
        out.update(open=len(self.sockets) - dropped, dropped=dropped,
                   cpu_s=round(usage.ru_utime + usage.ru_stime, 2))
        return out

    def close_all(self) -> dict:
        """Close every socket at once (close frame, then disconnect)."""
        before = self.snapshot()
        self.closing = True
        t0 = time.monotonic_ns()
        for transport, listener in self.sockets:
            if not listener.closed:
                transport.send_close(picows.WSCloseCode.OK)
                transport.disconnect()
        before["close_ms"] = round((time.monotonic_ns() - t0) / 1e6, 1)
        return before


def source_address(base: str, index: int) -> str:
    """base + index in the last octet (127.0.0.10, 127.0.0.11, ...)."""
    head, last = base.rsplit(".", 1)
    if int(last) + index > 254:
        raise ValueError(f"too many crowd processes for source base {base}")
    return f"{head}.{int(last) + index}"


async def crowd_main(index: int, opts, pipe) -> None:
    """grow TARGET RATE | snapshot | close | exit."""
    crowd = Crowd(opts, index)
    reply(pipe, ("ready", crowd.source))
    while True:
        command = await pipe_recv(pipe)
        if command[0] == "grow":
            await crowd.grow(command[1], command[2])
            reply(pipe, ("grown", crowd.snapshot()))
        elif command[0] == "snapshot":
            reply(pipe, ("snapshot", crowd.snapshot()))
        elif command[0] == "close":
            reply(pipe, ("closed", crowd.close_all()))
        else:
            result = crowd.close_all()
            deadline = time.monotonic() + 5  # let the close handshakes finish (bounded)
            while time.monotonic() < deadline and not all(listener.closed for _, listener in crowd.sockets):
                await asyncio.sleep(0.02)
            reply(pipe, ("bye", result))
            return


# ---------------------------------------------------------------- relay

class BucketStats(Stats):
    """relay_load.Stats that files each message in the 100 ms bucket of its arrival."""

    def __init__(self) -> None:
        super().__init__()
        self.buckets: dict[int, list] = {}

    def record(self, now_ns: int, ts: int | None) -> None:
        self.received += 1
        self.in_flight -= 1
        if ts is None:
            self.bad += 1
            return
        latency = (now_ns - ts) // 1000
        entry = self.buckets.get(now_ns // BUCKET_NS)
        if entry is None:
            entry = self.buckets[now_ns // BUCKET_NS] = [0, 0, collections.Counter()]
        entry[0] += 1
        if latency > entry[1]:
            entry[1] = latency
        entry[2][quantize(latency)] += 1


async def settle(stats: Stats, timeout: float) -> None:
    """Wait (bounded) until no message is in flight."""
    deadline = time.monotonic() + timeout
    while stats.in_flight > 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def relay_main(index: int, opts, pipe) -> None:
    """load | probe | idle | finish."""
    loop, stats = asyncio.get_running_loop(), BucketStats()
    pairs = await setup_relay(opts, share(opts.pairs, opts.relay_procs, index), stats,
                              random.Random(opts.seed + index))
    probe: asyncio.TimerHandle | None = None
    period = opts.relay_procs / opts.probe_rate
    peers = unique_peers(pairs)

    def tick(n: int) -> None:  # A to B, then B to A: neither side of a pair stays silent
        nonlocal probe
        pairs[n // 2 % len(pairs)][n % 2].send()
        probe = loop.call_later(period, tick, n + 1)

    def heartbeat() -> None:  # what PeerJS clients send; PeerJS drops peers silent for alive_timeout
        for peer in peers:
            if not peer.listener.closed:
                peer.transport.send(TEXT, HEARTBEAT)
        loop.call_later(5.0, heartbeat)

    heartbeat()

    reply(pipe, ("ready", len(pairs)))
    while True:
        command = (await pipe_recv(pipe))[0]
        if probe is not None:
            probe.cancel()
            probe = None
        stats.sending = False
        if command == "load":
            await settle(stats, 5.0)
            stats.sending = True
            for starter, _ in pairs:
                for _ in range(opts.window):
                    starter.send()
        elif command == "probe" and pairs:
            tick(0)
        elif command == "finish":
            await settle(stats, opts.drain_timeout)
            dropped = sum(1 for peer in peers if peer.listener.closed)
            close_all(peers)
            buckets = {b: [e[0], e[1], dict(e[2])] for b, e in stats.buckets.items()}
            reply(pipe, ("result", {"buckets": buckets, "bad": stats.bad, "lost": max(0, stats.in_flight),
                                  "dropped": dropped}))
            return
        reply(pipe, ("ok", command))


# ---------------------------------------------------------------- processes

def entry(kind: str, index: int, opts, pipe) -> None:
    """Process entry point: raise the open-files limit, pick the loop, run, report errors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run((crowd_main if kind == "crowd" else relay_main)(index, opts, pipe))
    except Exception as error:  # report, then exit non-zero
        reply(pipe, ("error", f"{kind} {index}: {type(error).__name__}: {error}"))
        sys.exit(1)


class Pool:
    """Client processes of one kind and their pipes."""

    def __init__(self, kind: str, opts, count: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.kind, self.pipes, self.procs = kind, [], []
        for index in range(count):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=entry, args=(kind, index, opts, child_end), daemon=True)
            proc.start()
            child_end.close()
            self.pipes.append(parent_end)
            self.procs.append(proc)

    def send(self, messages: list) -> None:
        """One message to each process, in order."""
        for pipe, message in zip(self.pipes, messages, strict=True):
            pipe.send(message)

    def broadcast(self, message) -> None:
        self.send([message] * len(self.pipes))

    def gather(self, timeout: float) -> list:
        """One answer from every process within `timeout` seconds."""
        deadline, out = time.monotonic() + timeout, []
        for pipe in self.pipes:
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"a {self.kind} process did not answer within {timeout:.0f} s")
            kind, payload = pipe.recv()
            if kind == "error":
                raise RuntimeError(payload)
            out.append(payload)
        return out

    def ask(self, message, timeout: float) -> list:
        self.broadcast(message)
        return self.gather(timeout)

    def stop(self, grace: float = 5.0) -> None:
        """Join the processes; terminate (by their PIDs) any still running."""
        deadline = time.monotonic() + grace
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(2)
