"""Faults under three daemons on one PostgreSQL database whose standbys relay
(``store.postgres_standby`` relay, ADR 0012): a relaying node cut off from the network, the leader
cut off, and PostgreSQL restarted under the cluster.

The first two tests put each daemon in a network namespace of its own (``netns_link``, the
``spaces`` fixture of test_cluster_faults.py: root required, the test fails without it, never
skips), PostgreSQL listening on the host side of each pair and HAProxy checking each daemon's
``/readyz`` with the admin token. A cut drops the namespace's packets (nothing is refused, as when
a cable is pulled). Clients connect straight to a given daemon, or through the balancer to
reconnect. "Relaying nodes" are the two that do not lead, whichever those are.

- A relaying node cut off while its call-protocol client is in a ringing call: the leader stays
  and, once the cut node's lease lapsed, shows the client's connection detached in its admin
  API; HAProxy marks the cut node DOWN; the client, whose socket went silent, drops it and
  resumes through the balancer on another node (same connection, its participant session kept);
  the ring times out once (one ``call.ring``, one ``call.ended`` in the call's event log). The
  network comes back: the cut node relays again (its ``/readyz`` 200, the balancer marks it UP),
  the leader is the same daemon at generation 1, the resumed client is still answered, a PeerJS
  pair with one peer straight on the cut node exchanges OFFER and ANSWER with a peer on the
  leader, and a call-protocol client straight on it reads the ended call.
- A relaying node cut off only until the leader treats its client's socket as closed: once the
  network is back, the node has closed that socket with 1012 (it was not renewed for about a
  lease, so the leader had dropped what it relays) instead of leaving it open with nothing
  behind it, and the client resumes through the balancer.
- The leader cut off while call-protocol and PeerJS clients sit on the relaying nodes: once its
  lease lapsed the relaying nodes close their relayed sockets with 1012, one of them takes over
  (generation 2), the call-protocol clients resume through the balancer (same connections) and
  the ring times out on the new leader. The network comes back: the old leader finds its lead
  taken and exits 75 (fenced); the event log shows one ``call.ended`` and one ``call.missed``:
  no moment where two daemons acted on the call; a PeerJS pair on the two remaining nodes
  exchanges OFFER and ANSWER.
- PostgreSQL stopped under a relaying cluster (no namespaces): the relaying nodes close their
  relayed sockets with 1012, answer ``/readyz`` 503 and close a new socket with 1013 (no leader
  to relay to). Started again (same port): exactly one node leads (the old leader renews its
  lapsed lease, or a relaying node takes it and the old one exits 75), every other running node
  relays again (``/readyz`` 200, UP for the balancer), the calls made before the outage and
  after it are both listed, and a PeerJS pair across two nodes exchanges OFFER and ANSWER.

Nothing sleeps to wait: every wait polls with a deadline. Only processes and namespaces made
here are ended or deleted, by PID.
"""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from cluster_harness import LEASE_MS, TAKEOVER_S, Cluster, cluster_of, events, postgres, ring, roles  # noqa: F401 - fixtures
from netns_link import LinkedNamespace
from pgserver import PostgresServer
from test_cluster_faults import spaces  # noqa: F401 - fixture
from test_cluster_relay import closed_with, opened, relay_cluster, relayed
from webhook_harness import CallClient, Daemon, Daemons, daemons, wait_until  # noqa: F401 - fixture

#: The ring outlasts a lapsed lease, the balancer's DOWN and a resume (about 5 s after the cut).
RING_MS = 10000


@contextmanager
def relaying_in_spaces(spaces: list[LinkedNamespace], daemons: Daemons, tmp_path: Path, database: str,
                       ring_ms: int = RING_MS, **env: object) -> Iterator[tuple[Cluster, str, list[str]]]:
    """A relaying cluster with each daemon in its namespace: it, its leader's name and the two
    relaying nodes' names (``env``: more daemon settings, as ``Cluster`` takes them)."""
    listen = ",".join(["127.0.0.1", *(space.host_ip for space in spaces)])
    with PostgresServer(durable=False, settings={"listen_addresses": listen}, hba=[f"host all all {space.network} trust" for space in spaces]) as pg:
        cluster = Cluster(daemons, pg.create_database(database), tmp_path, ring_ms, spaces, standby="relay", **env)
        try:
            name = cluster.leader()
            yield cluster, name, [n for n in cluster.nodes if n != name]
        finally:
            cluster.close()


def space_of(spaces: list[LinkedNamespace], name: str) -> LinkedNamespace:
    return spaces[int(name[1:])]


def readyz(daemon: Daemon) -> int:
    """The node's own ``GET /readyz`` status (0 when it does not answer)."""
    try:
        return daemon.admin("GET", "/readyz")[0]
    except OSError:
        return 0


def detached(leader: Daemon, connection_id: str) -> bool:
    """Whether the leader lists the connection, and as detached (in its resume window)."""
    mine = [c for c in leader.connections() if c["connection_id"] == connection_id]
    return bool(mine) and not mine[0]["attached"]


