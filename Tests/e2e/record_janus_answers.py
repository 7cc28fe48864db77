#!/usr/bin/env python3
"""Record real Janus answers as fixtures for the Swift Janus adapter's tests.

Starts a private Janus with ``janus_harness.JanusInstance`` (token auth on, only
the VideoRoom plugin and the HTTP transport), sends a fixed sequence of admin and
client requests, and writes each answer's body exactly as Janus sent it to
``Tests/SwitchboardSFUTests/Fixtures/janus/NAME.json``, plus a ``README.md``
there that lists every file with the request that produced it.

Run from anywhere (stdlib only, needs the ``janus`` package)::

    python3 Tests/e2e/record_janus_answers.py [--out DIR]

Ids that Janus draws at random (session, handle and participant ids, private
ids) differ on every run; transactions are fixed per request (``rec-NAME``)
so that each answer can be matched to its request. The admin secret is random
per run and shown as ``<admin_secret>`` in the README.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from janus_harness import VIDEOROOM, ClientSession, JanusInstance, http_json, janus_version  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "Tests" / "SwitchboardSFUTests" / "Fixtures" / "janus"

ROOM = 4242
PRIVATE_ROOM = 4243
MISSING_ROOM = 999999
ROOM_SECRET = "s3cret"
TOKEN_ALLOWED = "tok-a"  # added to Janus and in the room's allowed list
TOKEN_NOT_ALLOWED = "tok-b"  # added to Janus, not in the room's allowed list
TOKEN_EXTRA = "tok-c"  # added to / removed from the room's allowed list only


class Recorder:
    """Sends requests, writes each answer verbatim, and remembers what to put in the README."""

    def __init__(self, janus: JanusInstance, out: Path) -> None:
        self.janus = janus
        self.out = out
        self.entries: list[dict[str, Any]] = []

    def _write(self, name: str, status: int, text: str, method: str, path: str, request: Any, note: str) -> dict:
        if status != 200:
            raise RuntimeError(f"{name}: HTTP {status}: {text!r}")
        answer = json.loads(text)  # every fixture must be one JSON document
        (self.out / f"{name}.json").write_text(text if text.endswith("\n") else text + "\n")
        self.entries.append({"name": name, "method": method, "path": path, "request": request, "note": note})
        return answer

    def admin(self, name: str, request: dict, note: str, *, path: str = "", path_shown: str = "",
              secret: str | bool = True) -> dict:
        """An admin API request; ``admin_secret`` is the instance's unless ``secret`` says otherwise."""
        body = dict(request)
        body.setdefault("transaction", f"rec-{name}")
        if secret is True:
            body["admin_secret"] = self.janus.admin_secret
        elif isinstance(secret, str):
            body["admin_secret"] = secret
        status, text = self.janus.admin_raw(body, path=path)
        shown = dict(body)
        if secret is True:
            shown["admin_secret"] = "<admin_secret>"
        return self._write(name, status, text, "POST", "/admin" + (path_shown or path), shown, note)

    def videoroom(self, name: str, request: dict, note: str) -> dict:
        """A VideoRoom request through admin ``message_plugin``."""
        return self.admin(name, {"janus": "message_plugin", "plugin": VIDEOROOM, "request": request}, note)

    def client(self, name: str, request: dict, note: str, *, path: str = "", path_shown: str = "") -> dict:
        """A client API request, sent as given (``token`` included or not by the caller)."""
        body = dict(request)
        body.setdefault("transaction", f"rec-{name}")
        status, text = self.janus.client_raw(body, path=path)
        return self._write(name, status, text, "POST", "/janus" + (path_shown or path), body, note)

    def event(self, name: str, session_id: int, token: str, predicate: Callable[[dict], bool], note: str,
              timeout: float = 10.0) -> dict:
        """Long-poll the session (``maxev=1``) until an event matching ``predicate``; record that body."""
        deadline = time.monotonic() + timeout
        url = f"{self.janus.http_url}/{session_id}?token={token}&maxev=1"
        while time.monotonic() < deadline:
            status, text = http_json("GET", url, timeout=max(0.1, deadline - time.monotonic()) + 1)
            if status != 200:
                raise RuntimeError(f"{name}: long poll HTTP {status}: {text!r}")
            if predicate(json.loads(text)):
                return self._write(name, status, text, "GET", "/janus/{session_id}?token=TOKEN&maxev=1", None, note)
        raise TimeoutError(f"{name}: no matching event within {timeout} s")

    def readme(self, version: str) -> str:
        lines = [
            "# Recorded Janus answers",
            "",
            f"Real answers of Debian's `janus` package {version},",
            "recorded by `Tests/e2e/record_janus_answers.py` (regenerate with",
            "`python3 Tests/e2e/record_janus_answers.py`; this file is written by it).",
            "Each `NAME.json` is the body Janus sent, byte for byte (Janus indents with 3 spaces).",
            "",
            "The instance: `general.token_auth = true`, an `admin_secret`, only `janus.plugin.videoroom`",
            "and `janus.transport.http` loaded, VideoRoom with numeric room ids and no `admin_key`.",
            "Client API on `/janus`, admin API on `/admin`, each on its own port, HTTP status 200 for",
            "every answer below (errors are in the JSON body).",
            "",
            "Ids that Janus draws at random (`session_id`, `sender`/handle ids, participant `id`,",
            "`private_id`) change on every recording. Tokens: `tok-a` is added to Janus and is in room",
            f"{ROOM}'s `allowed` list, `tok-b` is added to Janus but not allowed in the room, `tok-c` is only",
            "added to and removed from the room's list. Room secret: `s3cret`.",
            "",
            "## Where errors are",
            "",
            "- Core errors (admin and client API): `{\"janus\": \"error\", \"error\": {\"code\": N, \"reason\": \"...\"}}`.",
            "- VideoRoom errors through admin `message_plugin`: `{\"janus\": \"success\", \"response\":",
            "  {\"videoroom\": \"event\", \"error_code\": N, \"error\": \"...\"}}` (the core call succeeded).",
            "- VideoRoom errors on the client API: in `plugindata.data` of the synchronous `success`",
            "  answer, or of the asynchronous `event` (for `join`), with the same `error_code`/`error`.",
            "",
            "## Files, in recording order",
            "",
        ]
        for entry in self.entries:
            lines.append(f"### `{entry['name']}.json`")
            lines.append("")
            lines.append(entry["note"])
            lines.append("")
            lines.append(f"`{entry['method']} {entry['path']}`" + ("" if entry["request"] is not None else " (long poll)"))
            if entry["request"] is not None:
                lines.append("")
                lines.append("```json")
                lines.append(json.dumps(entry["request"], indent=2))
                lines.append("```")
            lines.append("")
        return "\n".join(lines)


