"""Faults under three daemons that each run calls (``store.postgres_calls = "spread"``, ADR 0012
step 3.6), the issue's fault list for that mode: a call's owner cut off from the network, and
PostgreSQL restarted under load.

A spread daemon keeps its own call-protocol sockets and runs the calls it made or claimed; the
leader is only the one that polls SFUs, sends webhooks and answers the admin API. So what a fault
must show differs from the leader mode's tests (test_cluster_relay_faults.py): no socket of a
spread node is closed because the leader changed, and a call outlives its owner by being adopted.

- ``test_a_cut_off_owner_loses_its_ringing_call_to_one_adopter_and_acts_no_more``: each daemon in
  its own network namespace (``spaces``, root required, fails without it). A caller straight on a
  standby, R0, rings a callee on the other standby, R1: R0 runs the call. R0's network is cut
  (its packets dropped). Once its lease lapsed the others see it dead, and the leader or R1
  adopts the call (``GET /v1/nodes``); the caller drops its silent socket and resumes through the
  balancer (same connection and session); the ring times out on the adopter: the caller hears
  ``call.missed`` then ``call.ended`` (``no_answer``), the callee ``call.ring_stopped``
  (``timeout``). The network comes back: R0 relays again (``/readyz`` 200, UP
  for the balancer) but runs no call. R0's own ring timer fired too, while it was cut off; once
  it reaches PostgreSQL again its end of the call is refused (``call ringing:c1 was taken over
  from node …``, logged, the batch rolled back), and the call's event log holds one
  ``call.ring``, one ``call.missed`` and one ``call.ended``, in that order and the end last: no
  moment where two nodes acted on the call. A client straight on R0 reads the ended call, and a
  call created there is R0's.
- ``test_a_spread_node_cut_off_about_a_lease_closes_its_call_sockets``: a client straight on a
  standby; its network is cut until the leader sees the node dead, then restored. The node, not
  renewed for about a lease, has closed the client's socket with 1012 (its calls and connections
  are for live nodes to take over) instead of keeping it with nothing behind it; the client
  resumes through the balancer (same connection) and is served, and the node serves call
  sockets again.
- ``test_a_cut_off_spread_leader_is_replaced_while_the_others_calls_carry_on``: each daemon in
  its namespace. A call run by standby R0 with a participant on R1, and a ringing call run by
  the leader (its caller straight on it) ringing another callee on R1. The leader's network is
  cut.
  The standbys' call sockets stay open through the leader change (spread mode keeps them on
  their daemon): the call between R0 and R1 carries events both ways while the leader is away,
  one standby takes the lead (generation 2), and the old leader's ringing call is adopted and
  times out there (the callee hears ``call.ring_stopped``). The network comes back: the old
  leader exits 75 (its lead taken); the ringing call's event log holds one ``call.missed`` and
  one ``call.ended``, the end last.
- ``test_a_killed_owner_of_a_ringing_call_its_ring_times_out_once_with_its_webhooks``: no
  namespaces; A leads, B and C stand by (test_cluster_spread's ``spread_cluster``, one webhook
  endpoint on the test's receiver). A caller on C rings a callee on B and joins; C is SIGKILLed.
  The caller resumes on A (same connection, its session listed although another daemon will run
  the call); A or B adopts the call and the ring times out there: the caller hears
  ``call.missed`` then ``call.ended`` (``no_answer``), the callee ``call.ring_stopped``. The
  receiver gets ``call.created``, ``call.ring``, ``call.missed`` and ``call.ended`` once each, in
  that order, ``seq`` 1..N, and nothing more through two further leases.
- ``test_postgresql_restarted_under_spread_load_refuses_unavailable_and_recovers``: a client
  straight on each daemon creates calls in a loop (about 20 a second each) while PostgreSQL is
  stopped and started again (same port), once the leader's client was answered ``unavailable``
  and every other client's socket was closed with 1012 (its node not renewed for a lease). A
  client whose socket closed resumes through the balancer, and is refused while no node serves.
  No request is answered ``ok`` during the outage, none goes unanswered, and no error but
  ``unavailable`` is answered. Once it is back
  exactly one node leads, every running one is ready, each client has calls created again, and
  every call a client was told was created, before, during and after the outage, is listed by
  the admin API and counted once among the nodes' calls.

Nothing sleeps to wait: every wait polls with a deadline. Only processes and namespaces made
here are ended or deleted, by PID.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cluster_harness import LEASE_MS, TAKEOVER_S, Cluster, cluster_of, postgres  # noqa: F401 - fixtures
from pgserver import PostgresServer
from test_cluster_faults import spaces  # noqa: F401 - fixture
from test_cluster_relay import closed_with, relay_cluster
from test_cluster_relay_faults import abandon, logs, readyz, relaying_in_spaces, resumed, settled, space_of
from test_cluster_spread import nothing_more_for, spread_cluster, webhooks_once
from webhook_harness import CallClient, Daemon, Daemons, daemons, receiver, wait_until  # noqa: F401 - fixture

SPREAD = {"STORE_POSTGRES_CALLS": "spread"}
#: The ring outlasts the cut node's lapsed lease (a lease), the adopting sweep (5 s), and a
#: margin for a loaded machine, so that the adopter, not the load, ends it.
RING_MS = 16000
#: A lapsed lease, one sweep of 50 ticks of 100 ms, and a margin.
ADOPT_WAIT_S = LEASE_MS / 1000 + 5.0 + 10.0


def call_counts(asked: Daemon) -> dict[int, int]:
    """``GET /v1/nodes``: the live calls each live node runs, by the PID its description names."""
    view = asked.admin_ok("GET", "/v1/nodes")
    return {int(n["description"].split(" pid ")[1].split(",")[0]): n["calls"] for n in view["nodes"] if n["role"] != "dead"}


def node_roles(asked: Daemon) -> dict[int, str]:
    view = asked.admin_ok("GET", "/v1/nodes")
    return {int(n["description"].split(" pid ")[1].split(",")[0]): n["role"] for n in view["nodes"]}


def call_log(asked: Daemon, cid: str) -> list[tuple[int, str]]:
    """The call's durable event log (time in ms, type), as the admin API shows it."""
    kind, call_id = cid.split(":", 1)
    return [(e["at"], e["type"]) for e in asked.admin_ok("GET", f"/v1/calls/{kind}/{call_id}")["events"]]


