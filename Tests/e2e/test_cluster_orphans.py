"""A dead node's ringing call that nobody asks about is adopted, and its ring times out.

On a shared store (``store.kind = "postgres"``, ADR 0012) each call is run by the node that
claimed it in ``call_owner``. Every 50 ticks (about 5 s) a daemon's call hub adopts the live calls
no live node holds (``CallOwnership.orphans``, ``CallHub.adoptOrphans``), so that their deadlines
pass even when no client asks for them.

One daemon leads a private PostgreSQL database (lease 1000 ms) with one webhook endpoint on the
test's receiver. After it is ready, the test does what two other nodes would have left behind,
with ``psql`` in one transaction, and nothing more (no notice, no client):

- an *orphan*: a live ``ringing`` call alice made, bob rung with his incoming and auto-cancel
  deadlines already past, held at generation 1 by ``node-dead`` whose lease lapsed;
- a *control*: the same call held by ``node-alive``, whose lease runs for an hour.

Within one sweep and a margin the orphan must be held by the daemon's node at generation 2, bob
must read ``missed`` and the call must have ended ``no_answer``; the receiver gets ``call.missed``
(bob) and ``call.ended`` (``no_answer``) for it, once each. The control's rows must not change,
and nothing may be sent for it, through a further full sweep window after the adoption.

Without the adoption this fails: the daemon claims live calls only at its start and when a
client asks for one, and the rows were inserted after its start.

Nothing sleeps to wait: every wait polls with a deadline. Only processes started here are ended,
by PID.
"""

from __future__ import annotations

import time

import pytest

from pgserver import PostgresServer, postgres  # noqa: F401 - fixture
from webhook_harness import config, daemons, new_secret, receiver, wait_until  # noqa: F401 - fixtures

LEASE_MS = 1000
#: One sweep is 50 ticks of 100 ms; a margin for the tick, the claim, the load and the commit.
SWEEP_S = 5.0
ADOPT_WAIT_S = 2 * SWEEP_S + 5.0
#: How long the control must stay untouched after the orphan's adoption: more than one sweep.
CONTROL_WINDOW_S = SWEEP_S + 1.5
DATABASE = "cluster_orphans"
ORPHAN, CONTROL = "ringing:orphan", "ringing:control"




def node_row(node: str, lease: str) -> str:
    return (f"INSERT INTO node (id, description, started_at, last_seen, lease_until, sockets) VALUES "
            f"('{node}', 'inserted by the test', now() - interval '1 hour', now() + interval '{lease}' - interval '1 second',"
            f" now() + interval '{lease}', 0);\n")


def ringing_call(cid: str, owner: str) -> str:
    """The rows a node that ran ``cid`` leaves: alice rang bob 33 s ago, both deadlines 3 s past
    (as ``PostgresStore+Apply``'s ``Table.call`` and ``Table.member`` write them), held by ``owner``."""
    call_id = cid.split(":", 1)[1]
    made, due = "now() - interval '33 seconds'", "now() - interval '3 seconds'"
    return (
        "INSERT INTO call (cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung, auto_cancel_at,"
        " empty_deadline, custom, event_seq) VALUES "
        f"('{cid}', 'ringing', '{call_id}', 'alice', {made}, 1, NULL, NULL, true, {due}, NULL, '{{}}', 0);\n"
        "INSERT INTO call_member (cid, user_id, added_at, ring_state, ring_reason, ring_updated_at, ring_deadline) VALUES "
        f"('{cid}', 'alice', {made}, 'none', NULL, NULL, NULL), ('{cid}', 'bob', {made}, 'ringing', NULL, {made}, {due});\n"
        f"INSERT INTO call_owner (cid, node, generation, claimed_at) VALUES ('{cid}', '{owner}', 1, {made});\n"
    )


def state(pg: PostgresServer, cid: str) -> tuple[str, ...]:
    """``(owner node, generation, bob's ring state, ended_reason or 'live')`` of ``cid``."""
    out = pg.psql(
        "SELECT coalesce(o.node, '-'), coalesce(o.generation::text, '-'), m.ring_state,"
        " CASE WHEN c.ended_at IS NULL THEN 'live' ELSE coalesce(c.ended_reason, '?') END"
        " FROM call c JOIN call_member m ON m.cid = c.cid AND m.user_id = 'bob' LEFT JOIN call_owner o ON o.cid = c.cid"
        f" WHERE c.cid = '{cid}'", database=DATABASE)
    return tuple(out.split("|"))


