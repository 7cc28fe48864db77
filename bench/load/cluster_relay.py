#!/usr/bin/env python3
"""Cross-node relay latency: PeerJS OFFER → ANSWER round trips between peers on the leading
daemon and on one that relays its sockets to it over PostgreSQL's LISTEN/NOTIFY
(store.postgres_standby relay, ADR 0012). `scripts/bench relay-cluster` runs it. Subcommands:
`run` (progress on stderr, one JSON line on stdout) and `report RESULTS` (markdown from its last line).

One private PostgreSQL for the whole run (Tests/e2e's `pgserver.PostgresServer`, fsync off, as in
`scripts/bench failover`). Per run, a fresh database; daemon A (ports chosen free by
`janus_config.free_tcp_ports`, store.kind postgres, store.postgres_lease_ms L, standby relay)
starts, and once it printed its ready line (it leads), daemon B, until B logs "relaying to the
leading node" (and no ready line). One client process (asyncio, `websockets`) opens a pair of
PeerJS sockets per placement: `same` X and Y on A (the baseline); `cross` X on B, Y on A (one
relayed leg each way); `both_b` X and Y on B (two relay hops each way: B→A→B). Y answers every
OFFER at once with an ANSWER to its src. Each round, every placement does one round trip (X's
OFFER with a sequence number → the ANSWER carrying it, `perf_counter_ns`), their order rotating
every round so machine noise falls on all alike; one message is in flight at any time (latency,
not throughput). --warmup rounds, then --messages counted. `switchboard_cluster_relayed_total`
(B's to_leader, A's from_leader) over the rounds shows the relayed placements went through the
database. Then the sockets close and both daemons get SIGTERM by PID (SIGKILL after 20 s).

Nothing sleeps to wait for a condition: waits poll with deadlines; every round trip and run is
bounded. Only 127.0.0.1 is used; only processes started here are ended, by PID.

The error type, `poll` and the command line (`bench_main`, the `report` subcommand) are
cluster_driver.py's, shared with the other cluster drivers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_driver import BenchError, add_report_parser, bench_main, poll  # noqa: E402 - shared with the other cluster drivers

E2E = Path(__file__).resolve().parents[2] / "Tests" / "e2e"
HOST = "127.0.0.1"
READY = re.compile(r"ws://[0-9.]+:([0-9]+)/")
RELAYING = "relaying to the leading node"
#: (key, X's node, Y's node, label)
PLACEMENTS = (
    ("same", "A", "A", "same node: X and Y on A (the leader)"),
    ("cross", "B", "A", "one relayed leg each way: X on B, Y on A"),
    ("both_b", "B", "B", "two relay hops each way: X and Y on B (B→A→B)"),
)
RELAYED = re.compile(r'^switchboard_cluster_relayed_total\{[^}]*direction="(\w+)"[^}]*\} ([0-9.e+]+)$', re.M)


def log(message: str) -> None:
    print(f"[relay-cluster] {message}", file=sys.stderr, flush=True)


class Node:
    """One ``switchboard serve``; a thread reads its output into ``lines`` and ``log_path``."""

    def __init__(self, name: str, binary: Path, ports: list[int], work: Path, env: dict[str, str], log_path: Path) -> None:
        self.name, self.port, self.admin_port, self.env, self.log_path = name, ports[0], ports[1], env, log_path
        self.state_dir = work / name
        self.argv = [str(binary), "serve", "--host", HOST, "--port", str(self.port), "--admin-port", str(self.admin_port),
                     "--state-dir", str(self.state_dir), "--config", str(work / "switchboard.json")]
        self.process: subprocess.Popen | None = None
        self.pump: threading.Thread | None = None
        self.lines: list[str] = []  # its output so far, appended by the pump

    def start(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        env=self.env, cwd=self.state_dir, start_new_session=True)
        self.pump = threading.Thread(target=self._pump, name=f"switchboard-{self.name}", daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with open(self.log_path, "w", encoding="utf-8") as out:
            out.write(f"# {self.name}: pid {self.process.pid}, port {self.port}, admin port {self.admin_port}\n")
            for raw in self.process.stdout:
                line = raw.decode(errors="replace")
                self.lines.append(line)
                out.write(line)
            self.process.stdout.close()
            out.write(f"# exited with {self.process.wait()}\n")

    def saw(self, pattern: str | re.Pattern) -> bool:
        found = pattern.search if isinstance(pattern, re.Pattern) else (lambda line: pattern in line)
        return any(found(line) for line in list(self.lines))

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise BenchError(f"daemon {self.name} exited with {self.process.returncode}; log: {self.log_path}")

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM by PID, SIGKILL after ``timeout``; reaps it and reads its output to the end."""
        if self.process is None:
            return
        try:
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"{self.name} (pid {self.process.pid}) ignored SIGTERM for {timeout:.0f} s: SIGKILL")
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)
        except ProcessLookupError:
            pass
        if self.pump is not None:
            self.pump.join(timeout)


