"""The daemon on PostgreSQL (``store.kind = "postgres"``, ADR 0012) end to end.

Each test runs its own ``pgserver.PostgresServer`` (a private server on a free port) and daemons
from ``webhook_harness`` (``--port 0 --admin-port 0``, a state directory of the test's), with
``store.postgres_url`` carrying a password that trust authentication ignores, so that every
output can be searched for it.

- A SIGKILLed daemon loses nothing: a ringing call and an audit entry made on one daemon are
  found by a daemon started on the same database with a new, empty state directory; bob
  connects, is rung with the same deadline, accepts, and alice is told. No
  ``switchboard.sqlite`` appears in either state directory.
- ``switchboard migrate`` applies every migration to a new database, in order, as
  ``switchboard_migrations`` records them, and then finds it up to date; a missing or malformed
  URL fails ``check-config``, ``serve`` and ``migrate`` (78) naming ``store.postgres_url``, and
  an unreachable server fails ``serve`` and ``migrate`` at once; the password is never printed.
- PostgreSQL stopped under a running daemon: ``/readyz`` turns 503 (``store_writable`` false), a
  call creation is refused with ``unavailable``; once the server is started again (same folder
  and port) readiness comes back and calls are created, with no daemon restart.
- A creation refused while PostgreSQL is down leaves nothing behind: the daemon cannot reload
  its state to roll back, so it refuses every request (a retry too) until it can, then rebuilds
  its calls from the store; the refused call exists neither for the client nor in the store.

Nothing sleeps to wait: every wait polls with a deadline. Only processes started here are
ended, by PID.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import pgserver
from conftest import _daemon_binary, daemon_env
from pgserver import PostgresServer, postgres  # noqa: F401 - fixture
from webhook_harness import Daemon, Daemons, daemons, wait_until  # noqa: F401 - fixture

PASSWORD = "Pw-n0t-t0-be-pr1nted"
#: Rings long enough to outlast a crash and restart of the daemon.
RING_MS = 60000
MIGRATIONS = ("v1_audit_log", "v2_calls", "v3_webhooks", "v4_sfus", "v5_nodes", "v6_leader", "v7_node_message", "v8_node_sockets", "v9_call_owner",
              "v10_connection_node", "v11_node_calls")
#: The daemons' hold on the database: a SIGKILLed daemon's lapses this long after its last renewal.
LEASE_MS = 2000
RUN_TIMEOUT_S = 60.0
STORE_DOWN_S = 10.0  # readiness must notice a stopped server within this long
STORE_BACK_S = 30.0  # ...and a started one within this long




def store_url(pg: PostgresServer, database: str) -> str:
    """A new database's URL with :data:`PASSWORD` in it (trust authentication ignores it)."""
    return pg.create_database(database).replace(f"{pg.user}@", f"{pg.user}:{PASSWORD}@", 1)


def on_postgres(daemons: Daemons, url: str, state_dir: Path) -> Daemon:
    """A daemon on ``url`` with ``state_dir``; its ready line names the URL without the password."""
    daemon = daemons.start({}, state_dir=state_dir, STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=LEASE_MS,
                           CALL_TYPES_RINGING_INCOMING_TIMEOUT_MS=RING_MS,
                           CALL_TYPES_RINGING_AUTO_CANCEL_TIMEOUT_MS=RING_MS)
    assert f"store={url.replace(':' + PASSWORD, '')} " in daemon.output(), daemon.output()
    assert PASSWORD not in daemon.output()
    return daemon


def ring(client, call_id: str) -> dict[str, Any]:
    """``client`` rings bob in a new ``ringing`` call; the answer's data."""
    return client.ok("call.get_or_create", {"type": "ringing", "id": call_id, "members": ["bob"], "ring": True})


def ring_states(data: dict[str, Any]) -> dict[str, str]:
    """Each member's ring state in a call answer, event or admin view."""
    return {m["user_id"]: m["ring_state"] for m in data["members"]}


def readiness(daemon: Daemon) -> tuple[int, Any]:
    """``GET /readyz`` on the admin API: its status and body."""
    return daemon.admin("GET", "/readyz")


def first_node(daemon: Daemon) -> str:
    """The node id of ``daemon`` (``GET /v1/nodes``)."""
    return next(n["id"] for n in daemon.admin_ok("GET", "/v1/nodes")["nodes"] if n["current"])


