"""An asyncio Janus client session over Janus's HTTP API (signalling only, no media).

Signalling (``JanusSession``): one Janus session per client over the HTTP transport:
``POST {http_url}`` (create), ``POST {http_url}/SESSION`` (attach, keepalive, destroy),
``POST {http_url}/SESSION/HANDLE`` (message, detach), and a long-poll
``GET {http_url}/SESSION?token=…&maxev=10`` running the whole time. With Janus's core
``token_auth`` every request carries ``token`` (and the long-poll ``?token=``); the
VideoRoom ``join`` carries the same token in its body for the room's ``allowed`` list.
A ``keepalive`` is sent every 25 s. When the long-poll or a request fails at the
connection level (e.g. Janus was SIGKILLed), ``lost`` is set at once: aiortc itself
notices a dead Janus only after ~30 s of failed ICE consent, so watch ``lost``.

``http_request`` is the one HTTP request it is built on (asyncio streams, cancellable).
Every name here is also importable from ``janus_media``.

Only the standard library; ``JanusError`` and the transaction ids are ``janus_harness``'s
(defined in ``janus_api``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import urllib.parse
from typing import Any, Callable

from janus_api import LONG_POLL_HOLD_S, JanusError, new_transaction, raise_for_error
from janus_config import VIDEOROOM

# The logger keeps the name it had before janus_media.py was split.
log = logging.getLogger("janus_media")

DEFAULT_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 5.0
CLOSE_REQUEST_TIMEOUT_S = 1.0
KEEPALIVE_INTERVAL_S = 25.0


class JanusLost(ConnectionError):
    """The Janus session is gone: the long-poll or a request failed, or Janus said so."""


# ---------------------------------------------------------------------- HTTP


async def http_request(method: str, url: str, body: Any = None, timeout: float = REQUEST_TIMEOUT_S) -> tuple[int, bytes]:
    """One HTTP/1.1 request (``Connection: close``) with asyncio streams; (status, body).

    Cancellable at any point (unlike a urllib call on a thread), which the long-poll
    needs. Raises ``ConnectionError``/``OSError`` for connection failures and
    ``TimeoutError`` past ``timeout``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"only http:// URLs: {url!r}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    data = b"" if body is None else json.dumps(body).encode()

    async def exchange() -> bytes:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        try:
            head = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close",
                    "Accept: application/json"]
            if body is not None:
                head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            await writer.drain()
            return await reader.read()  # until the server closes
        finally:
            writer.close()

    async with asyncio.timeout(timeout):
        raw = await exchange()
    header, sep, payload = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ConnectionError(f"{method} {url}: connection closed without a complete answer ({len(raw)} bytes)")
    lines = header.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        raise ConnectionError(f"{method} {url}: bad status line {lines[0]!r}") from None
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        payload = _unchunk(payload)
    elif "content-length" in headers:
        payload = payload[: int(headers["content-length"])]
    return status, payload


def _unchunk(payload: bytes) -> bytes:
    out = bytearray()
    while payload:
        size_line, _, rest = payload.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        payload = rest[size + 2:]
    return bytes(out)


# ---------------------------------------------------------------------- Janus session


