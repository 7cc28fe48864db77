#!/usr/bin/env python3
"""Cluster failover: SIGKILL the leader of three daemons on one PostgreSQL database behind
HAProxy and time how long its clients take to resume through the balancer (ADR 0012,
docs/deploy-cluster.md). `scripts/bench failover` runs it.

Subcommands:
  run     T trials; progress on stderr; a summary and, as the last stdout line, one JSON object.
  report  The markdown section from the last JSON line of a results file.

It reuses the end-to-end fixtures of Tests/e2e (imported, not copied): `pgserver.PostgresServer`
(durable=False: fsync off, as the cluster tests run it) once for the whole run, `haproxy.HAProxy`,
`janus_config.free_tcp_ports`, and `webhook_harness.base_env` / `user_token` for the daemons'
environment and the users' HS256 tokens. Each trial:

1. A fresh database; three `switchboard serve --host 127.0.0.1 --port P --admin-port A
   --state-dir DIR --config FILE` (ports chosen free, a state directory each, store.kind
   postgres, store.postgres_lease_ms L) and HAProxy in TCP mode in front of them, checking
   `GET /readyz` on each admin port every --check-ms (fall 2, rise 2). The first daemon starts
   and leads; each of the two others starts after a pause drawn from 0 to L/3 (a chosen phase:
   started together, the standbys' tries, every L/3, fall in step with the leader's renewals,
   as often, and a standby tries just after the lease lapses, which daemons started apart
   do not). It waits until one daemon printed its ready line, the two others printed that they stand by, and HAProxy
   reports the leader UP and the others DOWN.
2. N clients (users u0..uN-1, a token each) open /v1/connect through HAProxy; clients 2k and
   2k+1 send `call.join` (type default, id T<trial>-<k>, create: true). Each keeps its
   resume_token, its session id and the seq of the last event it read.
3. After a pause drawn uniformly from 0 to a third of the lease (the renewal period; a chosen
   phase, not a wait for a condition: without it the kill came straight after the joins, and two
   of the first trials found a lease renewed ~2 ms before), t0: the leader is SIGKILLed. The lease it had left is read from the database right after
   (leader.lease_until against the kill's wall-clock time: one host, one clock). Every client,
   once its socket drops, reconnects through HAProxy in a loop (at once, then every
   --backoff-ms) with its resume_token and last_seq in the auth frame, until `connection.ok`
   or --reconnect-timeout after t0. A client's sample is t0 → `connection.ok` with
   `resumed: true`; its session must still be listed in `sessions`. Meanwhile the run notes
   when a standby logs that it leads, when it prints its ready line (the takeover), and when
   HAProxy first reports it UP (its stats socket polled every 20 ms).
4. The clients close, the daemons get SIGTERM (SIGKILL 20 s later), HAProxy stops.

Nothing sleeps to wait for a condition: every wait polls with a deadline (the one sleep is the
clients' back-off between reconnect attempts). Only 127.0.0.1 is used. Every process started
here is ended here, by PID; a trial that exceeds --trial-timeout is abandoned (cleaned up) and
fails the run.

The parts: the trial in cluster_trial.py, its daemons and the Tests/e2e fixtures in
cluster_daemons.py, its clients in cluster_clients.py; the error type, `poll` and the command
line, shared with the other cluster drivers, in cluster_driver.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_daemons import Fixtures, log  # noqa: E402
from cluster_driver import BenchError, add_report_parser, bench_main  # noqa: E402 - one error type and command line for the cluster drivers
from cluster_trial import Trial, median  # noqa: E402


# ---------------------------------------------------------------- the run

async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise BenchError(f"not executable: {binary}")
    log_dir = Path(opts.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    fx = Fixtures(binary)
    trials = []
    log(f"{opts.trials} trials: {opts.clients} clients, 3 daemons ({binary}), store.postgres_lease_ms {opts.lease_ms}, "
        f"HAProxy checks every {opts.check_ms} ms; daemon logs in {log_dir}")
    pg = await asyncio.to_thread(fx.PostgresServer, durable=False)
    await asyncio.to_thread(pg.start)
    try:
        for number in range(1, opts.trials + 1):
            trial = Trial(opts, fx, pg, number, binary, log_dir)
            try:
                result = await asyncio.wait_for(trial.run(), opts.trial_timeout)
            except asyncio.TimeoutError:
                raise BenchError(f"trial {number} took over {opts.trial_timeout:.0f} s; logs: {log_dir}") from None
            trials.append(result)
            log(f"trial {number}: {result['resumed']}/{result['clients']} resumed; kill → resumed median "
                f"{result['resume_p50_ms']} ms, max {result['resume_max_ms']} ms; takeover (kill → ready line) "
                f"{result['takeover_ms']} ms; lease left at the kill {result['lease_left_ms']} ms; HAProxy UP at "
                f"{result['balancer_up_ms']} ms; outcomes {result['outcomes']}")
    finally:
        await asyncio.to_thread(pg.close)
    return summarize(opts, binary, trials)


def summarize(opts, binary: Path, trials: list[dict]) -> dict:
    keys = ("resume_p50_ms", "resume_max_ms", "resume_min_ms", "resume_p90_ms", "resumed", "takeover_ms", "resume_over_lease",
            "lease_left_ms", "lapse_to_lead_ms", "kill_to_lead_ms", "lead_to_ready_ms", "ready_to_up_ms", "balancer_up_ms",
            "up_to_first_resume_ms", "up_to_p50_resume_ms", "old_down_ms", "drop_p50_ms", "attempts_p50",
            "first_attempt_p50_ms")
    record = {"mode": "cluster-failover", "trials": len(trials), "clients": opts.clients, "lease_ms": opts.lease_ms,
              "check_ms": opts.check_ms, "backoff_ms": opts.backoff_ms, "binary": str(binary),
              "medians": {key: median([t[key] for t in trials]) for key in keys},
              "resumed_min": min((t["resumed"] for t in trials), default=0),
              "detail": trials}
    p50 = record["medians"]["resume_p50_ms"]
    record["medians"]["ratio_p50_to_lease"] = round(p50 / opts.lease_ms, 2) if p50 is not None else None
    return record


def print_summary(record: dict) -> None:
    m = record["medians"]
    print(f"{record['trials']} trials, {record['clients']} clients, lease {record['lease_ms']} ms: kill → resumed median "
          f"{m['resume_p50_ms']} ms (max {m['resume_max_ms']} ms), {m['resumed']:g} resumed (fewest in a trial: "
          f"{record['resumed_min']}), takeover {m['takeover_ms']} ms, median ÷ lease {m['ratio_p50_to_lease']}")


# ---------------------------------------------------------------- report

def cell(value, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def report(path: str, command: str | None) -> str:
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not records:
        return "no cluster failover run recorded"
    r = records[-1]
    m, detail = r["medians"], r["detail"]

    def row(label: str, key: str, digits: int = 0, unit: str = " ms") -> str:
        each = " / ".join(cell(t.get(key), digits) for t in detail)
        return f"| {label} | {cell(m.get(key), digits)}{unit if m.get(key) is not None else ''} | {each} |"

    lease = r["lease_ms"]
    ratio_each = " / ".join(cell(t.get("resume_over_lease"), 2) for t in detail)
    lines = [
        (f"**Cluster failover: the leader SIGKILLed** (3 daemons on one PostgreSQL database behind HAProxy; "
         f"`store.postgres_lease_ms` **{lease:,}**; HAProxy checks `GET /readyz` every {r['check_ms']} ms, fall 2 rise 2; "
         f"{r['clients']} clients through HAProxy, in calls of 2, reconnecting every {r['backoff_ms']} ms once dropped and "
         f"resuming with their `resume_token`; the kill at a random point of the leader's renewals; "
         f"{r['trials']} trials; ms after the kill)"),
        "",
        "| measure | median of trials | trials |",
        "|---|---|---|",
        row("kill → `connection.ok` resumed, median over clients", "resume_p50_ms"),
        row("kill → `connection.ok` resumed, max over clients", "resume_max_ms"),
        f"| clients resumed (session kept) | {cell(m['resumed'])} of {r['clients']} | "
        + " / ".join(str(t["resumed"]) for t in detail) + " |",
        row("takeover: kill → the new leader's ready line", "takeover_ms"),
        f"| median kill → resumed ÷ lease | {cell(m['ratio_p50_to_lease'], 2)} | {ratio_each} |",
        "",
        "Where the time goes (each row from the kill's clock; medians of trials):",
        "",
        "| phase | median | trials |",
        "|---|---|---|",
        row("lease the dead leader had left at the kill (renewed every lease ÷ 3)", "lease_left_ms"),
        row("lease lapsed → a standby takes the lead (each tries every lease ÷ 3, at random phases)", "lapse_to_lead_ms"),
        row("takes the lead → ready line (starts from the database, binds)", "lead_to_ready_ms"),
        row("ready line → HAProxy reports it UP (rise 2; its stats polled every 20 ms)", "ready_to_up_ms"),
        row("UP → first client resumed", "up_to_first_resume_ms"),
        row("UP → median client resumed", "up_to_p50_resume_ms"),
        row("(kill → clients' sockets dropped, median)", "drop_p50_ms"),
        row("(kill → HAProxy reports the dead leader DOWN: fall 2)", "old_down_ms"),
        row("(a client's first reconnect attempt, start to end, median)", "first_attempt_p50_ms"),
        row("(reconnect attempts per client, median)", "attempts_p50", unit=""),
    ]
    odd = [t for t in detail if t["resumed"] < t["clients"]]
    for t in odd:
        lines.append("")
        lines.append(f"Trial {t['trial']}: {t['resumed']} of {t['clients']} resumed; outcomes {t['outcomes']}; "
                     f"errors: {t['failed_errors']}")
    if command:
        lines += ["", f"Command: `{command}`; daemon: `{r['binary']}`"]
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def trial_parser(doc: str, clients: int, trials: int) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """`run` (a trial's options) and `report RESULTS [--command C]`: the parser, and its `run`
    subparser for a driver's own options (cluster_node_loss.py's `--kill`)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    sub = p.add_subparsers(dest="subcommand", required=True)
    r = sub.add_parser("run", help="T trials")
    r.add_argument("--switchboard-bin", required=True, help="the daemon to run (three of it per trial)")
    r.add_argument("--clients", type=int, default=clients, help=f"clients, users u0..uN-1, in calls of 2 (default {clients})")
    r.add_argument("--trials", type=int, default=trials, help=f"trials, each on a fresh database and daemons (default {trials})")
    r.add_argument("--lease-ms", type=int, default=2000, help="store.postgres_lease_ms (default 2000)")
    r.add_argument("--check-ms", type=int, default=100, help="HAProxy's health-check interval (default 100)")
    r.add_argument("--backoff-ms", type=float, default=50, help="a client's pause between reconnect attempts (default 50)")
    r.add_argument("--reconnect-timeout", type=float, default=None,
                   help="a client gives up this long after the kill (default 4 leases + 20 s)")
    r.add_argument("--start-timeout", type=float, default=60, help="bound on a trial's start and joins (default 60 s)")
    r.add_argument("--request-timeout", type=float, default=10, help="bound on one connect or request (default 10 s)")
    r.add_argument("--trial-timeout", type=float, default=None, help="bound on one whole trial (default: derived)")
    r.add_argument("--log-dir", required=True, help="daemon logs go here (trialN-nI.log)")
    add_report_parser(sub)
    return p, r


def checked(p: argparse.ArgumentParser, opts):
    """``opts`` with the derived timeouts set; a bad count or lease is a usage error."""
    if opts.subcommand == "run":
        if opts.clients < 1 or opts.trials < 1 or opts.lease_ms < 100:
            p.error("--clients and --trials must be positive, --lease-ms at least 100")
        if opts.reconnect_timeout is None:
            opts.reconnect_timeout = 4 * opts.lease_ms / 1000 + 20
        if opts.trial_timeout is None:
            opts.trial_timeout = 3 * opts.start_timeout + opts.reconnect_timeout + 60
    return opts


def main(argv: list[str]) -> int:
    p, _ = trial_parser(__doc__, 100, 5)
    return bench_main("cluster failover", checked(p, p.parse_args(argv)), run, report, print_summary)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
