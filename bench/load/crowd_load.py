#!/usr/bin/env python3
"""The crowd benchmark (issue #11, "the crowd stall"): idle sockets next to live relay traffic.

Modes:
  crowd  One daemon, one run, in phases, the relay (--pairs PeerJS pairs) running throughout:
           quiet      probe only (--probe-rate msgs/s open loop), no crowd: the daemon's idle CPU
           baseline   closed-loop relay, no crowd: msgs/s, p99, worst message
           connect    --sockets idle PeerJS sockets (HEARTBEAT every --heartbeat s), opened at
                      --connect-rate/s from --crowd-procs processes, each on its own source address
           crowd quiet   probe only for --hold-intervals ping intervals: the daemon's CPU every
                      100 ms (busiest second, per interval), the probe's worst message
           crowd load    the closed loop again for as long: msgs/s ÷ baseline, p99, worst message
           close      every crowd socket closed at once, the closed loop running: worst message
                      until the daemon holds its earlier number of descriptors again (+1 s)
  scale  One daemon; crowds that send NOTHING (the server must ping them; they pong) grown
         through --counts; for each, the daemon's CPU seconds over --scale-intervals whole ping
         intervals ÷ rounds, and per socket. A 1 msg/s probe pair keeps a known baseline.
  report Turns the JSON lines of crowd and scale runs into markdown (crowd_report.py).

The daemon's ping interval must be --interval-ms (scripts/bench sets it with
SWITCHBOARD_TRANSPORT_PING_INTERVAL_MS). The last stdout line of crowd and scale is JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from crowd_clients import Pool
from crowd_stats import CpuSampler, cpu_window, merge_buckets, profile, relay_window
from procstat import machine_delta, read_cpu_ticks, read_server
from relay_load import share

RELAY_WARMUP_S = 1.0  # closed-loop time before a load phase's window opens


def fds(pid: int) -> int:
    """The daemon's open descriptors."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def hold(seconds: float) -> None:
    """A measured span of the schedule (not a readiness wait)."""
    time.sleep(max(0.0, seconds))


class Run:
    """The processes and samplers of one run, and its phases."""

    def __init__(self, opts, crowd_procs: int) -> None:
        self.opts = opts
        self.sampler = CpuSampler(opts.server_pid, 0.1)
        self.sampler.start()
        self.relay = Pool("relay", opts, opts.relay_procs)
        self.crowd = Pool("crowd", opts, crowd_procs)
        self.phases: dict[str, dict] = {}
        self.relay.gather(opts.connect_timeout * 3)
        self.sources = self.crowd.gather(30)

    def mode(self, mode: str) -> None:
        """Switch the relay processes to load, probe or idle."""
        self.relay.ask((mode,), 10)

    def phase(self, name: str, mode: str, seconds: float) -> dict:
        """Run the relay in `mode` for `seconds` (after a warm-up for load); note the span."""
        self.mode(mode)
        if mode == "load":
            hold(RELAY_WARMUP_S)
        t0, ticks0 = time.monotonic_ns(), read_cpu_ticks()
        hold(seconds)
        t1, ticks1 = time.monotonic_ns(), read_cpu_ticks()
        self.phases[name] = {"t0": t0, "t1": t1, "mode": mode, "machine": machine_delta(ticks0, ticks1)}
        return self.phases[name]

    def grow(self, total: int) -> dict:
        """Grow the crowd to `total` sockets at --connect-rate/s in all; their merged snapshots."""
        n, t0 = len(self.crowd.pipes), time.monotonic()
        self.crowd.send([("grow", share(total, n, i), self.opts.connect_rate / n) for i in range(n)])
        snaps = self.crowd.gather(total / self.opts.connect_rate * 3 + self.opts.connect_timeout * 2 + 30)
        merged = merge_snapshots(snaps)
        merged["connect_s"] = round(time.monotonic() - t0, 2)
        return merged

    def finish(self) -> dict:
        """Stop the relay and the crowd; the merged relay buckets."""
        try:
            self.relay.broadcast(("finish",))
            results = self.relay.gather(self.opts.drain_timeout + 60)
            self.crowd.ask(("exit",), 60)
        finally:
            self.relay.stop()
            self.crowd.stop()
            self.sampler.stop()
        return {"buckets": merge_buckets([r["buckets"] for r in results]),
                "bad": sum(r["bad"] for r in results), "lost": sum(r["lost"] for r in results),
                "dropped": sum(r["dropped"] for r in results)}

    def cpu(self, name: str, t0: int | None = None, t1: int | None = None) -> dict:
        """The daemon's CPU over a phase (or a span)."""
        span = self.phases[name]
        return cpu_window(self.sampler.between(t0 or span["t0"], t1 or span["t1"]))


