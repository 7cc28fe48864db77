"""Merge the markdown tables that each `scripts/bench` mode printed into one table.

Usage: table.py --command CMD MODE=FILE [MODE=FILE ...]

Every data row of every table in FILE becomes one row `| MODE | first cell | other cells |`,
so the whole suite's figures sit in one table that can be compared run to run. The header
names the command line and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from pathlib import Path


def machine_facts() -> str:
    """nproc, CPU model, kernel and Swift version, on one line."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        swift = subprocess.run(["swift", "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        swift = "swift: unknown"
    return f"nproc {os.cpu_count()}; CPU {model}; kernel {platform.release()}; {swift}"


def table_rows(text: str) -> list[tuple[list[str], list[str]]]:
    """(header, row) for every data row of every markdown table in `text`."""
    rows: list[tuple[list[str], list[str]]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif all(set(cell) <= set("-: ") for cell in cells):
            continue
        else:
            rows.append((header, cells))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--command", required=True)
    parser.add_argument("outputs", nargs="+", help="MODE=FILE")
    args = parser.parse_args()
    print(f"Command: `{args.command}`  \nMachine: {machine_facts()}\n")
    print("| benchmark | measure | figures (column: value) |")
    print("|---|---|---|")
    for item in args.outputs:
        mode, _, path = item.partition("=")
        text = Path(path).read_text(errors="replace") if Path(path).is_file() else ""
        rows = table_rows(text)
        if not rows:
            print(f"| {mode} | (no table: see {path}) | |")
        for header, cells in rows:
            figures = "; ".join(f"{name}: {value}" for name, value in zip(header[1:], cells[1:]) if value)
            print(f"| {mode} | {cells[0]} | {figures} |")


if __name__ == "__main__":
    main()