def sdp_filler(size: int) -> str:
    """SDP-like text of ``size`` bytes or a line more, as it appears inside a JSON string (escaped CRLFs)."""
    line = "a=candidate:{0:04d} 1 udp 2122260223 127.0.0.1 {1} typ host generation 0\\r\\n"
    return "".join(line.format(i, 50000 + i) for i in range(math.ceil(size / len(line.format(0, 50000)))))


async def open_peer(port: int, peer_id: str, timeout: float):
    from websockets.asyncio.client import connect

    ws = await connect(f"ws://{HOST}:{port}/peerjs?key=peerjs&id={peer_id}&token=t-{peer_id}", open_timeout=timeout,
                       proxy=None, compression=None, ping_interval=None, max_size=None, close_timeout=1)
    first = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    if first.get("type") != "OPEN":
        ws.transport.abort()
        raise BenchError(f"peer {peer_id} on port {port}: first frame {first}")
    return ws


async def answer(ws, filler: str) -> None:
    """Y's side: every OFFER answered at once with an ANSWER to its src, carrying its seq."""
    async for text in ws:
        message = json.loads(text)
        if message.get("type") == "OFFER":
            await ws.send('{"type":"ANSWER","dst":"%s","payload":{"type":"media","connectionId":"mc_bench","seq":%d,'
                          '"sdp":{"type":"answer","sdp":"%s"}}}' % (message["src"], message["payload"]["seq"], filler))


async def round_trip(x, y_id: str, seq: int, filler: str, timeout: float) -> int:
    """One OFFER from X to Y and Y's ANSWER back; ns from send to receive."""
    offer = ('{"type":"OFFER","dst":"%s","payload":{"type":"media","connectionId":"mc_bench","seq":%d,'
             '"sdp":{"type":"offer","sdp":"%s"}}}' % (y_id, seq, filler))
    async with asyncio.timeout(timeout):  # no task per recv, unlike wait_for
        began = time.perf_counter_ns()
        await x.send(offer)
        while True:
            text = await x.recv()
            at = time.perf_counter_ns()
            message = json.loads(text)
            if message.get("type") == "ANSWER" and message.get("payload", {}).get("seq") == seq:
                return at - began
            if message.get("type") in ("EXPIRE", "ERROR", "ID-TAKEN"):
                raise BenchError(f"round trip {seq} to {y_id}: {text[:200]}")


def relayed_counts(node: Node) -> dict[str, float]:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{node.admin_port}/metrics", timeout=5) as response:
            return {direction: float(value) for direction, value in RELAYED.findall(response.read().decode())}
    except OSError as error:
        log(f"{node.name}: /metrics unreadable: {error}")
        return {}


def summary(ns: list[int]) -> dict[str, float]:  # nearest-rank percentiles, µs
    ordered = sorted(v / 1000 for v in ns)
    rank = {f"p{q}_us": ordered[min(max(1, math.ceil(q / 100 * len(ordered))), len(ordered)) - 1] for q in (50, 90, 99)}
    return {**{k: round(v, 1) for k, v in rank.items()}, "min_us": round(ordered[0], 1), "max_us": round(ordered[-1], 1),
            "n": len(ordered)}


