"""Readings of a process and of the machine from /proc, for the benchmarks."""

from __future__ import annotations

import collections
import os
import time
from dataclasses import dataclass, field

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class ServerSample:
    """One reading of the server process: when, CPU time used, resident set.

    `threads` maps each thread id to its CPU time (µs), to find the busiest
    thread: a server with a pipeline of threads is bound by its slowest stage.
    """

    t_ns: int
    cpu_us: int
    rss_kib: int
    threads: dict[int, int] = field(default_factory=dict)
    #: Bytes the process caused to be written to storage (write_bytes of /proc/PID/io).
    write_bytes: int = 0


def stat_cpu_us(path: str) -> int:
    """utime + stime (fields 14 and 15 of proc(5) stat) of a process or thread, in µs."""
    with open(path, encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000 // CLK_TCK


def thread_cpu_us(pid: int) -> dict[int, int]:
    """CPU time of each of the process's threads (threads that exit are skipped)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = stat_cpu_us(f"/proc/{pid}/task/{tid}/stat")
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def read_cpu_ticks() -> dict[str, list[int]]:
    """Per-CPU jiffies from /proc/stat: user nice system idle iowait irq softirq steal."""
    out = {}
    with open("/proc/stat", encoding="ascii") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *values = line.split()
                out[name] = [int(v) for v in values[:8]]
    return out


def machine_delta(before: dict, after: dict) -> dict:
    """Busy, softirq and steal time per CPU and in total, in % of one CPU."""
    per_cpu, totals = {}, collections.Counter()
    for name, old in before.items():
        d = [b - a for a, b in zip(old, after.get(name, old), strict=True)]
        span = sum(d) or 1
        idle = d[3] + d[4]
        per_cpu[name] = round(100 * (span - idle) / span, 1)
        totals["busy"] += 100 * (span - idle) / span
        totals["softirq"] += 100 * d[6] / span
        totals["steal"] += 100 * d[7] / span
    return {"cpu_busy_pct": per_cpu, "machine_busy_pct": round(totals["busy"], 1),
            "softirq_pct": round(totals["softirq"], 1), "steal_pct": round(totals["steal"], 1)}


def proc_field(path: str, name: str) -> int:
    """The first number after `name:` in a /proc key-value file (0 when absent)."""
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def read_server(pid: int | None) -> ServerSample | None:
    """Read utime+stime (/proc/PID/stat, all threads), per thread, VmRSS and write_bytes."""
    if pid is None:
        return None
    now = time.monotonic_ns()
    cpu_us = stat_cpu_us(f"/proc/{pid}/stat")
    threads = thread_cpu_us(pid)
    rss = proc_field(f"/proc/{pid}/status", "VmRSS")
    written = proc_field(f"/proc/{pid}/io", "write_bytes")
    return ServerSample(now, cpu_us, rss, threads, written)
