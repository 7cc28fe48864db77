"""docs/openapi.yaml against the running daemon's admin API.

One daemon (module scope) is started with an admin token on kernel-chosen loopback ports, and:

- schemathesis (property-based, bounded) calls every operation but ``POST /v1/drain`` with
  valid and invalid inputs, with the token, and checks status codes, content types, headers
  and bodies against the document, that invalid input is rejected, and that the token is
  enforced;
- explicit tests call every operation with no token and a wrong token, with an oversized
  body, with every other method, and after real PeerJS peers connect, validating status and
  body against the document each time;
- the routes in the document must equal the routes registered in Sources/SwitchboardAdmin and
  the routes the server answers: any other path is 404.

``POST /v1/drain`` turns readiness off for good, so it runs on a daemon of its own. The location
table (tag ``placement``: ``/v1/sfus…`` and ``/v1/placement/explain``) is shared mutable state, so
schemathesis exercises those operations on another daemon, seeded with the SFUs the document's
examples name, and the explicit tests that count SFUs or candidates start their own.
"""

from __future__ import annotations

import asyncio
import copy
import http.client
import base64
import json
import re
import secrets
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import schemathesis
import websockets
import yaml
from conftest import (
    READY_TIMEOUT_S,
    REPO_ROOT,
    DaemonOutput,
    _daemon_binary,
    _stop,
    daemon_env,
)
from hypothesis import HealthCheck, settings
from openapi_schema_validator import OAS30Validator, oas30_format_checker
from openapi_spec_validator import validate as validate_spec
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

SPEC_PATH = REPO_ROOT / "docs" / "openapi.yaml"
ADMIN_SOURCES = REPO_ROOT / "Sources" / "SwitchboardAdmin"
ADMIN_PATTERN = re.compile(r"admin=http://127\.0\.0\.1:([0-9]+)")
MAX_BODY = 4096  # transport.max_request_body_bytes for these daemons
REQUEST_TIMEOUT_S = 10.0
METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
SAMPLE_PATH_PARAMETERS = {
    "id": "nobody", "type": "default", "session": "nobody", "name": "nobody", "message": "msg_nobody", "user": "nobody",
    "device": "0" * 24,
}
ONE_WAY = {("POST", "/v1/drain")}  # turns readiness off for good: only on a daemon of its own

SPEC = yaml.safe_load(SPEC_PATH.read_text())


# --- the daemon --------------------------------------------------------------------------


@dataclass
class Admin:
    """A running daemon with an admin token."""

    process: subprocess.Popen
    output: DaemonOutput
    client_port: int
    admin_port: int
    token: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def call(
        self, method: str, path: str, *, token: str | None = "", body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """One request on a fresh connection. ``token=""`` sends the right token, ``None`` none."""
        sent = dict(headers or {})
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token or self.token}")
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=REQUEST_TIMEOUT_S)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            connection.close()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


def _start(tmp: Path, extra_env: dict[str, str] | None = None) -> Admin:
    token = secrets.token_urlsafe(24)
    env = {
        **daemon_env(admin_auth=None),
        "SWITCHBOARD_ADMIN_TOKEN": token,
        "SWITCHBOARD_AUTH_API_SECRET": secrets.token_urlsafe(48),
        "SWITCHBOARD_TRANSPORT_MAX_REQUEST_BODY_BYTES": str(MAX_BODY),
        **(extra_env or {}),
    }
    process = subprocess.Popen(
        [str(_daemon_binary()), "serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0",
         "--state-dir", str(tmp / "state")],
        cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, errors="replace", bufsize=1,
    )
    output = DaemonOutput()
    threading.Thread(target=output.pump, args=(process.stdout,), name="switchboard-output", daemon=True).start()
    output.ready.wait(timeout=READY_TIMEOUT_S)
    admin = ADMIN_PATTERN.search(output.text())
    if output.port is None or admin is None:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=READY_TIMEOUT_S)
        output.finished.wait(timeout=READY_TIMEOUT_S)
        pytest.fail(f"switchboard did not become ready with an admin URL. Output:\n{output.text()}", pytrace=False)
    return Admin(process, output, output.port, int(admin.group(1)), token)


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory):
    daemon = _start(tmp_path_factory.mktemp("admin"))
    try:
        yield daemon
    finally:
        _stop(daemon.process, daemon.output)


@pytest.fixture
def fresh_admin(tmp_path: Path):
    daemon = _start(tmp_path)
    try:
        yield daemon
    finally:
        _stop(daemon.process, daemon.output)


# --- the document ------------------------------------------------------------------------


def _resolve(node, root=SPEC):
    """``node`` with every local ``$ref`` replaced by its target (the document has no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = root
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _resolve(target, root)
        return {key: _resolve(value, root) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value, root) for value in node]
    return node


RESOLVED = _resolve(SPEC)
OPERATIONS = sorted(
    (method.upper(), path)
    for path, item in SPEC["paths"].items()
    for method in item
    if method in {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
)
ADMIN_TOKEN_ONLY = [{"bearerAuth": []}]
SECURITY = {(m, p): RESOLVED["paths"][p][m.lower()].get("security", SPEC["security"]) for m, p in OPERATIONS}
# Operations the router guards with the admin token. The heartbeat also takes the SFU's own secret and
# checks it in its handler, after the body and the SFU id: it has tests of its own.
SECURED = [operation for operation, security in SECURITY.items() if security == ADMIN_TOKEN_ONLY]
HEARTBEAT = ("POST", "/v1/sfus/{id}/heartbeat")


def _concrete(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: quote(SAMPLE_PATH_PARAMETERS[m.group(1)], safe=""), path)


def _validate(schema: dict, instance) -> None:
    OAS30Validator(schema, format_checker=oas30_format_checker).validate(instance)


def assert_conforms(method: str, path: str, reply: Reply) -> None:
    """The reply's status is documented for the operation, and its headers and body match."""
    operation = RESOLVED["paths"][path][("GET" if method == "HEAD" else method).lower()]
    documented = operation["responses"]
    assert str(reply.status) in documented, (
        f"{method} {path}: status {reply.status} is not documented (has {sorted(documented)}); body {reply.body!r}"
    )
    response = documented[str(reply.status)]
    for name, header in response.get("headers", {}).items():
        assert name.lower() in reply.headers, f"{method} {path} {reply.status}: no {name} header"
        _validate(header["schema"], reply.headers[name.lower()])
    content = response.get("content", {})
    if method == "HEAD":
        assert reply.body == b""
        return
    media_type = reply.headers.get("content-type", "").split(";")[0].strip()
    assert media_type in content, f"{method} {path} {reply.status}: content type {media_type!r} not in {list(content)}"
    if media_type == "application/json":
        _validate(content[media_type]["schema"], reply.json())
    else:
        _validate(content[media_type]["schema"], reply.body.decode())


def test_the_document_is_valid_openapi() -> None:
    validate_spec(copy.deepcopy(SPEC))
    assert SPEC["openapi"].startswith("3.")


