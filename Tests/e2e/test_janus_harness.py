"""Real-Janus tests of ``janus_harness.py`` and of the Janus behaviour the Switchboard adapter relies on.

Each test starts its own Janus (Debian's ``janus`` package) on free loopback ports with a
private config folder, token auth and only the VideoRoom plugin and the HTTP transport.
No Switchboard build is needed. Nothing sleeps to wait: readiness and events are polled
with deadlines, and only the Janus processes started here are signalled, by PID.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

import pytest

from janus_harness import (
    HTTP_TRANSPORT,
    VIDEOROOM,
    JanusError,
    JanusInstance,
    find_modules,
)

FIXTURES = Path(__file__).resolve().parents[1] / "SwitchboardSFUTests" / "Fixtures" / "janus"
SYSTEM_JANUS_PORTS = {8088, 8089, 8188, 8989, 7088, 7889, 7188, 7989}

if not (os.environ.get("TEST_JANUS_BIN") or shutil.which("janus")):
    raise RuntimeError("janus is not installed: apt-get install -y janus (Debian package, 1.1.x)")


@pytest.fixture
def janus():
    with JanusInstance(start_timeout=15.0) as instance:
        yield instance


def join_publisher(janus: JanusInstance, token: str, room: int, *, token_in_body: bool = True) -> dict:
    """Open a session with ``token``, attach to VideoRoom, join ``room`` as publisher (with
    ``token`` in the join body too unless ``token_in_body`` is False); return the answering
    event's plugin data."""
    session = janus.open_session(token)
    handle = session.attach(VIDEOROOM)
    body = {"request": "join", "ptype": "publisher", "room": room, "display": token}
    if token_in_body:
        body["token"] = token
    ack = session.message(handle, body)
    assert ack["janus"] == "ack", ack
    event = session.wait_plugin_event(handle, timeout=10.0)
    assert event["transaction"] == ack["transaction"]
    return event["plugindata"]["data"]


def test_info_lists_videoroom_plugin_and_http_transport(janus: JanusInstance) -> None:
    info = janus.admin({"janus": "info"})
    assert info["janus"] == "server_info"
    assert info["version_string"].startswith("1.")
    assert list(info["plugins"]) == [VIDEOROOM]
    assert list(info["transports"]) == [HTTP_TRANSPORT]
    assert info["events"] == {} and info["loggers"] == {}
    assert info["auth_token"] is True
    assert info["session-timeout"] == 60
    assert info["server-name"] == janus.server_name
    # Ports are the instance's own, never the packaged janus.service's.
    assert janus.http_port != janus.admin_port
    assert not {janus.http_port, janus.admin_port} & SYSTEM_JANUS_PORTS
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/janus", janus.http_url)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/admin", janus.admin_url)


def test_private_module_folders_hold_only_videoroom_and_http(janus: JanusInstance) -> None:
    modules = find_modules()
    for kind, names in {"plugins": ["libjanus_videoroom.so"], "transports": ["libjanus_http.so"],
                        "events": [], "loggers": []}.items():
        folder = janus.tmpdir / kind
        assert sorted(p.name for p in folder.iterdir()) == names
        for name in names:
            assert (folder / name).is_symlink() and (folder / name).resolve() == modules[name]
    config = (janus.config_dir / "janus.jcfg").read_text()
    low, high = janus.rtp_port_range
    assert f'rtp_port_range = "{low}-{high}"' in config
    assert "stun" not in config.lower() and "turn" not in config.lower()


def test_admin_request_with_wrong_secret_is_refused(janus: JanusInstance) -> None:
    for secret in ("wrong-secret", False):
        answer = janus.admin({"janus": "list_sessions"}, secret=secret)
        assert answer["janus"] == "error" and answer["error"]["code"] == 403, answer
    answer = janus.admin({"janus": "message_plugin", "plugin": VIDEOROOM, "request": {"request": "list"}},
                         secret="wrong-secret")
    assert answer["error"]["code"] == 403
    assert janus.admin({"janus": "list_sessions"})["sessions"] == []


def test_client_session_needs_an_added_token(janus: JanusInstance) -> None:
    for token in (None, "never-added"):
        answer = janus.create_session(token)
        assert answer["janus"] == "error" and answer["error"]["code"] == 403, answer
    assert janus.list_sessions() == []

    janus.add_token("tok-a", plugins=[VIDEOROOM])
    assert {"token": "tok-a", "allowed_plugins": [VIDEOROOM]} in janus.list_tokens()
    session = janus.open_session("tok-a")
    assert janus.list_sessions() == [session.session_id]
    handle = session.attach(VIDEOROOM)
    assert janus.list_handles(session.session_id) == [handle]
    # Requests on a session carry the token too; one without it is refused.
    refused = janus.client({"janus": "keepalive"}, path=f"/{session.session_id}")
    assert refused["error"]["code"] == 403
    assert session.keepalive()["janus"] == "ack"