def acted_once(log: list[tuple[int, str]]) -> None:
    """One ring, one miss, one end, in that order, and nothing after the end."""
    types = [t for _, t in log]
    assert [at for at, _ in log] == sorted(at for at, _ in log), log
    for kind in ("call.ring", "call.missed", "call.ended"):
        assert types.count(kind) == 1, (kind, log)
    assert types.index("call.ring") < types.index("call.missed") < types.index("call.ended") == len(types) - 1, log


def test_a_cut_off_owner_loses_its_ringing_call_to_one_adopter_and_acts_no_more(spaces, daemons: Daemons, tmp_path: Path) -> None:
    with relaying_in_spaces(spaces, daemons, tmp_path, "spreadcut", ring_ms=RING_MS, **SPREAD) as (cluster, name, (r0, r1)):
        leader, owner, space = cluster.nodes[name], cluster.nodes[r0], space_of(spaces, r0)
        cid = "ringing:c1"
        alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=r1)
        alice.ok("call.get_or_create", {"type": "ringing", "id": "c1", "members": ["bob"], "ring": True})
        session = alice.ok("call.join", {"type": "ringing", "id": "c1"})["session_id"]
        bob.wait_event("call.ring", cid)
        assert call_counts(leader) == {leader.pid: 0, owner.pid: 1, cluster.nodes[r1].pid: 0}, logs(cluster)

        space.cut()
        try:
            wait_until(lambda: node_roles(leader).get(owner.pid) == "dead", TAKEOVER_S, f"{r0} seen dead")
            try:
                counts = wait_until(lambda: (c := call_counts(leader)) and sum(c.values()) == 1 and owner.pid not in c and c,
                                    ADOPT_WAIT_S, f"{cid} adopted by {name} or {r1}")
            except AssertionError as failure:
                raise AssertionError(f"{failure}: {call_counts(leader)}\n{logs(cluster)}") from None
            adopter = next(n for n in (name, r1) if counts[cluster.nodes[n].pid] == 1)
            abandon(alice)
            alice = resumed(cluster, alice)
            assert alice.hello["sessions"] == [session], alice.hello
            ended = alice.wait_event("call.ended", cid, timeout=RING_MS / 1000 + TAKEOVER_S)
            assert ended["data"]["call"]["ended_reason"] == "no_answer", ended
            assert alice.wait_event("call.missed", cid)["seq"] < ended["seq"], alice.events
            assert bob.wait_event("call.ring_stopped", cid)["data"]["reason"] == "timeout", bob.events
        finally:
            space.restore()

        assert cluster.leader() == name, "the leader stays; every node UP again"
        assert readyz(owner) == 200 and owner.process.poll() is None, owner.output()
        # The cut node's ring timer fired too (the deadline passed while it was cut off); its
        # end of the call is refused by the store once it reaches it again: it lost the call.
        fenced = f"call {cid} was taken over from node"
        wait_until(lambda: fenced in owner.output(), TAKEOVER_S, f"{r0}'s late end of {cid} refused")
        assert "call state commit failed; batch rolled back" in owner.output(), owner.output()
        acted_once(call_log(leader, cid))
        assert call_counts(leader) == {leader.pid: 0, owner.pid: 0, cluster.nodes[r1].pid: 0}, (adopter, logs(cluster))

        again = cluster.client("bob", node=r0)  # bob's second connection, straight on the node that was cut off
        call = again.ok("call.get", {"type": "ringing", "id": "c1"})["call"]
        assert call["ended_reason"] == "no_answer", call
        assert again.ok("call.get_or_create", {"type": "default", "id": "after"})["created"]
        assert call_counts(leader)[owner.pid] == 1, call_counts(leader)
        for client in (alice, bob, again):
            assert client.unexpected == [], (client.user, client.unexpected)
            client.close()


