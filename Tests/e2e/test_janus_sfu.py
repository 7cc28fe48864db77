"""Janus SFUs whose health and load Switchboard pulls (issue #13, items 1, 2 and 7).

Two real Janus 1.1.2 servers (Debian's package, started by ``janus_harness`` on 127.0.0.1 with
free ports and token auth on) and the real daemon: Switchboard polls each Janus's admin API,
counts its sessions as load, places calls on the nearer one, and when one is killed (SIGKILL)
marks it down after ``placement.stale_after_ms`` and moves its calls, telling the participant
with ``call.sfu_changed``. Every wait polls an answer or awaits a frame; nothing sleeps to wait.

No media crosses these Janus servers here (that needs a network namespace; see
shared notes): this is the control plane only.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from conftest import CALLS_API_SECRET, _launch, daemon_env, mint_token
from janus_harness import JanusInstance

ADMIN_PATTERN = re.compile(r"admin=http://127\.0\.0\.1:([0-9]+)")
POLL_INTERVAL_MS = 200
STALE_AFTER_MS = 1500
WAIT_S = 20.0

def admin_port(daemon) -> int:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        match = ADMIN_PATTERN.search(daemon.output.text())
        if match:
            return int(match.group(1))
        daemon.output.finished.wait(0.05)
    raise AssertionError(f"no admin URL in the daemon's output:\n{daemon.output.text()}")


class Admin:
    """The daemon's admin API (auth none on loopback, as the e2e daemons run)."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def sfu(self, sfu_id: str) -> dict:
        status, body = self.call("GET", f"/v1/sfus/{sfu_id}")
        assert status == 200, body
        return body

    def wait_sfu(self, sfu_id: str, predicate, what: str) -> dict:
        """Polls GET /v1/sfus/{id} until ``predicate`` holds (bounded)."""
        deadline = time.monotonic() + WAIT_S
        view = self.sfu(sfu_id)
        while not predicate(view):
            if time.monotonic() > deadline:
                raise AssertionError(f"{sfu_id}: {what} did not happen within {WAIT_S} s; last view {view}")
            time.sleep(POLL_INTERVAL_MS / 4000)  # a polling cadence, not a wait for an outcome
            view = self.sfu(sfu_id)
        return view


def janus_definition(sfu_id: str, janus: JanusInstance, region: str, secret_env: str) -> dict:
    return {
        "id": sfu_id, "kind": "janus", "url": janus.http_url, "region": region, "capacity": 50,
        "janus": {"admin_url": janus.admin_url, "admin_secret_env": secret_env},
    }


@pytest.fixture
def two_janus():
    with JanusInstance() as a, JanusInstance() as b:
        yield a, b


@pytest.fixture
def daemon_with_janus(tmp_path: Path, two_janus):
    a, b = two_janus
    env = daemon_env()
    env["SWITCHBOARD_AUTH_API_SECRET"] = CALLS_API_SECRET
    env["SWITCHBOARD_PLACEMENT_POLL_INTERVAL_MS"] = str(POLL_INTERVAL_MS)
    env["SWITCHBOARD_PLACEMENT_POLL_TIMEOUT_MS"] = "300"
    env["SWITCHBOARD_PLACEMENT_STALE_AFTER_MS"] = str(STALE_AFTER_MS)
    env["JANUS_A_SECRET"] = a.admin_secret
    env["JANUS_B_SECRET"] = b.admin_secret + "\n"  # a trailing newline, as a file or a shell would give it
    env["JANUS_WRONG_SECRET"] = "not-the-secret"
    for daemon in _launch(tmp_path, env):
        yield daemon, Admin(admin_port(daemon)), a, b


async def join(port: int, user: str, call_id: str, region: str):
    """Opens /v1/connect as ``user`` and joins ``default:call_id`` from ``region``; returns the
    socket and the join's answer."""
    ws = await connect(f"ws://127.0.0.1:{port}/v1/connect")
    await ws.send(json.dumps({"type": "auth", "token": mint_token(user)}))
    ok = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
    assert ok["type"] == "connection.ok", ok
    await ws.send(json.dumps({"id": 1, "type": "call.join", "data": {
        "type": "default", "id": call_id, "create": True, "location": {"region": region}}}))
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
        if frame.get("id") == 1:
            assert frame["type"] == "response", frame
            return ws, frame["data"]


