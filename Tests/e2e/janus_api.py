"""Talking to a test Janus over HTTP: its admin API and its client API.

``http_json`` sends one request (never through a proxy); ``raise_for_error`` turns
a core or plugin error answer into ``JanusError``. ``JanusAPI`` holds the admin
requests (tokens, sessions, handles, VideoRoom requests through ``message_plugin``)
and the client requests of a ``janus_harness.JanusInstance``, which inherits them;
``ClientSession`` is one client session (requests plus the long-poll GET).

Every name here is also importable from ``janus_harness``.

Only the standard library is used (Python 3.11).
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Callable

from janus_config import VIDEOROOM

if TYPE_CHECKING:
    from janus_harness import JanusInstance

DEFAULT_REQUEST_TIMEOUT_S = 5.0
#: Janus's HTTP transport holds a long-poll GET for up to 30 s when no event is queued.
LONG_POLL_HOLD_S = 30.0

# Requests to 127.0.0.1 must never go through a proxy named in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class JanusError(Exception):
    """An error answer from Janus: the core's ``error`` object or a plugin's ``error_code``."""

    def __init__(self, code: int | None, reason: str, answer: Any) -> None:
        super().__init__(f"Janus error {code}: {reason}")
        self.code = code
        self.reason = reason
        self.answer = answer


def new_transaction() -> str:
    """A random transaction id, as every Janus request carries one."""
    return secrets.token_hex(8)


def http_json(
    method: str,
    url: str,
    body: dict | None = None,
    timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
) -> tuple[int, str]:
    """One HTTP request; returns (status, body text), also for 4xx/5xx answers."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def raise_for_error(answer: dict) -> dict:
    """Return ``answer`` unless it is an error: the core's ``{"janus":"error","error":{...}}``
    or a plugin's ``error_code`` inside ``plugindata.data`` (client API) or ``response``
    (admin ``message_plugin``)."""
    if answer.get("janus") == "error":
        error = answer.get("error", {})
        raise JanusError(error.get("code"), error.get("reason", ""), answer)
    inner = answer.get("response")
    if inner is None:
        inner = answer.get("plugindata", {}).get("data")
    if isinstance(inner, dict) and "error_code" in inner:
        raise JanusError(inner["error_code"], inner.get("error", ""), answer)
    return answer



class JanusAPI:
    """The admin and client requests of a Janus instance (``JanusInstance`` inherits them).

    Needs ``admin_url``, ``http_url`` and ``admin_secret`` from the class using it."""

    # ------------------------------------------------------------------ admin API

    def admin_raw(self, request: dict, path: str = "", timeout: float = DEFAULT_REQUEST_TIMEOUT_S) -> tuple[int, str]:
        """POST ``request`` as is to the admin API (``path`` e.g. ``/SESSION`` or ``/SESSION/HANDLE``)."""
        return http_json("POST", self.admin_url + path, request, timeout=timeout)

    def admin(
        self,
        request: dict,
        *,
        path: str = "",
        secret: str | None | bool = True,
        timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
    ) -> dict:
        """POST an admin request and return Janus's JSON answer (errors included, not raised).

        ``transaction`` is added when missing; ``admin_secret`` is the instance's own
        unless ``secret`` is a string (sent instead) or False (no secret sent).
        """
        body = dict(request)
        body.setdefault("transaction", new_transaction())
        if secret is True:
            body.setdefault("admin_secret", self.admin_secret)
        elif isinstance(secret, str):
            body["admin_secret"] = secret
        status, text = self.admin_raw(body, path=path, timeout=timeout)
        try:
            return json.loads(text)
        except ValueError:
            raise JanusError(None, f"HTTP {status}, not JSON: {text[:200]!r}", text) from None

    def add_token(self, token: str, plugins: list[str] | None = None) -> dict:
        request: dict[str, Any] = {"janus": "add_token", "token": token}
        if plugins is not None:
            request["plugins"] = plugins
        return raise_for_error(self.admin(request))

    def remove_token(self, token: str) -> dict:
        return raise_for_error(self.admin({"janus": "remove_token", "token": token}))

    def list_tokens(self) -> list[dict]:
        return raise_for_error(self.admin({"janus": "list_tokens"}))["data"]["tokens"]

    def list_sessions(self) -> list[int]:
        return raise_for_error(self.admin({"janus": "list_sessions"}))["sessions"]

    def list_handles(self, session_id: int) -> list[int]:
        return raise_for_error(self.admin({"janus": "list_handles"}, path=f"/{session_id}"))["handles"]

    def message_plugin(self, plugin: str, request: dict) -> dict:
        """Admin ``message_plugin``: returns Janus's whole answer (``response`` holds the plugin's)."""
        return self.admin({"janus": "message_plugin", "plugin": plugin, "request": request})

    def videoroom(self, request: dict) -> dict:
        """A VideoRoom request through admin ``message_plugin``; returns the plugin's
        ``response`` object, raising ``JanusError`` for a core or plugin error."""
        return raise_for_error(self.message_plugin(VIDEOROOM, request))["response"]

    # ------------------------------------------------------------------ client API

    def client_raw(self, body: dict, path: str = "", timeout: float = DEFAULT_REQUEST_TIMEOUT_S) -> tuple[int, str]:
        """POST ``body`` as is to the client API (``path`` e.g. ``/SESSION``)."""
        return http_json("POST", self.http_url + path, body, timeout=timeout)

    def client(self, body: dict, path: str = "", token: str | None = None) -> dict:
        """POST a client request (``transaction`` added, ``token`` set when given); returns the JSON answer."""
        request = dict(body)
        request.setdefault("transaction", new_transaction())
        if token is not None:
            request["token"] = token
        status, text = self.client_raw(request, path=path)
        try:
            return json.loads(text)
        except ValueError:
            raise JanusError(None, f"HTTP {status}, not JSON: {text[:200]!r}", text) from None

    def create_session(self, token: str | None) -> dict:
        """Client ``create`` with ``token`` (None: no token at all); the raw answer."""
        return self.client({"janus": "create"}, token=token)

    def open_session(self, token: str | None) -> "ClientSession":
        """Create a client session with ``token``, raising ``JanusError`` when refused."""
        answer = raise_for_error(self.create_session(token))
        return ClientSession(self, answer["data"]["id"], token)