def merge_snapshots(snaps: list[dict]) -> dict:
    """Sum the crowd processes' counters."""
    out: dict = {}
    for snap in snaps:
        for key, value in snap.items():
            out[key] = round(out.get(key, 0) + value, 3) if isinstance(value, (int, float)) else value
    return out


def run_crowd(opts) -> dict:
    """quiet, baseline, connect, crowd quiet, crowd load, close: one record."""
    interval = opts.interval_ms / 1000
    held = opts.hold_intervals * interval
    run = Run(opts, math.ceil(opts.sockets / opts.per_proc))
    record: dict = {"mode": "crowd", "sockets_requested": opts.sockets, "interval_ms": opts.interval_ms,
                    "hold_s": round(held, 1), "pairs": opts.pairs, "window": opts.window,
                    "heartbeat_s": opts.heartbeat, "probe_rate": opts.probe_rate, "connect_rate": opts.connect_rate,
                    "crowd_procs": len(run.crowd.pipes), "sources": run.sources, "url": opts.url}
    try:
        run.phase("quiet", "probe", opts.quiet)
        run.phase("baseline", "load", opts.baseline or interval)
        run.mode("probe")
        fds_before, rss_before = fds(opts.server_pid), read_server(opts.server_pid).rss_kib
        record["connect"] = run.grow(opts.sockets)
        record["rss_kib"] = {"before": rss_before, "crowd": read_server(opts.server_pid).rss_kib}
        snap0 = merge_snapshots(run.crowd.ask(("snapshot",), 30))
        run.phase("crowd_quiet", "probe", held)
        run.phase("crowd_load", "load", held)
        snap1 = merge_snapshots(run.crowd.ask(("snapshot",), 30))
        record["crowd"] = snap1
        record["crowd_clients_cpu_pct"] = round(100 * (snap1["cpu_s"] - snap0["cpu_s"]) / (2 * held), 1)
        record["pings_per_socket_per_interval"] = round(
            (snap1.get("pings", 0) - snap0.get("pings", 0)) / max(1, snap1["open"]) / (2 * held / interval), 3)
        record["close_timing"] = close_all(run, opts, fds_before)
    finally:
        relay = run.finish()
    record.update(bad=relay["bad"], lost=relay["lost"], relay_dropped=relay["dropped"])
    for name, span in run.phases.items():
        figures = relay_window(relay["buckets"], span["t0"], span["t1"])
        figures.update(run.cpu(name))
        busy = figures["machine_busy_pct"] = span["machine"]["machine_busy_pct"]
        figures["not_daemon_pct"] = round(busy - (figures["cpu_mean_pct"] or 0), 1) if busy is not None else None
        record[name] = figures
    base, crowd = record["baseline"]["msgs_per_s"], record["crowd_load"]["msgs_per_s"]
    record["msgs_ratio"] = round(crowd / base, 3) if base and crowd is not None else None
    record["profile"] = {name: profile(run.sampler, relay["buckets"], run.phases[name]["t0"],
                                       run.phases[name]["t1"], interval)
                         for name in ("crowd_quiet", "crowd_load")}
    return record


