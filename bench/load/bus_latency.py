"""``scripts/bench bus``: PostgresBus latency (bench/bus/main.swift) against a private PostgreSQL.

Starts Debian's PostgreSQL on a free 127.0.0.1 port (``Tests/e2e/pgserver.py``, fsync off), and
for each of ``--runs`` runs a fresh database and one ``switchboard-bus-bench`` process: a
message from node a to node b and straight back, one at a time, inline and by reference, and
``SELECT 1`` round trips as the baseline measured in the same process. Prints each run and the
medians over runs as a markdown table; the last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "e2e"))

from pgserver import PostgresServer  # noqa: E402

NAMES = ("select_1_round_trip", "inline_round_trip", "by_reference_round_trip")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--command", default="scripts/bench bus")
    args = parser.parse_args()
    runs = []
    with PostgresServer(durable=False) as pg:
        for run in range(args.runs):
            url = pg.create_database(f"bus{run}")
            done = subprocess.run([args.bin, "--url", url, "--messages", str(args.messages)], capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                print(done.stdout + done.stderr, file=sys.stderr)
                return 1
            print(f"run {run + 1}: " + " | ".join(done.stdout.strip().splitlines()[:-1]), file=sys.stderr)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {name: {p: statistics.median(r[name][p] for r in runs) for p in ("p50_us", "p90_us", "p99_us")} for name in NAMES}
    base = medians["select_1_round_trip"]["p50_us"]
    print(f"Command: `{args.command}` ({args.runs} runs of {args.messages} round trips each; medians over runs, µs)\n")
    print("| round trip | p50 | p90 | p99 | p50 ÷ SELECT 1 |")
    print("|---|---|---|---|---|")
    for name in NAMES:
        m = medians[name]
        print(f"| {name.replace('_', ' ')} | {m['p50_us']:.0f} | {m['p90_us']:.0f} | {m['p99_us']:.0f} | {m['p50_us'] / base:.2f} |")
    print(f"\nA message from one node to another (half the inline round trip): p50 {medians['inline_round_trip']['p50_us'] / 2:.0f} µs.")
    print(json.dumps({"runs": runs, "medians": medians}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
