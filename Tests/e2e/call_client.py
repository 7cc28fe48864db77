"""A call-protocol client for the end-to-end tests: one authenticated ``/v1/connect`` socket
(websockets' sync client and a reader thread). ``request`` / ``ok`` / ``error`` answer by
correlation id; events are kept in order and awaited with ``wait_event``. ``user_token`` mints
the HS256 token it authenticates with, signed with the tests' API secret. Waits poll with a
deadline; nothing sleeps.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from conftest import CALLS_API_SECRET

WAIT_S = 15.0


def user_token(user: str, ttl_s: int = 3600) -> str:
    """An HS256 user token signed with the daemon's API secret (what ``switchboard token`` mints)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "kid": "switchboard", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": user, "user_id": user, "iat": now, "exp": now + ttl_s}).encode())
    signature = hmac.new(CALLS_API_SECRET.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(signature)}"



class CallClient:
    """One authenticated ``/v1/connect`` socket of ``user`` (resuming the connection of
    ``resume``, a ``resume_token``, when given), to ``host`` (a daemon in a network namespace
    binds its namespace's address)."""

    def __init__(self, port: int, user: str, resume: str | None = None, host: str = "127.0.0.1") -> None:
        self.user = user
        self.ws = connect(f"ws://{host}:{port}/v1/connect", open_timeout=WAIT_S, proxy=None, max_size=None, legacy=True)
        self._cond = threading.Condition()
        self._answers: dict[Any, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.closed = False
        self._next = 0
        auth = {"type": "auth", "id": "auth", "token": user_token(user)}
        if resume is not None:
            auth["resume_token"] = resume
        self.ws.send(json.dumps(auth))
        ok = json.loads(self.ws.recv(WAIT_S))
        assert ok.get("type") == "connection.ok", f"{user}: {ok}"
        self.hello = ok["data"]
        self._reader = threading.Thread(target=self._read, name=f"client-{user}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for text in self.ws:
                frame = json.loads(text)
                with self._cond:
                    if "seq" in frame and frame.get("type") not in ("response", "error", "pong"):
                        self.events.append(frame)
                    elif frame.get("id") is not None:
                        self._answers[frame["id"]] = frame
                    else:
                        self.unexpected.append(frame)
                    self._cond.notify_all()
        except ConnectionClosed:
            pass
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def request(self, kind: str, data: dict[str, Any] | None = None, timeout: float = WAIT_S) -> dict[str, Any]:
        """Sends a request and returns its answer frame (``response`` or ``error``)."""
        with self._cond:
            self._next += 1
            rid = f"{self.user}-{self._next}"
        frame: dict[str, Any] = {"id": rid, "type": kind}
        if data is not None:
            frame["data"] = data
        self.ws.send(json.dumps(frame))
        deadline = time.monotonic() + timeout
        with self._cond:
            while rid not in self._answers:
                left = deadline - time.monotonic()
                assert left > 0 and not self.closed, f"{self.user}: no answer to {kind} {data} (closed={self.closed})"
                self._cond.wait(left)
            return self._answers.pop(rid)

    def answered(self) -> list[Any]:
        """The ids of the answers received and not taken by ``request``, in arrival order."""
        with self._cond:
            return list(self._answers)

    def ok(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        """A request that must succeed; its ``data``."""
        answer = self.request(kind, data)
        assert answer.get("type") == "response", f"{self.user}: {kind} {data} -> {answer}"
        return answer["data"]

    def error(self, kind: str, data: dict[str, Any] | None = None) -> str:
        """A request that must fail; its error code."""
        answer = self.request(kind, data)
        assert answer.get("type") == "error", f"{self.user}: {kind} {data} should have failed -> {answer}"
        return answer["error"]["code"]

    def wait_event(self, kind: str, cid: str | None = None, timeout: float = WAIT_S) -> dict[str, Any]:
        """The first event of type ``kind`` (about ``cid`` when given), waiting for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if event["type"] == kind and (cid is None or event.get("call_cid") == cid):
                        return event
                left = deadline - time.monotonic()
                assert left > 0, f"{self.user}: no {kind} event for {cid}; events: {self.events}"
                self._cond.wait(left)

    def close(self) -> None:
        self.ws.close()
        self._reader.join(WAIT_S)
