"""Webhooks under a failing receiver and a crashing daemon: nothing acknowledged is lost.

- ``test_faults_*``: the receiver answers 500 for a while, then lets requests time out (it sleeps
  past ``webhooks.timeout_ms`` = 500 ms), then closes connections without answering, while
  several calls make events. Afterwards every state change acknowledged to a client has its
  webhook, per-call order holds among first receipts, duplicates carry identical bodies, and
  ``GET /v1/webhooks/deliveries`` shows every delivery delivered with the attempts the receiver
  saw (more than one for the faulted ones).
- ``test_sigkill_*``: with the receiver failing, then hanging, events are made and the daemon is
  SIGKILLed (by PID) with deliveries pending and one in flight; a daemon on the same state
  directory and configuration then delivers every event acknowledged before the kill, with the
  webhook-ids of the pre-kill attempts, in per-call order.

- ``test_sigterm_*``: a clean stop with an attempt hanging exits 0 promptly; the attempt is made
  again after the restart, with the same webhook-id and body.

``webhooks.max_backoff_ms`` is 1000 so that retries come within a second.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from webhook_harness import CallClient, Daemon, daemons, new_secret, receiver, wait_until  # noqa: F401 - fixtures
from webhook_receiver import Attempt, WebhookReceiver, duplicate_violations, order_violations

TIMEOUT_MS = 500


class Ledger:
    """The webhooks the test's acknowledged requests must cause, per call, in order."""

    def __init__(self) -> None:
        self.calls: dict[str, list[str]] = {}

    def expect(self, cid: str, *types: str) -> None:
        self.calls.setdefault(cid, []).extend(types)

    @property
    def total(self) -> int:
        return sum(len(types) for types in self.calls.values())


def ring(caller: CallClient, ledger: Ledger, call_id: str, callee: str) -> None:
    caller.ok("call.get_or_create", {"type": "ringing", "id": call_id, "members": [callee], "ring": True})
    ledger.expect(f"ringing:{call_id}", "call.created", "call.ring")


def join(client: CallClient, ledger: Ledger, call_id: str, *, first: bool) -> None:
    client.ok("call.join", {"type": "default", "id": call_id, "create": first})
    cid = f"default:{call_id}"
    if first:
        ledger.expect(cid, "call.created", "call.session_started", "call.participant_joined")
    else:
        ledger.expect(cid, "call.participant_joined")


def leave(client: CallClient, ledger: Ledger, call_id: str, *, last: bool) -> None:
    client.ok("call.leave", {"type": "default", "id": call_id})
    ledger.expect(f"default:{call_id}", "call.participant_left", *(["call.session_ended"] if last else []))


def check_complete(receiver: WebhookReceiver, ledger: Ledger, endpoint: str = "main") -> dict[str, list[Attempt]]:
    """Every expected message delivered (2xx) once at least, per call in seq order 1..n, with
    exactly the expected types; first receipts in per-call order; duplicates identical."""
    everything = receiver.snapshot(endpoint)
    assert receiver.failures == []
    assert order_violations(everything) == []
    assert duplicate_violations(everything) == []
    by_call = receiver.by_call(endpoint)
    firsts = receiver.by_call(endpoint, delivered_only=False)
    for cid, types in ledger.calls.items():
        got = by_call.get(cid, [])
        assert [a.type for a in got] == types, f"{cid}: expected {types}, delivered {got}"
        assert [a.seq for a in got] == list(range(1, len(types) + 1)), f"{cid}: {got}"
        assert [a.seq for a in firsts[cid]] == list(range(1, len(types) + 1)), f"{cid} first receipts: {firsts[cid]}"
    assert sorted(by_call) == sorted(ledger.calls), f"calls with webhooks {sorted(by_call)} vs made {sorted(ledger.calls)}"
    return by_call


def settled_deliveries(daemon: Daemon, total: int) -> list[dict[str, Any]]:
    def settled() -> list[dict[str, Any]] | None:
        rows = daemon.deliveries()
        return rows if len(rows) == total and all(r["status"] == "delivered" for r in rows) else None

    return wait_until(settled, timeout=15, what=f"{total} deliveries all delivered")


# ---------------------------------------------------------------------------------------------
# 2. Faults


