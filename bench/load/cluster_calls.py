#!/usr/bin/env python3
"""Joins per second of a 3-node cluster against one node, both on PostgreSQL (store.kind postgres,
ADR 0012). `scripts/bench calls-cluster` runs it. Subcommands: `run` (progress on stderr, one JSON
line on stdout) and `report RESULTS` (markdown from its last line).

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
  socket to the leader over LISTEN/NOTIFY. Every call still runs on the leader.

The load is calls_load.py phase 1 (imported by path, not copied; --fanout 0, --idle-seconds 0)
with U connections: in `3`, `--url` lists the three client ports, so connection i goes to node
i mod 3 (a pair's two connections sit on different nodes). `call.join` offered open-loop at the
moderate rate (p50/p99 join latency, send to answer) and at the overload rate (joins answered OK
per second in the window: what the configuration achieves), each for S s after W s of warm-up.
Meanwhile this process reads the CPU time of the leader, the relaying daemons and PostgreSQL
(postmaster and its children) every 0.5 s; over the load's window (its --calls-out wall-clock
marks) that gives each one's CPU % and the CPU µs per join answered, all of them together.

Per run, for each rate, both configurations, in an order that flips every run (1, 3; then 3, 1;
...) so the machine's noise falls on both. Medians over runs; ratio 3-node ÷ 1-node. Everything
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
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cluster_driver import BenchError, add_report_parser, bench_main, poll  # noqa: E402
from cluster_relay import READY, RELAYING, Node, fixtures  # noqa: E402
from procstat import stat_cpu_us  # noqa: E402

CONFIGS = {"1": "1 node", "3": "3 nodes (1 leads, 2 relay)"}
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


def commit_counts(node: Node) -> dict[str, float]:
    """The leader's call-state commits (count, seconds) and joins so far, from its admin /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{node.admin_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError as error:
        log(f"{node.name}: /metrics unreadable: {error}")
        return {}
    found = {f"commit_{kind}": float(value) for kind, value in COMMITS.findall(text)}
    found.update({"joins": float(value) for value in JOINS.findall(text)})
    return found


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


async def segment(opts, fx, pg, binary: Path, run: int, kind: str, rate: float, config: str, log_dir: Path) -> dict:
    """One configuration at one offered rate on a fresh database and daemons; calls_load.py's figures."""
    name = f"run{run}-{kind}-{config}n"
    work = Path(tempfile.mkdtemp(prefix="sb-calls-cluster-"))
    nodes: list[Node] = []
    load = None
    try:
        url = await asyncio.to_thread(pg.create_database, f"calls_r{run}_{kind}_{config}n")
        fx.write_config(work / "switchboard.json", {})
        secret = secrets.token_hex(24)
        env = fx.base_env(STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=opts.lease_ms,
                          STORE_POSTGRES_STANDBY="relay", AUTH_API_SECRET=secret, **fx.caps)
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
            + (f", relays {', '.join(str(n.process.pid) for n in relays)}" if relays else "") + f"); {rate:g} joins/s offered")

        calls_out = work / "calls.json"
        argv = [opts.load_python, str(HERE / "calls_load.py"), "run",
                "--url", ",".join(f"ws://127.0.0.1:{node.port}" for node in nodes), "--server-pid", str(leader.process.pid),
                "--rate", str(rate), "--seconds", str(opts.seconds), "--warmup", str(opts.warmup), "--users", str(opts.users),
                "--fanout", "0", "--idle-seconds", "0", "--label", f"{config}-node", "--calls-out", str(calls_out)]
        load_env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
        load_env["SWITCHBOARD_AUTH_API_SECRET"] = secret
        postmaster = pg.process.pid
        sampler = CpuSampler({"leader": lambda: [leader.process.pid], "relays": lambda: [n.process.pid for n in relays],
                              "postgres": lambda: [postmaster, *fx.child_pids(postmaster)]})
        before = await asyncio.to_thread(commit_counts, leader)
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
        after = await asyncio.to_thread(commit_counts, leader)
        delta = {k: after[k] - before.get(k, 0) for k in after}
        full = json.loads(out.decode().strip().splitlines()[-1])
        record = {"run": run, "kind": kind, "rate": rate, "config": config, **{k: full.get(k) for k in KEPT}}
        open_ns, close_ns = json.loads(calls_out.read_text())["window_wall_ns"]
        cpu, span = sampler.window(open_ns, close_ns)
        record["cpu_pct"] = cpu
        # Times a relaying node found no leader whose lease runs (it then cuts its relayed sockets, 1012).
        record["relay_lapses"] = sum(1 for node in relays for line in list(node.lines) if RELAYING in line and "leader=none" in line)
        joins = record["joins_per_s"] or 0
        record["cpu_us_per_join"] = round(sum(cpu.values()) * 1e4 / joins) if joins else None
        # Over the whole load (warm-up and drain too): the leader's group commits, joins per commit, mean commit.
        commits = delta.get("commit_count") or 0
        record["commits"] = commits
        record["joins_per_commit"] = round(delta.get("joins", 0) / commits, 2) if commits else None
        record["commit_mean_ms"] = round(1000 * delta.get("commit_sum", 0) / commits, 2) if commits else None
        return record
    finally:
        if load is not None and load.returncode is None:
            os.kill(load.pid, signal.SIGKILL)
            await load.wait()
        await asyncio.gather(*(asyncio.to_thread(node.stop) for node in nodes), return_exceptions=True)
        shutil.rmtree(work, ignore_errors=True)


