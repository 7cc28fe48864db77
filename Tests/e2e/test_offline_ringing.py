"""Offline ringing end to end: a ring for a user with no connection carries his push devices in the
``call.ring`` webhook, and he can still answer it when he connects within the ring timeout.

bob registers an ``apns_voip`` device, disconnects, and his resume window
(``connect.resume_window_ms`` = 1000) passes: ``GET /v1/connections`` no longer lists him. alice
rings him. The receiver (verifying with ``standardwebhooks``) gets ``call.ring`` whose
``data.ringing`` has bob ``connected: false`` with his device token. bob connects, gets
``call.ring`` on his socket right after ``connection.ok``, accepts; alice gets ``call.accepted``
and the receiver gets ``call.accepted`` with a seq after ``call.ring``. A member who is online is
rung with ``connected: true`` and no devices, even when he has some.
"""

from __future__ import annotations

from webhook_harness import daemons, new_secret, receiver, wait_until  # noqa: F401 - fixtures

VOIP_TOKEN = "a3f1c0de" * 8


def test_ring_for_an_offline_user_carries_his_devices_and_he_can_answer_when_he_connects(daemons, receiver) -> None:
    secret = new_secret()
    daemon = daemons.start(
        {"endpoints": [f"main={receiver.endpoint('main', secret)}"], "secrets": [f"main={secret}"]},
        CONNECT_RESUME_WINDOW_MS=1000,
    )
    bob = daemon.client("bob")
    device = bob.ok("device.register", {"provider": "apns_voip", "token": VOIP_TOKEN})["device"]
    assert (device["provider"], device["token"], device["user_id"]) == ("apns_voip", VOIP_TOKEN, "bob"), device
    carol = daemon.client("carol")  # online, with a device too
    carol.ok("device.register", {"provider": "fcm", "token": "fcm-carol"})
    bob.close()
    wait_until(lambda: not any(c["user_id"] == "bob" for c in daemon.connections()), timeout=10,
               what="bob's connection gone after its resume window")

    alice = daemon.client("alice")
    created = alice.ok("call.get_or_create", {"type": "ringing", "id": "late", "members": ["bob", "carol"], "ring": True})
    assert {m["user_id"]: m["ring_state"] for m in created["members"]} == {"alice": "none", "bob": "ringing", "carol": "ringing"}

    ring = receiver.wait_for(lambda r: [a for a in r.delivered() if a.type == "call.ring"], what="the call.ring webhook")[0]
    assert ring.call_cid == "ringing:late"
    # The documented fields of each rung member (docs/webhooks.md, call.ring).
    ringing = [{k: m.get(k) for k in ("user_id", "connected", "devices")} for m in ring.data["ringing"]]
    assert ringing == [
        {"user_id": "bob", "connected": False, "devices": [{"provider": "apns_voip", "token": VOIP_TOKEN}]},
        {"user_id": "carol", "connected": True, "devices": []},
    ], ring.data
    assert ring.data["members"] == ["bob", "carol"], ring.data  # sorted by user id, as ringing

    # bob's phone wakes up and connects within the ring timeout: the ring is still his.
    bob = daemon.client("bob")
    rung = bob.wait_event("call.ring", "ringing:late", timeout=5)
    assert rung["data"]["from"] == "alice", rung
    accepted = bob.ok("call.accept", {"type": "ringing", "id": "late"})
    assert {m["user_id"]: m["ring_state"] for m in accepted["members"]}["bob"] == "accepted", accepted
    told = alice.wait_event("call.accepted", "ringing:late")
    assert told["data"]["user_id"] == "bob", told

    webhook = receiver.wait_for(lambda r: [a for a in r.delivered() if a.type == "call.accepted"], what="call.accepted")[0]
    assert webhook.call_cid == "ringing:late" and webhook.data["user_id"] == "bob", webhook.data
    assert webhook.seq > ring.seq and webhook.index > ring.index, (ring, webhook)
    assert [a.type for a in receiver.delivered()] == ["call.created", "call.ring", "call.accepted"]
    assert [a.seq for a in receiver.delivered()] == [1, 2, 3]
    assert receiver.failures == []
    for client in (alice, bob, carol):
        client.close()