async def next_event(ws, kind: str) -> dict:
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
        if frame.get("type") == kind:
            return frame


def test_janus_health_and_load_are_polled_and_a_wrong_secret_is_refused(daemon_with_janus):
    daemon, admin, a, b = daemon_with_janus
    status, created = admin.call("POST", "/v1/sfus", janus_definition("janus-a", a, "fra", "JANUS_A_SECRET"))
    assert status == 201, created
    assert created["kind"] == "janus" and created["load_source"] == "poll" and created["has_secret"] is False
    assert created["janus"] == {"admin_url": a.admin_url, "admin_secret_from": "env:JANUS_A_SECRET"}
    assert a.admin_secret not in json.dumps(created)

    view = admin.wait_sfu("janus-a", lambda v: v.get("last_poll_outcome") == "ok" and v["fresh"], "a first answered poll")
    assert view["load"] == 0 and view["state"] == "active"

    # Two client sessions on Janus are its load.
    a.add_token("load-token")
    sessions = [a.open_session("load-token"), a.open_session("load-token")]
    admin.wait_sfu("janus-a", lambda v: v["load"] == 2, "load 2 from two Janus sessions")
    sessions[0].destroy()
    admin.wait_sfu("janus-a", lambda v: v["load"] == 1, "load back to 1 after a session ended")

    # A wrong admin secret: Janus refuses the poll, the SFU never becomes fresh.
    status, _ = admin.call("POST", "/v1/sfus", janus_definition("janus-wrong", b, "ams", "JANUS_WRONG_SECRET"))
    assert status == 201
    view = admin.wait_sfu("janus-wrong", lambda v: v.get("last_poll_outcome") == "refused", "a refused poll")
    assert view["fresh"] is False
    # An unset variable: not polled at all.
    status, _ = admin.call("POST", "/v1/sfus", janus_definition("janus-unset", b, "ams", "NO_SUCH_VARIABLE_SET"))
    assert status == 201
    admin.wait_sfu("janus-unset", lambda v: v.get("last_poll_outcome") == "no_secret", "a poll without a secret")

    # Heartbeats are refused for a polled SFU, even with admin rights.
    status, body = admin.call("POST", "/v1/sfus/janus-a/heartbeat", {"load": 3})
    assert status == 409 and body["error"]["code"] == "conflict", body

    # Bad definitions answer 400 naming the field.
    bad = janus_definition("janus-bad", a, "fra", "JANUS_A_SECRET")
    bad["janus"]["admin_secret_file"] = "/run/also"
    status, body = admin.call("POST", "/v1/sfus", bad)
    assert status == 400 and "admin_secret" in body["error"]["message"], body

    metrics = urllib.request.urlopen(f"{admin.base}/metrics", timeout=10).read().decode()
    ok_polls = re.search(r'^switchboard_sfu_polls_total\{outcome="ok"\} ([0-9]+)', metrics, re.M)
    refused_polls = re.search(r'^switchboard_sfu_polls_total\{outcome="refused"\} ([0-9]+)', metrics, re.M)
    assert ok_polls and int(ok_polls.group(1)) >= 3, metrics
    assert refused_polls and int(refused_polls.group(1)) >= 1
    for session in sessions[1:]:
        session.destroy()