def test_a_cut_off_spread_leader_is_replaced_while_the_others_calls_carry_on(spaces, daemons: Daemons, tmp_path: Path) -> None:
    with relaying_in_spaces(spaces, daemons, tmp_path, "spreadleadercut", ring_ms=RING_MS, **SPREAD) as (cluster, name, (r0, r1)):
        old, space = cluster.nodes[name], space_of(spaces, name)
        alice, bob = cluster.client("alice", node=r0), cluster.client("bob", node=r1)
        alice.ok("call.join", {"type": "default", "id": "talk", "create": True})
        bob.ok("call.join", {"type": "default", "id": "talk"})
        alice.wait_event("call.participant_joined", "default:talk")
        carol, dave = cluster.client("carol", node=name), cluster.client("dave", node=r1)
        carol.ok("call.get_or_create", {"type": "ringing", "id": "lc", "members": ["dave"], "ring": True})
        dave.wait_event("call.ring", "ringing:lc")
        counts = call_counts(old)
        assert counts[old.pid] == 1 and counts[cluster.nodes[r0].pid] == 1, counts

        space.cut()
        try:
            name = cluster.leader([r0, r1])
            new = cluster.nodes[name]
            assert new.admin_ok("GET", "/v1/nodes")["generation"] == 2, new.admin_ok("GET", "/v1/nodes")
            # The standbys' call sockets were kept through the change of leader, and their call
            # still carries events both ways.
            for n, (sender, hearer) in enumerate(((alice, bob), (bob, alice))):
                assert sender.ok("call.send_event", {"type": "default", "id": "talk", "custom": {"n": n}}) == {}
                wait_until(lambda h=hearer, n=n: any(e["type"] == "call.custom" and e["data"]["custom"] == {"n": n} for e in list(h.events)),
                           TAKEOVER_S, f"{hearer.user} hearing event {n}")
            stopped = dave.wait_event("call.ring_stopped", "ringing:lc", timeout=RING_MS / 1000 + ADOPT_WAIT_S)
            assert stopped["data"]["reason"] == "timeout", stopped
            assert not any(c.closed for c in (alice, bob, dave)), [c.ws.close_code for c in (alice, bob, dave)]
        finally:
            space.restore()

        code = old.process.wait(TAKEOVER_S)
        assert code == 75, f"exit {code}:\n{old.output()}"
        assert "another node took the lead of the PostgreSQL database" in old.output(), old.output()
        types = [t for _, t in call_log(new, "ringing:lc")]
        assert types.count("call.missed") == 1 and types.count("call.ended") == 1 and types[-1] == "call.ended", types
        for client in (alice, bob, dave):
            assert client.unexpected == [], (client.user, client.unexpected)
            client.close()
        carol.close()


