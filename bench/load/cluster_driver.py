"""What the cluster drivers share (cluster_relay.py, cluster_calls.py, cluster_failover.py,
cluster_node_loss.py): their error type, `poll`, the `report RESULTS [--command C]` subcommand, and
`bench_main`, the command line that runs a driver or renders its report."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time


class BenchError(Exception):
    """A failure the run reports in one line (exit status 1)."""


async def poll(condition, timeout: float, what: str, interval: float = 0.02):
    """Poll ``condition()`` (a plain function) until truthy and return it; BenchError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(interval)  # the pause between polls, not a wait for the condition


def add_report_parser(sub) -> None:
    """The cluster drivers' `report RESULTS [--command C]` subcommand."""
    q = sub.add_parser("report", help="markdown from the last JSON line of a results file")
    q.add_argument("results")
    q.add_argument("--command", default=None, help="the command line to quote")


def bench_main(name: str, opts, run_bench, render, summary=None) -> int:
    """A cluster driver's command line (cluster_relay.py's, cluster_calls.py's, cluster_failover.py's,
    cluster_node_loss.py's): ``report`` prints ``render``'s table; ``run`` runs ``run_bench``
    (SIGTERM cancels it), prints ``summary(record)`` when given, then the record as a JSON line."""
    if opts.subcommand == "report":
        print(render(opts.results, opts.command))
        return 0

    async def guarded() -> dict:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
        return await run_bench(opts)

    try:
        record = asyncio.run(guarded())
    except BenchError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"{name}: interrupted (every process started was stopped)", file=sys.stderr)
        return 130
    if summary is not None:
        summary(record)
    print(json.dumps(record, separators=(",", ":")))
    return 0