def test_every_example_matches_its_schema() -> None:
    count = 0
    for item in RESOLVED["paths"].values():
        for operation in item.values():
            bodies = [operation.get("requestBody", {})] + list(operation["responses"].values())
            for body in bodies:
                for media in body.get("content", {}).values():
                    examples = [media["example"]] if "example" in media else []
                    examples += [e["value"] for e in media.get("examples", {}).values()]
                    for example in examples:
                        _validate(media["schema"], example)
                        count += 1
            for parameter in operation.get("parameters", []):
                if "example" in parameter:
                    _validate(parameter["schema"], parameter["example"])
    assert count >= len(OPERATIONS)


# --- drift: the routes in the document are the routes of the server ----------------------


def _registered_routes() -> set[tuple[str, str]]:
    """Every ``router.add("METHOD", "/path", …)`` in the admin sources, with ``:x`` as ``{x}``."""
    pattern = re.compile(r'\.add\(\s*"([A-Z]+)"\s*,\s*"([^"]+)"')
    routes = set()
    for source in ADMIN_SOURCES.rglob("*.swift"):
        for method, path in pattern.findall(source.read_text()):
            routes.add((method, re.sub(r":(\w+)", r"{\1}", path)))
    return routes


def test_the_document_lists_exactly_the_registered_routes() -> None:
    registered = _registered_routes()
    assert registered, f"no router.add(...) found under {ADMIN_SOURCES}"
    documented = set(OPERATIONS)
    assert documented == registered, (
        f"in the document only: {sorted(documented - registered)}; "
        f"registered only: {sorted(registered - documented)}"
    )


@pytest.mark.parametrize("path", sorted(SPEC["paths"]))
def test_each_path_answers_exactly_its_documented_methods(admin: Admin, path: str) -> None:
    documented = {m.upper() for m in SPEC["paths"][path]}
    for method in METHODS:
        if (method, path) in ONE_WAY:
            continue  # covered by test_drain_turns_readiness_off_and_is_audited
        reply = admin.call(method, _concrete(path))
        allowed = method in documented or (method == "HEAD" and "GET" in documented)
        if allowed:
            assert reply.status not in (405,) and not (
                reply.status == 404 and reply.body and reply.json()["error"]["message"].startswith("no route")
            ), f"{method} {path}: {reply.status} {reply.body!r}"
            assert_conforms(method, path, reply)
        else:
            assert reply.status == 405, f"{method} {path}: {reply.status} {reply.body!r}"
            if method != "HEAD":
                assert reply.json()["error"]["code"] == "method_not_allowed"
                _validate(RESOLVED["components"]["responses"]["MethodNotAllowed"]["content"]["application/json"]["schema"], reply.json())
            allow = {m.strip() for m in reply.headers.get("allow", "").split(",")}
            expected = documented | ({"HEAD"} if "GET" in documented else set())
            assert allow == expected, f"{method} {path}: Allow {allow}, documented {documented}"


UNKNOWN_PATHS = [
    "/", "/v1", "/v2/stats", "/v1/stat", "/v1/statsx", "/v1/Stats", "/healthz/x", "/readyz/x",
    "/metrics/x", "/v1/peers/a/b", "/v1/log-level/x", "/v1/drain/x", "/v1/audit/1", "/admin",
    "/peerjs", "/peerjs/id", "/openapi.yaml", "/v1/connection", "/v1/connections/x", "/v1/call",
    "/v1/calls/default", "/v1/calls/default/x/y", "/v1/calls/default/x/sessions", "/v1/calls/default/x/end/y",
    "/v1/calls/default/x/sessions/s/y",
    "/v1/sfu", "/v1/SFUs", "/v1/sfus/a/b", "/v1/sfus/a/drain/x", "/v1/sfus/a/heartbeat/x",
    "/v1/placement", "/v1/placement/explain/x", "/v1/placement/sfus",
]


@pytest.mark.parametrize("path", UNKNOWN_PATHS)
def test_paths_outside_the_document_are_404(admin: Admin, path: str) -> None:
    for method in ("GET", "POST", "PUT", "DELETE"):
        for token in ("", None):
            reply = admin.call(method, path, token=token)
            assert reply.status == 404, f"{method} {path} (token={token is not None}): {reply.status} {reply.body!r}"
            assert reply.json()["error"]["code"] == "not_found"
            _validate(RESOLVED["components"]["responses"]["NotFound"]["content"]["application/json"]["schema"], reply.json())


# --- authentication, size cap ------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), SECURED, ids=[f"{m} {p}" for m, p in SECURED])
def test_secured_operations_refuse_a_missing_or_wrong_token(admin: Admin, method: str, path: str) -> None:
    body = b'{"level":"info"}' if method == "PUT" else None
    for case, headers in {
        "none": {},
        "wrong": {"Authorization": "Bearer " + "x" * len(admin.token)},
        "prefix": {"Authorization": f"Bearer {admin.token[:-1]}"},
        "lower-case scheme": {"Authorization": f"bearer {admin.token}"},
        "basic": {"Authorization": f"Basic {admin.token}"},
        "empty": {"Authorization": "Bearer "},
    }.items():
        reply = admin.call(method, _concrete(path), token=None, body=body, headers=headers)
        assert reply.status == 401, f"{case}: {reply.status} {reply.body!r}"
        assert reply.json()["error"]["code"] == "unauthenticated"
        assert reply.headers.get("www-authenticate") == "Bearer"
        assert_conforms(method, path, reply)


def test_every_operation_has_a_known_security_requirement() -> None:
    """Admin token, nothing (/healthz), or the heartbeat's SFU secret or admin token; nothing else."""
    public = {operation for operation, security in SECURITY.items() if security == []}
    other = {operation: security for operation, security in SECURITY.items() if security not in ([], ADMIN_TOKEN_ONLY)}
    assert public == {("GET", "/healthz")}
    assert other == {HEARTBEAT: [{"sfuSecret": []}, {"bearerAuth": []}]}


def test_healthz_needs_no_token(admin: Admin) -> None:
    for token in (None, "wrong"):
        reply = admin.call("GET", "/healthz", token=token)
        assert reply.status == 200
        assert_conforms("GET", "/healthz", reply)
        assert reply.json() == {"status": "ok"}


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_oversized_bodies_are_413_before_auth(admin: Admin, method: str, path: str) -> None:
    body = b'{"level":"info","pad":"' + b"x" * MAX_BODY + b'"}'
    for token in ("", None):
        reply = admin.call(method, _concrete(path), token=token, body=body)
        assert reply.status == 413, f"{reply.status} {reply.body!r}"
        assert reply.json()["error"]["code"] == "payload_too_large"
        assert_conforms(method, path, reply)


# --- each operation, valid and invalid input ---------------------------------------------