def test_faults_500_then_timeouts_then_closed_connections_lose_nothing(daemons, receiver) -> None:
    secret = new_secret()
    daemon = daemons.start({
        "endpoints": [f"main={receiver.endpoint('main', secret)}"], "secrets": [f"main={secret}"],
        "timeout_ms": TIMEOUT_MS, "max_backoff_ms": 1000,
    })
    # In this order: 500 for 2 s, then 3 requests that time out, then 3 closed without an answer.
    receiver.fault("status", status=500, seconds=2.0)
    receiver.fault("timeout", count=3, sleep=TIMEOUT_MS / 1000 * 2.5)
    receiver.fault("close", count=3)
    ledger = Ledger()
    alice, bob, carol, dave = (daemon.client(u) for u in ("alice", "bob", "carol", "dave"))

    # Wave 1, during the 500s.
    ring(alice, ledger, "f1", "bob")
    join(carol, ledger, "fm", first=True)
    receiver.wait_for(lambda r: any(a.answer == 500 for a in r.snapshot()), what="a 500")

    # Wave 2, once requests time out.
    receiver.wait_for(lambda r: any(a.answer == "timeout" for a in r.snapshot()), timeout=10, what="a timed-out request")
    bob.ok("call.accept", {"type": "ringing", "id": "f1"})
    ledger.expect("ringing:f1", "call.accepted")
    join(dave, ledger, "fm", first=False)
    ring(alice, ledger, "f2", "bob")

    # Wave 3, once connections are closed on the daemon.
    receiver.wait_for(lambda r: any(a.answer == "close" for a in r.snapshot()), timeout=10, what="a closed request")
    bob.ok("call.reject", {"type": "ringing", "id": "f2", "reason": "decline"})
    ledger.expect("ringing:f2", "call.rejected", "call.ended")  # the only callee declined: all_rejected
    alice.ok("call.end", {"type": "ringing", "id": "f1"})
    ledger.expect("ringing:f1", "call.ended")
    leave(carol, ledger, "fm", last=False)
    leave(dave, ledger, "fm", last=True)
    ring(alice, ledger, "f3", "carol")

    receiver.wait_for(lambda r: len(r.delivered("main")) >= ledger.total, timeout=20, what=f"{ledger.total} messages")
    by_call = check_complete(receiver, ledger)
    answers = Counter(a.answer for a in receiver.snapshot())
    assert answers[500] >= 1 and answers["timeout"] == 3 and answers["close"] == 3, answers

    rows = settled_deliveries(daemon, ledger.total)
    seen = Counter(a.webhook_id for a in receiver.snapshot())
    faulted = {a.webhook_id for a in receiver.snapshot() if not a.succeeded}
    assert {r["message_id"] for r in rows} == {a.webhook_id for attempts in by_call.values() for a in attempts}
    for row in rows:
        assert row["attempts"] == seen[row["message_id"]], f"attempts {row} vs the receiver's {seen[row['message_id']]}"
        assert row["last_status"] == 204 and row["last_error"] is None, row
        if row["message_id"] in faulted:
            assert row["attempts"] > 1, row
    assert faulted, "no delivery was faulted"
    stamps: dict[str | None, int] = {}
    for attempt in receiver.snapshot():  # each retry is signed at its own time, never earlier
        assert int(attempt.timestamp or 0) >= stamps.get(attempt.webhook_id, 0), attempt
        stamps[attempt.webhook_id] = int(attempt.timestamp or 0)
    print(f"faults: {ledger.total} messages, {len(receiver.snapshot())} requests, answers {dict(answers)}, "
          f"attempts per delivery {sorted(Counter(r['attempts'] for r in rows).items())}")
    for client in (alice, bob, carol, dave):
        client.close()


# ---------------------------------------------------------------------------------------------
# 3. SIGKILL


