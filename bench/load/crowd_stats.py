"""The crowd benchmark's measurements: the daemon's CPU every 100 ms, relay buckets, windows.

The relay processes count every relayed message in the 100 ms bucket of its arrival
(CLOCK_MONOTONIC, shared by all processes): messages, the worst latency, and a histogram of
latencies to three significant digits. A phase is a [t0, t1) span of the parent's clock; its
figures come from the buckets wholly inside it.
"""

from __future__ import annotations

import collections
import threading
import time

from procstat import stat_cpu_us
from summary import percentiles

BUCKET_NS = 100_000_000


def quantize(us: int) -> int:
    """A latency (µs) rounded down to three significant digits (exact below 1 ms)."""
    if us < 1000:
        return us
    step = 10 if us < 10_000 else 100 if us < 100_000 else 1000 if us < 1_000_000 else 10_000
    return us - us % step


def merge_buckets(parts: list[dict]) -> dict[int, list]:
    """One {bucket: [messages, worst µs, Counter]} from the relay processes' own."""
    merged: dict[int, list] = {}
    for part in parts:
        for bucket, (count, worst, hist) in part.items():
            entry = merged.setdefault(bucket, [0, 0, collections.Counter()])
            entry[0] += count
            entry[1] = max(entry[1], worst)
            entry[2].update(hist)
    return merged


def relay_window(buckets: dict[int, list], t0_ns: int, t1_ns: int) -> dict:
    """msgs/s, latency percentiles, the worst message and the slowest second within [t0, t1)."""
    first, last = -(-t0_ns // BUCKET_NS), t1_ns // BUCKET_NS  # whole buckets only
    span = max(0, last - first)
    hist: collections.Counter = collections.Counter()
    count = worst = 0
    per_second = collections.Counter()
    for bucket in range(first, last):
        entry = buckets.get(bucket)
        per_second[(bucket - first) // 10] += entry[0] if entry else 0
        if entry:
            count += entry[0]
            worst = max(worst, entry[1])
            hist.update(entry[2])
    pct = percentiles(hist)
    whole = [per_second[k] for k in range(span // 10)]
    return {
        "seconds": round(span * BUCKET_NS / 1e9, 1), "messages": count,
        "msgs_per_s": round(count / (span * BUCKET_NS / 1e9)) if span else None,
        "p50_us": pct[50], "p99_us": pct[99], "p999_us": pct[99.9],
        "worst_us": worst if count else None,
        "slowest_second_msgs": min(whole) if whole else None,
    }


class CpuSampler(threading.Thread):
    """Reads utime+stime of a process from /proc/PID/stat every `period` seconds."""

    def __init__(self, pid: int, period: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples: list[tuple[int, int]] = []  # (monotonic ns, CPU µs)
        self.halt = threading.Event()

    def run(self) -> None:
        """Sample on a fixed schedule until stopped or the process is gone."""
        due = time.monotonic()
        while not self.halt.is_set():
            try:
                self.samples.append((time.monotonic_ns(), stat_cpu_us(f"/proc/{self.pid}/stat")))
            except (FileNotFoundError, ProcessLookupError):
                return
            due += self.period
            self.halt.wait(max(0.0, due - time.monotonic()))

    def stop(self) -> None:
        """Stop sampling (bounded wait)."""
        self.halt.set()
        self.join(2)

    def between(self, t0_ns: int, t1_ns: int) -> list[tuple[int, int]]:
        """The samples taken within [t0, t1]."""
        return [s for s in list(self.samples) if t0_ns <= s[0] <= t1_ns]


def cpu_window(samples: list[tuple[int, int]], width_s: float = 1.0) -> dict:
    """Mean CPU % of one core, the busiest `width_s` window and the CPU seconds used."""
    if len(samples) < 2:
        return {"cpu_mean_pct": None, "cpu_peak_1s_pct": None, "cpu_s": None}
    (ta, ca), (tb, cb) = samples[0], samples[-1]
    peak, j, width = 0.0, 0, int(width_s * 1e9)
    for i, (ti, ci) in enumerate(samples):
        j = max(j, i + 1)
        while j < len(samples) and samples[j][0] - ti < width:
            j += 1
        if j == len(samples):
            break
        tj, cj = samples[j]
        peak = max(peak, 100 * (cj - ci) / ((tj - ti) / 1000))
    mean = 100 * (cb - ca) / ((tb - ta) / 1000) if tb > ta else None
    return {"cpu_mean_pct": round(mean, 1) if mean is not None else None,
            "cpu_peak_1s_pct": round(peak, 1) if tb - ta >= width else None,
            "cpu_s": round((cb - ca) / 1e6, 3)}


def profile(sampler: CpuSampler, buckets: dict | None, t0_ns: int, t1_ns: int, interval_s: float) -> list[dict]:
    """Per ping interval from t0: daemon CPU (mean, busiest second) and the relay's figures."""
    rows, start, step = [], t0_ns, int(interval_s * 1e9)
    while start < t1_ns - BUCKET_NS:
        end = min(t1_ns, start + step)
        row = {"from_s": round((start - t0_ns) / 1e9, 1), "to_s": round((end - t0_ns) / 1e9, 1)}
        row.update(cpu_window(sampler.between(start, end)))
        if buckets is not None:
            relay = relay_window(buckets, start, end)
            row.update({k: relay[k] for k in ("msgs_per_s", "p99_us", "worst_us")})
        rows.append(row)
        start = end
    return rows
