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
dead node's clients are the ones on it.

`--calls leader|spread` (default leader) sets `store.postgres_calls` on every daemon
(SWITCHBOARD_STORE_POSTGRES_CALLS), as `scripts/bench calls-cluster --calls` does. leader: the
leader runs every call and the other two relay their clients' call sockets to it. spread: every
daemon runs the calls its own clients create (a request for a call another daemon runs is
forwarded to it); a killed node's clients reconnect through HAProxy to another node, which takes
their connection over from the database (`connection.ok` with `resumed: true` lists their
sessions, also those in calls another daemon runs). The mode is in the JSON line (`calls`) and
the report's heading. Each trial:

1. A fresh database on one private PostgreSQL (fsync off); three `switchboard serve` daemons on it
   (ports chosen free, store.postgres_lease_ms L, store.postgres_standby relay, store.postgres_calls
   from --calls; left unset for leader when the binary predates the setting). The first starts
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
   `resumed: true` and the client's session still listed. Which clients must drop:
   - `--calls leader --kill relay`: the killed node's; the clients on the other two must not
     drop (counted).
   - `--calls leader --kill leader`: every client (the relaying daemons close their call sockets
     with 1012 once another daemon leads).
   - `--calls spread`, either victim: only the killed node's; the others keep their sockets, also
     across the leader's change and the adoption of the dead node's calls (counted). They are
     watched until (with `--kill leader`) the successor leads and every other live daemon logged
     that it relays to it (its generation), and until no `call_owner` row names the dead node
     (its calls adopted by the others' sweeps, once its lease lapsed; the calls it ran at the
     kill are counted), then `--settle-ms` more (default 500: a 1012 sent then would arrive
     within it).
   With `--kill leader` the run notes the takeover (kill → the successor's "leading" line).
4. The clients close, the daemons get SIGTERM (SIGKILL 20 s later), HAProxy stops.

Nothing sleeps to wait for a condition: waits poll with deadlines (the pauses are chosen phases,
the clients' back-off and, with spread, the --settle-ms observation window). Only 127.0.0.1 is used; only processes started here are ended, by PID.
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
        await self.start_daemons("relay", **self.fx.calls_settings)
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
        # Which clients must drop: the killed node's; with the leader's calls (leader mode) and the
        # leader killed, every client (the relaying daemons close theirs with 1012 once another leads).
        every = opts.kill == "leader" and opts.calls == "leader"
        affected = [c for c in self.clients if every or c.index % NODES == index]
        others = [c for c in self.clients if c not in affected]
        phase = random.uniform(0, opts.lease_ms / 3000)
        log(f"trial {self.number}: {len(self.clients)} clients on 3 nodes joined {(len(self.clients) + 1) // 2} calls "
            f"(store.postgres_calls {opts.calls}); SIGKILL {victim} ({opts.kill}) in {phase * 1000:.0f} ms; "
            f"{len(affected)} clients must drop and resume, {len(others)} must keep their sockets")
        await asyncio.sleep(phase)  # a random point of the renewal cycle, not a wait for a condition
        self.check_alive()

        t0 = time.monotonic()
        self.nodes[victim].kill()
        deadline = t0 + opts.reconnect_timeout
        spread = opts.calls == "spread"
        recovering = [asyncio.create_task(recover(c, self.lb.port, deadline, opts.backoff_ms / 1000)) for c in affected]
        victim_calls = await self.calls_owned(victim) if spread else None  # read while they recover
        await asyncio.gather(*recovering)
        adopted_at = None
        if spread and others:
            adopted_at = await self.watch_others(victim, deadline)
        # The others: still on their sockets (their watchers have not ended).
        others_dropped = sum(1 for c in others if c.watcher.done())
        self.check_alive()
        successor = next((n for n, node in self.nodes.items() if n != "n0" and node.lead_at is not None), None)
        samples = sorted((c.resumed_at - t0) * 1000 for c in affected if c.outcome == "resumed")
        drops = sorted((c.dropped_at - t0) * 1000 for c in affected if c.dropped_at is not None)
        p50 = round(statistics.median(samples), 1) if samples else None
        return {
            "trial": self.number, "kill": opts.kill, "calls": opts.calls, "lease_ms": opts.lease_ms, "clients": len(self.clients),
            "affected": len(affected), "dropped": len(drops), "resumed": len(samples),
            "failed": len(affected) - len(samples), "outcomes": dict(Counter(c.outcome for c in affected)),
            "failed_errors": [f"{n} × {o}: {e}" for (o, e), n in
                              Counter((c.outcome, c.last_error) for c in affected if c.outcome != "resumed").most_common(5)],
            "others": len(others), "others_dropped": others_dropped,
            "resume_min_ms": round(samples[0], 1) if samples else None, "resume_p50_ms": p50,
            "resume_p90_ms": round(percentile(samples, 0.9), 1) if samples else None,
            "resume_max_ms": round(samples[-1], 1) if samples else None,
            "resume_over_lease": round(p50 / opts.lease_ms, 3) if p50 is not None else None,
            "drop_p50_ms": round(statistics.median(drops), 1) if drops else None, "drop_max_ms": round(drops[-1], 1) if drops else None,
            "attempts_p50": statistics.median([c.attempts for c in affected]) if affected else None,
            "replay_incomplete": sum(1 for c in affected if c.replay_complete is False),
            "takeover_ms": ms(self.nodes[successor].lead_at - t0) if successor else None, "successor": successor,
            "victim_calls": victim_calls, "victim_calls_adopted_ms": ms(adopted_at - t0) if adopted_at and victim_calls else None,
            "others_watched_ms": ms(time.monotonic() - t0) if others else None,
        }

    async def calls_owned(self, name: str) -> int:
        """How many `call_owner` rows name node ``name`` (spread: the calls it runs)."""
        node_id = self.nodes[name].node_id
        if node_id is None or not all(ch.isalnum() or ch == "-" for ch in node_id):
            raise BenchError(f"no node ID in {name}'s log: {self.nodes[name].log_path}")
        row = await asyncio.to_thread(self.pg.psql, f"SELECT count(*) FROM call_owner WHERE node = '{node_id}'",
                                      database=self.database)
        return int(row)

    async def watch_others(self, victim: str, deadline: float) -> float:
        """Spread, with clients on the other nodes that must keep their sockets: wait (polling, to
        the trial's reconnect deadline) until, with the leader killed, a successor leads and every
        other live daemon logged that it relays to that generation (where, in leader mode, a
        relaying daemon closes its call sockets with 1012), and until no `call_owner` row names the
        dead node (its calls adopted); then watch ``--settle-ms`` more. Returns when the dead
        node's calls were all adopted (monotonic s)."""
        if self.opts.kill == "leader":
            await poll(lambda: self.followed(victim), max(0.0, deadline - time.monotonic()),
                       "a successor leading and the others relaying to it")
        while (left := await self.calls_owned(victim)) != 0:
            self.check_alive()
            if time.monotonic() >= deadline:
                raise BenchError(f"{left} calls of the killed {victim} not adopted {self.opts.reconnect_timeout:.0f} s after the kill")
            await asyncio.sleep(0.05)  # the pause between polls
        adopted_at = time.monotonic()
        await asyncio.sleep(self.opts.settle_ms / 1000)  # an observation window after the changes, not a wait for a condition
        return adopted_at

    def followed(self, victim: str) -> bool:
        """A successor leads and every other live daemon logged that it relays to its generation."""
        self.check_alive()
        successor = next((node for n, node in self.nodes.items() if n != victim and node.lead_at is not None), None)
        if successor is None or successor.generation is None:
            return False
        return all(any(at >= successor.lead_at and generation == successor.generation for at, generation in node.relaying)
                   for n, node in self.nodes.items() if n != victim and node is not successor)


async def run(opts) -> dict:
    binary = Path(opts.switchboard_bin).resolve()
    log_dir = Path(opts.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    fx = Fixtures(binary)
    fx.calls_settings = calls_settings(opts.calls, binary)
    log(f"{opts.trials} trials, SIGKILL the {opts.kill}: {opts.clients} clients, 3 relaying daemons ({binary}), "
        f"store.postgres_calls {opts.calls}, store.postgres_lease_ms {opts.lease_ms}, HAProxy checks every "
        f"{opts.check_ms} ms; logs in {log_dir}")
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
            adopted = (f"; the killed node's {result['victim_calls']} calls adopted at {result['victim_calls_adopted_ms']} ms, "
                       f"others watched to {result['others_watched_ms']} ms" if result["victim_calls"] is not None else "")
            log(f"trial {number}: {result['dropped']}/{result['affected']} dropped, {result['resumed']} resumed, "
                f"{result['failed']} failed; kill → resumed median {result['resume_p50_ms']} ms, "
                f"max {result['resume_max_ms']} ms; others dropped {result['others_dropped']}/{result['others']}{adopted}; "
                f"takeover {result['takeover_ms']} ms; outcomes {result['outcomes']}")
    finally:
        await asyncio.to_thread(pg.close)
    keys = ("resume_p50_ms", "resume_max_ms", "resume_min_ms", "resume_p90_ms", "drop_p50_ms", "takeover_ms",
            "victim_calls_adopted_ms")
    return {"kill": opts.kill, "calls": opts.calls, "lease_ms": opts.lease_ms, "clients": opts.clients,
            "check_ms": opts.check_ms, "backoff_ms": opts.backoff_ms, "binary": str(binary), "trials": trials,
            "medians": {k: median([t[k] for t in trials]) for k in keys},
            "resumed": sum(t["resumed"] for t in trials), "affected": sum(t["affected"] for t in trials),
            "dropped": sum(t["dropped"] for t in trials), "failed": sum(t["failed"] for t in trials),
            "others_dropped": sum(t["others_dropped"] for t in trials)}


def calls_settings(mode: str, binary: Path) -> dict[str, str]:
    """The daemons' store.postgres_calls for ``mode`` (as cluster_calls.py sets it): spread must be
    accepted by the binary; leader is left out for a binary that predates the setting."""
    import conftest  # Tests/e2e, on the path once Fixtures is made

    # Checked with what spread needs (check-config does not connect to the store).
    if conftest.binary_accepts(SWITCHBOARD_STORE_POSTGRES_CALLS=mode, SWITCHBOARD_STORE_KIND="postgres",
                               SWITCHBOARD_STORE_POSTGRES_URL="postgres://bench@127.0.0.1:1/bench",
                               SWITCHBOARD_STORE_POSTGRES_STANDBY="relay"):
        return {"STORE_POSTGRES_CALLS": mode}
    if mode != "leader":
        raise BenchError(f"{binary} does not accept SWITCHBOARD_STORE_POSTGRES_CALLS={mode}")
    log(f"{binary} does not know SWITCHBOARD_STORE_POSTGRES_CALLS; left out (leader mode)")
    return {}


def report(path: str, command: str | None) -> str:
    record = json.loads(Path(path).read_text().strip().splitlines()[-1])
    trials, m = record["trials"], record["medians"]

    def cells(key: str) -> str:
        return " / ".join("–" if t[key] is None else f"{t[key]:,.0f}" for t in trials)

    def value(v) -> str:
        return "–" if v is None else f"{v:,.0f}"

    who = "a relaying node (the second daemon)" if record["kill"] == "relay" else "the leader"
    calls = record.get("calls", "leader")  # results from before --calls: leader mode
    runs = ("the leader runs every call" if calls == "leader"
            else "every daemon runs the calls its own clients create")
    dead = ("every client" if calls == "leader" and record["kill"] == "leader" else "the dead node's clients")
    lines = [
        f"**SIGKILL {who}, `store.postgres_calls` {calls}; its clients resume through HAProxy** ({record['clients']} clients, "
        f"client i on node i mod 3, calls of 2 across nodes ({runs}); `store.postgres_lease_ms` {record['lease_ms']:,}; "
        f"HAProxy checks every {record['check_ms']} ms; "
        f"reconnect back-off {record['backoff_ms']:.0f} ms; medians of {len(trials)} trials)",
        "",
        "| measure | median | trials |",
        "|---|---|---|",
        f"| kill → `connection.ok` resumed, median over {dead} | **{value(m['resume_p50_ms'])} ms** | {cells('resume_p50_ms')} |",
        f"| kill → resumed, max | {value(m['resume_max_ms'])} ms | {cells('resume_max_ms')} |",
        f"| kill → their sockets dropped (median) | {value(m['drop_p50_ms'])} ms | {cells('drop_p50_ms')} |",
        f"| clients resumed with their session | {record['resumed']} of {record['affected']} | "
        + " / ".join(f"{t['resumed']}/{t['affected']}" for t in trials) + " |",
        f"| clients that must drop: dropped / failed to resume | {record.get('dropped', '–')} / "
        f"{record.get('failed', record['affected'] - record['resumed'])} | "
        + " / ".join(f"{t.get('dropped', '–')}/{t.get('failed', t['affected'] - t['resumed'])}" for t in trials) + " |",
        "| resumed with `replay_complete: false` (events to re-fetch) | "
        f"{sum(t['replay_incomplete'] for t in trials)} | " + " / ".join(str(t["replay_incomplete"]) for t in trials) + " |",
        f"| clients on the other nodes whose socket dropped | {record['others_dropped']} | "
        + " / ".join(f"{t['others_dropped']}/{t['others']}" for t in trials) + " |",
    ]
    if record["kill"] == "leader":
        lines.append(f"| takeover: kill → the successor's \"leading\" line | {value(m['takeover_ms'])} ms | {cells('takeover_ms')} |")
    if calls == "spread":
        lines.append("| calls the killed node ran (`call_owner`, all trials) / kill → all adopted by the others | "
                     f"{sum(t['victim_calls'] or 0 for t in trials)} / {value(m.get('victim_calls_adopted_ms'))} ms | "
                     + " / ".join(f"{t['victim_calls']} / {value(t['victim_calls_adopted_ms'] if t['victim_calls'] else None)} ms"
                                  for t in trials) + " |")
    odd = [t for t in trials if t["resumed"] < t["affected"] or t["others_dropped"]]
    for t in odd:
        lines += ["", f"Trial {t['trial']}: {t['resumed']} of {t['affected']} resumed; outcomes {t['outcomes']}; "
                      f"errors: {t.get('failed_errors', [])}; {t['others_dropped']} of {t['others']} clients on the other nodes dropped"]
    if command:
        lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p, run_parser = trial_parser(__doc__, 99, 3)
    run_parser.add_argument("--kill", choices=("relay", "leader"), default="relay", help="the node SIGKILLed (default relay)")
    run_parser.add_argument("--calls", choices=("leader", "spread"), default="leader",
                            help="store.postgres_calls of every daemon: leader (default; the leader runs every call) or "
                                 "spread (every daemon runs its own clients' calls)")
    run_parser.add_argument("--settle-ms", type=float, default=500,
                            help="with --calls spread: how long the other nodes' clients are watched after the dead node's "
                                 "calls were adopted (and, with --kill leader, every live daemon follows the successor) "
                                 "(default 500)")
    return bench_main("node loss", checked(p, p.parse_args(argv)), run, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
