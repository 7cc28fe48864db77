#!/usr/bin/env python3
"""Turn relay_load.py's JSON lines into the markdown table scripts/bench prints.

Usage: report.py RESULTS.jsonl --command "scripts/bench relay ..." [--baseline echo]

Each line of RESULTS.jsonl is one run of one server. Rows show the median over
a server's runs; the ratio row compares every other server with the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

LOAD_COLUMNS = [
    ("msgs/s", "msgs_per_s", "{:,.0f}"),
    ("p50 µs", "p50_us", "{:,.0f}"),
    ("p99 µs", "p99_us", "{:,.0f}"),
    ("CPU µs/msg", "server_cpu_us_per_msg", "{:.2f}"),
    ("server CPU %", "server_cpu_pct", "{:.0f}"),
    ("busiest thread %", "server_top_thread_pct", "{:.0f}"),
    ("RSS KiB", "server_rss_kib", "{:,.0f}"),
    ("client CPU µs/msg", "client_cpu_us_per_msg", "{:.2f}"),
    ("other tenants %", "other_pct", "{:.0f}"),
]
IDLE_COLUMNS = [
    ("sockets open", "sockets_open", "{:,.0f}"),
    ("RSS before KiB", "rss_before_kib", "{:,.0f}"),
    ("RSS after KiB", "rss_held_kib", "{:,.0f}"),
    ("KiB/socket", "rss_per_socket_kib", "{:.2f}"),
    ("idle CPU %", "idle_server_cpu_pct", "{:.2f}"),
]
RATIOS = {"relay": ["msgs_per_s", "p99_us", "server_cpu_us_per_msg"],
          "echo": ["msgs_per_s", "p99_us", "server_cpu_us_per_msg"],
          "idle": ["rss_per_socket_kib"]}


def load(path: str) -> list[dict]:
    """The run records, in file order."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def by_server(records: list[dict]) -> dict[str, list[dict]]:
    """Records grouped by label, labels in order of first appearance."""
    groups: dict[str, list[dict]] = {}
    for record in records:
        groups.setdefault(record["label"], []).append(record)
    return groups


def median(records: list[dict], key: str) -> float | None:
    """Median of a field over runs, ignoring runs without it."""
    values = [r[key] for r in records if r.get(key) is not None]
    return statistics.median(values) if values else None


def cell(value: float | None, fmt: str) -> str:
    """A formatted table cell, 'n/a' when missing."""
    return "n/a" if value is None else fmt.format(value)


def table(groups: dict[str, list[dict]], columns) -> list[str]:
    """Markdown rows: one per server, medians over its runs."""
    with_bound = any("bound" in r for records in groups.values() for r in records)
    head = ["server", "runs"] + [name for name, _, _ in columns]
    head += ["bound (per run)"] if with_bound else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, records in groups.items():
        cells = [label, str(len(records))]
        cells += [cell(median(records, key), fmt) for _, key, fmt in columns]
        if with_bound:
            cells.append(", ".join(r.get("bound", "-") for r in records))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ratio_lines(groups: dict[str, list[dict]], baseline: str, keys: list[str]) -> list[str]:
    """'x/baseline' ratios of the medians."""
    if baseline not in groups:
        return []
    out = []
    for label, records in groups.items():
        if label == baseline:
            continue
        parts = []
        for key in keys:
            mine, base = median(records, key), median(groups[baseline], key)
            value = f"{mine / base:.2f}" if mine is not None and base else "n/a"
            parts.append(f"{key} {value}")
        out.append(f"Ratio {label}/{baseline}: " + ", ".join(parts))
    return out


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def lws_version() -> str:
    """The libwebsockets version pkg-config reports."""
    try:
        return subprocess.run(["pkg-config", "--modversion", "libwebsockets"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_facts() -> list[str]:
    """nproc, CPU model, kernel, library versions."""
    try:
        import picows
        picows_version = picows.__version__
    except ImportError:
        picows_version = "missing"
    return [
        f"- nproc: {os.cpu_count()}; CPU: {cpu_model()}; kernel: {platform.release()}",
        f"- libwebsockets {lws_version()}; Python {platform.python_version()}; "
        f"picows {picows_version}",
    ]


def run_facts(records: list[dict]) -> list[str]:
    """The load's shape, from the first record."""
    r = records[0]
    if r["mode"] == "idle":
        return [f"- load: {r['sockets_requested']} {r['target']} sockets from {r['procs']} "
                f"processes, heartbeat every {r['heartbeat_s']} s, held {r['hold_s']} s"]
    return [f"- load: {r['mode']}, {r['connections']} connections, window {r['window']}, "
            f"{r['min_bytes']}-{r['max_bytes']} B messages, {r['procs']} client processes, "
            f"{r['warmup']} s warmup + {r['seconds']} s measured; latency is {r['latency']}"]


DISTURBED_PCT = 25.0


def warnings(records: list[dict]) -> list[str]:
    """Runs that lost messages or connections, or shared the CPUs with other work."""
    out = []
    disturbed = [r for r in records if (r.get("other_pct") or 0.0) > DISTURBED_PCT]
    if disturbed:
        out.append(f"- NOTE: {len(disturbed)} of {len(records)} runs shared the CPUs with other "
                   f"processes (> {DISTURBED_PCT:.0f} % of a core, column 'other tenants'): "
                   "msgs/s and latency are unreliable there; CPU µs/msg holds up better")
    for r in records:
        if r.get("bad") or r.get("lost"):
            out.append(f"- WARNING {r['label']}: {r['bad']} malformed, {r['lost']} lost")
        if r.get("refused") or r.get("failed") or r.get("closed_by_server"):
            out.append(f"- WARNING {r['label']}: refused {r['refused']}, failed {r['failed']}, "
                       f"closed by server {r['closed_by_server']} {r.get('notes', {})}")
    return out


def main(argv: list[str]) -> int:
    """Print the report for one results file."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results")
    p.add_argument("--command", default="")
    p.add_argument("--baseline", default="echo")
    opts = p.parse_args(argv)
    records = load(opts.results)
    if not records:
        print("no results", file=sys.stderr)
        return 1
    mode = records[0]["mode"]
    groups = by_server(records)
    lines = table(groups, IDLE_COLUMNS if mode == "idle" else LOAD_COLUMNS)
    ratios = ratio_lines(groups, opts.baseline, RATIOS[mode])
    lines += ([""] + ratios if ratios else [])
    lines += ["", f"Command: `{opts.command}`"] + run_facts(records) + machine_facts()
    lines += warnings(records)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