def test_health_readiness_metrics_stats(admin: Admin) -> None:
    for path in ("/healthz", "/readyz", "/metrics", "/v1/stats"):
        reply = admin.call("GET", path)
        assert reply.status == 200, (path, reply)
        assert_conforms("GET", path, reply)
    ready = admin.call("GET", "/readyz").json()
    assert ready == {"ready": True, "checks": {"store_writable": True, "listeners_up": True, "threads_turning": True, "draining": False}}
    metrics = admin.call("GET", "/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert re.search(r"^# TYPE switchboard_\w+ (counter|gauge|histogram)$", metrics.body.decode(), re.MULTILINE)


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=1001", "limit=-1", "limit=abc", "limit=", "limit=1.5", "limit"]
)
@pytest.mark.parametrize("path", ["/v1/peers", "/v1/audit", "/v1/sfus"])
def test_bad_limits_are_400(admin: Admin, path: str, query: str) -> None:
    reply = admin.call("GET", f"{path}?{query}")
    assert reply.status == 400, reply
    assert reply.json()["error"]["code"] == "invalid_request"
    assert_conforms("GET", path, reply)


@pytest.mark.parametrize("cursor", ["abc", "1.0", "", "99999999999999999999"])
def test_bad_audit_cursors_are_400(admin: Admin, cursor: str) -> None:
    reply = admin.call("GET", f"/v1/audit?cursor={cursor}")
    assert reply.status == 400, reply
    assert_conforms("GET", "/v1/audit", reply)


@pytest.mark.parametrize(
    "body",
    [b"", b"nope", b"{}", b"[]", b'["info"]', b'{"level":5}', b'{"level":null}', b'{"level":"INFO"}',
     b'{"level":"loud"}', b'{"lvl":"info"}'],
)
def test_bad_log_level_bodies_are_400(admin: Admin, body: bytes) -> None:
    reply = admin.call("PUT", "/v1/log-level", body=body)
    assert reply.status == 400, reply
    assert reply.json()["error"]["code"] == "invalid_request"
    assert_conforms("PUT", "/v1/log-level", reply)


def test_log_level_round_trip_is_audited(admin: Admin) -> None:
    before = admin.call("GET", "/v1/log-level")
    assert_conforms("GET", "/v1/log-level", before)
    for level in ("debug", before.json()["level"]):
        reply = admin.call("PUT", "/v1/log-level", body=json.dumps({"level": level, "ignored": 1}).encode())
        assert reply.status == 200, reply
        assert_conforms("PUT", "/v1/log-level", reply)
        assert reply.json()["level"] == level
        assert admin.call("GET", "/v1/log-level").json() == {"level": level}
        latest = admin.call("GET", "/v1/audit?limit=1")
        assert_conforms("GET", "/v1/audit", latest)
        entry = latest.json()["entries"][0]
        assert (entry["id"], entry["action"], entry["target"]) == (reply.json()["audit_id"], "log_level.set", level)