def abandon(client: CallClient) -> None:
    """What a client does once its socket went silent (its pings unanswered): it drops the
    socket, no closing handshake to wait for."""
    client.ws.socket.shutdown(socket.SHUT_RDWR)
    wait_until(lambda: client.closed, TAKEOVER_S, f"{client.user}'s reader seeing its socket gone")
    client.close()


def resumed(cluster: Cluster, client: CallClient) -> CallClient:
    """The client's connection resumed through the balancer (same connection id)."""
    again = cluster.client(client.user, resume=client.hello["resume_token"])
    assert again.hello["resumed"] and again.hello["connection_id"] == client.hello["connection_id"], (client.hello, again.hello)
    return again


def offer_and_answer(cluster: Cluster, one: str, other: str) -> None:
    """Peers ``pa`` straight on node ``one`` and ``pb`` on ``other`` exchange OFFER and ANSWER."""
    pa, pb = opened(cluster.peer("pa", one)), opened(cluster.peer("pb", other))
    for sender, receiver, src, dst, kind in ((pa, pb, "pa", "pb", "OFFER"), (pb, pa, "pb", "pa", "ANSWER")):
        payload = {"sdp": {"type": kind.lower(), "sdp": "v=0"}, "type": "media", "connectionId": "mc_1"}
        sender.send_json({"type": kind, "dst": dst, "payload": payload})
        assert relayed(receiver)[1] == {"type": kind, "src": src, "dst": dst, "payload": payload}
    pa.close()
    pb.close()


def settled(cluster: Cluster) -> list[str] | None:
    """The running nodes, the leader first, once exactly one of them leads and every one is
    ready (the others follow a leader whose lease runs, and listen); else ``None``."""
    running = [n for n, d in cluster.nodes.items() if d.process.poll() is None]
    leading = [n for n in running if cluster.leads(n)]
    if len(leading) != 1 or any(readyz(cluster.nodes[n]) != 200 for n in running):
        return None
    return [leading[0]] + [n for n in running if n != leading[0]]


def logs(cluster: Cluster) -> str:
    return "\n".join(f"--- {n} (pid {d.pid}, exit {d.process.poll()}):\n{d.output()}" for n, d in cluster.nodes.items())


def test_a_cut_off_relaying_nodes_client_resumes_elsewhere_and_the_node_relays_again(spaces, daemons: Daemons, tmp_path: Path) -> None:
    with relaying_in_spaces(spaces, daemons, tmp_path, "relaycut") as (cluster, name, (r0, r1)):
        leader, space = cluster.nodes[name], space_of(spaces, r0)
        alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=r1)
        ring(alice, "c1")
        session = alice.ok("call.join", {"type": "ringing", "id": "c1"})["session_id"]
        bob.wait_event("call.ring", "ringing:c1")

        cut = time.monotonic()
        space.cut()
        try:
            wait_until(lambda: detached(leader, alice.hello["connection_id"]), TAKEOVER_S,
                       "the leader treating the cut node's socket as closed")
            took = time.monotonic() - cut
            # The node's lease lapses at most a lease after the cut; the leader looks every third.
            assert took < LEASE_MS / 1000 * 4 / 3 + 5, f"noticed {took:.1f} s after the cut"
            wait_until(lambda: cluster.lb.backend_states()[r0] == "DOWN", TAKEOVER_S,
                       f"the balancer marking {r0} DOWN: {cluster.lb.backend_states()}")
            abandon(alice)
            alice = resumed(cluster, alice)
            assert alice.hello["sessions"] == [session], alice.hello
            ended = alice.wait_event("call.ended", "ringing:c1", timeout=TAKEOVER_S)
            assert ended["data"]["call"]["ended_reason"] == "no_answer", ended
        finally:
            space.restore()

        cut_node = cluster.nodes[r0]
        assert cluster.leader() == name, "the leader stays; every node UP again"
        assert readyz(cut_node) == 200 and cut_node.process.poll() is None, cut_node.output()
        view = leader.admin_ok("GET", "/v1/nodes")
        assert view["generation"] == 1 and roles(leader)[leader.pid] == "leader", view
        log = events(leader, "c1")
        assert log.count("call.ended") == 1 and log.count("call.ring") == 1, log
        assert alice.ok("call.get", {"type": "ringing", "id": "c1"})["call"]["ended_reason"] == "no_answer"

        offer_and_answer(cluster, r0, name)
        again = cluster.client("bob", node=r0)  # bob's second connection, straight on the restored node
        call = again.ok("call.get", {"type": "ringing", "id": "c1"})["call"]
        assert call["ended_reason"] == "no_answer", call
        for client in (alice, bob, again):
            client.close()