def load_fixtures(binary: Path):
    """cluster_relay.py's fixtures, the caps this binary knows, and procinfo.child_pids."""
    fx = fixtures(binary)
    import conftest
    import procinfo
    fx.caps = {k: v for k, v in CAPS.items() if conftest.binary_accepts(**{f"SWITCHBOARD_{k}": str(v)})}
    for key in sorted(set(CAPS) - set(fx.caps)):
        log(f"{binary} does not know SWITCHBOARD_{key}; left out")
    fx.child_pids = procinfo.child_pids
    return fx


async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise BenchError(f"not executable: {binary}")
    (log_dir := Path(opts.log_dir)).mkdir(parents=True, exist_ok=True)
    fx = load_fixtures(binary)
    rates = (("moderate", opts.moderate_rate), ("overload", opts.overload_rate))
    log(f"{opts.runs} run(s); {opts.users} connections; joins offered at {opts.moderate_rate:g}/s and {opts.overload_rate:g}/s "
        f"for {opts.seconds:g} s after {opts.warmup:g} s; store.postgres_lease_ms {opts.lease_ms}; daemon {binary}; "
        f"nproc {os.cpu_count()}; logs in {log_dir}")
    records = []
    pg = await asyncio.to_thread(fx.PostgresServer, durable=False)
    await asyncio.to_thread(pg.start)
    try:
        for number in range(1, opts.runs + 1):
            order = ["1", "3"] if number % 2 else ["3", "1"]
            for kind, rate in rates:
                for config in order:
                    try:
                        record = await asyncio.wait_for(segment(opts, fx, pg, binary, number, kind, rate, config, log_dir),
                                                        opts.segment_timeout)
                    except asyncio.TimeoutError:
                        raise BenchError(f"run {number}, {kind}, {config} node(s): over {opts.segment_timeout:.0f} s") from None
                    records.append(record)
                    c = record["cpu_pct"]
                    log(f"run {number} {kind} {config}n: {record['joins_per_s']:,.0f} joins/s answered "
                        f"({record['joins_ok']:,}/{record['joins_offered']:,} OK), p50 {record['join_p50_us']} µs, "
                        f"p99 {record['join_p99_us']} µs, errors {record['errors']}, unanswered {record['unanswered']}; CPU % "
                        f"leader {c['leader']}, relays {c['relays']}, PostgreSQL {c['postgres']}, client "
                        f"{record['client_cpu_pct']}, machine {record['machine_busy_pct']}; {record['cpu_us_per_join']} µs/join; relays saw no leader {record['relay_lapses']}×; leader: {record['commits']:,.0f} commits, "
                        f"{record['joins_per_commit']} joins per commit, mean commit {record['commit_mean_ms']} ms")
    finally:
        await asyncio.to_thread(pg.close)
    return {"mode": "calls-cluster", "runs": opts.runs, "users": opts.users, "seconds": opts.seconds, "warmup": opts.warmup,
            "moderate_rate": opts.moderate_rate, "overload_rate": opts.overload_rate, "lease_ms": opts.lease_ms,
            "binary": opts.switchboard_bin, "nproc": os.cpu_count(), "records": records}


