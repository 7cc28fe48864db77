"""Webhook signing secrets end to end: rotation through the admin API, and restarts.

A real daemon posts to the receiver in this process (webhook_receiver.py), which verifies every
request with the ``standardwebhooks`` package from PyPI, never with Switchboard's code: each
endpoint requires some secrets to verify (a request that fails one is in ``receiver.failures``,
asserted empty) and records for others whether they verify (``Attempt.verified``), so a secret
that must no longer sign is checked to fail. Waits poll conditions with deadlines.

- rotation: two signatures, each verifying on its own; ``grace_ms: 0`` leaves only the new
  secret; the rotation survives a restart;
- a restart with the same configured secret keeps the rotation and its grace; one with another
  configured secret (same state directory) drops them: the configured secret alone signs from
  that start, no grace is left, and the daemon says so in its log (docs/webhooks.md, "Rotating a
  secret").
"""

from __future__ import annotations

import base64

from webhook_harness import (  # noqa: F401 - fixtures
    CLOCK_SLACK_MS,
    CallClient,
    config,
    daemons,
    new_secret,
    now_ms,
    receiver,
    wait_until,
)
from webhook_receiver import Attempt, WebhookReceiver

#: What the daemon logs at a start that drops a rotation for a changed configured secret.
SECRET_CHANGED_LOG = "the configured webhook secret changed since the last rotation"
ROTATE = "/v1/webhooks/endpoints/main/rotate_secret"


def call_created(receiver: WebhookReceiver, client: CallClient, call_id: str) -> Attempt:
    """Creates call ``default:<call_id>`` and returns its message to endpoint ``main`` as the
    receiver got it (the first 2xx-answered attempt)."""
    client.ok("call.get_or_create", {"type": "default", "id": call_id})
    cid = f"default:{call_id}"
    return receiver.wait_for(lambda r: [a for a in r.delivered("main") if a.call_cid == cid], what=cid)[0]


def secret_changed_lines(output: str) -> list[str]:
    """The lines of a daemon's output that say it dropped a rotation for a changed configured secret."""
    return [line for line in output.splitlines() if SECRET_CHANGED_LOG in line]


# ---------------------------------------------------------------------------------------------
# Rotation through the admin API


def test_rotated_secret_signs_alongside_the_old_one_until_the_grace_ends(daemons, receiver) -> None:
    old = new_secret()
    daemon = daemons.start(config(receiver, {"main": old}))
    alice = daemon.client("alice")
    alice.ok("call.get_or_create", {"type": "default", "id": "s1"})
    first = receiver.wait_for(lambda r: r.delivered(), what="s1")[0]
    assert len(first.signatures()) == 1 and first.verified == {"secret0": True}

    before = now_ms()
    rotated = daemon.admin_ok("POST", "/v1/webhooks/endpoints/main/rotate_secret", {})
    new = rotated["secret"]
    assert new.startswith("whsec_") and new != old, rotated
    assert len(base64.b64decode(new[len("whsec_"):], validate=True)) == 32, rotated
    day = 86_400_000
    assert before + day - CLOCK_SLACK_MS <= rotated["previous_secret_until"] <= now_ms() + day + CLOCK_SLACK_MS, rotated
    assert daemon.endpoints()["main"]["previous_secret_until"] == rotated["previous_secret_until"]

    receiver.require("main", {"old": old, "new": new})
    alice.ok("call.get_or_create", {"type": "default", "id": "s2"})
    second = receiver.wait_for(lambda r: [a for a in r.delivered() if a.call_cid == "default:s2"], what="s2")[0]
    assert len(second.signatures()) == 2, second.signature
    assert second.verified == {"old": True, "new": True}, second.verified

    latest = daemon.admin_ok("POST", "/v1/webhooks/endpoints/main/rotate_secret", {"grace_ms": 0})["secret"]
    assert latest not in (old, new)
    assert daemon.endpoints()["main"]["previous_secret_until"] is None
    receiver.require("main", {"latest": latest}, extra={"old": old, "new": new})
    alice.ok("call.get_or_create", {"type": "default", "id": "s3"})
    third = receiver.wait_for(lambda r: [a for a in r.delivered() if a.call_cid == "default:s3"], what="s3")[0]
    assert len(third.signatures()) == 1, third.signature
    assert third.verified == {"latest": True, "old": False, "new": False}, third.verified

    status, body = daemon.admin("POST", "/v1/webhooks/endpoints/main/rotate_secret", {"grace_ms": -1})
    assert status == 400 and body["error"]["code"] == "invalid_request", (status, body)
    status, body = daemon.admin("POST", "/v1/webhooks/endpoints/nope/rotate_secret", {})
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)

    # The rotation is stored: after a restart the latest secret still signs, alone.
    alice.close()
    daemon.stop()
    daemon = daemons.restart(daemon)
    alice = daemon.client("alice")
    alice.ok("call.get_or_create", {"type": "default", "id": "s4"})
    fourth = receiver.wait_for(lambda r: [a for a in r.delivered() if a.call_cid == "default:s4"], what="s4")[0]
    assert fourth.verified == {"latest": True, "old": False, "new": False}, fourth.verified
    assert receiver.failures == []
    alice.close()