def test_a_dead_nodes_ringing_call_is_adopted_and_times_out_while_a_live_nodes_is_left(postgres, daemons, receiver) -> None:
    url = postgres.create_database(DATABASE)
    daemon = daemons.start(config(receiver, {"main": new_secret()}),
                           STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=LEASE_MS)
    wait_until(lambda: daemon.admin("GET", "/readyz")[0] == 200, ADOPT_WAIT_S, "the daemon ready on PostgreSQL")
    me = next(n["id"] for n in daemon.admin_ok("GET", "/v1/nodes")["nodes"] if n["current"])
    assert me not in ("node-dead", "node-alive"), me
    assert daemon.admin_ok("GET", "/v1/calls")["calls"] == []
    assert "calls=0 connections=0 sessions=0 [SwitchboardApp] call state restored" in daemon.output(), "its start claimed none"

    # What two other nodes left in the shared store, after this daemon's start.
    postgres.psql("BEGIN;\n" + node_row("node-dead", "-10 seconds") + node_row("node-alive", "1 hour")
                  + ringing_call(ORPHAN, "node-dead") + ringing_call(CONTROL, "node-alive") + "COMMIT;", database=DATABASE)
    inserted = time.monotonic()
    left = ("node-alive", "1", "ringing", "live")
    assert state(postgres, ORPHAN) == ("node-dead", "1", "ringing", "live")
    assert state(postgres, CONTROL) == left
    orphans = postgres.psql("SELECT c.cid FROM call c LEFT JOIN call_owner o ON o.cid = c.cid WHERE c.ended_at IS NULL AND"
                            " NOT EXISTS (SELECT 1 FROM node n WHERE n.id = o.node AND n.lease_until > now())", database=DATABASE)
    assert orphans == ORPHAN, "only the dead node's call is an orphan"

    # The next sweep claims it (the next generation) and loads it; its past deadlines fire at
    # the following tick. The claim outlives the end until a later sweep gives it up.
    adopted = wait_until(lambda: (s := state(postgres, ORPHAN))[0] != "node-dead" and s, ADOPT_WAIT_S,
                         f"{ORPHAN} claimed from node-dead")
    took = time.monotonic() - inserted
    assert adopted[:2] == (me, "2"), adopted
    wait_until(lambda: state(postgres, ORPHAN) == (me, "2", "missed", "no_answer"), ADOPT_WAIT_S,
               f"{ORPHAN}: bob missed, the call ended no_answer")
    assert state(postgres, CONTROL) == left
    assert "adopted live calls no live node held" in daemon.output(), daemon.output()

    # Its webhooks: bob missed it, then it ended; nothing for the control.
    sent = receiver.wait_for(lambda r: len(r.by_call().get(ORPHAN, [])) >= 2 and r.by_call()[ORPHAN], ADOPT_WAIT_S,
                             f"call.missed and call.ended of {ORPHAN}")
    assert [(a.type, a.seq) for a in sent] == [("call.missed", 1), ("call.ended", 2)], sent
    assert sent[0].data["user_id"] == "bob" and sent[1].data["reason"] == "no_answer", [a.json for a in sent]
    assert all(a.endpoint == "main" and a.succeeded for a in sent), sent

    # The live node's call stays with it through a further full sweep (polled, not slept).
    watched = time.monotonic()
    deadline = watched + CONTROL_WINDOW_S
    while time.monotonic() < deadline:
        assert state(postgres, CONTROL) == left, "a live node's call was taken"
        time.sleep(0.1)  # the poll's interval over the window, not a wait for something to happen
    assert state(postgres, CONTROL) == left
    attempts = receiver.snapshot()
    assert [a for a in attempts if a.call_cid == CONTROL] == [], attempts
    assert [a.type for a in attempts if a.call_cid == ORPHAN] == ["call.missed", "call.ended"], attempts
    assert receiver.failures == []
    assert {c["cid"]: c["live"] for c in daemon.admin_ok("GET", "/v1/calls")["calls"]}.get(ORPHAN) is False
    print(f"adopted {took:.2f} s after the insert; control watched {time.monotonic() - watched:.1f} s after that")
