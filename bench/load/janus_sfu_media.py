#!/usr/bin/env python3
"""Real media through the Janus SFU Switchboard chooses: join-to-first-frame and failover-to-first-frame.

Subcommands:
  run     T trials of Tests/e2e/test_switchboard_media.py's scenario (scripts/bench janus runs
          it): needs root. Creates a network namespace (Tests/e2e/netns.py), runs
          ``run_scenario`` inside it in a child Python with ``TEST_SWITCHBOARD_BIN`` set to
          --switchboard-bin, removes the namespace; prints a summary and, as the last stdout
          line, one JSON object.
  report  Turn the last JSON line of a results file into the markdown table of medians.

One run: one daemon (placement.poll_interval_ms 200, poll_timeout_ms 250, stale_after_ms 1000
unless told otherwise), a standby Janus registered as ``janus-ams``, and per trial a fresh Janus
registered as ``janus-fra-K``. In each trial alice and bob send ``call.join`` (location fra) at
once, alice publishes a generated VP8 track to the room of the join's ``sfu`` with her token and
the PIN, bob subscribes with his and decodes frames: **join-to-first-frame** is from sending
``call.join`` to bob's first decoded frame. Then the Janus holding the call is SIGKILLed (by
PID); both clients wait for their ``call.sfu_changed``, move to the room on ``janus-ams`` with
their new tokens, and **kill-to-first-frame** is from the kill to bob's first decoded frame
there. Refusals that provisioning lag explains (403, 426, 433) are retried for up to 2 s and
counted. Everything runs on the namespace's own addresses; the namespace and every process in
it are removed at the end, also after a failure or a timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "Tests" / "e2e"
sys.path.insert(0, str(E2E))

import netns  # noqa: E402  (Tests/e2e)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def run(opts) -> int:
    if os.geteuid() != 0:
        print("janus_sfu_media: needs root (it creates a network namespace with ip netns)", file=sys.stderr)
        return 2
    for tool in ("ip", "janus"):
        if not (shutil.which(tool) or (tool == "janus" and os.environ.get("TEST_JANUS_BIN"))):
            print(f"janus_sfu_media: {tool} not found on PATH", file=sys.stderr)
            return 2
    binary = Path(opts.switchboard_bin).absolute()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"janus_sfu_media: not executable: {binary}", file=sys.stderr)
        return 2
    from janus_harness import janus_version
    import test_switchboard_media as scenario

    env = dict(os.environ)
    env["TEST_SWITCHBOARD_BIN"] = str(binary)
    timeout = opts.timeout or scenario.scenario_timeout(opts.trials)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    began = time.monotonic()
    with netns.Namespace.create() as ns:
        print(f"== namespace {ns.name} ({ns.address}); {opts.trials} trials, daemon {binary}", file=sys.stderr, flush=True)
        result = ns.call("test_switchboard_media:run_scenario", {
            "address": ns.address, "trials": opts.trials, "frames": opts.frames,
            "stale_after_ms": opts.stale_after_ms, "poll_interval_ms": opts.poll_interval_ms,
            "poll_timeout_ms": opts.poll_timeout_ms,
        }, timeout=timeout, env=env)
    record = {
        "bench": "janus", "started": started, "seconds": round(time.monotonic() - began, 1),
        "binary": str(binary), "janus": janus_version(), "trials": opts.trials, "frames": opts.frames,
        "stale_after_ms": opts.stale_after_ms, "poll_interval_ms": opts.poll_interval_ms,
        "poll_timeout_ms": opts.poll_timeout_ms, "refused": result["refused"],
        "summary": result["summary"], "samples": result["trials"],
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "kernel": platform.release()},
    }
    summary = record["summary"]
    for key, label in scenario.MEASURES:
        if key in summary:
            s = summary[key]
            print(f"{label}: median {s['median']:.0f} ms, max {s['max']:.0f} ms "
                  f"({', '.join(f'{v:.0f}' for v in s['samples'])})")
    print(f"provisioning refusals retried: {summary['provisioning_refusals']}")
    print(json.dumps(record, separators=(",", ":")))
    return 0


def cell(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def report(path: str, command: str | None) -> str:
    from test_switchboard_media import MEASURES

    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        return "no janus run recorded"
    r = records[-1]
    s = r["summary"]
    lines = [
        (f"**Media through the Janus SFU Switchboard chose** ({r['trials']} trials; aiortc VP8 320×240 at "
         f"30 fps through Janus {r['janus']} in a network namespace; the daemon polls every "
         f"{r['poll_interval_ms']} ms, timeout {r['poll_timeout_ms']} ms, stale_after {r['stale_after_ms']:,} ms)"),
        "",
        "| measure | median ms | max ms | min ms |",
        "|---|---|---|---|",
    ]
    headline = {"join_to_first_frame_ms", "kill_to_first_frame_ms"}
    for key, label in MEASURES:
        if key not in s:
            continue
        name = f"**{label}**" if key in headline else label
        lines.append(f"| {name} | {cell(s[key]['median'])} | {cell(s[key]['max'])} | {cell(s[key]['min'])} |")
    refusals = s.get("provisioning_refusals", {})
    lines += [
        "",
        (f"Janus refusals retried while provisioning caught up (403 token not added yet, 426 no room yet, "
         f"433 not yet allowed), over all trials: at the join {refusals.get('publisher', 0)} (publisher) + "
         f"{refusals.get('subscriber', 0)} (subscriber); after call.sfu_changed {refusals.get('publisher_moved', 0)} "
         f"(publisher) + {refusals.get('subscriber_moved', 0)} (subscriber). Refused as they must be: "
         + ", ".join(f"{k} {v}" for k, v in sorted(r.get("refused", {}).items())) + "."),
        "",
        "Samples (ms): join-to-first-frame " + ", ".join(f"{v:,.0f}" for v in s["join_to_first_frame_ms"]["samples"])
        + "; kill-to-first-frame " + ", ".join(f"{v:,.0f}" for v in s["kill_to_first_frame_ms"]["samples"]),
        "",
    ]
    if command:
        lines.append(f"Command: `{command}`")
    m = r.get("machine", {})
    lines.append(f"- daemon: {r['binary']}; run took {r['seconds']} s")
    lines.append(f"- nproc: {m.get('nproc')}; CPU: {m.get('cpu')}; kernel: {m.get('kernel')}")
    return "\n".join(lines)


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run", help="run the trials (root)")
    r.add_argument("--trials", type=int, default=10, help="trials, each a new call and a SIGKILLed Janus (default 10)")
    r.add_argument("--switchboard-bin", required=True, help="the daemon binary")
    r.add_argument("--frames", type=int, default=10, help="frames bob decodes before and after the move (default 10)")
    r.add_argument("--stale-after-ms", type=int, default=1000, help="placement.stale_after_ms (default 1000)")
    r.add_argument("--poll-interval-ms", type=int, default=200, help="placement.poll_interval_ms (default 200)")
    r.add_argument("--poll-timeout-ms", type=int, default=250, help="placement.poll_timeout_ms (default 250; capped at a quarter of stale_after)")
    r.add_argument("--timeout", type=float, default=0, help="limit for the whole run in s (default 60 + 45 per trial)")
    q = sub.add_parser("report", help="markdown table from a results file")
    q.add_argument("results")
    q.add_argument("--command", help="the command line to print under the table")
    opts = p.parse_args(argv)
    if opts.mode == "run" and opts.trials < 1:
        p.error("--trials must be at least 1")
    return opts


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    if opts.mode == "run":
        return run(opts)
    print(report(opts.results, opts.command))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