def test_sigkill_with_deliveries_pending_and_in_flight_loses_nothing(daemons, receiver) -> None:
    secret = new_secret()
    daemon = daemons.start({
        "endpoints": [f"main={receiver.endpoint('main', secret)}"], "secrets": [f"main={secret}"],
        "timeout_ms": 3000, "max_backoff_ms": 1000,
    })
    receiver.fault("status", status=500)  # until cleared
    ledger = Ledger()
    alice, bob, carol, dave = (daemon.client(u) for u in ("alice", "bob", "carol", "dave"))
    ring(alice, ledger, "k1", "bob")
    bob.ok("call.accept", {"type": "ringing", "id": "k1"})
    ledger.expect("ringing:k1", "call.accepted")
    join(carol, ledger, "k2", first=True)
    join(dave, ledger, "k2", first=False)
    leave(carol, ledger, "k2", last=False)
    leave(dave, ledger, "k2", last=True)
    ring(alice, ledger, "k3", "dave")
    dave.ok("call.reject", {"type": "ringing", "id": "k3", "reason": "busy"})
    ledger.expect("ringing:k3", "call.rejected", "call.ended")
    alice.ok("call.end", {"type": "ringing", "id": "k1"})
    ledger.expect("ringing:k1", "call.ended")

    # Every call's head has been tried, and one of them twice, all answered 500.
    receiver.wait_for(
        lambda r: {a.call_cid for a in r.snapshot()} >= set(ledger.calls) and max(Counter(a.webhook_id for a in r.snapshot()).values()) >= 2,
        what="each call's first message tried, one of them twice")
    # Then the receiver hangs: the next attempt is in flight (the daemon waits up to its 3 s
    # timeout) when the daemon is killed.
    receiver.fault("timeout", sleep=30, replace=True)
    receiver.wait_for(lambda r: r.in_flight >= 1 and any(a.answer == "timeout" for a in r.snapshot()),
                      what="an attempt in flight")
    daemon.kill()
    before = receiver.snapshot()
    assert not any(a.succeeded for a in before), before  # nothing was delivered before the kill
    hanging = [a for a in before if a.answer == "timeout"]
    assert hanging, before

    receiver.clear_faults()
    for client in (alice, bob, carol, dave):
        client.close()
    daemon = daemons.restart(daemon)
    receiver.wait_for(lambda r: len(r.delivered("main")) >= ledger.total, timeout=20, what=f"{ledger.total} messages after the restart")
    by_call = check_complete(receiver, ledger)

    after = {(a.call_cid, a.seq): a for attempts in by_call.values() for a in attempts}
    for attempt in before:  # the same message id (and body) for the same event across the restart
        twin = after[(attempt.call_cid, attempt.seq)]
        assert twin.webhook_id == attempt.webhook_id and twin.body == attempt.body, (attempt, twin)
    for attempt in hanging:  # the attempt in flight at the kill was sent again
        assert any(a.webhook_id == attempt.webhook_id and a.succeeded and a.index > attempt.index for a in receiver.snapshot())

    rows = settled_deliveries(daemon, ledger.total)
    failed_before = Counter(a.webhook_id for a in before if a.answer == 500)
    for row in rows:
        # Each 500 before the kill was recorded (the last one's record may be lost to the kill),
        # plus the delivery after it.
        assert row["attempts"] >= max(failed_before[row["message_id"]], 1), row
        assert row["last_status"] == 204, row
    assert any(row["attempts"] >= 2 for row in rows), rows
    print(f"sigkill: {ledger.total} messages, {len(before)} requests before the kill "
          f"({len({a.webhook_id for a in before})} messages tried), {len(receiver.snapshot()) - len(before)} after")


# ---------------------------------------------------------------------------------------------
# SIGTERM


def test_sigterm_with_an_attempt_in_flight_exits_cleanly_and_sends_it_again(daemons, receiver) -> None:
    secret = new_secret()
    daemon = daemons.start({"endpoints": [f"main={receiver.endpoint('main', secret)}"], "secrets": [f"main={secret}"]})
    receiver.fault("timeout", sleep=30)  # hangs well within the default 10 s timeout
    alice = daemon.client("alice")
    alice.ok("call.get_or_create", {"type": "default", "id": "t1"})
    hanging = receiver.wait_for(lambda r: r.in_flight >= 1 and r.snapshot(), what="an attempt in flight")[0]
    alice.close()
    started = time.monotonic()
    daemon.stop()  # SIGTERM: exit code 0 required
    assert time.monotonic() - started < 8, "the stop waited for the hanging receiver"
    receiver.clear_faults()
    daemon = daemons.restart(daemon)
    again = receiver.wait_for(lambda r: r.delivered(), what="the message after the restart")[0]
    assert (again.webhook_id, again.body) == (hanging.webhook_id, hanging.body), (hanging, again)
    assert receiver.failures == []