def run_switchboard(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """One ``switchboard`` command run to its end (bounded: it must not hang)."""
    return subprocess.run([str(_daemon_binary()), *args], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def test_calls_and_the_audit_log_survive_a_sigkill_in_postgresql(postgres, daemons, tmp_path: Path) -> None:
    url = store_url(postgres, "crash")
    first = on_postgres(daemons, url, tmp_path / "first")
    alice = first.client("alice")  # bob is offline: he is rung when he connects
    created = ring(alice, "survivor")
    assert created["created"] and ring_states(created) == {"alice": "none", "bob": "ringing"}, created
    listed = first.admin_ok("GET", "/v1/calls")["calls"]
    assert [(c["cid"], c["live"], c["rung"]) for c in listed] == [("ringing:survivor", True, True)], listed
    before = first.admin_ok("GET", "/v1/calls/ringing/survivor")
    audit_id = first.admin_ok("PUT", "/v1/log-level", {"level": "debug"})["audit_id"]
    entries = first.admin_ok("GET", "/v1/audit")["entries"]
    assert [(e["id"], e["action"], e["target"], e["detail"]) for e in entries] == [
        (audit_id, "log_level.set", "debug", ""), (audit_id - 1, "cluster.lead", first_node(first), "generation 1")], entries

    first.kill()
    assert first.process.returncode == -9

    # A new, empty state directory: whatever the second daemon knows comes from PostgreSQL.
    second = on_postgres(daemons, url, tmp_path / "second")
    assert second.admin_ok("GET", "/v1/calls")["calls"] == listed
    after = second.admin_ok("GET", "/v1/calls/ringing/survivor")
    assert (after["call"], after["members"], after["events"]) == (before["call"], before["members"], before["events"])
    later = second.admin_ok("GET", "/v1/audit")["entries"]
    assert later[1:] == entries and (later[0]["action"], later[0]["detail"]) == ("cluster.lead", "generation 2"), later

    alice = second.client("alice", resume=alice.hello["resume_token"])
    assert alice.hello["resumed"], alice.hello
    bob = second.client("bob")
    rung = bob.wait_event("call.ring", "ringing:survivor")
    deadline = {m["user_id"]: m["ring_deadline"] for m in before["members"]}["bob"]
    assert (rung["data"]["from"], rung["data"]["ring_deadline"]) == ("alice", deadline), rung
    accepted = bob.ok("call.accept", {"type": "ringing", "id": "survivor"})
    assert ring_states(accepted) == {"alice": "none", "bob": "accepted"}, accepted
    told = alice.wait_event("call.accepted", "ringing:survivor")
    assert told["data"]["user_id"] == "bob", told
    stored = second.admin_ok("GET", "/v1/calls/ringing/survivor")
    assert ring_states(stored) == {"alice": "none", "bob": "accepted"}, stored

    for state_dir in (first.state_dir, second.state_dir):
        assert not list(state_dir.glob("switchboard.sqlite*")), sorted(os.listdir(state_dir))
    assert PASSWORD not in first.output() + second.output()
    alice.close()
    bob.close()


def test_migrate_applies_then_finds_up_to_date_and_bad_urls_fail_naming_the_key(postgres, tmp_path: Path) -> None:
    url = store_url(postgres, "fresh")
    config = tmp_path / "switchboard.json"
    config.write_text(json.dumps({"store": {"kind": "postgres", "postgres_url": url, "directory": str(tmp_path / "data")}}))
    env = daemon_env()
    shown = url.replace(":" + PASSWORD, "")

    applied = run_switchboard("migrate", "--config", str(config), env=env, cwd=tmp_path)
    assert applied.returncode == 0, applied
    last = MIGRATIONS[-1]
    assert applied.stdout.strip() == (f"database {shown}: applied {', '.join(MIGRATIONS)}; "
                                      f"schema {last} ({len(MIGRATIONS)} migrations)"), applied.stdout
    recorded = postgres.psql("SELECT name FROM switchboard_migrations", database="fresh")
    assert sorted(recorded.splitlines()) == sorted(MIGRATIONS)
    again = run_switchboard("migrate", "--config", str(config), env=env, cwd=tmp_path)
    assert again.returncode == 0, again
    assert again.stdout.strip() == f"database {shown}: up to date; schema {last} ({len(MIGRATIONS)} migrations)"
    assert PASSWORD not in applied.stdout + applied.stderr + again.stdout + again.stderr
    checked = run_switchboard("check-config", "--config", str(config), env=env, cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.strip().endswith(f"; store {shown}"), checked
    assert not (tmp_path / "data" / "switchboard.sqlite").exists()

    serve = ["serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--state-dir", str(tmp_path / "bad")]
    for bad in ("", f"mysql://switchboard:{PASSWORD}@127.0.0.1:{postgres.port}/fresh",
                f"postgres://switchboard:{PASSWORD}@127.0.0.1:{postgres.port}",
                f"postgres://switchboard:{PASSWORD}@127.0.0.1:port/fresh"):
        bad_env = {**env, "SWITCHBOARD_STORE_KIND": "postgres", "SWITCHBOARD_STORE_POSTGRES_URL": bad}
        for command in (["check-config"], serve, ["migrate"]):
            done = run_switchboard(*command, env=bad_env, cwd=tmp_path)
            assert done.returncode == 78, (bad, command[0], done)
            assert "store.postgres_url" in done.stderr, (bad, command[0], done.stderr)
            assert PASSWORD not in done.stdout + done.stderr, (bad, command[0], done)

    # A well-formed URL of a server that is not there: serve gives up at once, without the password.
    postgres.stop()
    gone = {**env, "SWITCHBOARD_STORE_KIND": "postgres", "SWITCHBOARD_STORE_POSTGRES_URL": url}
    for command in (serve, ["migrate"]):
        done = run_switchboard(*command, env=gone, cwd=tmp_path)
        assert done.returncode not in (0, None) and "PostgreSQL is unavailable" in done.stdout + done.stderr, done
        if command is serve:
            assert "store.postgres_url (postgres://switchboard@127.0.0.1:" in done.stdout + done.stderr, done
        assert PASSWORD not in done.stdout + done.stderr, done


def test_a_stopped_postgresql_makes_the_daemon_unready_and_it_recovers_without_a_restart(
        postgres, daemons, tmp_path: Path) -> None:
    url = store_url(postgres, "outage")
    daemon = on_postgres(daemons, url, tmp_path / "data")
    alice, bob = daemon.client("alice"), daemon.client("bob")
    assert readiness(daemon) == (200, {"checks": {"draining": False, "listeners_up": True, "store_writable": True,
                                                  "threads_turning": True}, "ready": True})
    assert ring(alice, "before")["created"]

    assert postgres.stop() == 0
    stopped = time.monotonic()
    wait_until(lambda: readiness(daemon)[0] == 503, STORE_DOWN_S, "/readyz 503 after PostgreSQL stopped")
    unready_s = time.monotonic() - stopped
    body = readiness(daemon)[1]
    assert body["ready"] is False and body["checks"]["store_writable"] is False, body
    refused = alice.request("call.get_or_create", {"type": "ringing", "id": "during", "members": ["bob"], "ring": True})
    assert refused["type"] == "error" and refused["error"]["code"] == "unavailable", refused
    assert daemon.process.poll() is None, daemon.output()

    postgres.start()  # the same folder and port
    started = time.monotonic()
    wait_until(lambda: readiness(daemon)[0] == 200, STORE_BACK_S, "/readyz 200 after PostgreSQL came back")
    ready_s = time.monotonic() - started
    assert ring(alice, "after")["created"]
    assert bob.wait_event("call.ring", "ringing:after")["data"]["from"] == "alice"
    listed = sorted(c["cid"] for c in daemon.admin_ok("GET", "/v1/calls")["calls"])
    assert listed == ["ringing:after", "ringing:before"], listed
    # No restart: the same process, one ready line, both sockets still open.
    assert daemon.process.poll() is None and len(re.findall("switchboard ready", daemon.output())) == 1
    assert not (alice.closed or bob.closed)
    assert PASSWORD not in daemon.output()
    print(f"/readyz 503 {unready_s:.3f} s after the stop, 200 {ready_s:.3f} s after the start; refusal: unavailable")
    alice.close()
    bob.close()


def test_a_call_refused_while_postgresql_is_down_does_not_exist_afterwards(postgres, daemons, tmp_path: Path) -> None:
    daemon = on_postgres(daemons, store_url(postgres, "phantom"), tmp_path / "data")
    alice = daemon.client("alice")
    held = {"type": "default", "id": "held"}
    assert alice.request("call.get_or_create", held)["data"]["created"]
    postgres.stop()
    wait_until(lambda: readiness(daemon)[0] == 503, STORE_DOWN_S, "/readyz 503 after PostgreSQL stopped")
    request = {"type": "ringing", "id": "refused", "members": ["bob"], "ring": True}
    assert alice.request("call.get_or_create", request)["error"]["code"] == "unavailable"
    # A call not in memory cannot even be claimed; one in memory fails at its commit, and the
    # store cannot be read to roll back: refused until it can, then rebuilt from it.
    assert "claiming calls failed" in daemon.output()
    assert alice.request("call.join", held)["error"]["code"] == "unavailable"
    retried = alice.request("call.get_or_create", request)
    assert retried["type"] == "error" and retried["error"]["code"] == "unavailable", retried
    asked = alice.request("call.get", {"type": "ringing", "id": "refused"})
    assert asked["type"] == "error" and asked["error"]["code"] == "unavailable", asked
    postgres.start()
    wait_until(lambda: readiness(daemon)[0] == 200, STORE_BACK_S, "/readyz 200 after PostgreSQL came back")
    told = alice.request("call.get", {"type": "ringing", "id": "refused"})
    stored, _ = daemon.admin("GET", "/v1/calls/ringing/refused")
    assert told["type"] == "error" and told["error"]["code"] == "call_not_found", told
    assert stored == 404, stored
    assert alice.request("call.get_or_create", request)["data"]["created"], "created now, whole"
    assert "calls rebuilt from it" in daemon.output()
    assert alice.request("call.join", held)["type"] == "response", "the held call runs again"
    alice.close()