def record(out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    version = janus_version()
    package = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "janus"], capture_output=True,
                             text=True, timeout=10).stdout.strip() or "unknown"
    with JanusInstance(server_name="switchboard-fixtures") as janus:
        r = Recorder(janus, out)

        # --- admin basics
        r.admin("admin_info", {"janus": "info"}, "Admin `info`: version, loaded transports and plugins, settings.")
        r.admin("admin_info_no_secret", {"janus": "info"},
                "Admin `info` WITHOUT `admin_secret`: still answered in full. `info` is not protected by the "
                "secret, so it cannot serve as a credentials check.", secret=False)
        r.admin("admin_wrong_secret", {"janus": "list_sessions"},
                "`list_sessions` with a WRONG `admin_secret`: core error 403.", secret="wrong-secret")
        r.admin("admin_list_sessions_empty", {"janus": "list_sessions"}, "`list_sessions` with no session.")

        # --- client sessions without a valid token
        r.client("client_create_no_token", {"janus": "create"},
                 "Client `create` without `token` (token auth on): core error 403.")
        r.client("client_create_wrong_token", {"janus": "create", "token": "not-a-token"},
                 "Client `create` with a token never added: core error 403, same body as without a token.")

        # --- tokens
        r.admin("admin_add_token", {"janus": "add_token", "token": TOKEN_ALLOWED, "plugins": [VIDEOROOM]},
                "`add_token` limited to the VideoRoom plugin. Adding an existing token again also answers success.")
        janus.add_token(TOKEN_NOT_ALLOWED, plugins=[VIDEOROOM])
        r.admin("admin_list_tokens", {"janus": "list_tokens"},
                "`list_tokens` after adding `tok-a` and `tok-b` (each limited to the VideoRoom plugin).")

        # --- a session with a valid token
        created = r.client("client_create_ok", {"janus": "create", "token": TOKEN_ALLOWED},
                           "Client `create` with an added token: `data.id` is the session id.")
        session_a = created["data"]["id"]
        r.admin("admin_list_sessions", {"janus": "list_sessions"}, "`list_sessions` with one session (ids only).")

        # --- rooms
        r.videoroom("videoroom_create_ok", {
            "request": "create", "room": ROOM, "description": f"switchboard call {ROOM}",
            "publishers": 4, "secret": ROOM_SECRET, "permanent": False, "is_private": False,
            "allowed": [TOKEN_ALLOWED],
        }, "VideoRoom `create` through admin `message_plugin` (no session, no token needed). Giving "
           "`allowed` turns the room's token check on: `join` must carry a `token` in that list.")
        r.videoroom("videoroom_create_exists", {
            "request": "create", "room": ROOM, "description": f"switchboard call {ROOM}",
            "publishers": 4, "secret": ROOM_SECRET, "permanent": False, "is_private": False,
            "allowed": [TOKEN_ALLOWED],
        }, "The same `create` again: VideoRoom error 427 inside `response` (core answer is `success`).")
        r.videoroom("videoroom_create_string_id", {
            "request": "create", "room": "call-4242", "publishers": 4, "secret": ROOM_SECRET, "permanent": False,
        }, "`create` with a string room id while `string_ids = false`: error 430.")
        r.videoroom("videoroom_create_private_ok", {
            "request": "create", "room": PRIVATE_ROOM, "description": f"switchboard call {PRIVATE_ROOM}",
            "publishers": 4, "secret": ROOM_SECRET, "permanent": False, "is_private": True,
            "allowed": [TOKEN_ALLOWED],
        }, "`create` with `is_private: true`: such a room is left out of `list` (see `videoroom_list.json`) "
           "unless the plugin has an `admin_key` and the `list` request carries it.")
        r.videoroom("videoroom_exists_true", {"request": "exists", "room": ROOM}, "`exists` for an existing room.")
        r.videoroom("videoroom_exists_false", {"request": "exists", "room": MISSING_ROOM},
                    "`exists` for a missing room: success with `exists: false`, not an error.")

        # --- the room's allowed list
        r.videoroom("videoroom_allowed_add", {
            "request": "allowed", "room": ROOM, "secret": ROOM_SECRET, "action": "add", "allowed": [TOKEN_EXTRA],
        }, "`allowed` with `action: add`: answers the room's whole list after the change.")
        r.videoroom("videoroom_allowed_remove", {
            "request": "allowed", "room": ROOM, "secret": ROOM_SECRET, "action": "remove", "allowed": [TOKEN_EXTRA],
        }, "`allowed` with `action: remove`.")
        r.videoroom("videoroom_allowed_wrong_secret", {
            "request": "allowed", "room": ROOM, "secret": "wrong", "action": "add", "allowed": [TOKEN_EXTRA],
        }, "`allowed` with a wrong room secret: error 433.")
        r.videoroom("videoroom_allowed_no_such_room", {
            "request": "allowed", "room": MISSING_ROOM, "secret": ROOM_SECRET, "action": "add", "allowed": [TOKEN_EXTRA],
        }, "`allowed` for a missing room: error 426.")

        # --- a publisher whose token is not in the room's allowed list
        created_b = janus.create_session(TOKEN_NOT_ALLOWED)
        session_b = created_b["data"]["id"]
        attached_b = r.client("client_attach_ok", {"janus": "attach", "plugin": VIDEOROOM, "token": TOKEN_NOT_ALLOWED},
                              "Client `attach` to the VideoRoom plugin: `data.id` is the handle id.",
                              path=f"/{session_b}", path_shown="/{session_id}")
        handle_b = attached_b["data"]["id"]
        r.client("client_join_ack", {
            "janus": "message", "token": TOKEN_NOT_ALLOWED,
            "body": {"request": "join", "ptype": "publisher", "room": ROOM, "display": "bob", "token": TOKEN_NOT_ALLOWED},
        }, "Client `join` as publisher: `join` is asynchronous, the POST only answers `ack`; the result comes "
           "as an event on the long poll.", path=f"/{session_b}/{handle_b}", path_shown="/{session_id}/{handle_id}")
        r.event("client_join_not_allowed_event", session_b, TOKEN_NOT_ALLOWED,
                lambda e: e.get("janus") == "event" and e.get("sender") == handle_b,
                "The event answering the `join` above (`tok-b` is a valid Janus token but not in the room's "
                "`allowed` list): VideoRoom error 433 in `plugindata.data`. A `join` without `body.token` "
                "gets the same error: the room checks `body.token`, not the request's top-level `token`.")

        # --- a publisher whose token is allowed
        session = ClientSession(janus, session_a, TOKEN_ALLOWED)
        handle_a = session.attach(VIDEOROOM)
        joined_ack = session.message(handle_a, {
            "request": "join", "ptype": "publisher", "room": ROOM, "display": "alice", "token": TOKEN_ALLOWED,
        }, transaction="rec-client_join_joined_event")
        assert joined_ack.get("janus") == "ack", joined_ack
        join_request = {"janus": "message", "token": TOKEN_ALLOWED, "transaction": joined_ack["transaction"],
                        "body": {"request": "join", "ptype": "publisher", "room": ROOM, "display": "alice",
                                 "token": TOKEN_ALLOWED}}
        r.event("client_join_joined_event", session.session_id, TOKEN_ALLOWED,
                lambda e: e.get("janus") == "event" and e.get("sender") == handle_a,
                "The event answering a `join` as publisher with `tok-a` (in the room's `allowed` list), sent as "
                f"`POST /janus/{{session_id}}/{{handle_id}}` with `{json.dumps(join_request)}`: "
                "`videoroom: joined` with the participant `id` and the room's current `publishers`.")

        # --- load: handles and the handle of a joined publisher
        r.admin("admin_list_handles", {"janus": "list_handles"},
                "`list_handles` of the session holding the joined publisher.",
                path=f"/{session.session_id}", path_shown="/{session_id}")
        r.admin("admin_handle_info", {"janus": "handle_info"},
                "`handle_info` of the joined publisher's handle: `plugin_specific` says publisher/subscriber and "
                "room; no PeerConnection was negotiated (no media on loopback), so the WebRTC parts are empty.",
                path=f"/{session.session_id}/{handle_a}", path_shown="/{session_id}/{handle_id}")
        r.videoroom("videoroom_list", {"request": "list"},
                    f"`list`: room {ROOM} with `num_participants` (the joined publisher); the private room "
                    f"{PRIVATE_ROOM} is not listed.")
        r.videoroom("videoroom_listparticipants", {"request": "listparticipants", "room": ROOM},
                    "`listparticipants`: joined publishers (subscribers are not listed); `publisher` is true only "
                    "once the participant actually sends media, so it is false here.")
        r.videoroom("videoroom_listparticipants_no_such_room", {"request": "listparticipants", "room": MISSING_ROOM},
                    "`listparticipants` for a missing room: error 426.")

        # --- revoking a token
        r.admin("admin_remove_token", {"janus": "remove_token", "token": TOKEN_NOT_ALLOWED}, "`remove_token`: ok.")
        r.client("client_request_after_remove_token", {"janus": "keepalive", "token": TOKEN_NOT_ALLOWED},
                 "A `keepalive` on the existing session of the removed token `tok-b`: refused at once with 403 "
                 "(the long-poll GET of that session then answers HTTP 403 with an EMPTY body, so no file).",
                 path=f"/{session_b}", path_shown="/{session_id}")
        r.admin("admin_remove_token_unknown", {"janus": "remove_token", "token": "never-added"},
                "`remove_token` of a token that is not there: core error 490 (a generic code, not 'not found').")

        # --- evicting one participant (a removed token does not take anyone out of a room)
        carol = janus.open_session(TOKEN_ALLOWED)
        handle_c = carol.attach(VIDEOROOM)
        carol.message(handle_c, {"request": "join", "ptype": "publisher", "room": ROOM, "display": "carol",
                                 "token": TOKEN_ALLOWED})
        carol_id = carol.wait_plugin_event(handle_c)["plugindata"]["data"]["id"]
        r.videoroom("videoroom_kick", {"request": "kick", "room": ROOM, "secret": ROOM_SECRET, "id": carol_id},
                    "`kick` of a joined participant by its `id` (from `joined` or `listparticipants`), with the "
                    "room secret: ok. The participant's handle stays attached; it is out of the room.")
        r.event("client_kicked_event", carol.session_id, TOKEN_ALLOWED,
                lambda e: e.get("janus") == "event" and e.get("sender") == handle_c
                and "kicked" in json.dumps(e.get("plugindata", {}).get("data", {})),
                "What the kicked participant's long poll delivers.")
        r.videoroom("videoroom_kick_no_such_participant",
                    {"request": "kick", "room": ROOM, "secret": ROOM_SECRET, "id": 123456789},
                    "`kick` of an id that is not in the room.")

        # --- destroying the room
        r.videoroom("videoroom_destroy_wrong_secret", {
            "request": "destroy", "room": ROOM, "secret": "wrong", "permanent": False,
        }, "`destroy` with a wrong room secret: error 433.")
        r.videoroom("videoroom_destroy_ok", {
            "request": "destroy", "room": ROOM, "secret": ROOM_SECRET, "permanent": False,
        }, "`destroy` with the room's secret: ok. Participants still in the room get a `destroyed` event "
           "(next file).")
        r.event("client_room_destroyed_event", session.session_id, TOKEN_ALLOWED,
                lambda e: e.get("janus") == "event" and e.get("sender") == handle_a
                and e["plugindata"]["data"].get("videoroom") == "destroyed",
                f"What the joined publisher's long poll delivers after room {ROOM} is destroyed.")
        r.videoroom("videoroom_destroy_no_such_room", {
            "request": "destroy", "room": ROOM, "secret": ROOM_SECRET, "permanent": False,
        }, "`destroy` of a room that no longer exists: error 426.")
        r.admin("admin_message_plugin_wrong_secret",
                {"janus": "message_plugin", "plugin": VIDEOROOM, "request": {"request": "list"}},
                "`message_plugin` with a wrong `admin_secret`: core error 403.", secret="wrong-secret")
        r.admin("admin_message_plugin_unknown_plugin",
                {"janus": "message_plugin", "plugin": "janus.plugin.echotest", "request": {"request": "list"}},
                "`message_plugin` to a plugin that is not loaded: core error 460.")

        status = janus.stop()
        if status != 0:
            raise RuntimeError(f"janus exited with {status} on SIGTERM:\n{janus.log_text()[-2000:]}")
    (out / "README.md").write_text(r.readme(f"{package} (`janus --help`: version {version})"))
    return [e["name"] for e in r.entries]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    args = parser.parse_args()
    names = record(args.out)
    print(f"wrote {len(names)} answers and README.md to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
