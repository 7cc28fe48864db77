#!/usr/bin/env python3
"""Joins per second of a 3-node cluster against one node, both on PostgreSQL (store.kind postgres,
ADR 0012). `scripts/bench calls-cluster` runs it. Subcommands: `run` (progress on stderr, one JSON
line on stdout) and `report RESULTS` (markdown from its last line; cluster_calls_report.py).

One private PostgreSQL for the whole run (Tests/e2e's `pgserver.PostgresServer`, fsync off, as in
`scripts/bench failover` and `relay-cluster`). The daemons are started and stopped with
cluster_relay.py's helpers (imported): `Node` (its output read by a thread into a log),
`fixtures` (free ports, the e2e daemon environment), and cluster_driver.py's `poll`. Each segment
is one configuration at one offered rate, on a fresh database and fresh daemons (ports chosen
free, store.postgres_lease_ms L, store.postgres_standby relay, a random API secret, the
per-address and per-user creation caps lifted as for `scripts/bench calls`):

- `1`: one daemon; it leads (its ready line) and runs every call.
- `3`: three daemons; the first leads (ready line), then the two others start and log "relaying
  to the leading node" (no ready line): they bind their client ports and relay every client
  socket to the leader over LISTEN/NOTIFY. With `--postgres-calls leader` (the default) every
  call still runs on the leader. With `--postgres-calls spread` (store.postgres_calls spread, on
  every daemon of both configurations) the relaying daemons keep their `/v1/connect` sockets and
  run the calls those create; a request for a call another daemon runs is forwarded to it over
  the bus (in this load a call's second joiner is always on another node). They log the same
  relaying line, with no ready line, so the start is the same in both modes.

The load is calls_load.py phase 1 (imported by path, not copied; --fanout 0, --idle-seconds 0)
with U connections: in `3`, `--url` lists the three client ports, so connection i goes to node
i mod 3 (a pair's two connections sit on different nodes). `call.join` offered open-loop at the
moderate rate (p50/p99 join latency, send to answer) and at the overload rate (joins answered OK
per second in the window: what the configuration achieves), each for S s after W s of warm-up.
Meanwhile this process reads the CPU time of each daemon (the leader, n0; the relaying daemons, n1
and n2, each and together) and PostgreSQL (postmaster and its children) every 0.5 s; over the
load's window (its --calls-out wall-clock marks) that gives each one's CPU % and the CPU µs per
join answered, all of them together. Every daemon's /metrics, read before and after the load and
summed: call commits, joins, and requests forwarded to another daemon (spread).

Per run, for each rate, both configurations, in an order that flips every run (1, 3; then 3, 1;
...) so the machine's noise falls on both. With `--postgres-calls leader,spread` both modes run in
every run, each with both configurations (odd runs: leader 1, leader 3, spread 1, spread 3; even
runs the reverse). Medians over runs, per mode; ratio 3-node ÷ 1-node. Everything
(PostgreSQL, up to three daemons, the load client, this process) shares this machine's CPUs.

Nothing sleeps to wait for a condition: waits poll with deadlines; each segment is bounded
(twice --start-timeout, the window, 2 minutes), the load too. Only 127.0.0.1 is used; only processes
started here are ended, by PID (the daemons: SIGTERM, SIGKILL after 20 s; the load: SIGKILL on timeout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cluster_driver import BenchError, add_report_parser, bench_main, poll  # noqa: E402
from cluster_calls_report import MODES, report  # noqa: E402
from cluster_relay import READY, RELAYING, Node, fixtures  # noqa: E402
from procstat import stat_cpu_us  # noqa: E402

#: Per-address caps (every client is 127.0.0.1) and the per-user call creation rate, which the load
#: exceeds by design: lifted as scripts/bench lifts them; kept only if the binary knows them.
CAPS = {
    "LIMITS_CONNECTIONS_PER_IP": 1000000, "LIMITS_CONNECT_RATE_PER_IP": 100000, "LIMITS_CONNECT_BURST_PER_IP": 100000,
    "TRANSPORT_MAX_CONNECTIONS_PER_ADDRESS": 1000000, "TRANSPORT_MAX_PENDING_PER_ADDRESS": 100000,
    "CALLS_CREATES_PER_MINUTE_PER_USER": 100000, "CALLS_CREATE_BURST_PER_USER": 100000,
}
#: The figures of calls_load.py's JSON line kept per segment.
KEPT = ("joins_offered", "joins_ok", "joins_per_s", "join_p50_us", "join_p99_us", "join_max_us", "errors", "error_codes",
        "unanswered", "drained", "pacer_max_lag_us", "client_cpu_pct", "server_cpu_pct", "machine_busy_pct")


COMMITS = re.compile(r'^switchboard_sqlite_commit_seconds_(count|sum)\{[^}]*table="calls"[^}]*\} ([0-9.e+-]+)$', re.M)
JOINS = re.compile(r'^switchboard_call_joins_total(?:\{[^}]*\})? ([0-9.e+-]+)$', re.M)
FORWARDED = re.compile(r'^switchboard_call_requests_forwarded_total\{[^}]*direction="(out|in)"[^}]*\} ([0-9.e+-]+)$', re.M)


def commit_counts(node: Node) -> dict[str, float]:
    """A daemon's call-state commits (count, seconds), joins and forwarded requests so far, from its
    admin /metrics (a relaying daemon serves its own)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{node.admin_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError as error:
        log(f"{node.name}: /metrics unreadable: {error}")
        return {}
    found = {f"commit_{kind}": float(value) for kind, value in COMMITS.findall(text)}
    found.update({"joins": float(value) for value in JOINS.findall(text)})
    found.update({f"forwarded_{way}": float(value) for way, value in FORWARDED.findall(text)})
    return found


def all_counts(nodes: list[Node]) -> list[dict[str, float]]:
    return [commit_counts(node) for node in nodes]


def log(message: str) -> None:
    print(f"[calls-cluster] {message}", file=sys.stderr, flush=True)


class CpuSampler:
    """CPU time (µs) of process groups every ``period`` s, with wall-clock times (calls_load.py marks
    its window in wall-clock ns). Groups: name → a function listing its PIDs at each reading."""

    def __init__(self, groups: dict, period: float = 0.5) -> None:
        self.groups, self.period, self.samples = groups, period, []

    def read(self) -> None:
        reading = {}
        for name, pids in self.groups.items():
            reading[name] = {}
            for pid in pids():
                try:
                    reading[name][pid] = stat_cpu_us(f"/proc/{pid}/stat")
                except (FileNotFoundError, ProcessLookupError):
                    pass
        self.samples.append((time.time_ns(), reading))

    async def run(self) -> None:
        while True:
            self.read()
            await asyncio.sleep(self.period)  # the sampling period, not a wait for a condition

    def window(self, open_ns: int, close_ns: int) -> tuple[dict[str, float], float]:
        """Each group's CPU % (of one core) between the first reading at or after ``open_ns`` and
        the last at or before ``close_ns``, and that span in s."""
        inside = [s for s in self.samples if open_ns <= s[0] <= close_ns]
        if len(inside) < 2:
            raise BenchError("fewer than two CPU readings inside the load's window")
        (t0, a), (t1, b) = inside[0], inside[-1]
        span = (t1 - t0) / 1e9
        return {name: round(100 * sum(cpu - a[name].get(pid, 0) for pid, cpu in b[name].items()) / (span * 1e6), 1)
                for name in self.groups}, span


async def segment(opts, fx, pg, binary: Path, run: int, kind: str, rate: float, mode: str, config: str,
                  log_dir: Path) -> dict:
    """One configuration in one store.postgres_calls ``mode`` at one offered rate on a fresh database
    and daemons; calls_load.py's figures."""
    name = f"run{run}-{kind}-{mode}-{config}n"
    work = Path(tempfile.mkdtemp(prefix="sb-calls-cluster-"))
    nodes: list[Node] = []
    load = None
    try:
        url = await asyncio.to_thread(pg.create_database, f"calls_r{run}_{kind}_{mode}_{config}n")
        fx.write_config(work / "switchboard.json", {})
        secret = secrets.token_hex(24)
        env = fx.base_env(STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=opts.lease_ms,
                          STORE_POSTGRES_STANDBY="relay", AUTH_API_SECRET=secret, **fx.caps, **fx.calls_mode[mode])
        count = int(config)
        ports = fx.free_tcp_ports(2 * count)
        nodes = [Node(f"n{i}", binary, ports[2 * i:2 * i + 2], work, env, log_dir / f"{name}-n{i}.log") for i in range(count)]
        leader, relays = nodes[0], nodes[1:]
        began = time.monotonic()
        leader.start()
        await poll(lambda: (leader.check_alive(), leader.saw(READY))[-1], opts.start_timeout, f"{name}: n0's ready line")
        for node in relays:
            node.start()

        def relaying() -> bool:
            for node in nodes:
                node.check_alive()
            return all(node.saw(RELAYING) for node in relays)

        await poll(relaying, opts.start_timeout, f"{name}: n1 and n2 logging '{RELAYING}'")
        if any(node.saw(READY) for node in relays):
            raise BenchError(f"{name}: a relaying node printed a ready line (it leads, not n0); logs in {log_dir}")
        log(f"{name}: {count} daemon(s) up in {time.monotonic() - began:.1f} s (leader pid {leader.process.pid}"
            + (f", relays {', '.join(str(n.process.pid) for n in relays)}" if relays else "")
            + f"); store.postgres_calls {mode}; {rate:g} joins/s offered")

        calls_out = work / "calls.json"
        argv = [opts.load_python, str(HERE / "calls_load.py"), "run",
                "--url", ",".join(f"ws://127.0.0.1:{node.port}" for node in nodes), "--server-pid", str(leader.process.pid),
                "--rate", str(rate), "--seconds", str(opts.seconds), "--warmup", str(opts.warmup), "--users", str(opts.users),
                "--fanout", "0", "--idle-seconds", "0", "--label", f"{config}-node", "--calls-out", str(calls_out)]
        load_env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
        load_env["SWITCHBOARD_AUTH_API_SECRET"] = secret
        postmaster = pg.process.pid
        # Each daemon's own group too: in spread mode the relaying daemons run calls as well.
        groups = {"leader": lambda: [leader.process.pid], "relays": lambda: [n.process.pid for n in relays],
                  "postgres": lambda: [postmaster, *fx.child_pids(postmaster)]}
        groups.update({n.name: (lambda n=n: [n.process.pid]) for n in relays})
        sampler = CpuSampler(groups)
        before = await asyncio.to_thread(all_counts, nodes)
        sampling = asyncio.create_task(sampler.run())
        try:
            load = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE, env=load_env, start_new_session=True)
            limit = opts.warmup + opts.seconds + opts.load_slack
            try:
                out, err = await asyncio.wait_for(load.communicate(), limit)
            except asyncio.TimeoutError:
                raise BenchError(f"{name}: the load took over {limit:.0f} s") from None
        finally:
            sampling.cancel()
        (log_dir / f"{name}-load.txt").write_bytes(out + b"\n--- stderr ---\n" + err)
        if load.returncode != 0:
            raise BenchError(f"{name}: calls_load.py exited with {load.returncode}; see {log_dir / (name + '-load.txt')}")
        for node in nodes:
            node.check_alive()  # a daemon that died under the load fails the run
        after = await asyncio.to_thread(all_counts, nodes)
        per_node = [{k: a[k] - b.get(k, 0) for k in a} for a, b in zip(after, before)]
        delta = {k: sum(d.get(k, 0) for d in per_node) for k in {k for d in per_node for k in d}}
        full = json.loads(out.decode().strip().splitlines()[-1])
        record = {"run": run, "kind": kind, "rate": rate, "config": config, "postgres_calls": mode,
                  **{k: full.get(k) for k in KEPT}}
        open_ns, close_ns = json.loads(calls_out.read_text())["window_wall_ns"]
        cpu, span = sampler.window(open_ns, close_ns)
        record["cpu_pct"] = cpu
        # Times a relaying node found no leader whose lease runs (it then cuts its relayed sockets, 1012).
        record["relay_lapses"] = sum(1 for node in relays for line in list(node.lines) if RELAYING in line and "leader=none" in line)
        joins = record["joins_per_s"] or 0
        # leader + relays + PostgreSQL (n1 and n2 are the relays' parts, not counted twice)
        record["cpu_us_per_join"] = round(sum(cpu[g] for g in ("leader", "relays", "postgres")) * 1e4 / joins) if joins else None
        # Over the whole load (warm-up and drain too), all daemons together: the call hubs' group commits,
        # joins per commit, mean commit (in leader mode only the leader commits); requests forwarded.
        commits = delta.get("commit_count") or 0
        record["commits"] = commits
        record["commits_by_node"] = [d.get("commit_count", 0) for d in per_node]
        record["forwarded_out"], record["forwarded_in"] = delta.get("forwarded_out", 0), delta.get("forwarded_in", 0)
        record["joins_per_commit"] = round(delta.get("joins", 0) / commits, 2) if commits else None
        record["commit_mean_ms"] = round(1000 * delta.get("commit_sum", 0) / commits, 2) if commits else None
        return record
    finally:
        if load is not None and load.returncode is None:
            os.kill(load.pid, signal.SIGKILL)
            await load.wait()
        await asyncio.gather(*(asyncio.to_thread(node.stop) for node in nodes), return_exceptions=True)
        shutil.rmtree(work, ignore_errors=True)