def test_peers_pagination_and_disconnect(admin: Admin) -> None:
    ids = ["p-c", "p-a", "p-b"]

    async def scenario() -> None:
        sockets = []
        try:
            for peer in ids:
                url = f"ws://127.0.0.1:{admin.client_port}/peerjs?key=peerjs&id={peer}&token=t"
                ws = await websockets.connect(url, open_timeout=REQUEST_TIMEOUT_S)
                sockets.append(ws)
                assert json.loads(await asyncio.wait_for(ws.recv(), REQUEST_TIMEOUT_S)) == {"type": "OPEN"}
            # Walk the pages with limit=2: sorted ids, next_cursor chaining, null at the end.
            seen, cursor = [], None
            for _ in range(5):
                query = "limit=2" + (f"&cursor={quote(cursor)}" if cursor else "")
                reply = admin.call("GET", f"/v1/peers?{query}")
                assert reply.status == 200
                assert_conforms("GET", "/v1/peers", reply)
                page = reply.json()
                seen += [peer["id"] for peer in page["peers"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert seen == sorted(ids)

            reply = admin.call("DELETE", "/v1/peers/p-b")
            assert reply.status == 200, reply
            assert_conforms("DELETE", "/v1/peers/{id}", reply)
            assert reply.json()["disconnected"] == "p-b"
            audit = admin.call("GET", "/v1/audit?limit=1").json()["entries"][0]
            assert (audit["id"], audit["action"], audit["target"]) == (reply.json()["audit_id"], "peer.disconnect", "p-b")

            again = admin.call("DELETE", "/v1/peers/p-b")
            assert again.status == 404
            assert_conforms("DELETE", "/v1/peers/{id}", again)
            stats = admin.call("GET", "/v1/stats")
            assert_conforms("GET", "/v1/stats", stats)
            assert stats.json()["peerjs"]["peers"] == 2
        finally:
            for ws in sockets:
                await ws.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("raw_id", "status"),
    [("nobody", 404), ("x" * 256, 404), ("x" * 257, 400), ("%C3%A9" * 129, 400), ("", 405)],
    ids=["unknown", "256-bytes", "257-bytes", "258-utf8-bytes", "empty"],
)
def test_disconnect_errors(admin: Admin, raw_id: str, status: int) -> None:
    reply = admin.call("DELETE", f"/v1/peers/{raw_id}")
    assert reply.status == status, reply
    assert_conforms("DELETE", "/v1/peers/{id}", reply)


def test_audit_pagination(admin: Admin) -> None:
    for level in ("info", "info", "info"):
        assert admin.call("PUT", "/v1/log-level", body=json.dumps({"level": level}).encode()).status == 200
    everything = admin.call("GET", "/v1/audit?limit=1000").json()
    assert everything["next_cursor"] is None
    ids = [entry["id"] for entry in everything["entries"]]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 3
    walked, cursor = [], None
    for _ in range(len(ids) + 1):
        reply = admin.call("GET", "/v1/audit?limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert_conforms("GET", "/v1/audit", reply)
        page = reply.json()
        walked += [entry["id"] for entry in page["entries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == ids


# --- calls ------------------------------------------------------------------------------


def test_call_routes_on_an_empty_store(admin: Admin) -> None:
    """No call was ever created: empty lists, and 404s with the call codes."""
    for query in ("", "?state=live&type=default&member=alice&created_from=0&created_before=253402300799999&limit=500",
                  "?cursor="):
        reply = admin.call("GET", f"/v1/calls{query}")
        assert reply.status == 200, (query, reply)
        assert_conforms("GET", "/v1/calls", reply)
        assert reply.json() == {"calls": [], "next_cursor": None}
    connections = admin.call("GET", "/v1/connections")
    assert connections.status == 200, connections
    assert_conforms("GET", "/v1/connections", connections)
    for method, path, concrete, code in [
        ("GET", "/v1/calls/{type}/{id}", "/v1/calls/default/nobody?events=0", "call_not_found"),
        ("POST", "/v1/calls/{type}/{id}/end", "/v1/calls/default/nobody/end", "call_not_found"),
        ("DELETE", "/v1/calls/{type}/{id}/sessions/{session}", "/v1/calls/default/nobody/sessions/s-1", "session_not_found"),
    ]:
        reply = admin.call(method, concrete)
        assert reply.status == 404, (concrete, reply)
        assert reply.json()["error"]["code"] == code
        assert_conforms(method, path, reply)
    assert not [e for e in admin.call("GET", "/v1/audit?limit=1000").json()["entries"] if e["action"].startswith("call.")]


@pytest.mark.parametrize(
    "query",
    ["limit=0", "limit=1001", "limit=", "state=open", "state=", "type=a.b", "type=", "member=", "created_from=-1",
     "created_before=1.5", "created_from=253402300800000", "cursor=nope"],
)
def test_bad_call_history_queries_are_400(admin: Admin, query: str) -> None:
    reply = admin.call("GET", f"/v1/calls?{query}")
    assert reply.status == 400, reply
    assert reply.json()["error"]["code"] == "invalid_request"
    assert query.split("=")[0] in reply.json()["error"]["message"]
    assert_conforms("GET", "/v1/calls", reply)


@pytest.mark.parametrize(
    ("method", "path", "concrete"),
    [("GET", "/v1/calls/{type}/{id}", "/v1/calls/de.fault/x"), ("GET", "/v1/calls/{type}/{id}", "/v1/calls/default/x?events=1001"),
     ("POST", "/v1/calls/{type}/{id}/end", "/v1/calls/default/" + "x" * 65 + "/end"),
     ("DELETE", "/v1/calls/{type}/{id}/sessions/{session}", "/v1/calls/default/x/sessions/a%20b")],
    ids=["bad type", "events", "long id", "bad session"],
)
def test_bad_call_addresses_are_400(admin: Admin, method: str, path: str, concrete: str) -> None:
    reply = admin.call(method, concrete)
    assert reply.status == 400, reply
    assert_conforms(method, path, reply)


# --- SFUs and placement ------------------------------------------------------------------

STALE_AFTER_MS = 3_600_000  # placement.stale_after_ms for placement_admin: no SFU turns `down` mid-test
SFU_VIEW_KEYS = set(RESOLVED["components"]["schemas"]["SFU"]["properties"])
#: What a heartbeat SFU's view leaves out: the keys of polled (kind janus) SFUs.
POLLED_ONLY_KEYS = {"janus", "last_poll_at", "last_poll_outcome"}
CANDIDATE_SCHEMA = RESOLVED["components"]["schemas"]["PlacementCandidate"]


@pytest.fixture
def placement_admin(tmp_path: Path):
    """A daemon of its own, so the location table holds exactly what the test put in it."""
    daemon = _start(tmp_path, {"SWITCHBOARD_PLACEMENT_STALE_AFTER_MS": str(STALE_AFTER_MS)})
    try:
        yield daemon
    finally:
        _stop(daemon.process, daemon.output)


def _unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def _sfu(sfu_id: str, **fields) -> dict:
    """A valid ``NewSFU`` body, located by region ``fra`` unless ``fields`` say otherwise."""
    return {"id": sfu_id, "url": f"wss://{sfu_id}.example.net/ws", "region": "fra", "capacity": 100, **fields}


def _json(value) -> bytes:
    return json.dumps(value).encode()


def _post_sfu(admin: Admin, body: dict) -> dict:
    reply = admin.call("POST", "/v1/sfus", body=_json(body))
    assert reply.status == 201, reply
    assert_conforms("POST", "/v1/sfus", reply)
    return reply.json()


def _heartbeat(admin: Admin, sfu_id: str, load: int, token: str | None = "") -> Reply:
    reply = admin.call("POST", f"/v1/sfus/{sfu_id}/heartbeat", token=token, body=_json({"load": load}))
    assert_conforms(*HEARTBEAT, reply)
    return reply


def _latest_audit(admin: Admin) -> dict:
    reply = admin.call("GET", "/v1/audit?limit=1")
    assert_conforms("GET", "/v1/audit", reply)
    return reply.json()["entries"][0]


def _delete_sfu(admin: Admin, sfu_id: str) -> None:
    assert admin.call("DELETE", f"/v1/sfus/{sfu_id}").status == 200


def test_sfu_post_get_put_delete_round_trip(admin: Admin) -> None:
    sfu_id, secret = _unique("round-trip"), secrets.token_urlsafe(18)
    created = _post_sfu(admin, _sfu(sfu_id, region="FRA", capacity=500, secret=secret, unknown_key=1))
    assert set(created) == SFU_VIEW_KEYS - {"last_heartbeat_at"} - POLLED_ONLY_KEYS
    located = {key: created[key] for key in ("latitude", "longitude")}
    assert abs(located["latitude"] - 50.11) < 0.1 and abs(located["longitude"] - 8.68) < 0.1, located  # fra
    assert created == {
        "id": sfu_id, "url": f"wss://{sfu_id}.example.net/ws", "region": "fra", "capacity": 500, "weight": 1,
        "state": "active", "load": 0, "pending": 0, "fresh": False, "calls": 0, "has_secret": True, **located,
        "kind": "heartbeat", "load_source": "heartbeat",
    }
    audit = _latest_audit(admin)
    assert (audit["action"], audit["target"]) == ("sfu.create", sfu_id)

    got = admin.call("GET", f"/v1/sfus/{sfu_id}")
    assert got.status == 200, got
    assert_conforms("GET", "/v1/sfus/{id}", got)
    assert secret.encode() not in got.body
    assert got.json()["has_secret"] is True and got.json()["region"] == "fra" and got.json()["capacity"] == 500

    replacement = {"id": sfu_id, "url": "ws://10.0.0.7:7880/", "latitude": -33.8688, "longitude": 151.2093,
                   "capacity": 800, "weight": 2.5}
    put = admin.call("PUT", f"/v1/sfus/{sfu_id}", body=_json(replacement))
    assert put.status == 200, put
    assert_conforms("PUT", "/v1/sfus/{id}", put)
    assert put.json() == {
        "id": sfu_id, "url": "ws://10.0.0.7:7880/", "latitude": -33.8688, "longitude": 151.2093, "capacity": 800,
        "weight": 2.5, "state": "active", "load": 0, "pending": 0, "fresh": False, "calls": 0, "has_secret": False,
        "kind": "heartbeat", "load_source": "heartbeat",
    }, "PUT replaces the definition whole: region and secret are gone"
    audit = _latest_audit(admin)
    assert (audit["action"], audit["target"]) == ("sfu.replace", sfu_id)
    again = admin.call("GET", f"/v1/sfus/{sfu_id}")
    assert again.status == 200 and again.json() == put.json()
    listed = admin.call("GET", "/v1/sfus?limit=1000")
    assert_conforms("GET", "/v1/sfus", listed)
    assert put.json() in listed.json()["sfus"]

    deleted = admin.call("DELETE", f"/v1/sfus/{sfu_id}")
    assert deleted.status == 200, deleted
    assert_conforms("DELETE", "/v1/sfus/{id}", deleted)
    body = deleted.json()
    assert (body["deleted"], body["reassigned"]) == (sfu_id, [])
    audit = _latest_audit(admin)
    assert (audit["id"], audit["action"], audit["target"], audit["detail"]) == (
        body["audit_id"], "sfu.delete", sfu_id, "0 calls moved")
    for method in ("GET", "DELETE"):
        gone = admin.call(method, f"/v1/sfus/{sfu_id}")
        assert gone.status == 404, gone
        assert_conforms(method, "/v1/sfus/{id}", gone)
        assert gone.json()["error"]["code"] == "not_found"


def test_posting_an_existing_sfu_is_409_and_changes_nothing(admin: Admin) -> None:
    sfu_id = _unique("dup")
    first = _post_sfu(admin, _sfu(sfu_id, capacity=10))
    for body in (_sfu(sfu_id, capacity=20), _sfu(sfu_id, capacity=10)):
        reply = admin.call("POST", "/v1/sfus", body=_json(body))
        assert reply.status == 409, reply
        assert_conforms("POST", "/v1/sfus", reply)
        assert reply.json()["error"]["code"] == "conflict"
    assert admin.call("GET", f"/v1/sfus/{sfu_id}").json() == first
    _delete_sfu(admin, sfu_id)


def test_put_creates_an_sfu_and_its_id_must_match_the_path(admin: Admin) -> None:
    sfu_id = _unique("put")
    for body in ({**_sfu("other-id")}, {**_sfu(sfu_id), "id": 5}):
        reply = admin.call("PUT", f"/v1/sfus/{sfu_id}", body=_json(body))
        assert reply.status == 400, reply
        assert_conforms("PUT", "/v1/sfus/{id}", reply)
    assert admin.call("GET", f"/v1/sfus/{sfu_id}").status == 404
    body = _sfu(sfu_id)
    del body["id"]
    created = admin.call("PUT", f"/v1/sfus/{sfu_id}", body=_json(body))
    assert created.status == 200, created
    assert_conforms("PUT", "/v1/sfus/{id}", created)
    assert created.json()["id"] == sfu_id
    same = admin.call("PUT", f"/v1/sfus/{sfu_id}", body=_json({**body, "id": sfu_id, "capacity": 7}))
    assert same.status == 200 and same.json()["capacity"] == 7
    _delete_sfu(admin, sfu_id)


BAD_SFU_BODIES = {
    "empty": b"",
    "not json": b"nope",
    "array": b"[]",
    "empty object": b"{}",
    "no id": _json({k: v for k, v in _sfu("x").items() if k != "id"}),
    "null id": _json(_sfu(None)),
    "id with a space": _json(_sfu("a b")),
    "id of 65": _json(_sfu("x" * 65)),
    "id not a string": _json(_sfu(5)),
    "no url": _json({k: v for k, v in _sfu("bad-1").items() if k != "url"}),
    "http url": _json({**_sfu("bad-1"), "url": "http://sfu.example.net"}),
    "url of 2049": _json({**_sfu("bad-1"), "url": "ws://" + "x" * 2044}),
    "no capacity": _json({k: v for k, v in _sfu("bad-1").items() if k != "capacity"}),
    "capacity 0": _json(_sfu("bad-1", capacity=0)),
    "capacity 1000001": _json(_sfu("bad-1", capacity=1_000_001)),
    "capacity 1.5": _json(_sfu("bad-1", capacity=1.5)),
    "capacity string": _json(_sfu("bad-1", capacity="5")),
    "weight 0": _json(_sfu("bad-1", weight=0)),
    "weight 100.5": _json(_sfu("bad-1", weight=100.5)),
    "latitude 91": _json(_sfu("bad-1", region=None, latitude=91, longitude=0)),
    "longitude -181": _json(_sfu("bad-1", region=None, latitude=0, longitude=-181)),
    "latitude alone": _json(_sfu("bad-1", region=None, latitude=10)),
    "no location": _json(_sfu("bad-1", region=None)),
    "unknown region": _json(_sfu("bad-1", region="atlantis")),
    "region not a string": _json(_sfu("bad-1", region=5)),
    "secret of 15": _json(_sfu("bad-1", secret="x" * 15)),
}


@pytest.mark.parametrize("body", BAD_SFU_BODIES.values(), ids=BAD_SFU_BODIES.keys())
def test_bad_sfu_definitions_are_400(admin: Admin, body: bytes) -> None:
    reply = admin.call("POST", "/v1/sfus", body=body)
    assert reply.status == 400, reply
    assert reply.json()["error"]["code"] == "invalid_request"
    assert_conforms("POST", "/v1/sfus", reply)
    assert admin.call("GET", "/v1/sfus/bad-1").status == 404


GOOD_SFU_EDGES = {
    "smallest": {"capacity": 1, "weight": 0.01, "secret": "s" * 16},
    "largest": {"capacity": 1_000_000, "weight": 100},
    "integral float capacity": {"capacity": 5.0},
    "corner coordinates": {"region": None, "latitude": -90, "longitude": 180},
    "nulls": {"weight": None, "secret": None, "latitude": None},
    "region label with coordinates": {"region": "Anywhere", "latitude": 1.5, "longitude": 2.5},
}


@pytest.mark.parametrize("fields", GOOD_SFU_EDGES.values(), ids=GOOD_SFU_EDGES.keys())
def test_sfu_definitions_at_the_bounds_are_accepted(admin: Admin, fields: dict) -> None:
    sfu_id = _unique("edge")
    created = _post_sfu(admin, _sfu(sfu_id, **fields))
    for key in ("capacity", "weight", "latitude", "longitude"):
        if fields.get(key) is not None:
            assert created[key] == fields[key]
    if fields.get("region"):
        assert created["region"] == fields["region"].lower()
    assert created["has_secret"] is bool(fields.get("secret"))
    _delete_sfu(admin, sfu_id)


@pytest.mark.parametrize("raw_id", ["a%20b", "x" * 65, "%C3%A9"])
@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/sfus/{id}"), ("PUT", "/v1/sfus/{id}"), ("DELETE", "/v1/sfus/{id}"),
    ("POST", "/v1/sfus/{id}/drain"), HEARTBEAT,
])
def test_invalid_sfu_ids_in_the_path_are_400(admin: Admin, method: str, path: str, raw_id: str) -> None:
    body = _json({"load": 1}) if path == HEARTBEAT[1] else _json(_sfu("x")) if method == "PUT" else None
    reply = admin.call(method, path.replace("{id}", raw_id), body=body)
    assert reply.status == 400, reply
    assert_conforms(method, path, reply)


def test_heartbeat_takes_the_sfu_secret_or_the_admin_token(admin: Admin) -> None:
    sfu_id, other_id, bare_id = _unique("beat"), _unique("beat-other"), _unique("beat-bare")
    secret, other_secret = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
    _post_sfu(admin, _sfu(sfu_id, secret=secret))
    _post_sfu(admin, _sfu(other_id, secret=other_secret))
    _post_sfu(admin, _sfu(bare_id))
    audit_before = _latest_audit(admin)["id"]

    refused = {
        "none": {},
        "wrong": {"Authorization": "Bearer " + "x" * len(secret)},
        "another SFU's secret": {"Authorization": f"Bearer {other_secret}"},
        "prefix": {"Authorization": f"Bearer {secret[:-1]}"},
        "lower-case scheme": {"Authorization": f"bearer {secret}"},
        "basic": {"Authorization": f"Basic {secret}"},
        "empty": {"Authorization": "Bearer "},
    }
    for case, headers in refused.items():
        reply = admin.call("POST", f"/v1/sfus/{sfu_id}/heartbeat", token=None, body=b'{"load":7}', headers=headers)
        assert reply.status == 401, f"{case}: {reply.status} {reply.body!r}"
        assert reply.json()["error"]["code"] == "unauthenticated"
        assert_conforms(*HEARTBEAT, reply)
    untouched = admin.call("GET", f"/v1/sfus/{sfu_id}").json()
    assert (untouched["load"], untouched["fresh"], "last_heartbeat_at" in untouched) == (0, False, False)

    accepted = _heartbeat(admin, sfu_id, 7, token=secret)
    assert accepted.status == 200, accepted
    view = accepted.json()
    assert (view["id"], view["load"], view["pending"], view["fresh"], view["state"]) == (sfu_id, 7, 0, True, "active")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", view["last_heartbeat_at"])
    assert admin.call("GET", f"/v1/sfus/{sfu_id}").json() == view
    assert _heartbeat(admin, sfu_id, 8).json()["load"] == 8  # the admin token
    assert _heartbeat(admin, sfu_id, 9.0, token=secret).json()["load"] == 9  # an integral number

    # An SFU without a secret: the admin token only.
    assert _heartbeat(admin, bare_id, 1, token=secret).status == 401
    assert _heartbeat(admin, bare_id, 1, token=None).status == 401
    assert _heartbeat(admin, bare_id, 1).status == 200

    # The documented order: body, then credential (an unknown id looks like a wrong credential
    # unless the admin token is presented, so ids are not revealed), then the load's range.
    assert _heartbeat(admin, "no-such-sfu", 1, token=None).status == 401
    assert _heartbeat(admin, "no-such-sfu", 1).status == 404
    for body in (b"", b"{}", b'{"load":"1"}', b'{"load":1.5}', b'{"load":null}', b'{"load":99999999999999999999}'):
        reply = admin.call("POST", f"/v1/sfus/{sfu_id}/heartbeat", token=None, body=body)
        assert reply.status == 400, (body, reply)
        assert_conforms(*HEARTBEAT, reply)
    assert _heartbeat(admin, sfu_id, -1, token=None).status == 401
    negative = _heartbeat(admin, sfu_id, -1, token=secret)
    assert negative.status == 400 and negative.json()["error"]["message"] == "load must be 0–10000000"

    assert _latest_audit(admin)["id"] == audit_before, "heartbeats are not audited"
    for sfu in (sfu_id, other_id, bare_id):
        _delete_sfu(admin, sfu)


def test_drain_keeps_an_sfu_draining_and_is_audited(admin: Admin) -> None:
    sfu_id = _unique("drain")
    _post_sfu(admin, _sfu(sfu_id, capacity=50))
    assert _heartbeat(admin, sfu_id, 4).status == 200
    for _ in range(2):
        reply = admin.call("POST", f"/v1/sfus/{sfu_id}/drain")
        assert reply.status == 200, reply
        assert_conforms("POST", "/v1/sfus/{id}/drain", reply)
        assert (reply.json()["state"], reply.json()["load"], reply.json()["fresh"]) == ("draining", 4, True)
        audit = _latest_audit(admin)
        assert (audit["action"], audit["target"]) == ("sfu.drain", sfu_id)
    assert _heartbeat(admin, sfu_id, 5).json()["state"] == "draining"
    put = admin.call("PUT", f"/v1/sfus/{sfu_id}", body=_json(_sfu(sfu_id, capacity=60)))
    assert (put.json()["state"], put.json()["load"], put.json()["capacity"]) == ("draining", 5, 60)
    _delete_sfu(admin, sfu_id)
    missing = admin.call("POST", f"/v1/sfus/{sfu_id}/drain")
    assert missing.status == 404
    assert_conforms("POST", "/v1/sfus/{id}/drain", missing)


def test_sfu_list_pagination(placement_admin: Admin) -> None:
    ids = ["sfu-c", "sfu-a", "sfu-e", "sfu-b", "sfu-d"]
    for sfu_id in ids:
        _post_sfu(placement_admin, _sfu(sfu_id))
    seen, cursor = [], None
    for _ in range(len(ids) + 1):
        reply = placement_admin.call("GET", "/v1/sfus?limit=2" + (f"&cursor={quote(cursor)}" if cursor else ""))
        assert reply.status == 200, reply
        assert_conforms("GET", "/v1/sfus", reply)
        page = reply.json()
        assert len(page["sfus"]) <= 2
        seen += [sfu["id"] for sfu in page["sfus"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert cursor == seen[-1]
    assert seen == sorted(ids)
    assert [s["id"] for s in placement_admin.call("GET", "/v1/sfus?cursor=sfu-b").json()["sfus"]] == ["sfu-c", "sfu-d", "sfu-e"]
    assert placement_admin.call("GET", "/v1/sfus?cursor=zzz").json() == {"sfus": [], "next_cursor": None}
    assert placement_admin.call("GET", "/v1/sfus?limit=5").json()["next_cursor"] is None


def test_explain_evaluates_every_sfu(placement_admin: Admin) -> None:
    admin = placement_admin
    _post_sfu(admin, _sfu("near", region="cdg", capacity=100))
    _post_sfu(admin, _sfu("far", region=None, latitude=-33.8688, longitude=151.2093, capacity=100, weight=2))
    _post_sfu(admin, _sfu("silent", region="ams"))  # never sends a heartbeat
    _post_sfu(admin, _sfu("drained", region="fra"))
    _post_sfu(admin, _sfu("packed", region="fra", capacity=6))
    for sfu_id, load in (("near", 10), ("far", 0), ("drained", 0), ("packed", 2)):
        assert _heartbeat(admin, sfu_id, load).status == 200
    assert admin.call("POST", "/v1/sfus/drained/drain").status == 200
    before = admin.call("GET", "/v1/sfus").json()

    participants = [
        {"region": "FRA"},
        {"latitude": 48.8566, "longitude": 2.3522, "ignored": True},
        {"rtt": {"far": 300.5, "unknown-sfu": 5, "not an id": 3, "near": 5000}, "region": "cdg"},
        {"ip": "192.0.2.1"},
        {"latitude": 91, "longitude": 0},
    ]
    reply = admin.call("POST", "/v1/placement/explain", body=_json({"participants": participants, "extra": 1}))
    assert reply.status == 200, reply
    assert_conforms("POST", "/v1/placement/explain", reply)
    explanation = reply.json()
    assert set(explanation) == {"chosen", "participants", "candidates"}, "call_id and current are left out"
    assert [(p["source"], p["measured_rtts"]) for p in explanation["participants"]] == [
        ("region", 0), ("coordinates", 0), ("rtt", 2), ("default", 0), ("default", 0)]
    assert (explanation["participants"][1]["latitude"], explanation["participants"][1]["longitude"]) == (48.8566, 2.3522)

    candidates = explanation["candidates"]
    assert sorted(c["sfu"] for c in candidates) == ["drained", "far", "near", "packed", "silent"]
    for candidate in candidates:
        _validate(CANDIDATE_SCHEMA, candidate)
        assert set(CANDIDATE_SCHEMA["required"]) <= set(candidate) <= set(CANDIDATE_SCHEMA["properties"])
        assert ("score" in candidate) != ("rejected" in candidate), candidate
        assert ("region" in candidate) == (candidate["sfu"] != "far"), candidate
    by_id = {c["sfu"]: c for c in candidates}
    assert {sfu: c.get("rejected") for sfu, c in by_id.items()} == {
        "near": None, "far": None, "silent": "stale", "drained": "draining", "packed": "full"}
    # Eligible ones best first, then rejected ones by id.
    assert [c["sfu"] for c in candidates] == ["near", "far", "drained", "packed", "silent"]
    assert explanation["chosen"] == "near"
    assert candidates[0]["score"] < candidates[1]["score"]
    near, far, packed = by_id["near"], by_id["far"], by_id["packed"]
    assert (near["url"], near["region"], near["load"], near["capacity"], near["utilization"]) == (
        "wss://near.example.net/ws", "cdg", 10, 100, 0.15)
    assert far["worst_rtt_ms"] >= 300.5 and far["worst_distance_km"] > 15000
    assert (packed["load"], packed["capacity"], packed["utilization"]) == (2, 6, round(7 / 6, 3))
    assert by_id["silent"]["load"] == 0 and "score" not in by_id["silent"]

    assert admin.call("GET", "/v1/sfus").json() == before, "explain changes nothing"
    nobody = admin.call("POST", "/v1/placement/explain", body=_json({"participants": []}))
    assert nobody.status == 200, nobody
    assert_conforms("POST", "/v1/placement/explain", nobody)
    assert nobody.json()["participants"] == []
    assert {(c["worst_distance_km"], c["worst_rtt_ms"]) for c in nobody.json()["candidates"]} == {(0, 2)}
    hundred = admin.call("POST", "/v1/placement/explain", body=_json({"participants": [{}] * 100}))
    assert hundred.status == 200, hundred


@pytest.mark.parametrize(
    ("body", "status"),
    [(b"", 400), (b"[]", 400), (b"{}", 400), (b'{"call_id":null,"participants":null}', 400),
     (b'{"participants":{}}', 400), (b'{"participants":[null]}', 400), (b'{"participants":[{"rtt":{"a":"1"}}]}', 400),
     (b'{"call_id":5}', 400), (_json({"participants": [{}] * 101}), 400), (b'{"call_id":"room:nobody"}', 404),
     (b'{"call_id":"room:nobody","participants":[]}', 404)],
    ids=["empty", "array", "neither", "nulls", "participants object", "null participant", "rtt string",
         "call_id number", "101 participants", "unknown call", "unknown call with participants"],
)
def test_bad_explain_requests(admin: Admin, body: bytes, status: int) -> None:
    reply = admin.call("POST", "/v1/placement/explain", body=body)
    assert reply.status == status, reply
    assert_conforms("POST", "/v1/placement/explain", reply)


def test_a_huge_heartbeat_load_does_not_crash_placement(tmp_path: Path) -> None:
    daemon = _start(tmp_path)
    try:
        _post_sfu(daemon, _sfu("huge"))
        beat = daemon.call("POST", "/v1/sfus/huge/heartbeat", body=_json({"load": 2**63 - 1}))
        assert beat.status == 400, beat
        assert daemon.call("POST", "/v1/sfus/huge/heartbeat", body=_json({"load": 10_000_000})).status == 200
        try:
            reply = daemon.call("POST", "/v1/placement/explain", body=_json({"participants": [{}]}))
        except (http.client.HTTPException, OSError) as error:
            daemon.output.finished.wait(timeout=READY_TIMEOUT_S)
            tail = [line for line in daemon.output.text().splitlines() if "runtime failure" in line]
            pytest.fail(f"explain got no answer ({error!r}); daemon exit {daemon.process.poll()}: {tail}")
        assert reply.status == 200, reply
        assert daemon.process.poll() is None
    finally:
        if daemon.process.poll() is None:
            _stop(daemon.process, daemon.output)
        else:
            daemon.output.finished.wait(timeout=READY_TIMEOUT_S)


def test_drain_turns_readiness_off_and_is_audited(fresh_admin: Admin) -> None:
    reply = fresh_admin.call("POST", "/v1/drain", token="")
    assert reply.status == 202, reply
    assert_conforms("POST", "/v1/drain", reply)
    assert reply.json()["draining"] is True
    ready = fresh_admin.call("GET", "/readyz")
    assert ready.status == 503
    assert_conforms("GET", "/readyz", ready)
    assert ready.json() == {"ready": False, "checks": {"store_writable": True, "listeners_up": True, "threads_turning": True, "draining": True}}
    stats = fresh_admin.call("GET", "/v1/stats")
    assert_conforms("GET", "/v1/stats", stats)
    assert stats.json()["draining"] is True
    audit = fresh_admin.call("GET", "/v1/audit").json()["entries"]
    assert reply.json()["audit_id"] in [entry["id"] for entry in audit if entry["action"] == "drain"]
    again = fresh_admin.call("POST", "/v1/drain")
    assert again.status == 202
    assert_conforms("POST", "/v1/drain", again)


def test_one_drain_request_writes_one_audit_entry(fresh_admin: Admin) -> None:
    for _ in range(3):
        assert fresh_admin.call("POST", "/v1/drain", headers={"Content-Length": "0"}).status == 202
    entries = fresh_admin.call("GET", "/v1/audit").json()["entries"]
    assert len([entry for entry in entries if entry["action"] == "drain"]) == 3


def test_a_chunked_body_is_refused_at_once_with_a_json_400(admin: Admin) -> None:
    """libwebsockets 4.1 does not de-chunk server request bodies; the daemon says so instead of hanging."""
    body = b'{"level":"info"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    reply = admin.call("PUT", "/v1/log-level", body=chunked, headers={"Transfer-Encoding": "chunked"})
    assert reply.status == 400, reply
    assert "Content-Length" in reply.json()["error"]["message"]


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "FOO"])
def test_unknown_methods_get_a_json_405(admin: Admin, method: str) -> None:
    """libwebsockets hands a request with a method it does not parse to the daemon as a raw
    socket; the daemon reads the request line and answers like any other wrong method."""
    reply = admin.call(method, "/v1/stats")
    assert reply.status == 405, reply
    assert reply.json()["error"]["code"] == "method_not_allowed"
    assert {m.strip() for m in reply.headers["allow"].split(",")} == {"GET", "HEAD"}
    assert admin.call(method, "/v1/nope").status == 404


# --- schemathesis ------------------------------------------------------------------------

CALLS: dict[tuple[str, str], int] = {}  # schemathesis cases per operation, for the last test
STATUSES: dict[tuple[str, str], set[int]] = {}  # and the statuses they got
MAX_EXAMPLES = 25  # per operation and phase; the whole run takes seconds on loopback
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    ignored_auth,
    unsupported_method,
]
# The location table and placement operations (tag `placement`) change shared state: schemathesis
# creates, replaces, drains and deletes SFUs. They run on a daemon of their own, placement_fuzz_admin.
PLACEMENT_TAG = "placement"
# The SFUs placement_fuzz_admin starts with: the ids the document's examples use, so the examples
# and coverage phases address existing SFUs too (the first two heartbeat, the last never does).
FUZZ_SFUS = [
    {"id": "sfu-fra-1", "url": "wss://sfu-fra-1.example.net/ws", "region": "fra", "capacity": 500,
     "secret": "4f0c2d7e9a1b3c5d"},
    {"id": "sfu-iad-1", "url": "wss://sfu-iad-1.example.net/ws", "latitude": 38.95, "longitude": -77.45,
     "capacity": 200, "weight": 2},
    {"id": "sfu-ams-1", "url": "ws://10.0.0.5:7880", "region": "ams", "capacity": 100},
]


NEGATIVE_STATUSES = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5xx"]  # schemathesis's, and 413


def _schema_config(daemon: Admin) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "base-url": daemon.base_url,
            "headers": daemon.auth,
            "request-timeout": REQUEST_TIMEOUT_S,
            # An encoded NUL (%00) in the request line makes libwebsockets 4.1's URI parser fail
            # the connection before the daemon sees the request (no answer at all; see
            # test_a_nul_in_the_request_line_is_dropped_and_the_daemon_keeps_serving). NULs in
            # bodies are answered normally and fuzzed by the admin-body fuzz target.
            "generation": {"max-examples": MAX_EXAMPLES, "allow-x00": False},
            # Invalid bodies past transport.max_request_body_bytes (e.g. more than 100 participants
            # with large hints) are refused with the documented 413 before they are parsed.
            "checks": {"negative_data_rejection": {"expected-statuses": NEGATIVE_STATUSES}},
        }
    )