# ---------------------------------------------------------------------------------------------
# Restarts with the same configured secret, and with another one


def test_a_changed_configured_secret_wins_over_a_rotation_at_the_next_start(daemons, receiver) -> None:
    configured = new_secret()
    daemon = daemons.start(config(receiver, {"main": configured}))
    rotation = daemon.admin_ok("POST", ROTATE, {})
    rotated, grace_until = rotation["secret"], rotation["previous_secret_until"]
    assert rotated != configured and type(grace_until) is int and grace_until > now_ms(), rotation
    receiver.require("main", {"configured": configured, "rotated": rotated})
    alice = daemon.client("alice")
    first = call_created(receiver, alice, "c1")
    assert len(first.signatures()) == 2 and first.verified == {"configured": True, "rotated": True}, first.verified

    # The same configured secret: the rotated secret and the grace of the previous one are kept.
    alice.close()
    daemon.stop()
    daemon = daemons.restart(daemon)
    assert daemon.endpoints()["main"]["previous_secret_until"] == grace_until
    alice = daemon.client("alice")
    kept = call_created(receiver, alice, "c2")
    assert len(kept.signatures()) == 2 and kept.verified == {"configured": True, "rotated": True}, kept.verified
    assert secret_changed_lines(daemon.output()) == []

    # Another configured secret on the same state directory: from this start it alone signs.
    changed = new_secret()
    alice.close()
    daemon.stop()
    webhooks = config(receiver, {"main": changed})
    receiver.require("main", {"changed": changed}, extra={"configured": configured, "rotated": rotated})
    daemon = daemons.start(webhooks, state_dir=daemon.state_dir)
    assert daemon.endpoints()["main"]["previous_secret_until"] is None, daemon.endpoints()
    alice = daemon.client("alice")
    after = call_created(receiver, alice, "c3")
    assert len(after.signatures()) == 1, after.signature
    assert after.verified == {"changed": True, "configured": False, "rotated": False}, after.verified
    [said] = wait_until(lambda: secret_changed_lines(daemon.output()), what="the log line about the changed secret")
    assert 'endpoints=["main"]' in said, said
    assert configured not in daemon.output() and rotated not in daemon.output() and changed not in daemon.output()

    # That is stored: the next start with the same secret drops nothing more, and it still signs
    # alone; a rotation made now stands across restarts again.
    alice.close()
    daemon.stop()
    daemon = daemons.restart(daemon)
    assert daemon.endpoints()["main"]["previous_secret_until"] is None
    alice = daemon.client("alice")
    stays = call_created(receiver, alice, "c4")
    assert stays.verified == {"changed": True, "configured": False, "rotated": False}, stays.verified
    assert secret_changed_lines(daemon.output()) == []
    again = daemon.admin_ok("POST", ROTATE, {"grace_ms": 0})["secret"]
    receiver.require("main", {"again": again}, extra={"changed": changed, "configured": configured, "rotated": rotated})
    alice.close()
    daemon.stop()
    daemon = daemons.restart(daemon)
    alice = daemon.client("alice")
    last = call_created(receiver, alice, "c5")
    assert last.verified == {"again": True, "changed": False, "configured": False, "rotated": False}, last.verified
    assert secret_changed_lines(daemon.output()) == []
    assert receiver.failures == []
    alice.close()