class ClientSession:
    """One Janus client session over the HTTP transport (requests plus the long-poll GET)."""

    def __init__(self, janus: JanusInstance, session_id: int, token: str | None) -> None:
        self.janus = janus
        self.session_id = session_id
        self.token = token
        self._pending: list[dict] = []

    @property
    def url(self) -> str:
        return f"{self.janus.http_url}/{self.session_id}"

    def request(self, body: dict, handle_id: int | None = None) -> dict:
        """POST to the session (or to one of its handles); the raw JSON answer.
        A ``transaction`` in ``body`` is kept, else a random one is added."""
        path = f"/{self.session_id}" + (f"/{handle_id}" if handle_id is not None else "")
        return self.janus.client(body, path=path, token=self.token)

    def attach(self, plugin: str = VIDEOROOM) -> int:
        """Attach to ``plugin``; returns the handle id (raises ``JanusError`` when refused)."""
        return raise_for_error(self.request({"janus": "attach", "plugin": plugin}))["data"]["id"]

    def message(self, handle_id: int, body: dict, jsep: dict | None = None, transaction: str | None = None) -> dict:
        """Send a plugin message; the synchronous answer (``ack`` for asynchronous requests,
        ``success`` with ``plugindata`` for synchronous ones, or ``error``)."""
        request: dict[str, Any] = {"janus": "message", "body": body}
        if transaction is not None:
            request["transaction"] = transaction
        if jsep is not None:
            request["jsep"] = jsep
        return self.request(request, handle_id=handle_id)

    def keepalive(self) -> dict:
        return self.request({"janus": "keepalive"})

    def destroy(self) -> dict:
        return self.request({"janus": "destroy"})

    def poll_raw(self, maxev: int = 1, timeout: float = LONG_POLL_HOLD_S + 5) -> tuple[int, str]:
        """One long-poll GET (``?token=…&maxev=…``): (status, body). Janus answers at once when
        an event is queued, else holds the request up to 30 s and answers ``keepalive``."""
        query = {"maxev": str(maxev), "rid": str(int(time.time() * 1000))}
        if self.token is not None:
            query["token"] = self.token
        return http_json("GET", f"{self.url}?{urllib.parse.urlencode(query)}", timeout=timeout)

    def poll(self, timeout: float = LONG_POLL_HOLD_S + 5) -> list[dict]:
        """One long-poll GET; the events it returned (a list, keepalives left out)."""
        status, text = self.poll_raw(maxev=10, timeout=timeout)
        if status != 200:
            raise JanusError(status, f"long poll refused with HTTP {status}: {text[:200]!r}", text)
        answer = json.loads(text)
        events = answer if isinstance(answer, list) else [answer]
        return [e for e in events if e.get("janus") != "keepalive"]

    def wait_event(self, predicate: Callable[[dict], bool], timeout: float = 10.0) -> dict:
        """Long-poll until an event matching ``predicate`` arrives (bounded by ``timeout``).

        Events that do not match are kept and offered to later calls."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._pending):
                if predicate(event):
                    return self._pending.pop(i)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching event within {timeout} s; seen: {self._pending!r}")
            try:
                self._pending.extend(self.poll(timeout=remaining))
            except (TimeoutError, urllib.error.URLError) as error:
                if isinstance(error, urllib.error.URLError) and not isinstance(error.reason, TimeoutError):
                    raise
                raise TimeoutError(f"no matching event within {timeout} s; seen: {self._pending!r}") from None

    def wait_plugin_event(self, handle_id: int, timeout: float = 10.0) -> dict:
        """The next ``event`` from ``handle_id`` (its ``plugindata.data`` holds the plugin's answer)."""
        return self.wait_event(lambda e: e.get("janus") == "event" and e.get("sender") == handle_id, timeout)
