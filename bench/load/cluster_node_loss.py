#!/usr/bin/env python3
"""A node of a relaying cluster SIGKILLed: how long its clients take to resume through the
balancer (ADR 0012, docs/deploy-cluster.md; issue #17's "kill-to-resumed time for clients of a
dead node"). `scripts/bench node-loss` runs it.

Subcommands:
  run     T trials; progress on stderr; a summary and, as the last stdout line, one JSON object.
  report  The markdown section from the last JSON line of a results file.

It is cluster_failover.py's trial with relaying standbys, and imports its daemon and client
helpers (`Trial` from cluster_trial.py, `Client`, `watch`, `recover` from cluster_clients.py,
`Fixtures` from cluster_daemons.py, `poll` from cluster_driver.py) and its command line
(`trial_parser`, `checked`): cluster_failover.py kills the leader of idle standbys, whose
clients all sit on the leader. Here every daemon serves (`store.postgres_standby` relay), so a
dead node's clients are the ones on it. Each trial:

1. A fresh database on one private PostgreSQL (fsync off); three `switchboard serve` daemons on it
   (ports chosen free, store.postgres_lease_ms L, store.postgres_standby relay). The first starts
   and leads (its ready line); each of the two others starts after a pause drawn from 0 to L/3
   (a phase against the leader's renewals, as in cluster_failover.py). HAProxy in TCP mode in
   front checks `GET /readyz` on each admin port every --check-ms (fall 2, rise 2); the run waits
   until it reports all three UP.
2. N clients (users u0..uN-1): client i opens /v1/connect straight to node i mod 3 (so where each
   sits is known) and clients 2k and 2k+1 `call.join` one call (type default): every call has
   its two participants on two different nodes.
3. After a pause drawn from 0 to L/3, t0: the node chosen by --kill is SIGKILLed: `relay` (the
   second daemon, a relaying one) or `leader`. Every client whose socket drops reconnects
   through HAProxy (at once, then every --backoff-ms) with its resume_token and last_seq, until
   `connection.ok` or --reconnect-timeout after t0. A sample is t0 → `connection.ok` with
   `resumed: true` and the client's session still listed. With `relay`, the clients on the other
   two daemons must not drop (counted); with `leader`, every client drops (the relaying daemons
   close their sockets with 1012 once another daemon leads) and the run notes the takeover (kill
   → the successor's "leading" line).
4. The clients close, the daemons get SIGTERM (SIGKILL 20 s later), HAProxy stops.

Nothing sleeps to wait for a condition: waits poll with deadlines (the pauses are chosen phases
and the clients' back-off). Only 127.0.0.1 is used; only processes started here are ended, by PID.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cluster_clients import Client, recover, watch  # noqa: E402
from cluster_daemons import HOST, NODES, Fixtures, Node  # noqa: E402
from cluster_driver import BenchError, bench_main, poll  # noqa: E402
from cluster_failover import checked, trial_parser  # noqa: E402
from cluster_trial import Trial as FailoverTrial  # noqa: E402
from cluster_trial import median, ms, percentile  # noqa: E402


def log(message: str) -> None:
    print(f"[node-loss] {message}", file=sys.stderr, flush=True)


def ready(node: Node) -> bool:
    """Whether the daemon's own `GET /readyz` answers 200 (a relaying one: it reaches the leader)."""
    connection = http.client.HTTPConnection(HOST, node.admin_port, timeout=2)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


class Trial(FailoverTrial):
    """cluster_failover.py's trial (its set-up, clean-up and checks) with relaying standbys, clients
    placed per node, and the victim chosen by --kill."""

    async def start_cluster(self) -> None:
        """Relaying standbys: every daemon serves, and HAProxy sends clients to all three."""
        await self.start_daemons("relay")
        for name, node in self.nodes.items():
            await poll(lambda node=node: (self.check_alive(), ready(node))[1], self.opts.start_timeout, f"{name} ready")
        await self.wait_balanced({n: "UP" for n in self.nodes})

    def first_port(self, client: Client) -> int:
        """Client i connects straight to node i mod 3 (its reconnects go through HAProxy)."""
        return self.nodes[f"n{client.index % NODES}"].port

    async def _run(self) -> dict:
        opts = self.opts
        await self.start_cluster()
        await self.connect_clients()
        for client in self.clients:
            client.watcher = asyncio.create_task(watch(client))
        victim = "n0" if opts.kill == "leader" else "n1"
        index = int(victim[1:])
        affected = [c for c in self.clients if opts.kill == "leader" or c.index % NODES == index]
        others = [c for c in self.clients if c not in affected]
        phase = random.uniform(0, opts.lease_ms / 3000)
        log(f"trial {self.number}: {len(self.clients)} clients on 3 nodes joined {(len(self.clients) + 1) // 2} calls; "
            f"SIGKILL {victim} ({opts.kill}) in {phase * 1000:.0f} ms")
        await asyncio.sleep(phase)  # a random point of the renewal cycle, not a wait for a condition
        self.check_alive()

        t0 = time.monotonic()
        self.nodes[victim].kill()
        deadline = t0 + opts.reconnect_timeout
        await asyncio.gather(*(recover(c, self.lb.port, deadline, opts.backoff_ms / 1000) for c in affected))
        # The others: still on their sockets (their watchers have not ended).
        others_dropped = sum(1 for c in others if c.watcher.done())
        self.check_alive()
        successor = next((n for n, node in self.nodes.items() if n != "n0" and node.lead_at is not None), None)
        samples = sorted((c.resumed_at - t0) * 1000 for c in affected if c.outcome == "resumed")
        drops = sorted((c.dropped_at - t0) * 1000 for c in affected if c.dropped_at is not None)
        p50 = round(statistics.median(samples), 1) if samples else None
        return {
            "trial": self.number, "kill": opts.kill, "lease_ms": opts.lease_ms, "clients": len(self.clients),
            "affected": len(affected), "resumed": len(samples), "outcomes": dict(Counter(c.outcome for c in affected)),
            "others": len(others), "others_dropped": others_dropped,
            "resume_min_ms": round(samples[0], 1) if samples else None, "resume_p50_ms": p50,
            "resume_p90_ms": round(percentile(samples, 0.9), 1) if samples else None,
            "resume_max_ms": round(samples[-1], 1) if samples else None,
            "resume_over_lease": round(p50 / opts.lease_ms, 3) if p50 is not None else None,
            "drop_p50_ms": round(statistics.median(drops), 1) if drops else None, "drop_max_ms": round(drops[-1], 1) if drops else None,
            "attempts_p50": statistics.median([c.attempts for c in affected]) if affected else None,
            "replay_incomplete": sum(1 for c in affected if c.replay_complete is False),
            "takeover_ms": ms(self.nodes[successor].lead_at - t0) if successor else None, "successor": successor,
        }


