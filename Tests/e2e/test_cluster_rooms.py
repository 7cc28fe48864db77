"""On PostgreSQL the leader's Janus room reconciler follows the store's live calls, not its memory.

With ``store.kind = "postgres"`` every daemon's calls are in the shared store, and one room
reconciler, the leading daemon's, makes each Janus hold exactly the rooms and tokens of the live
calls placed on it (``LiveRoom``, ``PostgresStore.liveRooms``, ``desiredRooms`` in
SwitchboardDaemon+Calls.swift; ADR 0012). A read of the store that fails skips the run.

One daemon leads a private PostgreSQL database (lease 1000 ms, Janus polled and reconciled every
250 ms) with a private Janus (``janus_harness``) registered by a seed file. The test then does
what another node does, in one transaction with ``psql``: a live node row, a live call that node
owns (``call_owner``, so the leader never adopts it into memory), one member, one session that
has not left, and the call's placement on the Janus with a room id chosen here. It requires:

- the room appears on Janus with the description ``switchboard default:<id>``, its ``allowed``
  list and Janus's Switchboard tokens exactly the session's token (derived as SFURoomKeys does,
  from the ``sfu-room.key`` shared secret in ``cluster_secret``);
- once the call's row reads ended (``ended_at``, ``ended_reason = 'admin'``), the room and the
  token go: the store drives both ways;
- with a second such call's room up, PostgreSQL stopped: the reconciler logs failed reads at two
  runs or more (and at least two seconds pass) while the room stays on Janus at every look; then
  PostgreSQL is started again, the daemon is ready again, and the room is still there.

A reconciler reading the leader's memory fails the first check (the call is not in memory: no
room is made, and one made by hand would go as an orphan), and one that took a failed read for
"no calls" fails the last.

Nothing sleeps to wait: every wait polls with a deadline. Only processes started here are ended,
by PID.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from janus_harness import JanusInstance
from pgserver import PostgresServer, postgres  # noqa: F401 - fixture
from webhook_harness import daemons, wait_until  # noqa: F401 - fixture

LEASE_MS = 1000
POLL_INTERVAL_MS = 250
SFU_ID = "janus-e2e"
OTHER_NODE = "elsewhere-node"
WAIT_S = 15.0
#: The shortest time PostgreSQL stays down while the room is watched (many reconcile intervals).
OUTAGE_S = 2.0
READ_FAILED = "could not read the calls' rooms from the store"




@pytest.fixture
def janus() -> Iterator[JanusInstance]:
    with JanusInstance() as instance:
        yield instance


def rooms(janus: JanusInstance) -> dict[int, dict]:
    """Switchboard's rooms on Janus (description prefix ``switchboard ``), by id."""
    return {r["room"]: r for r in janus.videoroom({"request": "list"})["list"] if r["description"].startswith("switchboard ")}


def sb_tokens(janus: JanusInstance) -> list[str]:
    return sorted(t["token"] for t in janus.list_tokens() if t["token"].startswith("sb1."))