class JanusSession:
    """One Janus client session: requests, the long-poll, keepalives, events per handle.

    Events that answer an asynchronous request (they carry its ``transaction``) are kept
    for ``send``; every event from a handle is first offered to the handler registered
    with ``on_event`` (``webrtcup``, ``hangup``, ``trickle``, …)."""

    def __init__(
        self,
        http_url: str,
        token: str | None,
        *,
        request_timeout: float = REQUEST_TIMEOUT_S,
        keepalive_interval: float = KEEPALIVE_INTERVAL_S,
    ) -> None:
        self.http_url = http_url.rstrip("/")
        self.token = token
        self.request_timeout = request_timeout
        self.keepalive_interval = keepalive_interval
        self.session_id: int | None = None
        self.lost = asyncio.Event()
        self.lost_reason: str | None = None
        self.lost_at: float | None = None  # time.monotonic() when ``lost`` was set
        self._answers: dict[str, dict] = {}
        self._changed = asyncio.Condition()
        self._handlers: dict[int, Callable[[dict], None]] = {}
        self._tasks: list[asyncio.Task] = []
        self._closing = False

    # -- requests

    def _url(self, handle_id: int | None = None) -> str:
        url = self.http_url
        if self.session_id is not None:
            url += f"/{self.session_id}"
            if handle_id is not None:
                url += f"/{handle_id}"
        return url

    async def request(self, body: dict, handle_id: int | None = None, timeout: float | None = None) -> dict:
        """POST ``body`` (``transaction`` and ``token`` added) to the session or a handle;
        Janus's JSON answer, errors included. A connection failure sets ``lost``."""
        request = dict(body)
        request.setdefault("transaction", new_transaction())
        if self.token is not None:
            request["token"] = self.token
        try:
            status, data = await http_request("POST", self._url(handle_id), request,
                                              timeout=timeout or self.request_timeout)
        except (OSError, ConnectionError) as error:
            if self.session_id is not None:
                self._set_lost(f"{request.get('janus')} failed: {error!r}")
            raise JanusLost(f"{request.get('janus')} to {self.http_url}: {error!r}") from error
        try:
            return json.loads(data)
        except ValueError:
            raise JanusError(None, f"HTTP {status}, not JSON: {data[:200]!r}", data) from None

    async def create(self) -> int:
        """Create the session (raises ``JanusError`` 403 for a token Janus does not know)."""
        answer = raise_for_error(await self.request({"janus": "create"}))
        self.session_id = answer["data"]["id"]
        self._tasks = [
            asyncio.ensure_future(self._poll_loop()),
            asyncio.ensure_future(self._keepalive_loop()),
        ]
        return self.session_id

    async def attach(self, plugin: str = VIDEOROOM) -> int:
        answer = raise_for_error(await self.request({"janus": "attach", "plugin": plugin}))
        return answer["data"]["id"]

    def on_event(self, handle_id: int, handler: Callable[[dict], None]) -> None:
        """Call ``handler(event)`` for every event whose ``sender`` is ``handle_id``."""
        self._handlers[handle_id] = handler

    async def message(self, handle_id: int, body: dict, jsep: dict | None = None,
                      transaction: str | None = None) -> dict:
        """A plugin message; the synchronous answer (``ack`` or ``success``), errors raised."""
        request: dict[str, Any] = {"janus": "message", "body": body,
                                   "transaction": transaction or new_transaction()}
        if jsep is not None:
            request["jsep"] = jsep
        return raise_for_error(await self.request(request, handle_id))

    async def send(self, handle_id: int, body: dict, jsep: dict | None = None,
                   timeout: float = DEFAULT_TIMEOUT_S) -> dict:
        """A plugin message and its answer: the ``success`` of a synchronous request, or the
        ``event`` (same transaction) of an asynchronous one. Plugin errors raise ``JanusError``."""
        transaction = new_transaction()
        answer = await self.message(handle_id, body, jsep, transaction)
        if answer.get("janus") != "ack":
            return answer
        return raise_for_error(await self.wait_answer(transaction, timeout))

    async def wait_answer(self, transaction: str, timeout: float = DEFAULT_TIMEOUT_S) -> dict:
        """The event carrying ``transaction``; ``JanusLost`` when the session is lost first."""
        async with asyncio.timeout(timeout):
            async with self._changed:
                while transaction not in self._answers:
                    if self.lost.is_set():
                        raise JanusLost(self.lost_reason or "session lost")
                    await self._changed.wait()
                return self._answers.pop(transaction)

    async def detach(self, handle_id: int, timeout: float = CLOSE_REQUEST_TIMEOUT_S) -> dict:
        self._handlers.pop(handle_id, None)
        return await self.request({"janus": "detach"}, handle_id, timeout=timeout)

    async def close(self, timeout: float = CLOSE_REQUEST_TIMEOUT_S) -> None:
        """Stop the long-poll and keepalives, then ``destroy`` the session unless it is lost."""
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        if self.session_id is not None and not self.lost.is_set():
            with contextlib.suppress(JanusLost, JanusError, TimeoutError, OSError):
                await self.request({"janus": "destroy"}, timeout=timeout)

    # -- background

    def _set_lost(self, reason: str) -> None:
        if self.lost.is_set() or self._closing:
            return
        self.lost_reason = reason
        self.lost_at = time.monotonic()
        self.lost.set()
        log.info("session %s on %s lost: %s", self.session_id, self.http_url, reason)
        asyncio.ensure_future(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _poll_loop(self) -> None:
        while True:
            query = {"maxev": "10", "rid": str(int(time.time() * 1000))}
            if self.token is not None:
                query["token"] = self.token
            url = f"{self._url()}?{urllib.parse.urlencode(query)}"
            try:
                status, data = await http_request("GET", url, timeout=LONG_POLL_HOLD_S + 10)
                if status != 200:
                    raise ConnectionError(f"HTTP {status} {data[:200]!r}")
                answer = json.loads(data)
            except asyncio.CancelledError:
                raise
            except (OSError, ConnectionError, TimeoutError, ValueError) as error:
                self._set_lost(f"long poll failed: {error!r}")
                return
            events = answer if isinstance(answer, list) else [answer]
            await self._dispatch(events)
            if self.lost.is_set():
                return

    async def _dispatch(self, events: list[dict]) -> None:
        keep = []
        for event in events:
            kind = event.get("janus")
            if kind == "keepalive":
                continue
            if kind in ("timeout", "error") and "sender" not in event:
                self._set_lost(f"Janus said {json.dumps(event)[:300]}")
                continue
            handler = self._handlers.get(event.get("sender"))
            if handler is not None:
                try:
                    handler(event)
                except Exception:  # noqa: BLE001 - a handler bug must not stop the long-poll
                    log.exception("event handler failed for %s", event)
            if "transaction" in event and kind in ("event", "success", "error"):
                keep.append(event)
        if keep:
            async with self._changed:
                for event in keep:
                    self._answers[event["transaction"]] = event
                self._changed.notify_all()

    async def _keepalive_loop(self) -> None:
        while True:
            await asyncio.sleep(self.keepalive_interval)  # a period, not a wait for a condition
            try:
                answer = await self.request({"janus": "keepalive"})
            except (JanusLost, JanusError, TimeoutError):
                return
            if answer.get("janus") == "error":
                self._set_lost(f"keepalive refused: {answer.get('error')}")
                return
