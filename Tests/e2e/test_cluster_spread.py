"""Calls run on every daemon: ``store.postgres_calls = "spread"`` (ADR 0012, step 3.6).

Three daemons share a private PostgreSQL database (lease 2000 ms, ``store.postgres_standby``
relay): A starts first and leads, B and C relay PeerJS and the admin API to it but run the call
protocol (``/v1/connect``) for their own sockets. Each test starts its own three on a database of
its own, with one webhook endpoint (every event) on the test's receiver. What it proves:

1. ``test_calls_run_where_created_and_reach_every_node``: a call a client on B creates is run by
   B (``GET /v1/nodes``: B 1, A 0, C 0); clients on A and C join it through B (their requests are
   forwarded), everyone hears everyone's ``call.participant_joined``, and a ``call.send_event``
   from C reaches A and B (and C) as ``call.custom``. A call created on C is run by C: the counts
   are then exactly A 0, B 1, C 1, together 2.
2. ``test_ringing_across_nodes_and_its_webhooks_once``: a caller on B rings a callee on C, who
   gets ``call.ring`` and accepts on C; the caller hears ``call.accepted``. The receiver gets the
   call's webhooks (``call.created``, ``call.ring`` with the callee ``connected``,
   ``call.accepted``, …, ``call.ended``) exactly once each with ``seq`` 1..N, although B, not the
   leader, committed them, and nothing more through a further two leases.
3. ``test_admin_changes_on_the_leader_for_a_call_another_node_runs``: the leader's
   ``DELETE …/sessions/{session}`` kicks the participant on C of a call B runs, and its
   ``POST …/end`` ends the call: 200 each, ``call.participant_left`` (``kicked``) and
   ``call.ended`` (``admin``) reach the participants on A, B and C.
4. ``test_a_dead_owners_call_is_adopted_and_its_client_resumes_elsewhere``: C runs a call with
   participants on A and B only (its creator is connected to C without a session); C is
   SIGKILLed. Within a lease, one 5 s sweep and a margin, and without any request for the call,
   A or B adopts it (``/v1/nodes``); a new participant on A is heard by the others, a leave on B
   is heard too, and the creator, reconnecting to A with its ``resume_token``, resumes its
   connection (``resumed: true``, same ``connection_id``).
5. ``test_a_client_on_a_node_just_started_hears_the_calls_of_the_others``: B runs a call; C
   starts, and once C is ready (``/readyz`` 200) a client on C joins it and the participant on B
   sends events: every one must reach C (``call.custom`` goes to every participant). A node
   reads the live nodes its calls' events go to every third of a lease
   (``ClusterTunnel.refreshPeers``); a node that starts greets the others, which count it at
   once (without that, events of the first third of a lease were lost; a 6000 ms lease widens
   that window to 2 s). Tests 1-4 use a cluster as it comes up, with no wait for it to settle.

6. ``test_a_daemon_of_the_other_mode_refuses_to_join``: with A (spread) leading, a daemon
   started on the same database with ``store.postgres_calls`` leader exits 78 at once, naming the
   key and A's node; A keeps leading, alone.

Nothing sleeps to wait: every wait polls a condition with a deadline.
Only processes started here are ended, by PID.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from pgserver import postgres  # noqa: F401 - fixture
from webhook_harness import (  # noqa: F401 - fixtures
    CallClient, Daemon, Daemons, config, daemons, new_secret, receiver, wait_until,
)

LEASE_MS = 2000
#: Bound on a node's start and on every positive wait for something that crosses nodes.
WAIT_S = 15.0
#: A dead node's lease lapses within a lease; the next sweep (50 ticks of 100 ms) adopts its
#: calls within 5 s after that; plus a margin for a loaded machine.
ADOPT_WAIT_S = LEASE_MS / 1000 + 5.0 + 8.0
RELAYING = re.compile(r"admin_port=(\d+) client_port=(\d+) .*relaying clients to the leading node while standing by")
PID = re.compile(r" pid (\d+)")


def spread_env(postgres, database: str, lease_ms: int = LEASE_MS) -> dict[str, Any]:
    return dict(STORE_KIND="postgres", STORE_POSTGRES_URL=postgres.create_database(database),
                STORE_POSTGRES_LEASE_MS=lease_ms, STORE_POSTGRES_CALLS="spread")


def relaying(daemons: Daemons, cfg: dict[str, Any], state_dir: Path, env: dict[str, Any]) -> Daemon:
    """A daemon that stands by (another leads), given the ports its relaying line names, ready."""
    daemon = daemons.start(cfg, state_dir=state_dir, wait=False, **env)
    found = wait_until(lambda: daemon.process.poll() is not None or RELAYING.search(daemon.output()), WAIT_S, "the relaying line")
    assert daemon.process.poll() is None, daemon.output()
    daemon.admin_port, daemon.port = int(found.group(1)), int(found.group(2))
    wait_until(lambda: daemon.admin("GET", "/readyz")[0] == 200, WAIT_S, f"pid {daemon.pid} ready")
    return daemon


def spread_cluster(postgres, daemons: Daemons, receiver, tmp_path: Path, database: str, **settings: Any) -> list[Daemon]:
    """A (the leader), B and C, spread, on a new database, B and C given their ports
    (``settings``: more daemon settings, environment style)."""
    env = {**spread_env(postgres, database), **settings}
    cfg = config(receiver, {"main": new_secret()})
    a = daemons.start(cfg, state_dir=tmp_path / "a", **env)
    nodes = [a, relaying(daemons, cfg, tmp_path / "b", env), relaying(daemons, cfg, tmp_path / "c", env)]
    wait_until(lambda: sorted(roles(a).values()) == ["leader", "standby", "standby"], WAIT_S, "one leader, two standbys")
    assert roles(a)[a.pid] == "leader", a.admin_ok("GET", "/v1/nodes")
    return nodes


def view(daemon: Daemon) -> dict[str, Any]:
    """``GET /v1/nodes``, with each node's entry also under ``by_pid`` (the PID its description names)."""
    seen = daemon.admin_ok("GET", "/v1/nodes")
    return {**seen, "by_pid": {int(PID.search(n["description"]).group(1)): n for n in seen["nodes"]}}