def test_a_spread_node_cut_off_about_a_lease_closes_its_call_sockets(spaces, daemons: Daemons, tmp_path: Path) -> None:
    with relaying_in_spaces(spaces, daemons, tmp_path, "spreadshort", **SPREAD) as (cluster, name, (r0, _)):
        leader, node, space = cluster.nodes[name], cluster.nodes[r0], space_of(spaces, r0)
        dave = cluster.client("dave", node=r0)
        assert dave.ok("call.get_or_create", {"type": "default", "id": "before"})["created"]
        space.cut()
        try:
            wait_until(lambda: node_roles(leader).get(node.pid) == "dead", TAKEOVER_S, f"{r0} seen dead")
        finally:
            space.restore()
        assert closed_with(dave) == 1012, logs(cluster)
        dave.close()
        dave = resumed(cluster, dave)
        assert dave.ok("call.get", {"type": "default", "id": "before"})["call"]["created_by"] == "dave"
        wait_until(lambda: readyz(node) == 200, TAKEOVER_S, f"{r0} serving again")
        erin = cluster.client("erin", node=r0)
        assert erin.ok("call.get_or_create", {"type": "default", "id": "after"})["created"]
        assert call_counts(leader)[node.pid] >= 1, call_counts(leader)
        for client in (dave, erin):
            assert client.unexpected == [], (client.user, client.unexpected)
            client.close()


def test_a_killed_owner_of_a_ringing_call_its_ring_times_out_once_with_its_webhooks(postgres, daemons, receiver, tmp_path) -> None:
    a, b, c = spread_cluster(postgres, daemons, receiver, tmp_path, "spread_killring",
                             CALL_TYPES_RINGING_INCOMING_TIMEOUT_MS=RING_MS, CALL_TYPES_RINGING_AUTO_CANCEL_TIMEOUT_MS=RING_MS)
    cid = "ringing:k1"
    callee, caller = b.client("callee"), c.client("caller")
    caller.ok("call.get_or_create", {"type": "ringing", "id": "k1", "members": ["callee"], "ring": True})
    session = caller.ok("call.join", {"type": "ringing", "id": "k1"})["session_id"]
    callee.wait_event("call.ring", cid)
    assert call_counts(a) == {a.pid: 0, b.pid: 0, c.pid: 1}

    c.kill()
    again = CallClient(a.port, "caller", caller.hello["resume_token"])
    assert again.hello["resumed"] and again.hello["connection_id"] == caller.hello["connection_id"], again.hello
    assert again.hello["sessions"] == [session], again.hello
    try:
        ended = again.wait_event("call.ended", cid, timeout=RING_MS / 1000 + ADOPT_WAIT_S)
    except AssertionError as failure:
        raise AssertionError(f"{failure}\n--- A:\n{a.output()}\n--- B:\n{b.output()}") from None
    assert ended["data"]["call"]["ended_reason"] == "no_answer", ended
    assert again.wait_event("call.missed", cid)["seq"] < ended["seq"], again.events
    assert callee.wait_event("call.ring_stopped", cid)["data"]["reason"] == "timeout", callee.events

    sent = webhooks_once(receiver, cid, ["call.created", "call.ring", "call.missed", "call.ended"], TAKEOVER_S)
    nothing_more_for(receiver, cid, len(sent), 2 * LEASE_MS / 1000 + 1.0)
    assert receiver.failures == []
    for client in (again, callee):
        assert client.unexpected == [], (client.user, client.unexpected)
        client.close()
    caller.close()