def test_a_relaying_node_cut_off_about_a_lease_closes_its_relayed_sockets(spaces, daemons: Daemons, tmp_path: Path) -> None:
    with relaying_in_spaces(spaces, daemons, tmp_path, "shortcut") as (cluster, name, (r0, _)):
        leader, space = cluster.nodes[name], space_of(spaces, r0)
        dave = cluster.client("dave", node=r0)
        space.cut()
        try:
            wait_until(lambda: detached(leader, dave.hello["connection_id"]), TAKEOVER_S,
                       "the leader treating the cut node's socket as closed")
        finally:
            space.restore()
        # The leader dropped dave's socket; the node, not renewed for about a lease, closed it
        # (1012) rather than leave it open with nobody behind it.
        assert closed_with(dave) == 1012, logs(cluster)
        dave.close()
        dave = resumed(cluster, dave)
        assert dave.ok("call.get_or_create", {"type": "default", "id": "after"})["created"]
        wait_until(lambda: readyz(cluster.nodes[r0]) == 200, TAKEOVER_S, f"{r0} relaying again")
        dave.close()


def test_a_cut_off_leaders_relayed_clients_get_1012_resume_on_the_new_leader_and_it_is_fenced(spaces, daemons: Daemons, tmp_path: Path) -> None:
    with relaying_in_spaces(spaces, daemons, tmp_path, "leadercut") as (cluster, name, (r0, r1)):
        old, space = cluster.nodes[name], space_of(spaces, name)
        alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=r1)
        ring(alice, "c2")
        bob.wait_event("call.ring", "ringing:c2")
        peer = opened(cluster.peer("pa", r1))

        space.cut()
        try:
            codes = {c.user: closed_with(c) for c in (alice, bob)}
            codes["pa"] = peer.until_close(TAKEOVER_S)[0].code
            peer.close()
            assert codes == {"alice": 1012, "bob": 1012, "pa": 1012}, f"{codes}\n{logs(cluster)}"
            name = cluster.leader([r0, r1])
            new = cluster.nodes[name]
            assert new.admin_ok("GET", "/v1/nodes")["generation"] == 2, new.admin_ok("GET", "/v1/nodes")
            alice.close()
            bob.close()
            alice, bob = resumed(cluster, alice), resumed(cluster, bob)
            ended = alice.wait_event("call.ended", "ringing:c2", timeout=TAKEOVER_S)
            assert ended["data"]["call"]["ended_reason"] == "no_answer", ended
        finally:
            space.restore()

        code = old.process.wait(TAKEOVER_S)
        assert code == 75, f"exit {code}:\n{old.output()}"
        assert "another node took the lead of the PostgreSQL database" in old.output(), old.output()
        assert cluster.leader([r0, r1]) == name, logs(cluster)
        log = events(new, "c2")
        assert log.count("call.ended") == 1 and log.count("call.missed") == 1, log
        offer_and_answer(cluster, r0, r1)
        alice.close()
        bob.close()


def test_postgresql_restarted_under_a_relaying_cluster_cuts_relayed_sockets_and_recovers(cluster_of, postgres: PostgresServer) -> None:
    cluster, name, relays = relay_cluster(cluster_of, "relayrestart")
    alice, bob = cluster.client("alice", node=relays[0]), cluster.client("bob", node=relays[1])
    assert alice.ok("call.get_or_create", {"type": "default", "id": "before"})["created"]
    assert bob.ok("call.get", {"type": "default", "id": "before"})["call"]["created_by"] == "alice"

    postgres.stop()
    try:
        codes = {c.user: closed_with(c) for c in (alice, bob)}
        assert codes == {"alice": 1012, "bob": 1012}, f"{codes}\n{logs(cluster)}"
        for relay in relays:
            wait_until(lambda: readyz(cluster.nodes[relay]) == 503, TAKEOVER_S, f"{relay} unready")
        refused = cluster.peer("early", relays[0])
        assert refused.until_close(TAKEOVER_S)[0].code == 1013, "no leader to relay to: try again later"
        refused.close()
    finally:
        postgres.start()
    alice.close()
    bob.close()

    try:
        running = wait_until(lambda: settled(cluster), TAKEOVER_S, "one node leading, the others relaying again")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n{logs(cluster)}") from None
    for n, daemon in cluster.nodes.items():
        if n not in running:  # the old leader, deposed: a relaying node took the lead
            assert n == name and daemon.process.returncode == 75, \
                f"{n} exited {daemon.process.returncode}; only the old leader {name} may go, deposed (75)\n{logs(cluster)}"
    assert cluster.leader(running) == running[0], logs(cluster)
    now = cluster.nodes[running[0]]
    view = now.admin_ok("GET", "/v1/nodes")
    assert [n["role"] for n in view["nodes"]].count("leader") == 1, view
    assert view["generation"] == (1 if running[0] == name else 2), view

    carol = cluster.client("carol")
    assert carol.ok("call.get_or_create", {"type": "default", "id": "after"})["created"]
    calls = {c["cid"] for c in now.admin_ok("GET", "/v1/calls")["calls"]}
    assert calls == {"default:before", "default:after"}, calls
    try:
        offer_and_answer(cluster, running[1], running[0])
    except Exception as failure:
        raise AssertionError(f"{failure!r}\n{logs(cluster)}") from None
    carol.close()