def roles(daemon: Daemon) -> dict[int, str]:
    return {pid: node["role"] for pid, node in view(daemon)["by_pid"].items()}


def calls_per_node(asked: Daemon, nodes: list[Daemon]) -> tuple[list[int], int]:
    """``calls`` of each of ``nodes`` (0 for a node not listed) and the live nodes' total."""
    seen = view(asked)
    return [seen["by_pid"][d.pid]["calls"] if d.pid in seen["by_pid"] else 0 for d in nodes], seen["calls"]


def joined(client: CallClient, cid: str) -> set[str]:
    """The users whose ``call.participant_joined`` about ``cid`` the client heard."""
    return {e["data"]["participant"]["user_id"] for e in list(client.events)
            if e["type"] == "call.participant_joined" and e.get("call_cid") == cid}


def wait_joined(client: CallClient, cid: str, users: set[str]) -> None:
    wait_until(lambda: users <= joined(client, cid), WAIT_S, f"{client.user} hearing {sorted(users)} join {cid}")


def of_type(client: CallClient, kind: str, cid: str) -> list[dict[str, Any]]:
    return [e for e in list(client.events) if e["type"] == kind and e.get("call_cid") == cid]


def nothing_more_for(receiver, cid: str, count: int, seconds: float) -> None:
    """A negative check over an observation window: no request about ``cid`` beyond ``count``."""
    def about(r) -> list[Any]:
        return [m for m in r.snapshot() if m.call_cid == cid]
    try:
        receiver.wait_for(lambda r: len(about(r)) > count, seconds, "a request that must not come")
    except AssertionError:
        return
    raise AssertionError(f"{cid}: requests beyond the {count} expected: {about(receiver)[count:]}")


def webhooks_once(receiver, cid: str, wanted: list[str], seconds: float) -> list[Any]:
    """The call's webhooks, once its ``call.ended`` arrived: ``seq`` 1..N, each every time once,
    and each type of ``wanted`` exactly once, in that order."""
    sent = receiver.wait_for(lambda r: (m := r.by_call().get(cid, [])) and m[-1].type == "call.ended" and m, seconds,
                             f"the webhooks of {cid} up to call.ended")
    types = [m.type for m in sent]
    assert [m.seq for m in sent] == list(range(1, len(sent) + 1)), [(m.type, m.seq) for m in sent]
    for kind in wanted:
        assert types.count(kind) == 1, (kind, types)
    assert [types.index(kind) for kind in wanted] == sorted(types.index(kind) for kind in wanted), (wanted, types)
    return sent


