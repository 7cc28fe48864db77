"""One trial of cluster_failover.py (`Trial`: its set-up, the kill, the clients' recovery, its
figures, its clean-up; cluster_node_loss.py's trial is a subclass) and the figures' helpers
(`ms`, `percentile`, `median`). Its daemons are in cluster_daemons.py, its clients in
cluster_clients.py."""

from __future__ import annotations

import asyncio
import math
import random
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from cluster_clients import Client, close_clients, open_socket, recover, request, watch
from cluster_daemons import HOST, NODES, Node, log
from cluster_driver import BenchError, poll

CALL_TYPE = "default"


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def percentile(ordered: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of an ascending list; None when empty."""
    if not ordered:
        return None
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


class Trial:
    """One trial (steps 1 to 4 of cluster_failover.py's docstring): ``run`` returns its figures and
    always cleans up, by PID, what it started."""

    def __init__(self, opts, fx, pg, number: int, binary: Path, log_dir: Path) -> None:
        self.opts, self.fx, self.pg, self.number, self.binary, self.log_dir = opts, fx, pg, number, binary, log_dir
        self.nodes: dict[str, Node] = {}
        self.lb = None
        self.clients: list[Client] = []
        self.phase: float | None = None
        self.standby_phases: list[float | None] = []
        self.dir = Path(tempfile.mkdtemp(prefix="sb-cluster-failover-"))

    async def run(self) -> dict:
        try:
            return await self._run()
        finally:
            await self.cleanup()

    async def cleanup(self) -> None:
        await close_clients(self.clients)
        await asyncio.gather(*(asyncio.to_thread(node.stop) for node in self.nodes.values()), return_exceptions=True)
        if self.lb is not None:
            await asyncio.to_thread(self.lb.close)
        shutil.rmtree(self.dir, ignore_errors=True)

    def leaders(self) -> list[str]:
        return [name for name, node in self.nodes.items() if node.ready_at is not None and node.running()]

    def check_alive(self) -> None:
        for name, node in self.nodes.items():
            if not node.killed and node.returncode is not None:
                raise BenchError(f"daemon {name} exited with {node.returncode}; log: {node.log_path}")

    async def start_daemons(self, standby: str, **settings) -> None:
        """A fresh database, three daemons on it with ``store.postgres_standby`` ``standby`` and
        ``settings`` (more SWITCHBOARD_* variables, without the prefix: cluster_node_loss.py's
        STORE_POSTGRES_CALLS) (the first started alone and waited for until it leads), and
        HAProxy in front of them."""
        opts, fx = self.opts, self.fx
        database = f"cluster_t{self.number}"
        url = await asyncio.to_thread(self.pg.create_database, database)
        self.database = database
        config = fx.write_config(self.dir / "switchboard.json", {})
        ports = fx.free_tcp_ports(2 * NODES)
        env = fx.base_env(STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=opts.lease_ms,
                          STORE_POSTGRES_STANDBY=standby, **fx.lifted_caps, **settings)
        for i in range(NODES):
            name = f"n{i}"
            state_dir = self.dir / name
            state_dir.mkdir()
            self.nodes[name] = Node(name, self.binary, ports[2 * i], ports[2 * i + 1], state_dir, config, env,
                                    self.log_dir / f"trial{self.number}-{name}.log")
        # The first daemon leads; each other one starts after a pause drawn from 0 to a third of the
        # lease. Standbys try every third of a lease and the leader renews as often: started at
        # once, their tries fell in step with its renewals, so a standby nearly always tried just
        # after the lease lapsed (it took the lead 6-101 ms after the lapse in 22 of 23 trials).
        # Started apart, as daemons on separate machines are, its next try is anywhere in the third.
        names = list(self.nodes)
        first = self.nodes[names[0]]
        first.start()
        await poll(lambda: (self.check_alive(), first.ready_at)[1], opts.start_timeout, f"{names[0]} leading")
        self.standby_phases = []
        for name in names[1:]:
            pause = random.uniform(0, opts.lease_ms / 3000)
            self.standby_phases.append(ms(pause))
            await asyncio.sleep(pause)  # a random phase against the leader's renewals, not a wait for a condition
            self.nodes[name].start()
        self.lb = fx.HAProxy({n: f"{HOST}:{node.port}" for n, node in self.nodes.items()},
                             ready_ports={n: node.admin_port for n, node in self.nodes.items()},
                             check_inter_ms=opts.check_ms)
        await asyncio.to_thread(self.lb.start)

    async def wait_balanced(self, wanted: dict[str, str]) -> None:
        """Polls HAProxy's stats until it reports ``wanted`` (server → UP or DOWN)."""
        deadline = time.monotonic() + self.opts.start_timeout
        while (states := await asyncio.to_thread(self.lb.backend_states)) != wanted:
            self.check_alive()
            if time.monotonic() >= deadline:
                raise BenchError(f"HAProxy did not reach {wanted} within {self.opts.start_timeout:.0f} s: {states}")
            await asyncio.sleep(0.02)  # the pause between polls

    async def start_cluster(self) -> str:
        """Idle standbys (they bind no port until they lead; the default is relay, which
        cluster_node_loss.py measures): one daemon leads and HAProxy sends clients to it alone."""
        await self.start_daemons("idle")

        def one_leads():
            self.check_alive()
            serving = self.leaders()
            if len(serving) > 1:
                raise BenchError(f"{serving} all serve")
            standing = [n for n, node in self.nodes.items() if node.standby_at is not None]
            return serving[0] if serving and len(standing) == NODES - 1 else None

        leader = await poll(one_leads, self.opts.start_timeout, "one daemon leading and two standing by")
        await self.wait_balanced({n: "UP" if n == leader else "DOWN" for n in self.nodes})
        return leader

    def first_port(self, client: Client) -> int:
        """Where a client first connects: the balancer (cluster_node_loss.py picks a node)."""
        return self.lb.port

    async def connect_clients(self) -> None:
        opts, fx = self.opts, self.fx
        self.clients = [Client(i, f"u{i}", fx.user_token(f"u{i}")) for i in range(opts.clients)]
        gate = asyncio.Semaphore(50)

        async def connect(client: Client) -> None:
            async with gate:
                client.ws, hello = await open_socket(self.first_port(client), client, opts.request_timeout, resume=False)
            client.resume_token, client.connection_id = hello["resume_token"], hello["connection_id"]

        async def join(client: Client) -> None:
            call_id = f"T{self.number}-{client.index // 2}"
            answer = await request(client, "call.join", {"type": CALL_TYPE, "id": call_id, "create": True},
                                   opts.request_timeout)
            if answer.get("type") != "response":
                raise BenchError(f"{client.user}: call.join {call_id} -> {answer}")
            client.session_id = answer["data"]["session_id"]

        await asyncio.wait_for(asyncio.gather(*(connect(c) for c in self.clients)), opts.start_timeout)
        await asyncio.wait_for(asyncio.gather(*(join(c) for c in self.clients)), opts.start_timeout)

    async def lease_left(self, kill_wall: float) -> tuple[float | None, int | None]:
        """The lease the killed leader had left at the kill (ms), and the generation it held."""
        try:
            row = await asyncio.to_thread(
                self.pg.psql, "SELECT generation, (extract(epoch FROM lease_until) * 1000)::bigint FROM leader",
                database=self.database)
            generation, until_ms = row.split("|")
            return round(int(until_ms) - kill_wall * 1000, 1), int(generation)
        except Exception as error:  # noqa: BLE001 - a figure missing, not a failed trial
            log(f"trial {self.number}: could not read the lease: {error}")
            return None, None

    async def watch_balancer(self, old: str, until: float, result: dict) -> None:
        """Poll HAProxy's stats until another server is UP: when the old one went DOWN, the new one UP."""
        def sample() -> tuple[dict, float]:  # the time taken in the thread, as the answer arrives
            try:
                return self.lb.backend_states(), time.monotonic()
            except OSError:
                return {}, time.monotonic()

        while time.monotonic() < until:
            states, at = await asyncio.to_thread(sample)
            if "old_down_at" not in result and states.get(old, "").startswith("DOWN"):
                result["old_down_at"] = at
            up = [n for n, s in states.items() if n != old and s == "UP"]
            if up:
                result["new_up_at"], result["new_up"] = at, up[0]
                return
            await asyncio.sleep(0.02)  # the pause between polls

    async def _run(self) -> dict:
        opts = self.opts
        began = time.monotonic()
        leader = await self.start_cluster()
        old = self.nodes[leader]
        log(f"trial {self.number}: {leader} leads (pid {old.pid}); HAProxy on {HOST}:{self.lb.port} sees it alone UP "
            f"after {time.monotonic() - began:.1f} s")
        await self.connect_clients()
        for client in self.clients:
            client.watcher = asyncio.create_task(watch(client))
        phase = self.phase = random.uniform(0, opts.lease_ms / 3000)
        log(f"trial {self.number}: {len(self.clients)} clients connected through HAProxy and joined "
            f"{(len(self.clients) + 1) // 2} calls; SIGKILL {leader} in {phase * 1000:.0f} ms (random phase of its renewals)")
        await asyncio.sleep(phase)  # a random point of the renewal cycle to kill at, not a wait for a condition
        self.check_alive()

        t0 = time.monotonic()
        kill_wall = time.time()
        old.kill()
        deadline = t0 + opts.reconnect_timeout
        balancer: dict = {}
        balancer_task = asyncio.create_task(self.watch_balancer(leader, deadline, balancer))
        recovering = [asyncio.create_task(recover(c, self.lb.port, deadline, opts.backoff_ms / 1000)) for c in self.clients]
        left_ms, old_generation = await self.lease_left(kill_wall)
        await asyncio.gather(*recovering)
        await asyncio.wait({balancer_task}, timeout=max(0.0, deadline - time.monotonic()) + 1)
        balancer_task.cancel()
        self.check_alive()
        successors = [(n, node) for n, node in self.nodes.items() if n != leader and node.lead_at is not None]
        name, new = successors[0] if successors else (None, None)
        return self.figures(t0, leader, name, new, balancer, left_ms, old_generation)

    def figures(self, t0: float, leader: str, name: str | None, new: Node | None, balancer: dict,
                left_ms: float | None, old_generation: int | None) -> dict:
        opts = self.opts
        samples = sorted((c.resumed_at - t0) * 1000 for c in self.clients if c.outcome == "resumed")
        drops = sorted((c.dropped_at - t0) * 1000 for c in self.clients if c.dropped_at is not None)
        attempts = sorted(c.attempts for c in self.clients)
        firsts = sorted((c.trace[0][1] - c.trace[0][0]) * 1000 for c in self.clients if c.trace)
        lead = ms(new.lead_at - t0) if new and new.lead_at else None
        ready = ms(new.ready_at - t0) if new and new.ready_at else None
        up = ms(balancer["new_up_at"] - t0) if "new_up_at" in balancer else None
        p50 = round(statistics.median(samples), 1) if samples else None
        failed = [c for c in self.clients if c.outcome != "resumed"]
        return {
            "trial": self.number, "clients": len(self.clients), "lease_ms": opts.lease_ms, "killed": leader,
            "kill_phase_ms": ms(self.phase), "standby_start_pauses_ms": self.standby_phases,
            "successor": name, "successor_generation": new.generation if new else None,
            "killed_generation": old_generation, "balancer_up": balancer.get("new_up"),
            "resumed": len(samples), "outcomes": dict(Counter(c.outcome for c in self.clients)),
            "failed_errors": [f"{n} × {o}: {e}" for (o, e), n in Counter((c.outcome, c.last_error) for c in failed).most_common(5)],
            "resume_min_ms": round(samples[0], 1) if samples else None, "resume_p50_ms": p50,
            "resume_p90_ms": round(percentile(samples, 0.9), 1) if samples else None,
            "resume_max_ms": round(samples[-1], 1) if samples else None,
            "resume_over_lease": round(p50 / opts.lease_ms, 3) if p50 is not None else None,
            "drop_p50_ms": round(statistics.median(drops), 1) if drops else None,
            "drop_max_ms": round(drops[-1], 1) if drops else None,
            "attempts_p50": statistics.median(attempts) if attempts else None, "attempts_max": attempts[-1] if attempts else None,
            "first_attempt_p50_ms": round(statistics.median(firsts), 1) if firsts else None,
            "replay_incomplete": sum(1 for c in self.clients if c.replay_complete is False),
            "lease_left_ms": left_ms,
            "lapse_to_lead_ms": round(lead - left_ms, 1) if lead is not None and left_ms is not None else None,
            "kill_to_lead_ms": lead, "lead_to_ready_ms": round(ready - lead, 1) if ready and lead else None,
            "takeover_ms": ready,
            "old_down_ms": ms(balancer["old_down_at"] - t0) if "old_down_at" in balancer else None,
            "balancer_up_ms": up, "ready_to_up_ms": round(up - ready, 1) if up is not None and ready is not None else None,
            "up_to_first_resume_ms": round(samples[0] - up, 1) if samples and up is not None else None,
            "up_to_p50_resume_ms": round(p50 - up, 1) if p50 is not None and up is not None else None,
            # The first client's reconnect attempts: [start, end] ms after the kill, and how each ended.
            "client0_attempts": [[ms(a - t0), ms(b - t0), what] for a, b, what in self.clients[0].trace[:50]],
        }