def test_removed_token_is_refused_at_once(janus: JanusInstance) -> None:
    janus.add_token("tok-a", plugins=[VIDEOROOM])
    session = janus.open_session("tok-a")
    janus.remove_token("tok-a")
    assert all(t["token"] != "tok-a" for t in janus.list_tokens())
    assert janus.create_session("tok-a")["error"]["code"] == 403
    # The session created before the removal is refused on its next request and long poll.
    assert session.keepalive()["error"]["code"] == 403
    status, body = session.poll_raw(timeout=10.0)
    assert (status, body) == (403, "")
    with pytest.raises(JanusError) as refused:
        janus.remove_token("tok-a")
    assert refused.value.code == 490


def test_room_with_allowed_list_refuses_other_tokens(janus: JanusInstance) -> None:
    room = 4242
    janus.add_token("tok-a", plugins=[VIDEOROOM])
    janus.add_token("tok-b", plugins=[VIDEOROOM])
    created = janus.videoroom({
        "request": "create", "room": room, "publishers": 4, "secret": "s3cret", "permanent": False,
        "description": "harness test", "allowed": ["tok-a"],
    })
    assert created == {"videoroom": "created", "room": room, "permanent": False}

    # tok-b is a valid Janus token, but not in the room's list: 433.
    refused = join_publisher(janus, "tok-b", room)
    assert refused["error_code"] == 433 and "allowed" in refused["error"], refused
    # The room checks the join body's token, not the request's: a join without it is refused too.
    refused = join_publisher(janus, "tok-a", room, token_in_body=False)
    assert refused["error_code"] == 433, refused

    joined = join_publisher(janus, "tok-a", room)
    assert joined["videoroom"] == "joined" and joined["room"] == room and joined["publishers"] == []
    participants = janus.videoroom({"request": "listparticipants", "room": room})["participants"]
    assert [p["id"] for p in participants] == [joined["id"]]

    # Adding tok-b to the room's list lets it in; listing counts both.
    allowed = janus.videoroom({"request": "allowed", "room": room, "secret": "s3cret",
                               "action": "add", "allowed": ["tok-b"]})
    assert sorted(allowed["allowed"]) == ["tok-a", "tok-b"]
    assert join_publisher(janus, "tok-b", room)["videoroom"] == "joined"
    rooms = {r["room"]: r for r in janus.videoroom({"request": "list"})["list"]}
    assert rooms[room]["num_participants"] == 2 and rooms[room]["max_publishers"] == 4


def test_videoroom_errors_through_message_plugin(janus: JanusInstance) -> None:
    room = 77
    request = {"request": "create", "room": room, "publishers": 4, "secret": "s3cret", "permanent": False}
    janus.videoroom(request)
    cases = [
        (request, 427),
        ({"request": "create", "room": "not-a-number", "permanent": False}, 430),
        ({"request": "destroy", "room": room, "secret": "wrong", "permanent": False}, 433),
        ({"request": "allowed", "room": room, "secret": "wrong", "action": "add", "allowed": ["x"]}, 433),
        ({"request": "destroy", "room": 999999, "secret": "s3cret", "permanent": False}, 426),
        ({"request": "listparticipants", "room": 999999}, 426),
    ]
    for body, code in cases:
        answer = janus.message_plugin(VIDEOROOM, body)
        assert answer["janus"] == "success", answer  # the core call succeeded ...
        assert answer["response"]["error_code"] == code, (body, answer)  # ... the plugin refused
    assert janus.videoroom({"request": "exists", "room": room})["exists"] is True
    assert janus.videoroom({"request": "destroy", "room": room, "secret": "s3cret", "permanent": False}) == {
        "videoroom": "destroyed", "room": room, "permanent": False}
    assert janus.videoroom({"request": "exists", "room": room})["exists"] is False


def test_stop_kill_and_cleanup() -> None:
    first = JanusInstance()
    second = JanusInstance()
    with first, second:
        assert first.pid != second.pid
        assert len({first.http_port, first.admin_port, second.http_port, second.admin_port}) == 4
        assert first.rtp_port_range != second.rtp_port_range
        tmpdir, pid = first.tmpdir, first.pid

        assert first.kill() == -9
        assert not first.running()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", first.admin_port), timeout=1.0).close()
        # The other instance is untouched.
        assert second.admin({"janus": "info"})["server-name"] == second.server_name
        assert second.stop() == 0
        assert not second.running()
    assert not tmpdir.exists() and not second.tmpdir.exists()
    assert pid == first.process.pid


def test_fixtures_are_listed_and_parse() -> None:
    """The recorded answers (Tests/SwitchboardSFUTests/Fixtures/janus) are valid JSON and documented."""
    readme = (FIXTURES / "README.md").read_text()
    files = sorted(FIXTURES.glob("*.json"))
    assert len(files) >= 30
    for path in files:
        answer = json.loads(path.read_text())
        assert answer["janus"] in {"server_info", "success", "error", "ack", "event"}, path.name
        assert f"`{path.name}`" in readme, path.name