async def one_run(opts, fx, pg, number: int, binary: Path, log_dir: Path) -> dict:
    work = Path(tempfile.mkdtemp(prefix="sb-relay-cluster-"))
    nodes: dict[str, Node] = {}
    sockets, answering = [], []  # websockets; Y's answering tasks
    try:
        url = await asyncio.to_thread(pg.create_database, f"relay_r{number}")
        fx.write_config(work / "switchboard.json", {})
        ports = fx.free_tcp_ports(4)
        env = fx.base_env(STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=opts.lease_ms,
                          STORE_POSTGRES_STANDBY="relay")
        for i, name in enumerate("AB"):
            nodes[name] = Node(name, binary, ports[2 * i:2 * i + 2], work, env, log_dir / f"run{number}-{name}.log")
        a, b = nodes["A"], nodes["B"]
        began = time.monotonic()
        a.start()
        await poll(lambda: (a.check_alive(), a.saw(READY))[-1], opts.start_timeout, "A's ready line (A leading)")
        b.start()
        await poll(lambda: (a.check_alive(), b.check_alive(), b.saw(RELAYING))[-1], opts.start_timeout,
                   f"B logging '{RELAYING}'")
        if b.saw(READY):
            raise BenchError(f"B printed a ready line: it leads, not A; log: {b.log_path}")
        log(f"run {number}: A leads (pid {a.process.pid}, port {a.port}), B relays (pid {b.process.pid}, port {b.port}) "
            f"after {time.monotonic() - began:.1f} s")

        filler, pairs = sdp_filler(opts.sdp_bytes), {}
        for key, x_node, y_node, _ in PLACEMENTS:
            for side, node in (("y", y_node), ("x", x_node)):
                sockets.append(await open_peer(nodes[node].port, f"r{number}-{key}-{side}", opts.reply_timeout))
            answering.append(asyncio.create_task(answer(sockets[-2], filler)))
            pairs[key] = (sockets[-1], f"r{number}-{key}-y")

        before = [await asyncio.to_thread(relayed_counts, node) for node in (b, a)]
        samples: dict[str, list[int]] = {key: [] for key, *_ in PLACEMENTS}
        keys = [key for key, *_ in PLACEMENTS]
        for r in range(opts.warmup + opts.messages):
            for key in keys[r % 3:] + keys[:r % 3]:  # the order rotates every round
                x, y_id = pairs[key]
                try:
                    rtt = await round_trip(x, y_id, r, filler, opts.reply_timeout)
                except TimeoutError:
                    a.check_alive(), b.check_alive()  # a daemon that died says so
                    raise BenchError(f"run {number}, {key}: no ANSWER within {opts.reply_timeout:.0f} s "
                                     f"(round {r}); logs: {a.log_path}, {b.log_path}") from None
                if r >= opts.warmup:
                    samples[key].append(rtt)
            for task in answering:
                if task.done():
                    raise BenchError(f"run {number}: an answering peer stopped: {task.exception()!r}")
        after = [await asyncio.to_thread(relayed_counts, node) for node in (b, a)]
        result = {"run": number, "placements": {key: summary(v) for key, v in samples.items()},  # B's to A, A's to B
                  "relayed": [after[i].get(d, 0) - before[i].get(d, 0) for i, d in enumerate(("to_leader", "from_leader"))]}
        base = result["placements"]["same"]["p50_us"]
        for key in ("cross", "both_b"):
            p = result["placements"][key]
            p["added_p50_us"], p["ratio_p50"] = round(p["p50_us"] - base, 1), round(p["p50_us"] / base, 2)
        return result
    finally:
        for task in answering:
            task.cancel()
        for ws in sockets:
            try:
                await asyncio.wait_for(ws.close(), 2)
            except Exception:  # noqa: BLE001 - a socket that will not close is dropped
                ws.transport.abort()
        await asyncio.gather(*(asyncio.to_thread(node.stop) for node in nodes.values()), return_exceptions=True)
        shutil.rmtree(work, ignore_errors=True)


