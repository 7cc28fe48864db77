"""A real Standard Webhooks receiver for the webhook end-to-end tests.

:class:`WebhookReceiver` is a threaded ``http.server`` on 127.0.0.1 (port 0, HTTP/1.1 with
keep-alive, as a production receiver would be) running in the test process. Every request is
verified with the reference library, ``standardwebhooks.Webhook(secret).verify(body, headers)``
(PyPI ``standardwebhooks``), never with Switchboard's own code, and recorded in arrival order as
an :class:`Attempt`: ``webhook-id``, the body's ``type``, ``data.call_cid``, ``data.seq``,
``data``, the raw body, the arrival time and what the receiver answered.

Each path is one endpoint (``/hooks/<name>``) with the secrets it must verify with
(:meth:`WebhookReceiver.endpoint`); a request that does not verify with every one of them (or
has no ``webhook-*`` headers, or is not JSON, or whose path is unknown) is recorded in
:attr:`WebhookReceiver.failures`, which every test asserts empty. Other secrets can be checked
per attempt as well (:attr:`Attempt.verified`), e.g. a rotated-out secret that must no longer
verify.

Faults are scripted (:meth:`WebhookReceiver.fault`): answer a status (500, 410, …) to the next
N requests or for a period, sleep past the daemon's ``webhooks.timeout_ms`` before answering
(the daemon's attempt times out), or close the connection without answering. Without a fault
the answer is 204.

Waiting is by condition: :meth:`WebhookReceiver.wait_for` blocks on a condition variable that
every recorded attempt notifies, with a deadline; nothing sleeps to wait for something.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from standardwebhooks import Webhook, WebhookVerificationError

#: Default bound of every wait on the receiver.
WAIT_S = 15.0


@dataclass
class Attempt:
    """One request the receiver got, in arrival order (``index``)."""

    index: int
    endpoint: str
    path: str
    webhook_id: str | None
    timestamp: str | None
    signature: str | None
    headers: dict[str, str]
    body: bytes
    #: The parsed body (``None`` when it is not JSON).
    json: Any
    #: ``time.time()`` and ``time.monotonic()`` when the whole body had been read.
    at: float
    at_mono: float
    #: What the receiver did: an HTTP status, ``"timeout"`` (answered late, after the daemon's
    #: deadline) or ``"close"`` (closed without an answer).
    answer: int | str = 204
    #: Every secret the endpoint knows (label → whether the request verified with it).
    verified: dict[str, bool] = field(default_factory=dict)

    @property
    def type(self) -> str | None:
        return self.json.get("type") if isinstance(self.json, dict) else None

    @property
    def data(self) -> dict[str, Any]:
        data = self.json.get("data") if isinstance(self.json, dict) else None
        return data if isinstance(data, dict) else {}

    @property
    def call_cid(self) -> str | None:
        return self.data.get("call_cid")

    @property
    def seq(self) -> int | None:
        return self.data.get("seq")

    @property
    def created_at(self) -> Any:
        return self.json.get("created_at") if isinstance(self.json, dict) else None

    @property
    def succeeded(self) -> bool:
        """The receiver answered 2xx: from its side, the message was delivered."""
        return isinstance(self.answer, int) and 200 <= self.answer < 300

    def signatures(self) -> list[str]:
        return (self.signature or "").split()

    def __repr__(self) -> str:  # short, for assertion messages
        return (f"<#{self.index} {self.endpoint} {self.webhook_id} {self.type} {self.call_cid} seq={self.seq} "
                f"answer={self.answer}>")


@dataclass
class _Endpoint:
    name: str
    #: label → secret; every one of them must verify.
    required: dict[str, str]
    #: label → secret; recorded only.
    extra: dict[str, str]


@dataclass
class _Fault:
    """``action`` for the next ``count`` requests (``None``: no limit) until ``until`` (monotonic;
    ``None``: no limit), to the endpoints named (``None``: all)."""

    action: tuple
    count: int | None
    until: float | None
    endpoints: set[str] | None


class WebhookReceiver:
    """The receiver; use as a context manager or call :meth:`close`."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._endpoints: dict[str, _Endpoint] = {}
        self._faults: list[_Fault] = []
        self.attempts: list[Attempt] = []
        self.failures: list[str] = []
        self._stopping = threading.Event()
        self._in_flight = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                receiver._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                receiver._record_failure(f"unexpected GET {self.path}")
                self._answer(405)

            def _answer(self, status: int) -> None:
                body = b"" if status == 204 else json.dumps({"status": status}).encode()
                self.send_response(status)
                if body:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="webhook-receiver", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ set-up

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, name: str) -> str:
        """The URL of endpoint ``name`` (for ``webhooks.endpoints``)."""
        return f"http://127.0.0.1:{self.port}/hooks/{name}"

    def endpoint(self, name: str, *secrets: str, extra: dict[str, str] | None = None) -> str:
        """Declares (or redeclares) endpoint ``name``: each request to it must verify with every
        one of ``secrets``; ``extra`` (label → secret) are tried and recorded only. Returns its
        URL."""
        if not secrets:
            raise ValueError("an endpoint needs at least one secret to verify with")
        with self._lock:
            self._endpoints[name] = _Endpoint(name, {f"secret{i}": s for i, s in enumerate(secrets)}, dict(extra or {}))
        return self.url(name)

    def require(self, name: str, required: dict[str, str], extra: dict[str, str] | None = None) -> None:
        """Replaces the secrets endpoint ``name`` must verify with (label → secret)."""
        with self._lock:
            self._endpoints[name] = _Endpoint(name, dict(required), dict(extra or {}))

    def fault(self, action: str, *, status: int = 500, count: int | None = None, seconds: float | None = None,
              sleep: float = 0.0, endpoints: set[str] | None = None, replace: bool = False) -> None:
        """Scripts a fault for the next ``count`` requests and/or for ``seconds`` (both ``None``:
        until :meth:`clear_faults`), on ``endpoints`` (``None``: all). Faults apply in the order
        they were scripted; a spent one is dropped.

        - ``"status"``: answer ``status`` at once.
        - ``"timeout"``: sleep ``sleep`` seconds (set it above the daemon's timeout), then
          answer 204 to a client that is gone.
        - ``"close"``: close the connection without answering.

        ``replace`` drops the faults scripted before, in the same step (no request can slip
        between the two).
        """
        if action not in ("status", "timeout", "close"):
            raise ValueError(action)
        until = time.monotonic() + seconds if seconds is not None else None
        with self._lock:
            if replace:
                self._faults.clear()
            self._faults.append(_Fault((action, status, sleep), count, until, endpoints))

    def clear_faults(self) -> None:
        """Every later request is answered 204."""
        with self._lock:
            self._faults.clear()

    def close(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ handling

    def _record_failure(self, text: str) -> None:
        with self._lock:
            self.failures.append(text)
            self._lock.notify_all()

    def _next_action(self, endpoint: str) -> tuple:
        """The fault that applies to this request (consumed), else answer 204. Holds the lock."""
        now = time.monotonic()
        self._faults = [f for f in self._faults if (f.count is None or f.count > 0) and (f.until is None or f.until > now)]
        for fault in self._faults:
            if fault.endpoints is None or endpoint in fault.endpoints:
                if fault.count is not None:
                    fault.count -= 1
                return fault.action
        return ("status", 204, 0.0)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        path = handler.path
        name = path.rsplit("/", 1)[-1] if path.startswith("/hooks/") else ""
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        with self._lock:
            endpoint = self._endpoints.get(name)
            index = len(self.attempts)
            attempt = Attempt(
                index=index, endpoint=name, path=path, webhook_id=headers.get("webhook-id"),
                timestamp=headers.get("webhook-timestamp"), signature=headers.get("webhook-signature"), headers=headers,
                body=body, json=parsed, at=time.time(), at_mono=time.monotonic())
            problems: list[str] = []
            if endpoint is None:
                problems.append(f"request to unknown path {path}")
            else:
                for label, secret in {**endpoint.required, **endpoint.extra}.items():
                    attempt.verified[label] = _verifies(secret, body, headers)
                failed = [label for label in endpoint.required if not attempt.verified[label]]
                if failed:
                    problems.append(f"does not verify with {failed} (signature {attempt.signature!r})")
            if parsed is None:
                problems.append("body is not JSON")
            if headers.get("content-type", "").split(";")[0].strip() != "application/json":
                problems.append(f"content-type is {headers.get('content-type')!r}")
            action = self._next_action(name)
            attempt.answer = {"status": action[1], "timeout": "timeout", "close": "close"}[action[0]]
            self.attempts.append(attempt)
            if problems:
                self.failures.append(f"{attempt!r}: " + "; ".join(problems))
            self._in_flight += 1
            self._lock.notify_all()
        try:
            kind, status, sleep = action
            if kind == "close":
                handler.close_connection = True
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if kind == "timeout":
                self._stopping.wait(sleep)
                status = 204
                handler.close_connection = True
            try:
                handler._answer(status)  # type: ignore[attr-defined]
            except OSError:
                handler.close_connection = True  # the daemon gave up on it already
        finally:
            with self._lock:
                self._in_flight -= 1
                self._lock.notify_all()

    # ------------------------------------------------------------------ reading

    def wait_for(self, predicate: Callable[[WebhookReceiver], Any], timeout: float = WAIT_S, what: str = "") -> Any:
        """Blocks until ``predicate(self)`` is truthy (checked under the lock at every recorded
        attempt and at least every 50 ms) and returns its value; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                value = predicate(self)
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"webhook receiver: timed out after {timeout:.1f} s waiting for {what or predicate}; "
                        f"attempts so far:\n" + "\n".join(repr(a) for a in self.attempts[-60:]))
                self._lock.wait(min(left, 0.05))

    @property
    def in_flight(self) -> int:
        """Requests being handled (a sleeping ``timeout`` fault among them)."""
        with self._lock:
            return self._in_flight

    def snapshot(self, endpoint: str | None = None) -> list[Attempt]:
        """Every attempt so far (to ``endpoint``, when given), in arrival order."""
        with self._lock:
            return [a for a in self.attempts if endpoint is None or a.endpoint == endpoint]

    def first_receipts(self, endpoint: str | None = None) -> list[Attempt]:
        """The first attempt of each webhook-id, in arrival order."""
        seen: set[str | None] = set()
        first: list[Attempt] = []
        for attempt in self.snapshot(endpoint):
            if attempt.webhook_id not in seen:
                seen.add(attempt.webhook_id)
                first.append(attempt)
        return first

    def delivered(self, endpoint: str | None = None) -> list[Attempt]:
        """The first 2xx-answered attempt of each webhook-id, in arrival order."""
        seen: set[str | None] = set()
        result: list[Attempt] = []
        for attempt in self.snapshot(endpoint):
            if attempt.succeeded and attempt.webhook_id not in seen:
                seen.add(attempt.webhook_id)
                result.append(attempt)
        return result

    def by_call(self, endpoint: str | None = None, *, delivered_only: bool = True) -> dict[str, list[Attempt]]:
        """Per call cid, its messages (first 2xx attempt, or first attempt) in arrival order."""
        calls: dict[str, list[Attempt]] = {}
        for attempt in (self.delivered(endpoint) if delivered_only else self.first_receipts(endpoint)):
            calls.setdefault(attempt.call_cid or "", []).append(attempt)
        return calls


def _verifies(secret: str, body: bytes, headers: dict[str, str]) -> bool:
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    except Exception:  # noqa: BLE001 - a malformed signature header is a failure to verify
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Checks shared by the tests


def order_violations(attempts: list[Attempt]) -> list[str]:
    """Per-call order among first receipts: a call's seq N+1 is never received (for the first
    time) before seq N was received at least once. ``attempts`` in arrival order, any calls."""
    problems: list[str] = []
    seen: dict[str, set[int]] = {}
    first_of: set[str | None] = set()
    for attempt in attempts:
        if attempt.webhook_id in first_of:
            continue
        first_of.add(attempt.webhook_id)
        cid, seq = attempt.call_cid, attempt.seq
        if cid is None or not isinstance(seq, int):
            continue
        got = seen.setdefault(cid, set())
        missing = [n for n in range(1, seq) if n not in got]
        if missing:
            problems.append(f"{attempt!r} first received before seq {missing} of {cid}")
        got.add(seq)
    return problems


def duplicate_violations(attempts: list[Attempt]) -> list[str]:
    """Attempts with the same webhook-id must carry identical bodies, and one (call, seq) must
    have one webhook-id."""
    problems: list[str] = []
    bodies: dict[str | None, bytes] = {}
    ids: dict[tuple[str | None, int | None], str | None] = {}
    for attempt in attempts:
        before = bodies.setdefault(attempt.webhook_id, attempt.body)
        if before != attempt.body:
            problems.append(f"{attempt!r}: body differs from an earlier attempt of the same id:\n{before!r}\n{attempt.body!r}")
        key = (attempt.call_cid, attempt.seq)
        known = ids.setdefault(key, attempt.webhook_id)
        if known != attempt.webhook_id:
            problems.append(f"{attempt!r}: {key} was sent before as {known}")
    return problems