async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    log_dir = Path(opts.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    fx = Fixtures(binary)
    log(f"{opts.trials} trials, SIGKILL the {opts.kill}: {opts.clients} clients, 3 relaying daemons ({binary}), "
        f"store.postgres_lease_ms {opts.lease_ms}, HAProxy checks every {opts.check_ms} ms; logs in {log_dir}")
    pg = await asyncio.to_thread(fx.PostgresServer, durable=False)
    await asyncio.to_thread(pg.start)
    trials = []
    try:
        for number in range(1, opts.trials + 1):
            try:
                result = await asyncio.wait_for(Trial(opts, fx, pg, number, binary, log_dir).run(), opts.trial_timeout)
            except asyncio.TimeoutError:
                raise BenchError(f"trial {number} took over {opts.trial_timeout:.0f} s; logs: {log_dir}") from None
            trials.append(result)
            log(f"trial {number}: {result['resumed']}/{result['affected']} resumed; kill → resumed median {result['resume_p50_ms']} ms, "
                f"max {result['resume_max_ms']} ms; others dropped {result['others_dropped']}/{result['others']}; "
                f"takeover {result['takeover_ms']} ms; outcomes {result['outcomes']}")
    finally:
        await asyncio.to_thread(pg.close)
    keys = ("resume_p50_ms", "resume_max_ms", "resume_min_ms", "resume_p90_ms", "drop_p50_ms", "takeover_ms")
    return {"kill": opts.kill, "lease_ms": opts.lease_ms, "clients": opts.clients, "check_ms": opts.check_ms,
            "backoff_ms": opts.backoff_ms, "binary": str(binary), "trials": trials,
            "medians": {k: median([t[k] for t in trials]) for k in keys},
            "resumed": sum(t["resumed"] for t in trials), "affected": sum(t["affected"] for t in trials),
            "others_dropped": sum(t["others_dropped"] for t in trials)}


def report(path: str, command: str | None) -> str:
    record = json.loads(Path(path).read_text().strip().splitlines()[-1])
    trials, m = record["trials"], record["medians"]

    def cells(key: str) -> str:
        return " / ".join("–" if t[key] is None else f"{t[key]:,.0f}" for t in trials)

    def value(v) -> str:
        return "–" if v is None else f"{v:,.0f}"

    who = "a relaying node (the second daemon)" if record["kill"] == "relay" else "the leader"
    lines = [
        f"**SIGKILL {who}; its clients resume through HAProxy** ({record['clients']} clients, client i on node i mod 3, "
        f"calls of 2 across nodes; `store.postgres_lease_ms` {record['lease_ms']:,}; HAProxy checks every {record['check_ms']} ms; "
        f"reconnect back-off {record['backoff_ms']:.0f} ms; medians of {len(trials)} trials)",
        "",
        "| measure | median | trials |",
        "|---|---|---|",
        f"| kill → `connection.ok` resumed, median over the dead node's clients | **{value(m['resume_p50_ms'])} ms** | {cells('resume_p50_ms')} |",
        f"| kill → resumed, max | {value(m['resume_max_ms'])} ms | {cells('resume_max_ms')} |",
        f"| kill → their sockets dropped (median) | {value(m['drop_p50_ms'])} ms | {cells('drop_p50_ms')} |",
        f"| clients resumed with their session | {record['resumed']} of {record['affected']} | "
        + " / ".join(f"{t['resumed']}/{t['affected']}" for t in trials) + " |",
        "| resumed with `replay_complete: false` (events to re-fetch) | "
        f"{sum(t['replay_incomplete'] for t in trials)} | " + " / ".join(str(t["replay_incomplete"]) for t in trials) + " |",
        f"| clients on the other nodes whose socket dropped | {record['others_dropped']} | "
        + " / ".join(f"{t['others_dropped']}/{t['others']}" for t in trials) + " |",
    ]
    if record["kill"] == "leader":
        lines.append(f"| takeover: kill → the successor's \"leading\" line | {value(m['takeover_ms'])} ms | {cells('takeover_ms')} |")
    if command:
        lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p, run_parser = trial_parser(__doc__, 99, 3)
    run_parser.add_argument("--kill", choices=("relay", "leader"), default="relay", help="the node SIGKILLed (default relay)")
    return bench_main("node loss", checked(p, p.parse_args(argv)), run, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