def test_calls_go_to_the_nearer_janus_and_move_when_it_is_killed(daemon_with_janus):
    daemon, admin, a, b = daemon_with_janus
    for sfu_id, janus, region, env in (("janus-fra", a, "fra", "JANUS_A_SECRET"), ("janus-ams", b, "ams", "JANUS_B_SECRET")):
        status, body = admin.call("POST", "/v1/sfus", janus_definition(sfu_id, janus, region, env))
        assert status == 201, body
        admin.wait_sfu(sfu_id, lambda v: v["fresh"], "a first answered poll")

    async def scenario() -> None:
        near_fra, joined_fra = await join(daemon.port, "alice", "in-frankfurt", "fra")
        near_ams, joined_ams = await join(daemon.port, "bob", "in-amsterdam", "ams")
        try:
            assert joined_fra["sfu"]["id"] == "janus-fra" and joined_fra["sfu"]["kind"] == "janus", joined_fra["sfu"]
            assert joined_fra["sfu"]["url"] == a.http_url
            assert joined_ams["sfu"]["id"] == "janus-ams", joined_ams["sfu"]

            killed_at = time.monotonic()
            a.kill()
            changed = await next_event(near_fra, "call.sfu_changed")
            moved_after = time.monotonic() - killed_at
            assert changed["data"]["call_cid"] == "default:in-frankfurt"
            assert changed["data"]["sfu"]["id"] == "janus-ams" and changed["data"]["sfu"]["kind"] == "janus"
            assert changed["data"]["session_id"] == joined_fra["session_id"]
            new_room, new_token = changed["data"]["sfu"]["room"], changed["data"]["sfu"]["token"]
            assert new_room != joined_fra["sfu"]["room"] and new_token != joined_fra["sfu"]["token"], "a new room and token"
            wait_for(lambda: new_room in switchboard_rooms(b), "the moved call's new room on the other Janus")
            wait_for(lambda: new_token in janus_tokens(b), "the moved session's new token on the other Janus")
            # Detection takes stale_after plus up to a quarter of it (the health check's period).
            assert moved_after < (STALE_AFTER_MS * 1.25 + 2 * POLL_INTERVAL_MS) / 1000 + 2.0, moved_after
        finally:
            await near_fra.close()
            await near_ams.close()

    asyncio.run(scenario())
    view = admin.sfu("janus-fra")
    assert view["state"] == "down" and view["fresh"] is False
    assert view["last_poll_outcome"] in ("failed", "timeout"), view
    assert admin.sfu("janus-ams")["state"] == "active"