def load_fixtures(binary: Path, modes: list[str]):
    """cluster_relay.py's fixtures, the caps this binary knows, the daemons' store.postgres_calls for
    each of ``modes``, and procinfo.child_pids."""
    fx = fixtures(binary)
    import conftest
    import procinfo
    fx.caps = {k: v for k, v in CAPS.items() if conftest.binary_accepts(**{f"SWITCHBOARD_{k}": str(v)})}
    for key in sorted(set(CAPS) - set(fx.caps)):
        log(f"{binary} does not know SWITCHBOARD_{key}; left out")
    fx.calls_mode = {}
    for mode in modes:
        fx.calls_mode[mode] = {"STORE_POSTGRES_CALLS": mode}
        # spread is checked with what it needs (check-config does not connect to the store).
        if not conftest.binary_accepts(SWITCHBOARD_STORE_POSTGRES_CALLS=mode, SWITCHBOARD_STORE_KIND="postgres",
                                       SWITCHBOARD_STORE_POSTGRES_URL="postgres://bench@127.0.0.1:1/bench",
                                       SWITCHBOARD_STORE_POSTGRES_STANDBY="relay"):
            if mode != "leader":
                raise BenchError(f"{binary} does not accept SWITCHBOARD_STORE_POSTGRES_CALLS={mode}")
            fx.calls_mode[mode] = {}  # a build before the setting: every call runs on the leader anyway
            log(f"{binary} does not know SWITCHBOARD_STORE_POSTGRES_CALLS; left out (leader mode)")
    fx.child_pids = procinfo.child_pids
    return fx