def test_calls_run_where_created_and_reach_every_node(postgres, daemons, receiver, tmp_path) -> None:
    a, b, c = nodes = spread_cluster(postgres, daemons, receiver, tmp_path, "spread_run")
    assert calls_per_node(a, nodes) == ([0, 0, 0], 0)

    bob = b.client("bob")
    made = bob.ok("call.join", {"type": "default", "id": "one", "create": True})
    assert [p["user_id"] for p in made["participants"]] == ["bob"], made
    # B runs it; every daemon's admin API (B's and C's relayed to the leader) says so.
    for asked in nodes:
        assert calls_per_node(asked, nodes) == ([0, 1, 0], 1), (asked.pid, view(asked))

    alice, carol = a.client("alice"), c.client("carol")
    got = alice.ok("call.join", {"type": "default", "id": "one"})
    assert sorted(p["user_id"] for p in got["participants"]) == ["alice", "bob"], got
    got = carol.ok("call.join", {"type": "default", "id": "one"})
    assert sorted(p["user_id"] for p in got["participants"]) == ["alice", "bob", "carol"], got
    wait_joined(bob, "default:one", {"alice", "carol"})
    wait_joined(alice, "default:one", {"carol"})
    assert joined(carol, "default:one") == set(), carol.events  # joined last: heard nobody join
    assert calls_per_node(a, nodes) == ([0, 1, 0], 1), "joins from other nodes move nothing"

    # A custom event from C reaches every participant, the sender included.
    assert carol.ok("call.send_event", {"type": "default", "id": "one", "custom": {"reaction": "wave"}}) == {}
    for client in (alice, bob, carol):
        event = client.wait_event("call.custom", "default:one")
        assert event["data"]["user_id"] == "carol" and event["data"]["custom"] == {"reaction": "wave"}, event
    # The state is the same from every node.
    for client in (alice, bob, carol):
        state = client.ok("call.get", {"type": "default", "id": "one"})
        assert sorted(p["user_id"] for p in state["participants"]) == ["alice", "bob", "carol"], (client.user, state)

    # A call created on C is C's.
    dave = c.client("dave")
    dave.ok("call.join", {"type": "default", "id": "two", "create": True})
    for asked in nodes:
        assert calls_per_node(asked, nodes) == ([0, 1, 1], 2), (asked.pid, view(asked))
    got = alice.ok("call.join", {"type": "default", "id": "two"})
    assert sorted(p["user_id"] for p in got["participants"]) == ["alice", "dave"], got
    wait_joined(dave, "default:two", {"alice"})
    assert calls_per_node(a, nodes) == ([0, 1, 1], 2)
    for client in (alice, bob, carol, dave):
        assert not client.closed and client.unexpected == [], (client.user, client.unexpected)
        client.close()


def test_ringing_across_nodes_and_its_webhooks_once(postgres, daemons, receiver, tmp_path) -> None:
    a, b, c = nodes = spread_cluster(postgres, daemons, receiver, tmp_path, "spread_ring")
    cid = "ringing:r1"
    callee = c.client("callee")
    caller = b.client("caller")
    made = caller.ok("call.get_or_create", {"type": "ringing", "id": "r1", "members": ["callee"], "ring": True})
    assert made["created"] is True and made["call"]["ringing"] is True, made
    assert calls_per_node(a, nodes) == ([0, 1, 0], 1)

    ring = callee.wait_event("call.ring", cid)
    assert ring["data"]["from"] == "caller", ring
    accepted = callee.ok("call.accept", {"type": "ringing", "id": "r1"})
    assert {m["user_id"]: m["ring_state"] for m in accepted["members"]} == {"caller": "none", "callee": "accepted"}, accepted
    event = caller.wait_event("call.accepted", cid)
    assert event["data"]["user_id"] == "callee", event

    # Both join, from their own nodes; then the caller hangs up.
    caller.ok("call.join", {"type": "ringing", "id": "r1"})
    callee.ok("call.join", {"type": "ringing", "id": "r1"})
    wait_joined(caller, cid, {"callee"})
    caller.ok("call.end", {"type": "ringing", "id": "r1"})
    ended = callee.wait_event("call.ended", cid)
    assert ended["data"]["reason"] == "ended_by_user", ended

    # The leader sends what B committed: each message once, in seq order, every seq once.
    sent = webhooks_once(receiver, cid, ["call.created", "call.ring", "call.accepted", "call.ended"], WAIT_S)
    ringing = next(m for m in sent if m.type == "call.ring").data["ringing"]
    assert [(r["user_id"], r["connected"]) for r in ringing] == [("callee", True)], ringing
    assert next(m for m in sent if m.type == "call.ended").data["reason"] == "ended_by_user"
    attempts = [m for m in receiver.snapshot() if m.call_cid == cid]
    assert [m.webhook_id for m in attempts] == [m.webhook_id for m in sent] and all(m.succeeded for m in attempts), attempts
    # Nothing more for the call through two more leases (each a read of the store by the leader).
    nothing_more_for(receiver, cid, len(sent), 2 * LEASE_MS / 1000 + 1.0)
    assert receiver.failures == []
    deliveries = [d for d in a.deliveries(endpoint="main") if d["lane"] == cid]
    assert sorted(d["seq"] for d in deliveries) == list(range(1, len(sent) + 1)), deliveries
    assert all(d["status"] == "delivered" and d["attempts"] == 1 for d in deliveries), deliveries
    for client in (caller, callee):
        client.close()