def close_all(run: Run, opts, fds_before: int) -> dict:
    """Close the whole crowd at once under load; wait (bounded) for the daemon to let go."""
    run.mode("load")
    hold(RELAY_WARMUP_S)
    t0 = time.monotonic_ns()
    run.crowd.ask(("close",), 60)
    sent = time.monotonic_ns()
    deadline, released = time.monotonic() + opts.close_timeout, None
    while time.monotonic() < deadline:
        if fds(opts.server_pid) <= fds_before + 16:
            released = time.monotonic_ns()
            break
        time.sleep(0.05)
    hold(1.0)
    t1 = time.monotonic_ns()
    run.phases["close"] = {"t0": t0, "t1": t1, "mode": "load", "machine": {"machine_busy_pct": None}}
    return {"sent_s": round((sent - t0) / 1e9, 2),
            "released_s": round((released - t0) / 1e9, 2) if released else None,
            "fds_left": fds(opts.server_pid) - fds_before}


def run_scale(opts) -> dict:
    """Silent crowds of growing size: daemon CPU per ping round and per socket."""
    interval = opts.interval_ms / 1000
    counts = sorted(opts.counts)
    run = Run(opts, math.ceil(counts[-1] / opts.per_proc))
    record: dict = {"mode": "scale", "interval_ms": opts.interval_ms, "intervals": opts.scale_intervals,
                    "counts": counts, "probe_rate": opts.probe_rate, "rows": [], "url": opts.url}
    try:
        span = run.phase("idle", "probe", interval)
        idle = cpu_window(run.sampler.between(span["t0"], span["t1"]))
        idle_round = idle["cpu_s"] / (span["t1"] - span["t0"]) * 1e9 * interval
        record["idle"] = dict(idle, cpu_s_per_round=round(idle_round, 4))
        for count in counts:
            grown = run.grow(count)
            hold(opts.settle)
            before = merge_snapshots(run.crowd.ask(("snapshot",), 30))
            span = run.phase(f"n{count}", "probe", opts.scale_intervals * interval)
            after = merge_snapshots(run.crowd.ask(("snapshot",), 30))
            record["rows"].append(scale_row(run, span, grown, before, after, idle_round, opts))
            print_scale_row(record["rows"][-1], file=sys.stderr)
    finally:
        relay = run.finish()
    for row, count in zip(record["rows"], counts):
        span = run.phases[f"n{count}"]
        row["probe_worst_us"] = relay_window(relay["buckets"], span["t0"], span["t1"])["worst_us"]
    return record


def scale_row(run: Run, span: dict, grown: dict, before: dict, after: dict, idle_round: float, opts) -> dict:
    """One line of the scale table."""
    rounds = opts.scale_intervals
    cpu = cpu_window(run.sampler.between(span["t0"], span["t1"]))
    per_round = cpu["cpu_s"] / rounds if cpu["cpu_s"] is not None else None
    sockets = after["open"]
    net = per_round - idle_round if per_round is not None else None
    return {
        "sockets": sockets, "failed": grown.get("failed", 0), "connect_s": grown["connect_s"],
        "cpu_s_per_round": round(per_round, 4) if per_round is not None else None,
        "net_cpu_s_per_round": round(net, 4) if net is not None else None,
        "us_per_socket_round": round(net * 1e6 / sockets, 2) if net is not None and sockets else None,
        "cpu_mean_pct": cpu["cpu_mean_pct"], "cpu_peak_1s_pct": cpu["cpu_peak_1s_pct"],
        "pings_per_socket_round": round((after.get("pings", 0) - before.get("pings", 0)) / max(1, sockets) / rounds, 3),
        "dropped": after.get("dropped", 0), "machine_busy_pct": span["machine"]["machine_busy_pct"],
    }