@pytest.fixture(scope="module")
def admin_schema(admin: Admin):
    return schemathesis.openapi.from_path(SPEC_PATH, config=_schema_config(admin))


@pytest.fixture(scope="module")
def placement_fuzz_admin(tmp_path_factory: pytest.TempPathFactory):
    # The default body cap (64 KiB), so that definitions up to the documented url length fit.
    daemon = _start(tmp_path_factory.mktemp("placement-fuzz"), {"SWITCHBOARD_TRANSPORT_MAX_REQUEST_BODY_BYTES": "65536"})
    try:
        for body in FUZZ_SFUS:
            _post_sfu(daemon, body)
        for body in FUZZ_SFUS[:2]:
            assert _heartbeat(daemon, body["id"], 3).status == 200
        yield daemon
    finally:
        _stop(daemon.process, daemon.output)


@pytest.fixture(scope="module")
def placement_schema(placement_fuzz_admin: Admin):
    return schemathesis.openapi.from_path(SPEC_PATH, config=_schema_config(placement_fuzz_admin))


def _run(case, daemon: Admin) -> None:
    operation = (case.operation.method.upper(), case.operation.path)
    CALLS[operation] = CALLS.get(operation, 0) + 1
    response = case.call_and_validate(base_url=daemon.base_url, headers=daemon.auth, checks=CHECKS, timeout=REQUEST_TIMEOUT_S)
    STATUSES.setdefault(operation, set()).add(response.status_code)


