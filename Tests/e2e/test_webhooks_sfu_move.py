"""``sfu.call_moved`` survives a crash between an SFU failover and the call's batch.

A failover commits the call's new placement (reason ``failover``) in its own transaction; the
call hub logs ``call.sfu_changed`` and writes the ``sfu.call_moved`` webhook in a later batch.
The test leaves the store as a crash in between would (the moved placement, no
``call.sfu_changed``): it stops the daemon, folds its batch log with ``switchboard migrate``,
and moves the call's placement in SQLite by hand. The next start announces the move once: the
receiver gets ``sfu.call_moved`` (with ``previous_sfu_id`` null) and the resumed participant gets
``call.sfu_changed``; a second restart sends nothing more about it.
"""

from __future__ import annotations

import sqlite3
import subprocess
from datetime import datetime, timezone

from conftest import _daemon_binary, daemon_env
from webhook_harness import daemons, new_secret, receiver  # noqa: F401 - fixtures

CID = "default:moved"


def stored_now() -> str:
    """Now as the store keeps times: UTC, ``YYYY-MM-DD HH:MM:SS.mmm``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:23]


def moved(receiver) -> list:
    return [a for a in receiver.delivered() if a.type == "sfu.call_moved" and a.call_cid == CID]


def test_a_move_a_crash_interrupted_is_sent_at_the_next_start_once(daemons, receiver, tmp_path) -> None:
    secret = new_secret()
    daemon = daemons.start({"endpoints": [f"main={receiver.endpoint('main', secret)}"], "secrets": [f"main={secret}"]},
                           CONNECT_RESUME_WINDOW_MS=600_000)
    for sfu, region in (("sfu-fra", "fra"), ("sfu-ams", "ams")):
        status, body = daemon.admin("POST", "/v1/sfus", {
            "id": sfu, "url": f"wss://{sfu}.example.net/ws", "region": region, "capacity": 100, "secret": f"secret-of-{sfu}-0123"})
        assert status == 201, (status, body)
        daemon.admin_ok("POST", f"/v1/sfus/{sfu}/heartbeat", {"load": 0})
    alice = daemon.client("alice")
    joined = alice.ok("call.join", {"type": "default", "id": "moved", "create": True, "location": {"region": "fra"}})
    assert joined["sfu"]["id"] == "sfu-fra", joined
    resume = alice.hello["resume_token"]
    receiver.wait_for(lambda r: [a for a in r.delivered() if a.type == "call.participant_joined"], what="the join's webhook")
    daemon.stop()

    # The failover's transaction without the call hub's batch that would have followed it.
    result = subprocess.run([str(_daemon_binary()), "migrate", "--state-dir", str(daemon.state_dir)], env=daemon_env(),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    with sqlite3.connect(daemon.state_dir / "switchboard.sqlite") as db:
        changed = db.execute("UPDATE call_placement SET sfu_id = 'sfu-ams', reason = 'failover', assigned_at = ? WHERE call_id = ?",
                             (stored_now(), CID)).rowcount
        assert changed == 1
        assert db.execute("SELECT count(*) FROM call_event WHERE type = 'call.sfu_changed'").fetchone()[0] == 0
    db.close()

    daemon = daemons.restart(daemon)
    message = receiver.wait_for(moved, what="sfu.call_moved after the restart")[0]
    assert message.data["sfu"]["id"] == "sfu-ams", message.json
    assert message.data["previous_sfu_id"] is None, message.json
    assert message.verified == {"secret0": True}, message.verified
    alice = daemon.client("alice", resume=resume)
    assert alice.wait_event("call.sfu_changed", CID)["data"]["sfu"]["id"] == "sfu-ams"
    alice.close()

    # Announced: a later start sends nothing more about it. The barrier call's webhook arrives
    # after anything the start would have sent.
    daemon.stop()
    daemon = daemons.restart(daemon)
    bob = daemon.client("bob")
    bob.ok("call.get_or_create", {"type": "default", "id": "barrier"})
    receiver.wait_for(lambda r: [a for a in r.delivered() if a.call_cid == "default:barrier"], what="the barrier call")
    assert len(moved(receiver)) == 1, [a.json for a in moved(receiver)]
    bob.close()