def fixtures(binary: Path):
    """The Tests/e2e fixtures this run uses, imported with TEST_SWITCHBOARD_BIN set to the daemon."""
    os.environ["TEST_SWITCHBOARD_BIN"] = str(binary)
    sys.path.insert(0, str(E2E))
    import janus_config
    import pgserver
    import webhook_harness
    if reason := pgserver.missing_requirements():
        raise BenchError(reason)
    return SimpleNamespace(PostgresServer=pgserver.PostgresServer, free_tcp_ports=janus_config.free_tcp_ports,
                           base_env=webhook_harness.base_env, write_config=webhook_harness.write_config)


async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise BenchError(f"not executable: {binary}")
    (log_dir := Path(opts.log_dir)).mkdir(parents=True, exist_ok=True)
    fx = fixtures(binary)
    log(f"{opts.runs} runs of {opts.messages} round trips per placement (after {opts.warmup} warm-up rounds), "
        f"SDP {opts.sdp_bytes} bytes, store.postgres_lease_ms {opts.lease_ms}, daemon {binary}; logs in {log_dir}")
    runs = []
    pg = await asyncio.to_thread(fx.PostgresServer, durable=False)
    await asyncio.to_thread(pg.start)
    try:
        for number in range(1, opts.runs + 1):
            try:
                result = await asyncio.wait_for(one_run(opts, fx, pg, number, binary, log_dir), opts.run_timeout)
            except asyncio.TimeoutError:
                raise BenchError(f"run {number} took over {opts.run_timeout:.0f} s; logs: {log_dir}") from None
            runs.append(result)
            p = result["placements"]
            log(f"run {number}: p50 same {p['same']['p50_us']:.0f} µs, cross {p['cross']['p50_us']:.0f} µs "
                f"(+{p['cross']['added_p50_us']:.0f}), both on B {p['both_b']['p50_us']:.0f} µs "
                f"(+{p['both_b']['added_p50_us']:.0f}); relayed B→A {result['relayed'][0]:.0f}")
    finally:
        await asyncio.to_thread(pg.close)
    medians = {key: {f: round(statistics.median(r["placements"][key][f] for r in runs), 2)
                     for f in runs[0]["placements"][key] if f != "n"} for key, *_ in PLACEMENTS}
    return {"mode": "relay-cluster", "runs": len(runs), "messages": opts.messages, "warmup": opts.warmup,
            "sdp_bytes": opts.sdp_bytes, "lease_ms": opts.lease_ms, "binary": str(binary), "target_added_p50_us": 2000,
            "medians": medians, "detail": runs}