SCHEMATHESIS_SETTINGS = settings(
    max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
)

# Drain is one-way (readiness stays off); it has its own daemon above. (Filters must be set on
# the lazy schema: the fixture's own filters are not used.)
lazy_schema = (
    schemathesis.pytest.from_fixture("admin_schema").exclude(method="POST", path="/v1/drain").exclude(tag=PLACEMENT_TAG)
)
lazy_placement_schema = schemathesis.pytest.from_fixture("placement_schema").include(tag=PLACEMENT_TAG)


@lazy_schema.parametrize()
@SCHEMATHESIS_SETTINGS
def test_schemathesis(case, admin: Admin) -> None:
    _run(case, admin)


@lazy_placement_schema.parametrize()
@SCHEMATHESIS_SETTINGS
def test_schemathesis_placement(case, placement_fuzz_admin: Admin) -> None:
    # Cases run operation by operation, so the DELETE cases would leave no SFU for the later ones to
    # address: put back a starting SFU this case names if it is gone.
    seed = next((body for body in FUZZ_SFUS if body["id"] == (case.path_parameters or {}).get("id")), None)
    if seed and placement_fuzz_admin.call("GET", f"/v1/sfus/{seed['id']}").status == 404:
        _post_sfu(placement_fuzz_admin, seed)
    _run(case, placement_fuzz_admin)