def report(path: str, command: str | None) -> str:
    with open(path, encoding="utf-8") as f:
        lines_in = [json.loads(line) for line in f if line.strip()]
    if not lines_in:
        return "no calls-cluster run recorded"
    r = lines_in[-1]
    recs = r["records"]

    def pick(kind, config, key):
        return [x[key] if not isinstance(key, tuple) else x[key[0]][key[1]] for x in recs
                if x["kind"] == kind and x["config"] == config]

    def med(values):
        present = [v for v in values if v is not None]
        return statistics.median(present) if present else None

    def fmt(value, scale=1.0, digits=0):
        return "–" if value is None else f"{value / scale:,.{digits}f}"

    columns = [  # (header, kind, key, scale, digits)
        (f"join p50 ms at {r['moderate_rate']:,.0f}/s", "moderate", "join_p50_us", 1000, 2),
        (f"**join p99 ms** at {r['moderate_rate']:,.0f}/s", "moderate", "join_p99_us", 1000, 2),
        (f"**joins/s achieved** at {r['overload_rate']:,.0f}/s offered", "overload", "joins_per_s", 1, 0),
        (f"CPU µs per join at {r['moderate_rate']:,.0f}/s (daemons + PostgreSQL)", "moderate", "cpu_us_per_join", 1, 0),
        (f"CPU µs per join at {r['overload_rate']:,.0f}/s", "overload", "cpu_us_per_join", 1, 0),
    ]
    runs = r["runs"]
    out = [f"**Joins: a 3-node cluster against one node** (both on one private PostgreSQL, fsync off, a fresh database "
           f"and daemons per configuration per rate per run; `store.postgres_lease_ms` {r['lease_ms']:,}; {r['users']} "
           f"connections, in the 3-node cluster connection i on node i mod 3; `call.join` offered open-loop for "
           f"{r['seconds']:g} s after {r['warmup']:g} s, calls of 2, each connection leaving its previous call first; "
           f"medians of {runs} run{'s' * (runs != 1)}; nproc {r['nproc']}: PostgreSQL, the daemons and the load client share "
           f"those CPUs)", "",
           "| configuration | " + " | ".join(c[0] for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    medians = {cfg: [med(pick(kind, cfg, key)) for _, kind, key, _, _ in columns] for cfg in CONFIGS}
    for cfg, label in CONFIGS.items():
        out.append(f"| {label} | " + " | ".join(fmt(v, s, d) for v, (_, _, _, s, d) in zip(medians[cfg], columns)) + " |")
    ratios = [f"{b / a:.2f}" if a and b is not None else "–" for a, b in zip(medians["1"], medians["3"])]
    out.append("| **3 nodes ÷ 1 node** | " + " | ".join(f"**{x}**" for x in ratios) + " |")

    out += ["", "Per run (order within a run: 1 node first in odd runs, 3 nodes first in even ones; CPU % of one core "
            "over the window, read every 0.5 s: leader / relaying daemons / PostgreSQL / load client, and the whole "
            "machine):", "",
            f"| run | configuration | p50 / p99 ms at {r['moderate_rate']:,.0f}/s | errors, unanswered | "
            f"joins/s at {r['overload_rate']:,.0f}/s (OK / offered in window) | errors, unanswered | "
            f"CPU % at {r['overload_rate']:,.0f}/s: leader / relays / PostgreSQL / client; machine | "
            f"leader's commits at {r['overload_rate']:,.0f}/s: joins per commit, mean ms | relays saw no leader "
            f"(moderate, overload) |", "|---|---|---|---|---|---|---|---|---|"]
    for number in range(1, runs + 1):
        for cfg, label in CONFIGS.items():
            m = next((x for x in recs if x["run"] == number and x["kind"] == "moderate" and x["config"] == cfg), None)
            o = next((x for x in recs if x["run"] == number and x["kind"] == "overload" and x["config"] == cfg), None)
            if not m or not o:
                continue
            c = o["cpu_pct"]
            out.append(f"| {number} | {label} | {fmt(m['join_p50_us'], 1000, 2)} / {fmt(m['join_p99_us'], 1000, 2)} | "
                       f"{m['errors']}, {m['unanswered']} | {fmt(o['joins_per_s'])} ({o['joins_ok']:,} / {o['joins_offered']:,}) | "
                       f"{o['errors']}, {o['unanswered']} | {c['leader']:.0f} / {c['relays']:.0f} / {c['postgres']:.0f} / "
                       f"{o['client_cpu_pct']:.0f}; {o['machine_busy_pct']:.0f} | {fmt(o.get('joins_per_commit'), 1, 1)}, "
                       f"{fmt(o.get('commit_mean_ms'), 1, 1)} | {m.get('relay_lapses', 0)}, {o.get('relay_lapses', 0)} |")
    per_run = []
    for number in range(1, runs + 1):
        one, three = (next((x["joins_per_s"] for x in recs if x["run"] == number and x["kind"] == "overload"
                            and x["config"] == cfg), None) for cfg in ("1", "3"))
        per_run.append(f"{three / one:.2f}" if one and three is not None else "–")
    codes = {}
    for x in recs:
        for code, n in (x.get("error_codes") or {}).items():
            codes[code] = codes.get(code, 0) + n
    out += ["", f"Achieved joins/s, 3 nodes ÷ 1 node, per run: {', '.join(per_run) or '–'}. Error codes over all "
            f"segments: {codes or 'none'}. Leader's commits: `switchboard_sqlite_commit_seconds{{table=\"calls\"}}` and "
            f"`switchboard_call_joins_total` over the whole load (warm-up and drain included). Relays saw no leader: "
            f"times a relaying node logged \"relaying to the leading node\" with leader=none (the leader's lease seen "
            f"lapsed); it then closes every socket it relays (1012), and the load does not reconnect them."]
    if command:
        out += ["", f"Command: `{command}`; daemon: `{r['binary']}`"]
    return "\n".join(out)


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
    r.add_argument("--start-timeout", type=float, default=60, help="bound on the daemons' start (default 60 s)")
    r.add_argument("--log-dir", required=True, help="daemon logs and load outputs go here")
    add_report_parser(sub)
    opts = p.parse_args(argv)
    if opts.subcommand == "run":
        opts.runs = opts.runs or (1 if opts.quick else 3)
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
