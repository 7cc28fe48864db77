"""Webhooks end to end: a real daemon posts Standard Webhooks to a real receiver in this process.

Every request is verified with the ``standardwebhooks`` package from PyPI (webhook_receiver.py),
never with Switchboard's code; each test asserts the receiver recorded no verification failure.
Each test starts its own daemon (free ports, its own state directory, a JSON config file for the
``webhooks.*`` keys) and waits only by polling conditions with deadlines.

- happy path: a meeting and a ringing call produce exactly the expected event types per call,
  ``data.seq`` 1..n in arrival order, bodies ``{type, created_at (ms), data}``; an endpoint with
  an event filter gets only its events, with the same webhook-ids and bodies;
- 410 Gone disables the endpoint (``disabled_at``), later events are held (across a restart too),
  ``enable`` sends them in order;
- dead letter after ``webhooks.retry_horizon_ms``; the lane goes on; an admin retry delivers the
  dead one with the same webhook-id; retrying a delivered one is 409;
- push devices on the call protocol and the admin API, and their refusals;
- bad ``webhooks.*`` configuration is refused naming the key.

Secret rotation is in test_webhook_secrets.py; the ``/proc`` readings in procinfo.py.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path
from typing import Any

from conftest import _daemon_binary, daemon_env
from procinfo import child_pids, sockets, thread_priorities
from webhook_harness import (  # noqa: F401 - fixtures
    CLOCK_SLACK_MS,
    assert_nothing_more,
    config,
    daemons,
    new_secret,
    now_ms,
    receiver,
    wait_until,
    write_config,
)
from webhook_receiver import Attempt, duplicate_violations, order_violations


def check_message(attempt: Attempt, cid: str, since_ms: int, until_ms: int, created_by: str = "alice") -> None:
    """The Standard Webhooks headers and the body shape every message must have."""
    assert attempt.webhook_id and attempt.webhook_id.startswith("msg_"), attempt.headers
    assert attempt.timestamp is not None and attempt.timestamp.isdigit(), attempt.headers
    assert abs(int(attempt.timestamp) - attempt.at) <= 5, f"webhook-timestamp {attempt.timestamp} vs now {attempt.at}"
    assert attempt.signature and all(s.startswith("v1,") for s in attempt.signatures()), attempt.headers
    body = attempt.json
    assert isinstance(body, dict) and set(body) == {"type", "created_at", "data"}, body
    created = body["created_at"]
    assert type(created) is int, f"created_at must be an integer of milliseconds: {attempt.body!r}"
    assert since_ms - CLOCK_SLACK_MS <= created <= until_ms + CLOCK_SLACK_MS, (created, since_ms, until_ms)
    data = body["data"]
    assert data["call_cid"] == cid, body
    assert type(data["seq"]) is int and data["seq"] >= 1, body
    call_type, call_id = cid.split(":", 1)
    call = data["call"]
    assert {k: call[k] for k in ("cid", "type", "id", "created_by")} == {
        "cid": cid, "type": call_type, "id": call_id, "created_by": created_by}, body
    assert type(call["created_at"]) is int and type(call["session"]) is int, body


# ---------------------------------------------------------------------------------------------
# 1. Happy path


def test_meeting_and_ringing_call_events_arrive_signed_and_in_order(daemons, receiver) -> None:
    main, rings = new_secret(), new_secret()
    daemon = daemons.start(config(receiver, {"main": main, "rings": rings}, events=["rings=call.ring,call.ended"]))
    views = daemon.endpoints()
    assert views["rings"]["events"] == ["call.ring", "call.ended"], views
    assert views["main"]["disabled_at"] is None and views["main"]["pending"] == 0, views

    since = now_ms()
    alice, bob = daemon.client("alice"), daemon.client("bob")
    # A meeting: join (creates), second participant, leave, leave.
    a_join = alice.ok("call.join", {"type": "default", "id": "m1", "create": True})
    b_join = bob.ok("call.join", {"type": "default", "id": "m1"})
    alice.ok("call.leave", {"type": "default", "id": "m1"})
    bob.ok("call.leave", {"type": "default", "id": "m1"})
    # A ringing call: create and ring, accept, end.
    alice.ok("call.get_or_create", {"type": "ringing", "id": "r1", "members": ["bob"], "ring": True})
    bob.ok("call.accept", {"type": "ringing", "id": "r1"})
    alice.ok("call.end", {"type": "ringing", "id": "r1"})
    until = now_ms()

    expected = {
        "default:m1": ["call.created", "call.session_started", "call.participant_joined", "call.participant_joined",
                       "call.participant_left", "call.participant_left", "call.session_ended"],
        "ringing:r1": ["call.created", "call.ring", "call.accepted", "call.ended"],
    }
    total = sum(len(types) for types in expected.values())
    receiver.wait_for(lambda r: len(r.delivered("main")) >= total and len(r.delivered("rings")) >= 2,
                      what=f"{total} messages to main and 2 to rings")

    assert receiver.failures == []
    by_call = receiver.by_call("main")
    assert sorted(by_call) == sorted(expected), by_call
    for cid, types in expected.items():
        got = by_call[cid]
        assert [a.type for a in got] == types, f"{cid}: {got}"
        assert [a.seq for a in got] == list(range(1, len(types) + 1)), f"{cid}: seq in arrival order {got}"
        for attempt in got:
            check_message(attempt, cid, since, until)
    attempts = receiver.snapshot("main")
    assert len(attempts) == total, f"no faults, so one request per message: {attempts}"
    assert len({a.webhook_id for a in attempts}) == total, attempts

    m1 = {a.seq: a.data for a in by_call["default:m1"]}
    assert m1[1]["created_by"] == "alice" and m1[1]["members"] == ["alice"], m1[1]
    assert m1[2]["session"] == 1, m1[2]
    assert (m1[3]["user_id"], m1[3]["session_id"]) == ("alice", a_join["session_id"]), m1[3]
    assert (m1[4]["user_id"], m1[4]["session_id"]) == ("bob", b_join["session_id"]), m1[4]
    assert (m1[5]["user_id"], m1[5]["session_id"], m1[5]["reason"]) == ("alice", a_join["session_id"], "left"), m1[5]
    assert (m1[6]["user_id"], m1[6]["session_id"], m1[6]["reason"]) == ("bob", b_join["session_id"], "left"), m1[6]
    assert (m1[7]["session"], m1[7]["reason"]) == (1, "left"), m1[7]
    r1 = {a.seq: a.data for a in by_call["ringing:r1"]}
    assert r1[1]["members"] == ["alice", "bob"], r1[1]
    assert r1[2]["members"] == ["bob"], r1[2]
    assert [{k: m.get(k) for k in ("user_id", "connected", "devices")} for m in r1[2]["ringing"]] == [
        {"user_id": "bob", "connected": True, "devices": []}], r1[2]
    assert r1[3]["user_id"] == "bob", r1[3]
    assert r1[4]["reason"] == "ended_by_user", r1[4]

    # The filtered endpoint: only its two events, the same messages (id and bytes) as main's.
    filtered = receiver.snapshot("rings")
    assert [(a.call_cid, a.type) for a in filtered] == [("ringing:r1", "call.ring"), ("ringing:r1", "call.ended")], filtered
    for attempt in filtered:
        twin = next(a for a in by_call["ringing:r1"] if a.type == attempt.type)
        assert attempt.webhook_id == twin.webhook_id, (attempt, twin)
        assert attempt.body == twin.body, (attempt.body, twin.body)
        assert attempt.verified == {"secret0": True}, attempt.verified

    # The admin API saw the same: every delivery delivered at the first attempt.
    def all_delivered() -> list[dict[str, Any]] | None:
        rows = daemon.deliveries()
        return rows if len(rows) == total + 2 and all(r["status"] == "delivered" for r in rows) else None

    rows = wait_until(all_delivered, what="every delivery delivered")
    assert {(r["endpoint"], r["message_id"]) for r in rows} == (
        {("main", a.webhook_id) for a in attempts} | {("rings", a.webhook_id) for a in filtered})
    for row in rows:
        assert (row["attempts"], row["last_status"], row["last_error"], row["next_attempt_at"]) == (1, 204, None, None), row
    assert daemon.deliveries(status="pending") == [] and daemon.deliveries(status="dead") == []
    assert len(daemon.deliveries(endpoint="rings")) == 2
    assert [r["seq"] for r in sorted(daemon.deliveries(cid="ringing:r1", endpoint="main"), key=lambda r: r["seq"])] == [1, 2, 3, 4]

    # The HTTP work ran in the worker process, every thread of it under SCHED_IDLE (policy 5),
    # and left no thread of the daemon slowed down: a thread that lowers its priority passes it
    # on to every thread it starts, pool threads that run the call hub's work among them (ADR
    # 0011). libdispatch itself sets its threads' nice values by their queue's quality of
    # service (the fold's utility queue: 2 above the daemon's), never the policy.
    threads = thread_priorities(daemon.process.pid)
    main_nice = threads[daemon.process.pid][1]
    slowed = {tid: t for tid, t in threads.items() if t[1] > main_nice + 2 or t[2] != 0}
    assert slowed == {}, f"threads not at the daemon's priority (name, nice, policy): {slowed}"
    workers = child_pids(daemon.process.pid)
    assert len(workers) == 1, f"one worker process: {workers}"
    worker_threads = thread_priorities(workers[0])
    assert worker_threads and all(policy == 5 for _, _, policy in worker_threads.values()), worker_threads
    # The worker holds none of the daemon's sockets (its listeners, clients, store): only its own.
    shared = sockets(daemon.process.pid) & sockets(workers[0])
    assert shared == set(), f"sockets the worker inherited from the daemon: {shared}"
    alice.close()
    bob.close()


# ---------------------------------------------------------------------------------------------
# 5. 410 Gone


def test_410_disables_the_endpoint_until_enabled_then_held_events_arrive_in_order(daemons, receiver) -> None:
    # Two endpoints: only "main" answers 410; "other" must go on receiving (endpoints are independent).
    daemon = daemons.start(config(receiver, {"main": new_secret(), "other": new_secret()}))
    receiver.fault("status", status=410, count=1, endpoints={"main"})
    alice = daemon.client("alice")
    alice.ok("call.get_or_create", {"type": "default", "id": "g1"})
    gone = receiver.wait_for(lambda r: r.snapshot("main"), what="the first request")[0]
    assert (gone.type, gone.call_cid, gone.seq, gone.answer) == ("call.created", "default:g1", 1, 410)

    disabled = wait_until(lambda: daemon.endpoints()["main"]["disabled_at"], what="disabled_at after 410")
    assert type(disabled) is int and abs(disabled - gone.at * 1000) < CLOCK_SLACK_MS, disabled
    assert daemon.endpoints()["other"]["disabled_at"] is None

    # Later events are committed and held, not sent to main; other gets them all.
    alice.ok("call.join", {"type": "default", "id": "g1"})
    alice.ok("call.leave", {"type": "default", "id": "g1"})
    alice.ok("call.get_or_create", {"type": "default", "id": "g2"})
    wait_until(lambda: daemon.endpoints()["main"]["pending"] == 6, what="6 pending deliveries")
    receiver.wait_for(lambda r: len(r.delivered("other")) == 6, what="the 6 messages at the other endpoint")
    assert_nothing_more(receiver, 1, 1.0, endpoint="main")
    [held] = [d for d in daemon.deliveries(status="pending") if d["message_id"] == gone.webhook_id]
    assert (held["endpoint"], held["attempts"], held["last_status"]) == ("main", 1, 410), held
    assert daemon.endpoints()["main"]["disabled_at"] == disabled

    # A restart keeps the endpoint disabled and its messages held.
    alice.close()
    daemon.stop()
    daemon = daemons.restart(daemon)
    assert daemon.endpoints()["main"]["disabled_at"] == disabled
    assert daemon.endpoints()["main"]["pending"] == 6
    assert_nothing_more(receiver, 1, 0.5, endpoint="main")

    status, body = daemon.admin("POST", "/v1/webhooks/endpoints/main/enable", {})
    assert status == 200 and body["enabled"] is True and body["endpoint"] == "main", (status, body)
    receiver.wait_for(lambda r: len(r.delivered("main")) == 6, what="the 6 held messages")
    assert receiver.failures == []
    by_call = receiver.by_call("main")
    assert [(a.type, a.seq) for a in by_call["default:g1"]] == [
        ("call.created", 1), ("call.session_started", 2), ("call.participant_joined", 3), ("call.participant_left", 4),
        ("call.session_ended", 5)], by_call
    assert [(a.type, a.seq) for a in by_call["default:g2"]] == [("call.created", 1)], by_call
    again = by_call["default:g1"][0]
    assert again.webhook_id == gone.webhook_id and again.body == gone.body, (gone, again)
    for name in ("main", "other"):
        assert order_violations(receiver.snapshot(name)) == [] and duplicate_violations(receiver.snapshot(name)) == []
    assert {a.webhook_id for a in receiver.delivered("main")} == {a.webhook_id for a in receiver.delivered("other")}
    wait_until(lambda: daemon.endpoints()["main"]["pending"] == 0, what="nothing pending")
    assert daemon.endpoints()["main"]["disabled_at"] is None

    status, body = daemon.admin("POST", "/v1/webhooks/endpoints/main/enable", {})
    assert status == 409 and body["error"]["code"] == "conflict", (status, body)
    status, body = daemon.admin("POST", "/v1/webhooks/endpoints/nope/enable", {})
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)


# ---------------------------------------------------------------------------------------------
# 6. Dead letter and retry


def test_dead_letter_after_the_retry_horizon_then_admin_retry_delivers_it(daemons, receiver) -> None:
    horizon_ms = 2000
    daemon = daemons.start(config(receiver, {"main": new_secret()}, retry_horizon_ms=horizon_ms, max_backoff_ms=1000,
                                  timeout_ms=500))
    receiver.fault("status", status=500)
    alice = daemon.client("alice")
    alice.ok("call.get_or_create", {"type": "default", "id": "d1"})

    def dead() -> list[dict[str, Any]]:
        return daemon.deliveries(status="dead")

    [row] = wait_until(dead, timeout=10, what="a dead delivery")
    tried = receiver.snapshot()
    assert tried, (row, [l for l in daemon.output().splitlines() if "worker" in l or "webhook" in l])
    message_id = tried[0].webhook_id
    assert row["message_id"] == message_id and row["lane"] == "default:d1" and row["seq"] == 1, row
    assert row["attempts"] >= 2 and row["last_status"] == 500 and row["next_attempt_at"] is None, row
    assert {a.webhook_id for a in tried} == {message_id}, tried
    assert len(tried) == row["attempts"], (row, tried)
    assert all(a.at * 1000 <= row["created_at"] + horizon_ms + 500 for a in tried), (row, tried)
    assert_nothing_more(receiver, len(tried), 1.0)  # dead: no more attempts

    # A retry gets one attempt; failing past the horizon, the delivery is dead again.
    status, body = daemon.admin("POST", f"/v1/webhooks/endpoints/main/deliveries/{message_id}/retry", {})
    assert status == 200 and body["delivery"]["message_id"] == message_id, (status, body)
    receiver.wait_for(lambda r: len(r.snapshot()) == len(tried) + 1, what="the retry's one attempt")
    wait_until(lambda: [d for d in dead() if d["attempts"] == len(tried) + 1], what="dead again after one more attempt")
    assert_nothing_more(receiver, len(tried) + 1, 0.5)
    tried = receiver.snapshot()
    assert {a.webhook_id for a in tried} == {message_id} and all(a.answer == 500 for a in tried), tried

    # The lane goes on after a dead message: later events of the same call are delivered.
    receiver.clear_faults()
    alice.ok("call.join", {"type": "default", "id": "d1"})
    receiver.wait_for(lambda r: len(r.delivered()) == 2, what="seq 2 and 3 after the dead seq 1")
    assert [(a.type, a.seq) for a in receiver.delivered()] == [("call.session_started", 2), ("call.participant_joined", 3)]

    status, body = daemon.admin("POST", f"/v1/webhooks/endpoints/main/deliveries/{message_id}/retry", {})
    assert status == 200, (status, body)
    assert body["delivery"]["message_id"] == message_id and body["delivery"]["status"] in ("pending", "delivered"), body
    retried = receiver.wait_for(lambda r: [a for a in r.delivered() if a.webhook_id == message_id], what="the retried message")[0]
    assert retried.body == tried[0].body and retried.seq == 1 and retried.type == "call.created", (retried, tried[0])

    def delivered_row() -> dict[str, Any] | None:
        rows = [d for d in daemon.deliveries() if d["message_id"] == message_id]
        return rows[0] if rows and rows[0]["status"] == "delivered" else None

    row = wait_until(delivered_row, what="the retried delivery delivered")
    assert row["attempts"] == len(tried) + 1 and row["last_status"] == 204, row
    assert daemon.deliveries(status="dead") == []
    assert receiver.failures == []

    status, body = daemon.admin("POST", f"/v1/webhooks/endpoints/main/deliveries/{message_id}/retry", {})
    assert status == 409 and body["error"]["code"] == "conflict" and body["error"]["message"], (status, body)
    status, body = daemon.admin("POST", "/v1/webhooks/endpoints/main/deliveries/msg_unknown/retry", {})
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)
    status, body = daemon.admin("POST", f"/v1/webhooks/endpoints/nope/deliveries/{message_id}/retry", {})
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)
    alice.close()


# ---------------------------------------------------------------------------------------------
# 8. Devices


def test_devices_on_the_call_protocol_and_the_admin_api(daemons, receiver) -> None:
    daemon = daemons.start(config(receiver, {"main": new_secret()}), CALLS_DEVICES_PER_USER=2)
    bob, alice = daemon.client("bob"), daemon.client("alice")

    registered = bob.ok("device.register", {"provider": "apns", "token": "apns-bob-1"})["device"]
    assert (registered["user_id"], registered["provider"], registered["token"]) == ("bob", "apns", "apns-bob-1"), registered
    assert registered["device_id"] == hashlib.sha256(b"apns\0apns-bob-1").digest()[:12].hex(), registered
    assert type(registered["created_at"]) is int, registered
    bob.ok("device.register", {"provider": "fcm", "token": "fcm-bob-1"})
    bob.ok("device.register", {"provider": "apns", "token": "apns-bob-1"})  # again: a refresh, not a third device
    assert bob.error("device.register", {"provider": "webpush", "token": "{\"endpoint\":\"https://push.example\"}"}) == "too_many_devices"
    assert bob.error("device.register", {"provider": "carrier_pigeon", "token": "x"}) == "invalid_request"
    assert bob.error("device.register", {"provider": "fcm", "token": "t" * 4097}) == "payload_too_large"
    assert bob.error("device.register", {"provider": "fcm", "token": ""}) == "invalid_request"
    assert bob.error("device.register", {"provider": "fcm"}) == "invalid_request"

    listed = bob.ok("device.list")["devices"]
    assert sorted((d["provider"], d["token"]) for d in listed) == [("apns", "apns-bob-1"), ("fcm", "fcm-bob-1")], listed
    admin = daemon.admin_ok("GET", "/v1/users/bob/devices")["devices"]
    assert sorted(d["device_id"] for d in admin) == sorted(d["device_id"] for d in listed), (admin, listed)
    assert daemon.admin_ok("GET", "/v1/users/nobody/devices")["devices"] == []

    # A token registered by another user moves to that user.
    alice.ok("device.register", {"provider": "fcm", "token": "fcm-bob-1"})
    assert [d["token"] for d in daemon.admin_ok("GET", "/v1/users/bob/devices")["devices"]] == ["apns-bob-1"]
    assert [d["token"] for d in daemon.admin_ok("GET", "/v1/users/alice/devices")["devices"]] == ["fcm-bob-1"]
    bob.ok("device.register", {"provider": "webpush", "token": "{\"endpoint\":\"https://push.example\"}"})  # room again

    apns = next(d for d in listed if d["provider"] == "apns")
    deleted = daemon.admin_ok("DELETE", f"/v1/users/bob/devices/{apns['device_id']}")
    assert deleted["deleted"] is True and deleted["device_id"] == apns["device_id"], deleted
    assert [d["provider"] for d in bob.ok("device.list")["devices"]] == ["webpush"]
    status, body = daemon.admin("DELETE", f"/v1/users/bob/devices/{apns['device_id']}")
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)
    status, body = daemon.admin("DELETE", "/v1/users/bob/devices/" + "0" * 24)
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)
    status, body = daemon.admin("DELETE", "/v1/users/bob/devices/not-a-device-id")
    assert status == 400 and body["error"]["code"] == "invalid_request", (status, body)

    assert bob.error("device.unregister", {"provider": "apns", "token": "apns-bob-1"}) == "not_found"
    assert bob.ok("device.unregister", {"provider": "webpush", "token": "{\"endpoint\":\"https://push.example\"}"})["removed"] is True
    assert bob.ok("device.list")["devices"] == []

    # Devices are stored: a restart keeps alice's.
    alice.close()
    bob.close()
    daemon.stop()
    daemon = daemons.restart(daemon)
    assert [d["token"] for d in daemon.admin_ok("GET", "/v1/users/alice/devices")["devices"]] == ["fcm-bob-1"]
    assert daemon.admin_ok("GET", "/v1/users/bob/devices")["devices"] == []
    assert receiver.failures == []


# ---------------------------------------------------------------------------------------------
# 9. Bad configuration


def run_config(tmp_path: Path, command: str, webhooks: dict[str, Any]) -> subprocess.CompletedProcess:
    path = write_config(tmp_path / f"bad-{time.monotonic_ns()}.json", webhooks)
    args = [str(_daemon_binary()), command, "--config", str(path)]
    if command == "serve":
        args += ["--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--state-dir", str(tmp_path / "data")]
    return subprocess.run(args, cwd=tmp_path, env=daemon_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=20)


def test_the_webhook_worker_run_by_hand_says_the_daemon_starts_it() -> None:
    """`switchboard webhook-worker` reads attempts from the daemon's socket; from a terminal or a
    file it says so and exits 2 rather than waiting or dropping input silently."""
    result = subprocess.run([str(_daemon_binary()), "webhook-worker", "--no-idle"], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result
    assert "started by the daemon" in result.stderr and "webhooks.worker_process" in result.stderr, result.stderr


def test_bad_webhook_configuration_is_refused_naming_the_key(tmp_path: Path) -> None:
    good = new_secret()
    cases = [
        ({"endpoints": ["a=ftp://x"], "secrets": [f"a={good}"]}, "webhooks.endpoints"),
        ({"endpoints": ["a=http://127.0.0.1:9/hook"], "secrets": ["a=whsec_c2hvcnQ="]}, "webhooks.secrets"),
        ({"endpoints": ["a=http://127.0.0.1:9/hook"]}, "webhooks.secrets"),
        ({"endpoints": ["a=http://127.0.0.1:9/hook"], "secrets": [f"a={good}"], "events": ["a=call.ring,call.bogus"]},
         "webhooks.events"),
    ]
    for webhooks, key in cases:
        done = run_config(tmp_path, "check-config", webhooks)
        assert done.returncode == 78, (webhooks, done.returncode, done.stdout, done.stderr)
        assert f"invalid_configuration: {key}" in done.stderr, (webhooks, done.stderr)
        assert good not in done.stderr + done.stdout, "a secret was printed"
    done = run_config(tmp_path, "serve", cases[0][0])
    assert done.returncode == 78 and "webhooks.endpoints" in done.stderr, (done.returncode, done.stdout, done.stderr)
    # And the valid one passes.
    done = run_config(tmp_path, "check-config", {"endpoints": ["a=http://127.0.0.1:9/hook"], "secrets": [f"a={good}"],
                                                 "events": ["a=call.ring,call.missed"]})
    assert done.returncode == 0, (done.stdout, done.stderr)