class Load(threading.Thread):
    """A client creating calls in a loop, about 20 a second: first straight on ``node``, then,
    once its socket closed, resuming through the balancer. Records what each request got."""

    def __init__(self, cluster: Cluster, node: str, user: str) -> None:
        super().__init__(name=f"load-{user}", daemon=True)
        self.cluster, self.node, self.user = cluster, node, user
        self.halt = threading.Event()
        self.lock = threading.Lock()
        #: (monotonic time, outcome): ``ok``, an error code, ``closed <code>``, ``refused``, ``unanswered``.
        self.outcomes: list[tuple[float, str]] = []
        self.created: list[str] = []

    def note(self, outcome: str) -> None:
        with self.lock:
            self.outcomes.append((time.monotonic(), outcome))

    def seen(self, since: float = 0.0) -> list[str]:
        with self.lock:
            return [o for at, o in self.outcomes if at >= since]

    def run(self) -> None:
        client: CallClient | None = None
        token: str | None = None
        n = 0
        while not self.halt.is_set():
            if client is None or client.closed:
                if client is not None:
                    self.note(f"closed {client.ws.close_code}")
                    client.close()
                try:
                    client = self.cluster.client(self.user, resume=token, node=None if token else self.node)
                    token = client.hello["resume_token"]
                except Exception:  # refused or reset while no node serves: tried again
                    client = None
                    self.note("refused")
                    self.halt.wait(0.1)
                    continue
            n += 1
            call_id = f"{self.user}-{n}"
            try:
                answer = client.request("call.get_or_create", {"type": "default", "id": call_id})
            except AssertionError:
                # Closed before it answered (the call's fate unknown, not acknowledged), or no answer.
                if not client.closed:
                    self.note("unanswered")
                continue
            if answer.get("type") == "response":
                with self.lock:
                    self.created.append(call_id)
                self.note("ok")
            else:
                self.note(answer["error"]["code"])
            self.halt.wait(0.05)
        if client is not None:
            client.close()


def listed_calls(asked: Daemon) -> set[str]:
    """Every call's id the admin API lists (all pages)."""
    found: set[str] = set()
    cursor: str | None = None
    while True:
        page = asked.admin_ok("GET", "/v1/calls?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
        found |= {c["id"] for c in page["calls"]}
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def test_postgresql_restarted_under_spread_load_refuses_unavailable_and_recovers(cluster_of, postgres: PostgresServer) -> None:
    cluster, name, _ = relay_cluster(cluster_of, "spreadrestart", **SPREAD)
    loads = [Load(cluster, node, f"u{node}") for node in cluster.nodes]
    for load in loads:
        load.start()
    try:
        wait_until(lambda: all(load.seen().count("ok") >= 10 for load in loads), TAKEOVER_S, "every client creating calls")
        postgres.stop()
        stopped = time.monotonic()
        try:
            # The leader's client is answered unavailable; a standby's socket is closed once its
            # node went a lease unrenewed, and it is refused until the node is renewed again.
            wait_until(lambda: all(("unavailable" if load.node == name else "closed 1012") in load.seen(stopped) for load in loads),
                       TAKEOVER_S, f"every client seeing the outage: {[load.seen(stopped)[-5:] for load in loads]}")
            assert all("ok" not in load.seen(stopped + 1.0) for load in loads), [load.seen(stopped) for load in loads]
        finally:
            postgres.start()
        started = time.monotonic()

        try:
            running = wait_until(lambda: settled(cluster), TAKEOVER_S, "one node leading, the others ready again")
            wait_until(lambda: all(load.seen(started).count("ok") >= 10 for load in loads), TAKEOVER_S,
                       f"every client creating calls again: {[load.seen(started)[-5:] for load in loads]}")
        except AssertionError as failure:
            raise AssertionError(f"{failure}\n{logs(cluster)}") from None
    finally:
        for load in loads:
            load.halt.set()
        for load in loads:
            load.join(TAKEOVER_S)
    for n, daemon in cluster.nodes.items():
        if n not in running:  # the old leader, deposed: a relaying node took the lead
            assert n == name and daemon.process.returncode == 75, f"{n} exited {daemon.process.returncode}\n{logs(cluster)}"
    for load in loads:
        outcomes = set(load.seen())
        assert outcomes <= {"ok", "unavailable", "closed 1012", "closed 1001", "refused"}, (load.user, sorted(outcomes))
    now = cluster.nodes[running[0]]
    created = {call_id for load in loads for call_id in load.created}
    listed = listed_calls(now)
    assert created <= listed, f"acknowledged calls missing: {sorted(created - listed)[:10]}"
    counts = call_counts(now)
    assert sum(counts.values()) == len(listed), (counts, len(listed))
    print(f"{len(created)} calls acknowledged; outcomes: "
          + ", ".join(f"{load.user}: {sorted((o, load.seen().count(o)) for o in set(load.seen()))}" for load in loads))