def test_admin_changes_on_the_leader_for_a_call_another_node_runs(postgres, daemons, receiver, tmp_path) -> None:
    a, b, c = nodes = spread_cluster(postgres, daemons, receiver, tmp_path, "spread_admin")
    cid = "default:three"
    bob, alice, carol, erin = b.client("bob"), a.client("alice"), c.client("carol"), c.client("erin")
    bob.ok("call.join", {"type": "default", "id": "three", "create": True})
    alice.ok("call.join", {"type": "default", "id": "three"})
    carol.ok("call.join", {"type": "default", "id": "three"})
    erin_session = erin.ok("call.join", {"type": "default", "id": "three"})["session_id"]
    for client in (bob, alice, carol):
        wait_joined(client, cid, {"erin"})
    assert calls_per_node(a, nodes) == ([0, 1, 0], 1)

    # A kick of C's participant, asked of the leader, made by B.
    status, body = a.admin("DELETE", f"/v1/calls/default/three/sessions/{erin_session}")
    assert status == 200 and body["removed"] is True and body["session_id"] == erin_session, (status, body)
    for client in (bob, alice, carol, erin):
        left = wait_until(lambda cl=client: of_type(cl, "call.participant_left", cid), WAIT_S, f"{client.user}: erin kicked")
        assert left[0]["data"]["participant"] == {"reason": "kicked", "session_id": erin_session, "user_id": "erin"}, left

    # The end, asked of the leader, made by B: everyone hears it, wherever they are.
    status, body = a.admin("POST", "/v1/calls/default/three/end")
    assert status == 200 and body["ended"] is True and body["cid"] == cid, (status, body)
    for client in (bob, alice, carol):
        assert client.wait_event("call.ended", cid)["data"]["reason"] == "admin", client.events
    assert a.admin("POST", "/v1/calls/default/three/end")[0] == 409, "ended already"
    state = alice.ok("call.get", {"type": "default", "id": "three"})
    assert state["call"]["ended_reason"] == "admin" and state["participants"] == [], state
    wait_until(lambda: calls_per_node(a, nodes) == ([0, 0, 0], 0), WAIT_S, "no live call left")
    for client in (bob, alice, carol, erin):
        client.close()