class CallSocket:
    """One /v1/connect socket: requests answered by id, events kept in order."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.next_id = 100
        self.events: list[dict] = []

    @classmethod
    async def open(cls, port: int, user: str) -> "CallSocket":
        ws = await connect(f"ws://127.0.0.1:{port}/v1/connect")
        await ws.send(json.dumps({"type": "auth", "token": mint_token(user)}))
        ok = json.loads(await asyncio.wait_for(ws.recv(), WAIT_S))
        assert ok["type"] == "connection.ok", ok
        return cls(ws)

    async def request(self, kind: str, data: dict) -> dict:
        self.next_id += 1
        rid = self.next_id
        await self.ws.send(json.dumps({"id": rid, "type": kind, "data": data}))
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), WAIT_S))
            if frame.get("id") == rid:
                assert frame["type"] == "response", frame
                return frame["data"]
            self.events.append(frame)


def room_secret(state_dir: Path, room: int) -> str:
    """The secret Switchboard derives for ``room`` (HMAC-SHA256 of the daemon's sfu-room.key),
    so the test can make a room exactly as Switchboard would for a call it never committed."""
    key = (state_dir / "sfu-room.key").read_text().splitlines()[0].encode()
    return hmac.new(key, f"secret\0{room}".encode(), hashlib.sha256).hexdigest()[:48]


def wait_for(predicate, what: str):
    deadline = time.monotonic() + WAIT_S
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {WAIT_S} s")
        time.sleep(0.05)  # a polling cadence, not a wait for an outcome


def switchboard_rooms(janus: JanusInstance) -> dict[int, dict]:
    return {room["room"]: room for room in janus.videoroom({"request": "list"})["list"]
            if room["description"].startswith("switchboard ")}


def janus_tokens(janus: JanusInstance) -> set[str]:
    return {entry["token"] for entry in janus.list_tokens()}


def test_switchboard_provisions_a_room_per_call_and_a_token_per_session(daemon_with_janus, tmp_path: Path):
    daemon, admin, a, _ = daemon_with_janus
    status, body = admin.call("POST", "/v1/sfus", janus_definition("janus-fra", a, "fra", "JANUS_A_SECRET"))
    assert status == 201, body
    admin.wait_sfu("janus-fra", lambda v: v["fresh"], "a first answered poll")

    # An orphan: a room made as Switchboard makes them, for a call that was never committed.
    orphan = 987654321
    a.videoroom({"request": "create", "room": orphan, "secret": room_secret(tmp_path / "data", orphan),
                 "description": "switchboard default:never-committed", "is_private": False, "permanent": False})
    # An operator's own room and token are not Switchboard's business.
    a.videoroom({"request": "create", "room": 42, "description": "operator's room", "is_private": False, "permanent": False})
    a.add_token("operator-token")
    wait_for(lambda: orphan not in switchboard_rooms(a), "the orphan room's removal by the reconciler")

    async def scenario() -> None:
        alice = await CallSocket.open(daemon.port, "alice")
        bob = await CallSocket.open(daemon.port, "bob")
        try:
            joined = await alice.request("call.join", {"type": "default", "id": "standup", "create": True, "location": {"region": "fra"}})
            sfu = joined["sfu"]
            assert sfu["kind"] == "janus" and isinstance(sfu["room"], int) and 0 < sfu["room"] < 2**53, sfu
            assert sfu["token"].startswith("sb1.") and sfu["pin"], sfu
            room, alice_token = sfu["room"], sfu["token"]
            assert "token" not in joined["call"]["sfu"] and "pin" not in joined["call"]["sfu"]

            created = wait_for(lambda: switchboard_rooms(a).get(room), "the call's room on Janus")
            assert created["description"] == "switchboard default:standup"
            assert created["max_publishers"] == 100, created  # call type default: max_participants 100
            assert created["pin_required"] is True
            wait_for(lambda: alice_token in janus_tokens(a), "alice's token on Janus")

            # Janus itself enforces it: the token opens a session and publishes with the PIN ...
            session = a.open_session(alice_token)
            handle = session.attach()
            session.message(handle, {"request": "join", "ptype": "publisher", "room": room, "token": alice_token,
                                     "pin": sfu["pin"], "display": "alice"})
            event = session.wait_event(lambda e: e.get("plugindata", {}).get("data", {}).get("videoroom") in ("joined", "event"))
            assert event["plugindata"]["data"]["videoroom"] == "joined", event
            # ... a guessed token cannot even open a session, and a wrong PIN is refused.
            guessed = a.create_session("sb1." + "0" * 32)
            assert guessed["janus"] == "error" and guessed["error"]["code"] == 403, guessed
            other = a.open_session(alice_token)
            other_handle = other.attach()
            other.message(other_handle, {"request": "join", "ptype": "subscriber", "room": room, "pin": "wrong", "feed": 1})
            refused = other.wait_event(lambda e: "plugindata" in e)
            assert refused["plugindata"]["data"].get("error_code") == 433, refused

            bob_joined = await bob.request("call.join", {"type": "default", "id": "standup", "location": {"region": "fra"}})
            bob_token = bob_joined["sfu"]["token"]
            assert bob_token != alice_token and bob_joined["sfu"]["room"] == room
            wait_for(lambda: bob_token in janus_tokens(a), "bob's token on Janus")
            await bob.request("call.leave", {"type": "default", "id": "standup"})
            wait_for(lambda: bob_token not in janus_tokens(a), "bob's token revoked at leave")
            assert alice_token in janus_tokens(a)

            await alice.request("call.end", {"type": "default", "id": "standup"})
            wait_for(lambda: room not in switchboard_rooms(a), "the room destroyed at call end")
            wait_for(lambda: alice_token not in janus_tokens(a), "alice's token revoked at call end")
        finally:
            await alice.ws.close()
            await bob.ws.close()

    asyncio.run(scenario())
    assert 42 in {room["room"] for room in a.videoroom({"request": "list"})["list"]}, "the operator's room is left alone"
    assert "operator-token" in janus_tokens(a)
    metrics = urllib.request.urlopen(f"{admin.base}/metrics", timeout=10).read().decode()
    for series, least in (('switchboard_sfu_rooms_total{action="created"}', 1), ('switchboard_sfu_rooms_total{action="destroyed"}', 1),
                          ('switchboard_sfu_rooms_total{action="reconciled"}', 1), ('switchboard_sfu_tokens_total{action="revoked"}', 2)):
        match = re.search(rf"^{re.escape(series)} ([0-9]+)", metrics, re.M)
        assert match and int(match.group(1)) >= least, (series, metrics)