def report(path: str, command: str | None) -> str:
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        return "no relay-cluster run recorded"
    r = records[-1]
    m, detail, target = r["medians"], r["detail"], r["target_added_p50_us"]

    def n(value) -> str:
        return "–" if value is None else f"{value:,.0f}"

    lines = [f"**Cross-node relay latency** (2 daemons on one PostgreSQL database, fsync off: A leads, B relays "
             f"(`store.postgres_standby` relay); `store.postgres_lease_ms` {r['lease_ms']:,}; PeerJS OFFER → ANSWER "
             f"round trips, SDP {r['sdp_bytes']:,} bytes each way, one in flight, the placements interleaved round by "
             f"round; {r['messages']:,} per placement per run after {r['warmup']} warm-up rounds; {r['runs']} run"
             f"{'s' * (r['runs'] != 1)}; µs, medians of runs; added and ratio: each run's against its own same-node p50)", "",
             "| placement | p50 | p90 | p99 | added p50 vs same-node | p50 ÷ same-node | p50 per run |",
             "|---|---|---|---|---|---|---|"]
    for key, _, _, label in PLACEMENTS:
        each = " / ".join(n(t["placements"][key]["p50_us"]) for t in detail)
        added, ratio = ("–", "1.00") if key == "same" else (f"+{n(m[key]['added_p50_us'])}", f"{m[key]['ratio_p50']:.2f}")
        lines.append(f"| {label} | {n(m[key]['p50_us'])} | {n(m[key]['p90_us'])} | {n(m[key]['p99_us'])} | {added} | "
                     f"{ratio} | {each} |")
    lines += ["", "Per run (p50 / p90 / p99, µs; relayed: `switchboard_cluster_relayed_total` over the rounds, B's "
              "to_leader and A's from_leader):", "",
              "| run | same node | X on B, Y on A | both on B | added p50: cross, both on B | relayed B→A / A→B |",
              "|---|---|---|---|---|---|"]
    for t in detail:
        p = t["placements"]
        cells = [" / ".join(n(p[k][f]) for f in ("p50_us", "p90_us", "p99_us")) for k in ("same", "cross", "both_b")]
        lines.append(f"| {t['run']} | {' | '.join(cells)} | +{n(p['cross']['added_p50_us'])}, "
                     f"+{n(p['both_b']['added_p50_us'])} | {n(t['relayed'][0])} / {n(t['relayed'][1])} |")
    verdict = "; ".join(f"{label.split(': ')[1]}: +{a / 2000:.2f} ms a message, +{a / 1000:.2f} ms a round trip "
                        f"({'met' if a / 2 < target else 'NOT met'})"
                        for a, label in ((m[k]["added_p50_us"], lb) for k, _, _, lb in PLACEMENTS[1:]))
    lines += ["", f"Target: a message relayed across nodes adds < {target / 1000:g} ms p50 on loopback (one way: half what the round "
              f"trip of two such messages adds): {verdict}."]
    if command:
        lines += ["", f"Command: `{command}`; daemon: `{r['binary']}`"]
    return "\n".join(lines)


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="subcommand", required=True)
    r = sub.add_parser("run", help="R runs of interleaved round trips")
    r.add_argument("--switchboard-bin", required=True, help="the daemon to run (two of it per run)")
    r.add_argument("--messages", type=int, help="round trips per placement per run (default 500; 100 with --quick)")
    r.add_argument("--runs", type=int, help="runs, each on a fresh database and daemons (default 3; 1 with --quick)")
    r.add_argument("--quick", action="store_true", help="100 messages, 1 run (unless given)")
    r.add_argument("--warmup", type=int, default=20, help="rounds before the counted ones (default 20)")
    r.add_argument("--sdp-bytes", type=int, default=2000, help="SDP text in each OFFER and ANSWER (default 2000)")
    r.add_argument("--lease-ms", type=int, default=2000, help="store.postgres_lease_ms (default 2000)")
    r.add_argument("--start-timeout", type=float, default=60, help="bound on the daemons' start (default 60 s)")
    r.add_argument("--reply-timeout", type=float, default=5, help="bound on one round trip or socket open (default 5 s)")
    r.add_argument("--log-dir", required=True, help="daemon logs go here (runN-A.log, runN-B.log)")
    add_report_parser(sub)
    opts = p.parse_args(argv)
    if opts.subcommand == "run":
        opts.messages = opts.messages or (100 if opts.quick else 500)
        opts.runs = opts.runs or (1 if opts.quick else 3)
        if opts.messages < 1 or opts.runs < 1 or opts.warmup < 0 or opts.sdp_bytes < 0 or opts.lease_ms < 1000:
            p.error("--messages and --runs must be positive, --warmup and --sdp-bytes not negative, --lease-ms >= 1000")
        # The bound on one run: the daemons' start, then 50 ms a round trip on average at worst.
        opts.run_timeout = 2 * opts.start_timeout + 30 + 0.05 * 3 * (opts.messages + opts.warmup)
    return opts


def main(argv: list[str]) -> int:
    return bench_main("relay-cluster", parse_args(argv), run, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