def test_a_dead_owners_call_is_adopted_and_its_client_resumes_elsewhere(postgres, daemons, receiver, tmp_path) -> None:
    a, b, c = nodes = spread_cluster(postgres, daemons, receiver, tmp_path, "spread_adopt")
    cid = "default:four"
    carol = c.client("carol")
    resume_token, connection = carol.hello["resume_token"], carol.hello["connection_id"]
    carol.ok("call.get_or_create", {"type": "default", "id": "four"})  # C's call; carol joins nothing
    alice, bob = a.client("alice"), b.client("bob")
    alice.ok("call.join", {"type": "default", "id": "four"})
    bob.ok("call.join", {"type": "default", "id": "four"})
    wait_joined(alice, cid, {"bob"})
    assert calls_per_node(a, nodes) == ([0, 0, 1], 1)

    c.kill()
    killed = time.monotonic()
    # No request names the call: the sweep of A or B adopts it once C's lease lapsed.
    wait_until(lambda: "dead" in roles(a).values(), WAIT_S, "C seen dead")
    try:
        counts = wait_until(lambda: (n := calls_per_node(a, [a, b])) in (([1, 0], 1), ([0, 1], 1)) and n, ADOPT_WAIT_S,
                            f"{cid} adopted by A or B")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n--- A:\n{a.output()}\n--- B:\n{b.output()}") from None
    took = time.monotonic() - killed
    adopter = a if counts[0] == [1, 0] else b
    assert "adopted live calls no live node held" in adopter.output(), adopter.output()

    # The call carries on: a newcomer on A is heard by both, a leave on B by alice.
    dave = a.client("dave")
    got = dave.ok("call.join", {"type": "default", "id": "four"})
    assert sorted(p["user_id"] for p in got["participants"]) == ["alice", "bob", "dave"], got
    wait_joined(alice, cid, {"bob", "dave"})
    wait_joined(bob, cid, {"dave"})
    assert bob.ok("call.leave", {"type": "default", "id": "four"})["left"], bob.events
    for client in (alice, dave):
        left = wait_until(lambda cl=client: of_type(cl, "call.participant_left", cid), WAIT_S, f"{client.user}: bob left")
        assert left[0]["data"]["participant"]["user_id"] == "bob" and left[0]["data"]["participant"]["reason"] == "left", left

    # carol's socket died with C: on A, her resume token takes her connection over.
    again = CallClient(a.port, "carol", resume_token)
    assert again.hello["resumed"] is True and again.hello["connection_id"] == connection, again.hello
    state = again.ok("call.get", {"type": "default", "id": "four"})
    assert sorted(p["user_id"] for p in state["participants"]) == ["alice", "dave"], state
    assert calls_per_node(a, [a, b])[1] == 1
    print(f"adopted by {'A' if adopter is a else 'B'} {took:.2f} s after the kill (lease {LEASE_MS} ms)")
    for client in (alice, bob, dave, again):
        client.close()


def test_a_client_on_a_node_just_started_hears_the_calls_of_the_others(postgres, daemons, receiver, tmp_path) -> None:
    lease_ms = 6000
    env = spread_env(postgres, "spread_late", lease_ms)
    cfg = config(receiver, {"main": new_secret()})
    a = daemons.start(cfg, state_dir=tmp_path / "a", **env)
    b = relaying(daemons, cfg, tmp_path / "b", env)
    bob = b.client("bob")
    bob.ok("call.join", {"type": "default", "id": "late", "create": True})
    c = relaying(daemons, cfg, tmp_path / "c", env)
    ready = time.monotonic()
    carol = c.client("carol")
    got = carol.ok("call.join", {"type": "default", "id": "late"})  # forwarded to B, answered
    assert sorted(p["user_id"] for p in got["participants"]) == ["bob", "carol"], got
    wait_joined(bob, "default:late", {"carol"})
    # bob sends events, numbered, until carol has one; every one of them must reach her.
    sent: list[float] = []

    def step() -> list[dict[str, Any]]:
        sent.append(time.monotonic() - ready)
        bob.ok("call.send_event", {"type": "default", "id": "late", "custom": {"n": len(sent)}})
        return of_type(carol, "call.custom", "default:late")

    wait_until(step, lease_ms / 1000 + WAIT_S, "carol hearing bob's events", interval=0.1)
    first = wait_until(lambda: of_type(carol, "call.custom", "default:late"), WAIT_S)[0]["data"]["custom"]["n"]
    assert first == 1, (f"carol, on C, missed bob's events 1..{first - 1} of B's call, sent {sent[0]:.2f}..{sent[first - 2]:.2f} s"
                        f" after C was ready (/readyz 200); event {first}, sent at {sent[first - 1]:.2f} s, was the first she got"
                        f" (lease {lease_ms} ms: B reads the live nodes every {lease_ms // 3} ms)")
    assert calls_per_node(a, [a, b, c]) == ([0, 1, 0], 1)
    for client in (bob, carol):
        client.close()


def test_a_daemon_of_the_other_mode_refuses_to_join(postgres, daemons, receiver, tmp_path) -> None:
    env = spread_env(postgres, "spread_mixed")
    cfg = config(receiver, {"main": new_secret()})
    a = daemons.start(cfg, state_dir=tmp_path / "a", **env)
    other = daemons.start(cfg, state_dir=tmp_path / "b", wait=False, **{**env, "STORE_POSTGRES_CALLS": "leader"})
    code = other.process.wait(WAIT_S)
    assert code == 78, (code, other.output())
    node = view(a)["leader"]
    assert "store.postgres_calls is leader, but live nodes of this database run calls otherwise" in other.output(), other.output()
    assert f"{node}: spread" in other.output(), other.output()
    assert list(roles(a).values()) == ["leader"], view(a)