def test_schemathesis_exercised_every_operation(admin: Admin, placement_fuzz_admin: Admin) -> None:
    """Guards against a filter or a config change that silently generates nothing, or drains."""
    if not CALLS:
        pytest.skip("test_schemathesis did not run in this session")
    assert admin.call("GET", "/readyz").status == 200, "the shared daemon was drained"
    assert placement_fuzz_admin.call("GET", "/readyz").status == 200, "the placement daemon is not ready"
    expected = set(OPERATIONS) - ONE_WAY
    print("schemathesis cases per operation:", dict(sorted(CALLS.items())))
    print("statuses per operation:", {op: sorted(codes) for op, codes in sorted(STATUSES.items())})
    assert set(CALLS) == expected
    # Operations without parameters have only a handful of distinct cases; the others get many.
    assert all(count >= (10 if "parameters" in RESOLVED["paths"][path][method.lower()] or method == "PUT" else 3)
               for (method, path), count in CALLS.items()), CALLS
    # Every placement operation succeeded at least once, not only refused bad input.
    placement = {op for op in expected if PLACEMENT_TAG in RESOLVED["paths"][op[1]][op[0].lower()]["tags"]}
    assert {op for op in placement if not any(200 <= code < 300 for code in STATUSES.get(op, ()))} == set(), STATUSES