def mac(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def insert_call(pg: PostgresServer, database: str, call_id: str, session: str, room: int) -> None:
    """What another node commits for a call it runs on the Janus, in one transaction."""
    cid = f"default:{call_id}"
    media = json.dumps({"audio": False, "audio_level": 0, "pinned": False, "screenshare": False, "speaking": False, "video": False})
    pg.psql(
        "BEGIN;\n"
        f"INSERT INTO node (id, description, started_at, last_seen, lease_until) VALUES ('{OTHER_NODE}', 'another daemon', now(), now(),"
        " now() + interval '1 hour') ON CONFLICT (id) DO NOTHING;\n"
        f"INSERT INTO call_owner (cid, node, generation, claimed_at) VALUES ('{cid}', '{OTHER_NODE}', 1, now());\n"
        "INSERT INTO call (cid, type, id, created_by, created_at, session, ended_at, ended_reason, rung, auto_cancel_at, empty_deadline,"
        f" custom, event_seq) VALUES ('{cid}', 'default', '{call_id}', 'carol', now(), 1, NULL, NULL, false, NULL, NULL, '{{}}', 0);\n"
        f"INSERT INTO call_member (cid, user_id, added_at, ring_state) VALUES ('{cid}', 'carol', now(), 'none');\n"
        "INSERT INTO call_session (session_id, cid, call_session, user_id, connection_id, role, joined_at, left_at, left_reason, location,"
        f" media) VALUES ('{session}', '{cid}', 1, 'carol', 'conn-{session}', 'initiator', now(), NULL, NULL, '{{\"region\":\"fra\"}}',"
        f" '{media}');\n"
        "INSERT INTO call_placement (call_id, sfu_id, locations, sources, assigned_at, reason, room) VALUES "
        f"('{cid}', '{SFU_ID}', '[{{\"region\":\"fra\"}}]', 'region', now(), 'placed', {room});\n"
        "COMMIT;", database=database)


def test_the_leader_keeps_the_rooms_the_stores_live_calls_hold(postgres, janus, daemons, tmp_path: Path) -> None:
    database = "cluster_rooms"
    url = postgres.create_database(database)
    secret_file = tmp_path / "janus-admin-secret"
    secret_file.write_text(janus.admin_secret + "\n")
    secret_file.chmod(0o600)
    seed = tmp_path / "sfus.json"
    seed.write_text(json.dumps({"sfus": [{"id": SFU_ID, "kind": "janus", "url": janus.http_url, "region": "fra", "capacity": 50,
                                          "janus": {"admin_url": janus.admin_url, "admin_secret_file": str(secret_file)}}]}))
    daemon = daemons.start({}, STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=LEASE_MS,
                           PLACEMENT_SFU_SEED_FILE=str(seed), PLACEMENT_POLL_INTERVAL_MS=POLL_INTERVAL_MS,
                           PLACEMENT_POLL_TIMEOUT_MS=200)
    wait_until(lambda: daemon.admin("GET", "/readyz")[0] == 200, WAIT_S, "the daemon ready on PostgreSQL")
    wait_until(lambda: daemon.admin_ok("GET", f"/v1/sfus/{SFU_ID}").get("last_poll_outcome") == "ok", WAIT_S, "the Janus polled")
    assert rooms(janus) == {} and sb_tokens(janus) == []
    key = postgres.psql("SELECT value FROM cluster_secret WHERE name = 'sfu-room.key'", database=database).encode()
    assert len(key) >= 32, "the shared room key"

    # 1. A live call another node runs, in the store only: its room and its one session's token appear.
    first, second = random.sample(range(100000, 1000000), 2)
    session = str(uuid.uuid4())
    token = "sb1." + mac(key, f"token\0{first}\0{session}")[:32]
    insert_call(postgres, database, "elsewhere", session, first)
    inserted = time.monotonic()
    room = wait_until(lambda: rooms(janus).get(first), WAIT_S, f"room {first} of default:elsewhere on Janus")
    created_s = time.monotonic() - inserted
    assert room["description"] == "switchboard default:elsewhere", room
    assert room["pin_required"] is True, room
    allowed = janus.videoroom({"request": "allowed", "room": first, "secret": mac(key, f"secret\0{first}")[:48], "action": "enable"})
    assert allowed["allowed"] == [token], allowed
    wait_until(lambda: sb_tokens(janus) == [token], WAIT_S, "the session's token, and only it, on Janus")
    assert [c["cid"] for c in daemon.admin_ok("GET", "/v1/calls")["calls"]] == ["default:elsewhere"]
    assert "adopted live calls" not in daemon.output(), "the call stayed with its live owner, out of the leader's memory"

    # 2. The call ends in the store: its room and token go.
    postgres.psql("UPDATE call SET ended_at = now(), ended_reason = 'admin' WHERE cid = 'default:elsewhere'", database=database)
    ended = time.monotonic()
    wait_until(lambda: first not in rooms(janus), WAIT_S, f"room {first} destroyed once the call ended")
    destroyed_s = time.monotonic() - ended
    wait_until(lambda: sb_tokens(janus) == [], WAIT_S, "the ended call's token revoked")

    # 3. A failed read of the store destroys nothing.
    session2 = str(uuid.uuid4())
    token2 = "sb1." + mac(key, f"token\0{second}\0{session2}")[:32]
    insert_call(postgres, database, "elsewhere-two", session2, second)
    wait_until(lambda: second in rooms(janus) and sb_tokens(janus) == [token2], WAIT_S, f"room {second} and its token on Janus")
    seen = len(daemon.lines)
    assert postgres.stop() == 0
    stopped = time.monotonic()
    looks = 0
    while True:
        assert second in rooms(janus), f"room {second} destroyed while PostgreSQL was down:\n{daemon.output()}"
        assert sb_tokens(janus) == [token2], "the token revoked while PostgreSQL was down"
        looks += 1
        failed_reads = sum(READ_FAILED in line for line in daemon.lines[seen:])
        if failed_reads >= 2 and time.monotonic() - stopped >= OUTAGE_S:
            break
        assert time.monotonic() - stopped < WAIT_S, f"fewer than 2 failed reads logged within {WAIT_S} s:\n{daemon.output()}"
        time.sleep(0.05)  # a polling cadence over the outage, not a wait for an outcome
    down_s = time.monotonic() - stopped
    assert daemon.process.poll() is None, daemon.output()

    postgres.start()  # the same folder and port, so the daemon stops cleanly at teardown
    wait_until(lambda: daemon.admin("GET", "/readyz")[0] == 200, 30.0, "/readyz 200 after PostgreSQL came back")
    assert second in rooms(janus) and sb_tokens(janus) == [token2]
    print(f"room made {created_s:.2f} s after the insert, destroyed {destroyed_s:.2f} s after the end; "
          f"kept through {down_s:.2f} s of outage ({failed_reads} failed reads, {looks} looks)")