def print_scale_row(row: dict, file=sys.stdout) -> None:
    print(f"  {row['sockets']:>6} sockets: {row['cpu_s_per_round']} CPU s/interval "
          f"({row['us_per_socket_round']} µs/socket/interval net of idle), peak 1 s {row['cpu_peak_1s_pct']} %, "
          f"pings/socket/interval {row['pings_per_socket_round']}, dropped {row['dropped']}", file=file, flush=True)


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("mode", choices=("crowd", "scale", "report"))
    p.add_argument("results", nargs="?", help="report: the JSON lines file")
    p.add_argument("--url", help="server base, e.g. ws://127.0.0.1:9000")
    p.add_argument("--server-pid", type=int, help="the daemon (sampled from /proc)")
    p.add_argument("--interval-ms", type=int, default=10000, help="the daemon's ping interval (10000)")
    p.add_argument("--sockets", type=int, default=16000, help="crowd: idle sockets (16000)")
    p.add_argument("--hold-intervals", type=float, default=2.2, help="crowd: each crowd phase, in intervals (2.2)")
    p.add_argument("--baseline", type=float, default=0.0, help="crowd: baseline seconds (one interval)")
    p.add_argument("--quiet", type=float, default=3.0, help="crowd: probe-only seconds before the crowd (3)")
    p.add_argument("--heartbeat", type=float, default=5.0, help="crowd: HEARTBEAT period, 0 = silent (5)")
    p.add_argument("--close-timeout", type=float, default=30.0, help="crowd: longest wait for the close (30)")
    p.add_argument("--counts", default="1000,2000,4000,8000,16000,18000", help="scale: crowd sizes")
    p.add_argument("--scale-intervals", type=int, default=2, help="scale: whole intervals measured per size (2)")
    p.add_argument("--settle", type=float, default=1.0, help="scale: seconds after connecting (1)")
    p.add_argument("--pairs", type=int, default=50, help="relay pairs (50; scale: 1)")
    p.add_argument("--window", type=int, default=1, help="messages in flight per pair in load phases (1)")
    p.add_argument("--probe-rate", type=float, default=200.0, help="probe msgs/s in total (200; scale: 10)")
    p.add_argument("--relay-procs", type=int, default=1, help="relay client processes (1)")
    p.add_argument("--per-proc", type=int, default=4000, help="crowd sockets per process, at most (4000)")
    p.add_argument("--source-base", default="127.0.0.10", help="first crowd source address (127.0.0.10)")
    p.add_argument("--connect-rate", type=float, default=1500.0, help="crowd sockets opened per second (1500)")
    p.add_argument("--connect-concurrency", type=int, default=64, help="handshakes in flight per process (64)")
    p.add_argument("--connect-timeout", type=float, default=20.0)
    p.add_argument("--drain-timeout", type=float, default=3.0)
    p.add_argument("--min-bytes", type=int, default=2048)
    p.add_argument("--max-bytes", type=int, default=4096)
    p.add_argument("--key", default="peerjs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--command", default="", help="report: the command line to print")
    p.add_argument("--binary", default="", help="report: the daemon binary to name")
    opts = p.parse_args(argv)
    if opts.mode == "report":
        if not opts.results:
            p.error("report needs the results file")
        return opts
    if not opts.url or not opts.server_pid:
        p.error("crowd and scale need --url and --server-pid")
    opts.url = opts.url.rstrip("/")
    opts.counts = [int(c) for c in opts.counts.split(",") if c.strip()]
    if opts.mode == "scale":
        opts.heartbeat = 0.0
        opts.pairs = 1 if "--pairs" not in argv else opts.pairs
        opts.probe_rate = 10.0 if "--probe-rate" not in argv else opts.probe_rate
    opts.relay_procs = max(1, min(opts.relay_procs, opts.pairs))
    if opts.pairs < 1 or opts.per_proc < 1 or opts.connect_rate <= 0 or opts.probe_rate <= 0:
        p.error("--pairs, --per-proc, --connect-rate and --probe-rate must be positive")
    if opts.mode == "scale" and (not opts.counts or min(opts.counts) < 1 or opts.scale_intervals < 1):
        p.error("--counts needs positive sizes and --scale-intervals >= 1")
    return opts


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    if opts.mode == "report":
        from crowd_report import report
        report(opts.results, opts.command, opts.binary)
        return 0
    record = run_crowd(opts) if opts.mode == "crowd" else run_scale(opts)
    from crowd_report import print_summary
    print_summary(record)
    print(json.dumps(record, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