def test_a_minted_token_is_a_signed_jwt_for_the_user(admin: Admin) -> None:
    reply = admin.call("POST", "/v1/tokens", body=_json({"user_id": "alice", "ttl_seconds": 120, "role": "admin"}))
    assert reply.status == 201, reply
    assert_conforms("POST", "/v1/tokens", reply)
    body = reply.json()
    assert body["user_id"] == "alice"
    header, payload, signature = body["token"].split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    assert decode(header)["alg"] == "HS256"
    claims = decode(payload)
    assert (claims["user_id"], claims["sub"], claims["role"]) == ("alice", "alice", "admin")
    assert claims["exp"] - claims["iat"] == 120
    assert signature
    for bad in ({}, {"user_id": ""}, {"user_id": "a", "ttl_seconds": 0}, {"user_id": "a", "ttl_seconds": 2592001}):
        assert admin.call("POST", "/v1/tokens", body=_json(bad)).status == 400, bad


def test_a_nul_in_the_request_line_is_dropped_and_the_daemon_keeps_serving(admin: Admin) -> None:
    """A documented libwebsockets 4.1 deviation: its URI parser fails a connection whose request
    line holds an encoded NUL, before any callback, so no JSON 400 can be sent. The connection is
    closed without an answer and the listener keeps serving."""
    import socket

    with socket.create_connection(("127.0.0.1", admin.admin_port), timeout=REQUEST_TIMEOUT_S) as sock:
        sock.sendall(f"GET /v1/audit?=%00 HTTP/1.1\r\nHost: 127.0.0.1:{admin.admin_port}\r\n\r\n".encode())
        try:
            answer = sock.recv(4096)
        except ConnectionResetError:
            answer = b""
    assert answer == b"", answer
    assert admin.call("GET", "/v1/stats").status == 200