async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise BenchError(f"not executable: {binary}")
    (log_dir := Path(opts.log_dir)).mkdir(parents=True, exist_ok=True)
    fx = load_fixtures(binary, opts.modes)
    rates = (("moderate", opts.moderate_rate), ("overload", opts.overload_rate))
    log(f"{opts.runs} run(s); {opts.users} connections; joins offered at {opts.moderate_rate:g}/s and {opts.overload_rate:g}/s "
        f"for {opts.seconds:g} s after {opts.warmup:g} s; store.postgres_lease_ms {opts.lease_ms}; store.postgres_calls "
        f"{opts.postgres_calls}; daemon {binary}; "
        f"nproc {os.cpu_count()}; logs in {log_dir}")
    records = []
    pg = await asyncio.to_thread(fx.PostgresServer, durable=False)
    await asyncio.to_thread(pg.start)
    try:
        for number in range(1, opts.runs + 1):
            # Odd runs: modes as given, 1 node first; even runs: both orders reversed.
            order = [(m, c) for m in opts.modes for c in ("1", "3")]
            for kind, rate in rates:
                for mode, config in (order if number % 2 else order[::-1]):
                    try:
                        record = await asyncio.wait_for(
                            segment(opts, fx, pg, binary, number, kind, rate, mode, config, log_dir), opts.segment_timeout)
                    except asyncio.TimeoutError:
                        raise BenchError(f"run {number}, {kind}, {mode}, {config} node(s): over "
                                         f"{opts.segment_timeout:.0f} s") from None
                    records.append(record)
                    c = record["cpu_pct"]
                    split = f" (n1 {c['n1']}, n2 {c['n2']})" if "n1" in c else ""
                    log(f"run {number} {kind} {mode} {config}n: {record['joins_per_s']:,.0f} joins/s answered "
                        f"({record['joins_ok']:,}/{record['joins_offered']:,} OK), p50 {record['join_p50_us']} µs, "
                        f"p99 {record['join_p99_us']} µs, errors {record['errors']}, unanswered {record['unanswered']}; CPU % "
                        f"leader {c['leader']}, relays {c['relays']}{split}, PostgreSQL {c['postgres']}, client "
                        f"{record['client_cpu_pct']}, machine {record['machine_busy_pct']}; {record['cpu_us_per_join']} µs/join; relays saw no leader {record['relay_lapses']}×; all daemons: {record['commits']:,.0f} commits "
                        f"{record['commits_by_node']}, {record['joins_per_commit']} joins per commit, mean commit "
                        f"{record['commit_mean_ms']} ms; {record['forwarded_out']:,.0f} requests forwarded")
    finally:
        await asyncio.to_thread(pg.close)
    return {"mode": "calls-cluster", "runs": opts.runs, "users": opts.users, "seconds": opts.seconds, "warmup": opts.warmup,
            "moderate_rate": opts.moderate_rate, "overload_rate": opts.overload_rate, "lease_ms": opts.lease_ms,
            "postgres_calls": opts.postgres_calls,
            "binary": opts.switchboard_bin, "nproc": os.cpu_count(), "records": records}


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="subcommand", required=True)
    r = sub.add_parser("run", help="R runs, each both configurations at both rates")
    r.add_argument("--switchboard-bin", required=True, help="the daemon to run (one, then three of it)")
    r.add_argument("--load-python", default=sys.executable, help="a python with picows, for calls_load.py (default: this one)")
    r.add_argument("--runs", type=int, help="runs (default 3; 1 with --quick)")
    r.add_argument("--quick", action="store_true", help="1 run of 5 s windows (unless given)")
    r.add_argument("--moderate-rate", type=float, default=200, help="offered joins/s both keep up with (default 200)")
    r.add_argument("--overload-rate", type=float, default=2000,
                   help="offered joins/s at or past one node's capacity (default 2000: on 2 shared vCPUs one node "
                        "answered ~2,000/s with batched commits, the load client then taking ~85 %% of a core)")
    r.add_argument("--seconds", type=float, help="measurement window (default 10; 5 with --quick)")
    r.add_argument("--warmup", type=float, default=2, help="paced joins before the window (default 2)")
    r.add_argument("--users", type=int, default=200, help="connections, one user each (default 200)")
    r.add_argument("--lease-ms", type=int, default=2000, help="store.postgres_lease_ms (default 2000)")
    r.add_argument("--postgres-calls", default="leader",
                   help="store.postgres_calls of every daemon: leader (default; every call on the leader) or spread "
                        "(each daemon runs its own sockets' calls, other requests forwarded to the call's daemon); "
                        "leader,spread (or spread,leader): both in every run, alternating, each reported")
    r.add_argument("--start-timeout", type=float, default=60, help="bound on the daemons' start (default 60 s)")
    r.add_argument("--log-dir", required=True, help="daemon logs and load outputs go here")
    add_report_parser(sub)
    opts = p.parse_args(argv)
    if opts.subcommand == "run":
        opts.runs = opts.runs or (1 if opts.quick else 3)
        opts.modes = opts.postgres_calls.split(",")
        if not opts.modes or len(set(opts.modes)) != len(opts.modes) or not set(opts.modes) <= set(MODES):
            p.error(f"--postgres-calls: {' or '.join(MODES)}, or both comma-separated")
        opts.seconds = opts.seconds or (5 if opts.quick else 10)
        if (opts.runs < 1 or opts.users < 2 or opts.moderate_rate <= 0 or opts.overload_rate <= 0 or opts.seconds <= 0
                or opts.warmup < 0 or opts.lease_ms < 1000):
            p.error("--runs, --seconds and the rates must be positive, --users >= 2, --warmup >= 0, --lease-ms >= 1000")
        # The load's bound past its window: connecting, draining answers (5 s), the last leaves (5 s), start-up.
        opts.load_slack = 60
        opts.segment_timeout = 2 * opts.start_timeout + opts.warmup + opts.seconds + opts.load_slack + 60
    return opts


def main(argv: list[str]) -> int:
    return bench_main("calls-cluster", parse_args(argv), run, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
