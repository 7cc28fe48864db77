"""Faults under three daemons on one PostgreSQL database (ADR 0012): a leader cut off from the
network, and PostgreSQL restarted under the cluster.

- Each daemon in a network namespace of its own (``netns_link``), PostgreSQL listening on the host
  side of each pair, HAProxy checking ``/readyz`` with the admin token as docs/deploy-cluster.md
  does. A call rings; the leader's network is cut (its packets dropped, nothing refused): a
  standby takes over after the lease and times the ring out from the stored deadline. The
  network comes back: the old leader finds its lead taken and exits 75. The call's event log
  shows it ended once: no moment where two daemons acted on it.
- PostgreSQL stopped under the cluster: the leader fails ``/readyz`` and refuses requests with
  ``unavailable``; started again (same port), exactly one daemon leads (the old leader renews
  its lapsed lease, or a standby takes it and the old one exits 75) and calls go on through the
  balancer.

Nothing sleeps to wait: every wait polls with a deadline. Only processes and namespaces made
here are ended or deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

import haproxy
import netns_link
import pgserver
from cluster_harness import NODES, TAKEOVER_S, Cluster, cluster_of, events, postgres, ring  # noqa: F401 - fixtures
from netns_link import LinkedNamespace
from pgserver import PostgresServer
from webhook_harness import Daemons, daemons, wait_until  # noqa: F401 - fixture

#: The ring outlasts the takeover (about 2.7 s after the cut) and ends on the new leader.
RING_MS = 6000


@pytest.fixture
def spaces() -> Iterator[list[LinkedNamespace]]:
    reason = netns_link.missing_requirements() or pgserver.missing_requirements() or haproxy.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    made: list[LinkedNamespace] = []
    try:
        for i in range(NODES):
            made.append(LinkedNamespace.create(f"n{i}"))
        yield made
    finally:
        for space in made:
            space.close()


def test_a_leader_cut_off_is_replaced_and_fenced_when_its_network_comes_back(spaces, daemons: Daemons, tmp_path: Path) -> None:
    listen = ",".join(["127.0.0.1", *(space.host_ip for space in spaces)])
    with PostgresServer(durable=False, settings={"listen_addresses": listen}, hba=[f"host all all {space.network} trust" for space in spaces]) as pg:
        cluster = Cluster(daemons, pg.create_database("partition"), tmp_path, RING_MS, spaces)
        try:
            name = cluster.leader()
            old, space = cluster.nodes[name], spaces[int(name[1:])]
            alice = cluster.client("alice")
            ring(alice, "cut")
            space.cut()
            try:
                name = cluster.leader([n for n in cluster.nodes if cluster.nodes[n] is not old])
                new = cluster.nodes[name]
                assert new.admin_ok("GET", "/v1/nodes")["generation"] == 2
                wait_until(lambda: "call.ended" in events(new, "cut"), TAKEOVER_S, "the ring timed out on the new leader")
            finally:
                space.restore()
            code = old.process.wait(TAKEOVER_S)
            assert code == 75, f"exit {code}:\n{old.output()}"
            assert "another node took the lead of the PostgreSQL database" in old.output(), old.output()
            log = events(new, "cut")
            assert log.count("call.ended") == 1 and log.count("call.missed") == 1, log
            alice.close()
        finally:
            cluster.close()


def test_postgresql_restarted_under_the_cluster_makes_it_wait_refuse_and_recover(cluster_of, postgres: PostgresServer) -> None:
    cluster = cluster_of("restart")
    name = cluster.leader()
    leader = cluster.nodes[name]
    alice = cluster.client("alice")
    assert alice.ok("call.get_or_create", {"type": "default", "id": "before"})["created"]

    postgres.stop()
    wait_until(lambda: leader.admin("GET", "/readyz")[0] == 503, TAKEOVER_S, "the leader unready")
    assert alice.error("call.get_or_create", {"type": "default", "id": "during"}) == "unavailable"
    postgres.start()

    def leading() -> list[str]:
        live = [n for n, d in cluster.nodes.items() if d.ready and d.process.poll() is None]
        return [n for n in live if cluster.nodes[n].admin("GET", "/readyz")[0] == 200]

    serving = wait_until(lambda: leading() or None, TAKEOVER_S, "a leader ready again")
    assert len(serving) == 1, serving
    now = cluster.nodes[serving[0]]
    for daemon in cluster.nodes.values():
        if daemon is not now and daemon.ready:
            assert daemon.process.wait(TAKEOVER_S) == 75, daemon.output()  # deposed: a standby took the lead
    view = now.admin_ok("GET", "/v1/nodes")
    assert [n["role"] for n in view["nodes"]].count("leader") == 1, view
    cluster.leader([serving[0]] + [n for n, d in cluster.nodes.items() if not d.ready])
    bob = cluster.client("bob")
    assert bob.ok("call.get_or_create", {"type": "default", "id": "after"})["created"]
    calls = {c["cid"] for c in now.admin_ok("GET", "/v1/calls")["calls"]}
    assert calls == {"default:before", "default:after"}, calls
    alice.close()
    bob.close()
