"""Three daemons on one PostgreSQL database whose standbys relay (``store.postgres_standby``
relay, ADR 0012): every daemon binds its ports, and the standbys hand their clients' sockets and
admin requests to the leader over the database's LISTEN/NOTIFY, so clients on different daemons
reach each other.

Each test runs its own PostgreSQL server and ``cluster_harness.Cluster`` with ``standby="relay"``:
three daemons behind HAProxy, all UP for its ``GET /readyz`` check. Clients connect straight to a
given daemon's client port (``Cluster.client``/``Cluster.peer`` with ``node``) or, to reconnect,
through the balancer. "Relaying nodes" are the two that do not lead, whichever that is.

- PeerJS across daemons: a peer on a relaying node and one on the leader, and two peers on the
  two relaying nodes, exchange OFFER, ANSWER and CANDIDATEs both ways: each arrives once, in
  order, rebuilt as ``type, src, dst, payload`` with the sender's id as ``src`` and the payload's
  bytes unchanged.
- ``ID-TAKEN`` across daemons: an id open on one daemon is refused (``ID-TAKEN``, 1008) to another
  token on another daemon, both from a relaying node to the leader and the other way; once its
  holder closes, the other token gets it on the other daemon.
- Ringing across daemons: a caller on one relaying node rings a callee on the other; the callee
  gets ``call.ring``, joins (accepting), the caller gets ``call.accepted`` and, joining too, the
  callee gets ``call.participant_joined``; the caller's ``call.end`` reaches the callee.
- A meeting over three daemons: six users, two on each, join one ``default`` call; each sees all
  six (its join answer's participants and the ``call.participant_joined`` after it), and
  ``call.get`` on every daemon lists the six sessions.
- The admin API through a relaying node: its ``GET /v1/nodes`` and ``GET /v1/calls`` are the
  leader's (three nodes, generation 1, a call made on the leader); its own ``/healthz`` and
  ``/readyz`` answer 200 and its ``/metrics`` is its own: it counts what it relayed
  (``switchboard_cluster_relayed_total{direction="to_leader"}``; the leader counts
  ``from_leader``), no relay failure, and no lead (``switchboard_leader_generation 0``).
- A relaying node SIGKILLed while its call-protocol client is in a ringing call: the leader stays,
  marks the client's connection detached within about a lease and a third, the client resumes on
  the other relaying node (same connection, its participant session kept) and the ring times out
  once: one ``call.ring`` and one ``call.ended`` in the call's event log.
- The leader SIGKILLed while call-protocol and PeerJS clients sit on the relaying nodes: their
  sockets are closed with 1012, a relaying node takes over (generation 2, the dead one listed
  ``dead``), the call-protocol clients resume through the balancer and the ring goes on to an
  accept; the PeerJS ids open again through the balancer and relay.

Nothing sleeps to wait: every wait polls with a deadline. Only processes started here are ended,
by PID.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from cluster_harness import LEASE_MS, TAKEOVER_S, Cluster, cluster_of, events, metrics_text, postgres, ring, roles  # noqa: F401 - fixtures
from hostile import RawWebSocket
from webhook_harness import CallClient, daemons, wait_until  # noqa: F401 - fixture


def relay_cluster(cluster_of, database: str, **options: Any) -> tuple[Cluster, str, list[str]]:
    """A cluster with relaying standbys, its leader's name and the two relaying nodes' names."""
    cluster = cluster_of(database, standby="relay", **options)
    name = cluster.leader()
    return cluster, name, [n for n in cluster.nodes if n != name]


def opened(ws: RawWebSocket) -> RawWebSocket:
    assert ws.recv_json() == {"type": "OPEN"}
    return ws


def relayed(ws: RawWebSocket) -> tuple[str, dict[str, Any]]:
    """The next relayed PeerJS message: its raw text and parsed object."""
    text = ws.recv()
    return text, json.loads(text)


def relayed_total(text: str, direction: str) -> float:
    match = re.search(r'^switchboard_cluster_relayed_total\{[^}]*direction="' + direction + r'"[^}]*\} ([0-9.e+]+)$', text, re.M)
    assert match, f"no switchboard_cluster_relayed_total for {direction}:\n{text}"
    return float(match.group(1))


def sample(text: str, name: str) -> float:
    """The value of an unlabelled metric in a ``/metrics`` text."""
    match = re.search("^" + re.escape(name) + r" ([0-9.e+]+)$", text, re.M)
    assert match, f"no {name}:\n{text}"
    return float(match.group(1))


def closed_with(client: CallClient) -> int | None:
    """The close code the server sent a call-protocol client, once its socket closed."""
    wait_until(lambda: client.closed, TAKEOVER_S, f"{client.user}'s socket closed")
    return client.ws.close_code


def test_peerjs_peers_on_different_daemons_exchange_offer_answer_and_candidates(cluster_of) -> None:
    cluster, name, (r0, r1) = relay_cluster(cluster_of, "peerjs")
    a, b, c = (opened(cluster.peer(peer, node)) for peer, node in (("a", r0), ("b", name), ("c", r1)))
    # Key order scrambled, a src to be replaced, escapes and non-ASCII text whose bytes must pass.
    sdp = 'v=0\\r\\no=- 4611 2 IN IP4 127.0.0.1\\r\\ns=caf\\u00e9 \u00fc\u00df \u263a\\r\\n'
    exchanges = [
        (a, b, "a", "b", "OFFER", '{"type":"media","sdp":{"sdp":"' + sdp + '","type":"offer"},"connectionId":"mc_1","metadata":null}'),
        (b, a, "b", "a", "ANSWER", '{"sdp":{"type":"answer","sdp":"' + sdp + '"},"type":"media","connectionId":"mc_1"}'),
        (c, a, "c", "a", "OFFER", '{"sdp":{"type":"offer","sdp":"v=0"},"type":"data","connectionId":"dc_2","label":"chat","reliable":true}'),
        (a, c, "a", "c", "ANSWER", '{"sdp":{"type":"answer","sdp":"v=0"},"type":"data","connectionId":"dc_2"}'),
    ]
    for sender, receiver, src, dst, kind, payload in exchanges:
        sender.send_text('{"type":"' + kind + '","src":"forged","dst":"' + dst + '","payload":' + payload + '}')
        text, message = relayed(receiver)
        assert list(message) == ["type", "src", "dst", "payload"], text
        assert (message["type"], message["src"], message["dst"]) == (kind, src, dst), text
        assert text.endswith('"payload":' + payload + "}"), f"payload bytes changed: {text}"
        assert message["payload"] == json.loads(payload)

    # Trickled candidates both ways between the two relaying nodes and from the leader: in order.
    for sender, receiver, src, dst in ((a, c, "a", "c"), (c, a, "c", "a"), (b, c, "b", "c")):
        sent = [{"candidate": {"candidate": f"candidate:{i} 1 udp 2122260223 127.0.0.1 {50000 + i} typ host", "sdpMid": "0"},
                 "type": "media", "connectionId": "mc_1"} for i in range(5)]
        for payload in sent:
            sender.send_json({"type": "CANDIDATE", "dst": dst, "payload": payload})
        got = [relayed(receiver)[1] for _ in sent]
        assert got == [{"type": "CANDIDATE", "src": src, "dst": dst, "payload": p} for p in sent], got
    for ws in (a, b, c):
        assert ws.poll_json() == [], "nothing more: no echo, no copy"
        ws.close()


def test_an_id_open_on_one_daemon_is_taken_on_another(cluster_of) -> None:
    cluster, name, (r0, r1) = relay_cluster(cluster_of, "taken")
    for held_on, tried_on, peer in ((r0, name, "held-on-relay"), (name, r1, "held-on-leader")):
        holder = opened(cluster.peer(peer, held_on, token="first"))
        other = cluster.peer(peer, tried_on, token="second")
        assert other.recv_json() == {"type": "ID-TAKEN", "payload": {"msg": "ID is taken"}}
        closed, _ = other.until_close()
        assert closed.code == 1008, closed
        other.close()

        holder.close()  # the id is free once its holder's close reached the leader

        def claimed() -> RawWebSocket | None:
            ws = cluster.peer(peer, tried_on, token="second")
            if ws.recv_json() == {"type": "OPEN"}:
                return ws
            ws.close()
            return None

        wait_until(claimed, TAKEOVER_S, f"{peer} free for another token on {tried_on}").close()


def test_a_caller_on_one_daemon_rings_a_callee_on_another(cluster_of) -> None:
    cluster, _, (r0, r1) = relay_cluster(cluster_of, "ringing")
    alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=r1)
    created = ring(alice, "across")
    assert created["created"], created
    rung = bob.wait_event("call.ring", "ringing:across")
    assert rung["data"]["from"] == "alice", rung

    joined = bob.ok("call.join", {"type": "ringing", "id": "across"})
    assert joined["role"] == "participant" and [p["user_id"] for p in joined["participants"]] == ["bob"], joined
    accepted = alice.wait_event("call.accepted", "ringing:across")
    assert accepted["data"]["user_id"] == "bob", accepted
    mine = alice.ok("call.join", {"type": "ringing", "id": "across"})
    assert mine["role"] == "initiator", mine
    seen = bob.wait_event("call.participant_joined", "ringing:across")
    assert seen["data"]["participant"]["session_id"] == mine["session_id"], seen

    ended = alice.ok("call.end", {"type": "ringing", "id": "across"})
    assert ended["call"]["ended_reason"] == "ended_by_user", ended
    assert bob.wait_event("call.ended", "ringing:across")["data"]["call"]["ended_reason"] == "ended_by_user"
    alice.close()
    bob.close()


def test_six_users_two_on_each_daemon_meet_in_one_call(cluster_of) -> None:
    cluster, _, _ = relay_cluster(cluster_of, "meeting")
    names = list(cluster.nodes)
    users = [f"user{i}" for i in range(6)]
    clients = [cluster.client(user, node=names[i % len(names)]) for i, user in enumerate(users)]
    answers = []
    for i, client in enumerate(clients):
        answers.append(client.ok("call.join", {"type": "default", "id": "standup", "create": i == 0}))
    sessions = {answer["session_id"]: client.user for answer, client in zip(answers, clients)}
    assert sorted(sessions.values()) == users, answers

    def seen_by(i: int) -> dict[str, str]:
        known = {p["session_id"]: p["user_id"] for p in answers[i]["participants"]}
        joins = [e for e in list(clients[i].events) if e["type"] == "call.participant_joined" and e["call_cid"] == "default:standup"]
        known.update({e["data"]["participant"]["session_id"]: e["data"]["participant"]["user_id"] for e in joins})
        return known

    for i, client in enumerate(clients):
        wait_until(lambda: seen_by(i) == sessions, TAKEOVER_S, f"{client.user} seeing all six: {seen_by(i)}")
    for client in clients[::2]:  # one on each daemon
        state = client.ok("call.get", {"type": "default", "id": "standup"})
        assert {p["session_id"]: p["user_id"] for p in state["participants"]} == sessions, state
    for client in clients:
        client.close()


def test_the_admin_api_through_a_relaying_node_is_the_leaders(cluster_of) -> None:
    cluster, name, (r0, _) = relay_cluster(cluster_of, "admin")
    leader, relay = cluster.nodes[name], cluster.nodes[r0]
    alice = cluster.client("alice", node=name)
    assert alice.ok("call.get_or_create", {"type": "default", "id": "on-the-leader"})["created"]

    view = relay.admin_ok("GET", "/v1/nodes")
    direct = leader.admin_ok("GET", "/v1/nodes")
    assert (view["store"], view["generation"], view["leader"]) == ("postgres", 1, direct["leader"]), view
    assert [(n["id"], n["role"], n["description"]) for n in view["nodes"]] == \
        [(n["id"], n["role"], n["description"]) for n in direct["nodes"]], (view, direct)
    assert roles(relay) == {d.pid: "leader" if n == name else "standby" for n, d in cluster.nodes.items()}, view
    calls = {c["cid"] for c in relay.admin_ok("GET", "/v1/calls")["calls"]}
    assert calls == {"default:on-the-leader"}, calls

    for n, daemon in cluster.nodes.items():
        if n != name:  # a relaying standby says so, and never that it is ready (the leader's line)
            assert "relaying clients to the leading node while standing by" in daemon.output(), daemon.output()
            assert not cluster.leads(n), daemon.output()
    assert relay.admin("GET", "/healthz")[0] == 200
    status, ready = relay.admin("GET", "/readyz")
    assert status == 200 and ready["ready"], ready
    bob = cluster.client("bob", node=r0)  # a socket relayed both ways
    assert bob.ok("call.get", {"type": "default", "id": "on-the-leader"})["call"]["created_by"] == "alice"
    # Each node's own counts: the relaying node's events sent to the leader, the leader's
    # commands sent back to relaying nodes; the relaying node's gauges are its own (no lead).
    mine, leaders = metrics_text(relay), metrics_text(leader)
    assert relayed_total(mine, "to_leader") >= 1 and relayed_total(leaders, "from_leader") >= 1, (mine, leaders)
    assert sample(mine, "switchboard_leader_generation") == 0 and sample(leaders, "switchboard_leader_generation") == 1, (mine, leaders)
    assert sample(mine, "switchboard_cluster_relay_failures_total") == 0, mine
    # The relay's probe: once a second a round trip to the leader and back, well under a second.
    probes = wait_until(lambda: sample(metrics_text(relay), "switchboard_cluster_relay_round_trip_seconds_count") >= 2 and metrics_text(relay),
                        TAKEOVER_S, "two relay probes")
    count = sample(probes, "switchboard_cluster_relay_round_trip_seconds_count")
    total = sample(probes, "switchboard_cluster_relay_round_trip_seconds_sum")
    assert 0 < total / count < 1.0, probes
    alice.close()
    bob.close()


def test_a_killed_relaying_nodes_client_resumes_on_another_node_and_the_ring_times_out_once(cluster_of) -> None:
    cluster, name, (r0, r1) = relay_cluster(cluster_of, "relaykilled", ring_ms=8000)
    leader, doomed = cluster.nodes[name], cluster.nodes[r0]
    alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=name)
    ring(alice, "c1")
    session = alice.ok("call.join", {"type": "ringing", "id": "c1"})["session_id"]
    bob.wait_event("call.ring", "ringing:c1")
    hello = alice.hello

    killed = time.monotonic()
    doomed.kill()
    assert cluster.leader([name, r1]) == name, "the leader stays"

    def detached() -> bool:
        mine = [c for c in leader.connections() if c["connection_id"] == hello["connection_id"]]
        return bool(mine) and not mine[0]["attached"]

    wait_until(detached, TAKEOVER_S, "the leader treating the dead node's socket as closed")
    took = time.monotonic() - killed
    # Its lease lapses at most a lease after the kill; the leader looks every third of one.
    assert took < LEASE_MS / 1000 * 4 / 3 + 5, f"noticed {took:.1f} s after the kill"
    assert leader.process.poll() is None, leader.output()

    alice.close()
    alice = cluster.client("alice", resume=hello["resume_token"], node=r1)
    assert alice.hello["resumed"] and alice.hello["connection_id"] == hello["connection_id"], alice.hello
    assert alice.hello["sessions"] == [session], alice.hello
    ended = alice.wait_event("call.ended", "ringing:c1", timeout=TAKEOVER_S)
    assert ended["data"]["call"]["ended_reason"] == "no_answer", ended
    log = events(leader, "c1")
    assert log.count("call.ended") == 1 and log.count("call.ring") == 1, log
    alice.close()
    bob.close()


def test_a_killed_leaders_relayed_clients_are_closed_with_1012_and_resume_on_the_new_leader(cluster_of) -> None:
    cluster, name, (r0, r1) = relay_cluster(cluster_of, "leaderkilled")
    leader = cluster.nodes[name]
    alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=r1)
    ring(alice, "c2")
    bob.wait_event("call.ring", "ringing:c2")
    peers = {"pa": opened(cluster.peer("pa", r0)), "pb": opened(cluster.peer("pb", r1))}
    resumes = {"alice": alice.hello["resume_token"], "bob": bob.hello["resume_token"]}

    leader.kill()
    codes: dict[str, int | None] = {c.user: closed_with(c) for c in (alice, bob)}
    alice.close()
    bob.close()
    for peer, ws in peers.items():
        codes[peer] = ws.until_close(TAKEOVER_S)[0].code
        ws.close()
    assert codes == {"alice": 1012, "bob": 1012, "pa": 1012, "pb": 1012}, codes

    name = cluster.leader([r0, r1])
    new = cluster.nodes[name]
    assert "leading the PostgreSQL database" in new.output() and "generation=2" in new.output(), new.output()
    view = new.admin_ok("GET", "/v1/nodes")
    assert view["generation"] == 2 and roles(new)[leader.pid] == "dead", view

    before = {c.user: c.hello["connection_id"] for c in (alice, bob)}
    alice, bob = (cluster.client(user, resume=resumes[user]) for user in ("alice", "bob"))
    for client in (alice, bob):
        assert client.hello["resumed"] and client.hello["connection_id"] == before[client.user], client.hello
    accepted = bob.ok("call.accept", {"type": "ringing", "id": "c2"})
    assert [m["ring_state"] for m in accepted["members"] if m["user_id"] == "bob"] == ["accepted"], accepted
    assert alice.wait_event("call.accepted", "ringing:c2")["data"]["user_id"] == "bob"

    pa, pb = (opened(cluster.peer(p)) for p in ("pa", "pb"))
    pa.send_json({"type": "OFFER", "dst": "pb", "payload": {"sdp": {"type": "offer", "sdp": "v=0"}}})
    assert relayed(pb)[1] == {"type": "OFFER", "src": "pa", "dst": "pb", "payload": {"sdp": {"type": "offer", "sdp": "v=0"}}}
    for closing in (alice, bob, pa, pb):
        closing.close()
