"""Asyncio Janus VideoRoom clients with real VP8 media (aiortc), over Janus's HTTP API.

``Publisher`` joins a VideoRoom room as a publisher and sends a generated video track
(a moving gradient, VP8 only); ``Subscriber`` subscribes to one publisher's feed and
counts the frames aiortc decodes from it. ``move`` closes both on one Janus and
reconnects them to another room (another Janus), timing the first decoded frame.

Signalling (``JanusSession``): one Janus session per client over the HTTP transport:
``POST {http_url}`` (create), ``POST {http_url}/SESSION`` (attach, keepalive, destroy),
``POST {http_url}/SESSION/HANDLE`` (message, detach), and a long-poll
``GET {http_url}/SESSION?token=…&maxev=10`` running the whole time. With Janus's core
``token_auth`` every request carries ``token`` (and the long-poll ``?token=``); the
VideoRoom ``join`` carries the same token in its body for the room's ``allowed`` list.
A ``keepalive`` is sent every 25 s. When the long-poll or a request fails at the
connection level (e.g. Janus was SIGKILLed), ``lost`` is set at once: aiortc itself
notices a dead Janus only after ~30 s of failed ICE consent, so watch ``lost``.

Media: ``RTCConfiguration(iceServers=[])`` (aiortc otherwise uses a public STUN
server); host candidates come from ``aioice.ice.get_host_addresses``, which the
caller limits with ``host_candidates(address)`` (inside the network namespace of
``netns.py``: the veth address, the one Janus is given as ``interface`` and
``ice_enforce_list``). The subscriber answers Janus's offer as DTLS server
(``a=setup:passive``): as DTLS client its first media sometimes came 1 s late.
Janus's candidates are taken from its SDP and from ``trickle`` events.

Every wait is bounded (``timeout``, default 10 s per ``start``); nothing sleeps to
wait. ``close()`` sends ``leave``, ``detach`` and ``destroy`` (skipped once Janus is
lost, each bounded by 1 s), closes the peer connection and stops the tracks.

Typical use (inside the namespace)::

    with host_candidates("10.87.3.5"):
        publisher = await Publisher(janus.http_url, 1234, "tok-a").start()
        subscriber = await Subscriber(janus.http_url, 1234, "tok-b", publisher.feed_id).start()
        await subscriber.wait_frames(10, timeout=10)
        moved = await move(publisher, subscriber, other.http_url, 5678)
        await moved.subscriber.wait_frames(10, timeout=10)
        await moved.close()

Only aiortc (and its av) beside the standard library; ``JanusError`` and the
transaction ids are ``janus_harness``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import aioice.ice
from aiortc import (
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
    VideoStreamTrack,
)
from aiortc.mediastreams import MediaStreamError
from aiortc.sdp import candidate_from_sdp
from av import VideoFrame

from janus_harness import LONG_POLL_HOLD_S, VIDEOROOM, JanusError, new_transaction, raise_for_error

log = logging.getLogger("janus_media")

DEFAULT_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 5.0
CLOSE_REQUEST_TIMEOUT_S = 1.0
KEEPALIVE_INTERVAL_S = 25.0
PC_CLOSE_TIMEOUT_S = 5.0


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


# ---------------------------------------------------------------------- media helpers


@contextlib.contextmanager
def host_candidates(address: str) -> Iterator[None]:
    """Make aioice offer ``address`` as the only host candidate (restored on exit).

    The same replacement of ``aioice.ice.get_host_addresses`` as conftest.py's
    ``loopback_ice`` fixture, with the namespace's veth address instead of 127.0.0.1."""
    original = aioice.ice.get_host_addresses
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: [address]
    try:
        yield
    finally:
        aioice.ice.get_host_addresses = original


def new_peer_connection() -> RTCPeerConnection:
    """A peer connection with no STUN/TURN server."""
    return RTCPeerConnection(RTCConfiguration(iceServers=[]))


def vp8_codecs() -> list:
    return [c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType.lower() == "video/vp8"]


def sdp_video_codec(sdp: str) -> str | None:
    """The first (preferred) codec of the first ``m=video`` section of ``sdp``, e.g. ``VP8``."""
    payload = None
    for line in sdp.splitlines():
        if line.startswith("m=video"):
            fields = line.split()
            payload = fields[3] if len(fields) > 3 else None
        elif payload and line.startswith(f"a=rtpmap:{payload} "):
            return line.split(" ", 1)[1].split("/")[0]
    return None


class PatternVideoTrack(VideoStreamTrack):
    """30 fps yuv420p frames of a gradient that moves 4 levels a frame, with changing chroma."""

    def __init__(self, width: int = 320, height: int = 240) -> None:
        super().__init__()
        self.width = width
        self.height = height
        self.frames_sent = 0

    async def recv(self) -> VideoFrame:
        pts, time_base = await self.next_timestamp()
        n = self.frames_sent
        frame = VideoFrame(self.width, self.height, "yuv420p")
        luma, cb, cr = frame.planes
        row = bytes((x + 4 * n) & 0xFF for x in range(luma.line_size))
        luma.update(row * (luma.buffer_size // luma.line_size))
        cb.update(bytes([(64 + 2 * n) & 0xFF]) * cb.buffer_size)
        cr.update(bytes([(192 - 3 * n) & 0xFF]) * cr.buffer_size)
        frame.pts = pts
        frame.time_base = time_base
        self.frames_sent += 1
        return frame


async def _first_of(wanted: asyncio.Event, *failures: tuple[asyncio.Event, Callable[[], str]]) -> None:
    """Wait until ``wanted`` is set; raise ``JanusLost`` if one of ``failures`` is set first."""
    waiters = [asyncio.ensure_future(wanted.wait())] + [asyncio.ensure_future(e.wait()) for e, _ in failures]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    if not wanted.is_set():
        for event, reason in failures:
            if event.is_set():
                raise JanusLost(reason())


class _Client:
    """What Publisher and Subscriber share: the session, one VideoRoom handle, one peer connection."""

    role = "client"

    def __init__(self, http_url: str, room: int | str, token: str | None, *, pin: str | None, timeout: float) -> None:
        self.http_url = http_url
        self.room = room
        self.token = token
        self.pin = pin
        self.timeout = timeout
        self.session = JanusSession(http_url, token)
        self.handle_id: int | None = None
        self.pc: RTCPeerConnection | None = None
        self.webrtcup = asyncio.Event()
        self.hungup = asyncio.Event()
        self.hangup_reason: str | None = None
        self.started_at: float | None = None  # time.monotonic() when start() began
        self.webrtcup_at: float | None = None
        self.video_codec: str | None = None
        self._remote_set = False
        self._pending_candidates: list[dict] = []
        self._closed = False

    @property
    def lost(self) -> asyncio.Event:
        """Set as soon as the signalling to Janus fails (e.g. Janus died)."""
        return self.session.lost

    async def _open(self) -> None:
        self.started_at = time.monotonic()
        await self.session.create()
        self.handle_id = await self.session.attach(VIDEOROOM)
        self.session.on_event(self.handle_id, self._on_event)

    def _on_event(self, event: dict) -> None:
        kind = event.get("janus")
        if kind == "webrtcup":
            self.webrtcup_at = time.monotonic()
            self.webrtcup.set()
        elif kind == "hangup":
            self.hangup_reason = event.get("reason")
            self.hungup.set()
        elif kind == "trickle":
            candidate = event.get("candidate") or {}
            if self._remote_set:
                asyncio.ensure_future(self._add_candidate(candidate))
            else:
                self._pending_candidates.append(candidate)

    async def _add_candidate(self, candidate: dict) -> None:
        text = candidate.get("candidate")
        if not text or candidate.get("completed") or self.pc is None:
            return
        parsed = candidate_from_sdp(text.split(":", 1)[1] if text.startswith("candidate:") else text)
        parsed.sdpMid = candidate.get("sdpMid")
        parsed.sdpMLineIndex = candidate.get("sdpMLineIndex")
        try:
            await self.pc.addIceCandidate(parsed)
        except Exception:  # noqa: BLE001 - a bad remote candidate is Janus's problem, not fatal here
            log.exception("could not add Janus candidate %r", candidate)

    async def _remote_description(self, jsep: dict) -> None:
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=jsep["sdp"], type=jsep["type"]))
        self._remote_set = True
        for candidate in self._pending_candidates:
            await self._add_candidate(candidate)
        self._pending_candidates.clear()

    async def _wait_webrtcup(self) -> None:
        await _first_of(
            self.webrtcup,
            (self.session.lost, lambda: f"{self.role}: Janus lost before webrtcup: {self.session.lost_reason}"),
            (self.hungup, lambda: f"{self.role}: Janus hung up before webrtcup: {self.hangup_reason}"),
        )

    async def close(self) -> None:
        """Leave the room, detach, destroy the session (skipped when Janus is lost), close the
        peer connection. Bounded, idempotent, never raises for a dead Janus."""
        if self._closed:
            return
        self._closed = True
        await self._stop_media()
        if self.handle_id is not None and self.session.session_id is not None and not self.session.lost.is_set():
            with contextlib.suppress(JanusLost, JanusError, TimeoutError, OSError):
                await self.session.request({"janus": "message", "body": {"request": "leave"}}, self.handle_id,
                                           timeout=CLOSE_REQUEST_TIMEOUT_S)
            if not self.session.lost.is_set():
                with contextlib.suppress(JanusLost, JanusError, TimeoutError, OSError):
                    await self.session.detach(self.handle_id)
        await self.session.close()
        if self.pc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.pc.close(), PC_CLOSE_TIMEOUT_S)

    async def _stop_media(self) -> None:
        pass

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def start(self):  # pragma: no cover - overridden
        raise NotImplementedError


class Publisher(_Client):
    """A VideoRoom publisher sending ``PatternVideoTrack`` as VP8.

    ``feed_id``: the publisher's id in the room, chosen by the caller (sent as ``id`` in
    ``join``, so subscribers can know it in advance) or, when None, by Janus.
    ``pin``: the room's pin, when it has one (sent in ``join``).

    After ``start()``: ``feed_id`` (the publisher's id in the room, for subscribers),
    ``video_codec`` (as Janus configured it, ``vp8``), ``track.frames_sent``,
    ``webrtcup_at`` / ``started_at`` (``time.monotonic()``)."""

    role = "publisher"

    def __init__(
        self,
        http_url: str,
        room: int | str,
        token: str | None,
        *,
        display: str = "publisher",
        width: int = 320,
        height: int = 240,
        pin: str | None = None,
        feed_id: int | str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(http_url, room, token, pin=pin, timeout=timeout)
        self.display = display
        self.requested_feed_id = feed_id
        self.width = width
        self.height = height
        self.feed_id: int | str | None = feed_id
        self.track: PatternVideoTrack | None = None

    async def start(self) -> "Publisher":
        """Session, attach, ``join`` as publisher (with ``token``), ``publish`` a VP8 offer,
        apply Janus's answer, wait for ``webrtcup``. On any failure the client is closed and
        the error raised: ``JanusError`` (403 unknown token, 426 no such room, 433 not in
        ``allowed``…), ``JanusLost``, or ``TimeoutError`` after ``timeout``."""
        try:
            async with asyncio.timeout(self.timeout):
                await self._open()
                join = {"request": "join", "ptype": "publisher", "room": self.room, "display": self.display}
                if self.requested_feed_id is not None:
                    join["id"] = self.requested_feed_id
                if self.token is not None:
                    join["token"] = self.token
                if self.pin is not None:
                    join["pin"] = self.pin
                joined = (await self.session.send(self.handle_id, join, timeout=self.timeout))["plugindata"]["data"]
                if joined.get("videoroom") != "joined":
                    raise JanusError(None, f"unexpected answer to join: {joined}", joined)
                self.feed_id = joined["id"]
                self.pc = new_peer_connection()
                self.track = PatternVideoTrack(self.width, self.height)
                transceiver = self.pc.addTransceiver(self.track, direction="sendonly")
                transceiver.setCodecPreferences(vp8_codecs())
                await self.pc.setLocalDescription(await self.pc.createOffer())
                offer = {"type": "offer", "sdp": self.pc.localDescription.sdp}
                configured = await self.session.send(self.handle_id, {"request": "publish"}, jsep=offer,
                                                     timeout=self.timeout)
                data = configured["plugindata"]["data"]
                if data.get("configured") != "ok" or "jsep" not in configured:
                    raise JanusError(None, f"unexpected answer to publish: {configured}", configured)
                self.video_codec = data.get("video_codec") or sdp_video_codec(configured["jsep"]["sdp"])
                await self._remote_description(configured["jsep"])
                await self._wait_webrtcup()
        except BaseException:
            await self.close()
            raise
        return self

    async def _stop_media(self) -> None:
        if self.track is not None:
            self.track.stop()


class Subscriber(_Client):
    """A VideoRoom subscriber to one feed, counting decoded video frames.

    ``frames`` (decoded so far), ``first_frame`` (an ``asyncio.Event``), ``first_frame_at``
    (``time.monotonic()``), ``wait_frames(n)``, ``video_codec`` (of Janus's offer, ``VP8``),
    ``frame_size`` (width, height of the last frame), ``distinct_samples`` (how many
    different luma values the centre pixel took: > 1 means the picture changes)."""

    role = "subscriber"

    def __init__(
        self,
        http_url: str,
        room: int | str,
        token: str | None,
        feed_id: int | str,
        *,
        pin: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(http_url, room, token, pin=pin, timeout=timeout)
        self.feed_id = feed_id
        self.frames = 0
        self.first_frame = asyncio.Event()
        self.first_frame_at: float | None = None
        self.frame_size: tuple[int, int] | None = None
        self._samples: set[int] = set()
        self._reader: asyncio.Task | None = None
        self._frame_waiters: list[tuple[int, asyncio.Future]] = []

    @property
    def distinct_samples(self) -> int:
        return len(self._samples)

    async def start(self) -> "Subscriber":
        """Session, attach, ``join`` as subscriber to ``feed_id`` (with ``token``), answer Janus's
        offer as DTLS server (``a=setup:passive``), ``start``, wait for ``webrtcup``. Errors as
        ``Publisher.start`` (428: no such feed yet)."""
        try:
            async with asyncio.timeout(self.timeout):
                await self._open()
                join = {"request": "join", "ptype": "subscriber", "room": self.room,
                        "streams": [{"feed": self.feed_id}]}
                if self.token is not None:
                    join["token"] = self.token
                if self.pin is not None:
                    join["pin"] = self.pin
                attached = await self.session.send(self.handle_id, join, timeout=self.timeout)
                data = attached["plugindata"]["data"]
                if data.get("videoroom") != "attached" or "jsep" not in attached:
                    raise JanusError(None, f"unexpected answer to subscriber join: {attached}", attached)
                self.video_codec = sdp_video_codec(attached["jsep"]["sdp"])
                self.pc = new_peer_connection()
                self.pc.on("track", self._on_track)
                await self._remote_description(attached["jsep"])
                for transceiver in self.pc.getTransceivers():
                    # Janus offers actpass; answer passive, i.e. be the DTLS server (aiortc would pick client).
                    transceiver.receiver.transport._set_role("server")
                await self.pc.setLocalDescription(await self.pc.createAnswer())
                answer_sdp = self.pc.localDescription.sdp
                if "a=setup:passive" not in answer_sdp:
                    raise RuntimeError("aiortc did not answer a=setup:passive")
                await self.session.send(self.handle_id, {"request": "start"},
                                        jsep={"type": "answer", "sdp": answer_sdp}, timeout=self.timeout)
                await self._wait_webrtcup()
        except BaseException:
            await self.close()
            raise
        return self

    def _on_track(self, track) -> None:
        if track.kind == "video" and self._reader is None:
            self._reader = asyncio.ensure_future(self._read(track))

    async def _read(self, track) -> None:
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            self.frames += 1
            if self.first_frame_at is None:
                self.first_frame_at = time.monotonic()
                self.first_frame.set()
            self.frame_size = (frame.width, frame.height)
            if len(self._samples) < 256:
                luma = frame.planes[0]
                self._samples.add(bytes(luma)[(frame.height // 2) * luma.line_size + frame.width // 2])
            for count, future in list(self._frame_waiters):
                if self.frames >= count and not future.done():
                    future.set_result(self.frames)

    async def wait_frames(self, count: int, timeout: float = DEFAULT_TIMEOUT_S) -> int:
        """Wait until at least ``count`` frames were decoded; returns the count. ``TimeoutError``
        after ``timeout``; ``JanusLost`` if the signalling to Janus fails first."""
        if self.frames >= count:
            return self.frames
        future = asyncio.get_running_loop().create_future()
        entry = (count, future)
        self._frame_waiters.append(entry)
        reached = asyncio.Event()
        future.add_done_callback(lambda _: reached.set())
        try:
            async with asyncio.timeout(timeout):
                await _first_of(reached, (self.session.lost, lambda: f"Janus lost after {self.frames} frames: "
                                                                    f"{self.session.lost_reason}"))
        except TimeoutError:
            raise TimeoutError(f"{self.frames} of {count} frames decoded within {timeout} s") from None
        finally:
            self._frame_waiters.remove(entry)
        return self.frames

    async def _stop_media(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader


# ---------------------------------------------------------------------- pairs and moving


async def room_publishers(http_url: str, room: int | str, token: str | None,
                          timeout: float = DEFAULT_TIMEOUT_S) -> list[dict]:
    """The room's participants that publish (``listparticipants``: ``id``, ``display``,
    ``publisher``…), asked over a short-lived session with ``token``."""
    session = JanusSession(http_url, token)
    try:
        async with asyncio.timeout(timeout):
            await session.create()
            handle_id = await session.attach(VIDEOROOM)
            answer = await session.send(handle_id, {"request": "listparticipants", "room": room}, timeout=timeout)
            participants = answer["plugindata"]["data"].get("participants", [])
            return [p for p in participants if p.get("publisher")]
    finally:
        await session.close()



async def connect_pair(
    http_url: str,
    room: int | str,
    publisher_token: str | None,
    subscriber_token: str | None,
    *,
    display: str = "publisher",
    timeout: float = DEFAULT_TIMEOUT_S,
) -> tuple[Publisher, Subscriber]:
    """A publisher in ``room`` and a subscriber to its feed, both past ``webrtcup``.

    The subscriber joins once the publisher is up (before that Janus answers 428)."""
    publisher = await Publisher(http_url, room, publisher_token, display=display, timeout=timeout).start()
    try:
        subscriber = await Subscriber(http_url, room, subscriber_token, publisher.feed_id, timeout=timeout).start()
    except BaseException:
        await publisher.close()
        raise
    return publisher, subscriber


@dataclass
class Moved:
    """The pair after ``move``, with ``time.monotonic()`` stamps of the move."""

    publisher: Publisher
    subscriber: Subscriber
    started_at: float  # move() began (old clients closing, new ones connecting)
    published_at: float  # the new publisher's webrtcup
    subscribed_at: float  # the new subscriber's webrtcup
    first_frame_at: float  # the new subscriber's first decoded frame

    def seconds(self, since: float | None = None) -> dict[str, float]:
        """Each stamp in seconds after ``since`` (default ``started_at``)."""
        base = self.started_at if since is None else since
        return {
            "move_started": round(self.started_at - base, 4),
            "published": round(self.published_at - base, 4),
            "subscribed": round(self.subscribed_at - base, 4),
            "first_frame": round(self.first_frame_at - base, 4),
        }

    async def close(self) -> None:
        await asyncio.gather(self.publisher.close(), self.subscriber.close())


async def move(
    publisher: Publisher,
    subscriber: Subscriber,
    http_url: str,
    room: int | str,
    publisher_token: str | None = None,
    subscriber_token: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> Moved:
    """Close ``publisher`` and ``subscriber`` (on their old Janus; quick when it is dead) and
    connect a new pair to ``room`` on ``http_url`` (tokens default to the old ones); return
    once the new subscriber decoded its first frame (bounded by ``timeout`` overall).

    The old pair is closed concurrently with the new connection, so a dead Janus costs
    nothing; ``Moved`` carries the stamps to measure from e.g. the moment of a kill."""
    started_at = time.monotonic()
    closing = asyncio.ensure_future(
        asyncio.gather(publisher.close(), subscriber.close(), return_exceptions=True)
    )
    new_publisher: Publisher | None = None
    new_subscriber: Subscriber | None = None
    try:
        async with asyncio.timeout(timeout):
            new_publisher = await Publisher(
                http_url, room, publisher_token if publisher_token is not None else publisher.token,
                display=publisher.display, width=publisher.width, height=publisher.height,
                feed_id=publisher.requested_feed_id, timeout=timeout,
            ).start()
            new_subscriber = await Subscriber(
                http_url, room, subscriber_token if subscriber_token is not None else subscriber.token,
                new_publisher.feed_id, timeout=timeout,
            ).start()
            await _first_of(new_subscriber.first_frame,
                            (new_subscriber.session.lost, lambda: "new Janus lost before the first frame"))
            await closing
    except BaseException:
        closers = [c.close() for c in (new_publisher, new_subscriber) if c is not None]
        await asyncio.gather(*closers, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(closing, PC_CLOSE_TIMEOUT_S + 3 * CLOSE_REQUEST_TIMEOUT_S)
        raise
    return Moved(
        publisher=new_publisher,
        subscriber=new_subscriber,
        started_at=started_at,
        published_at=new_publisher.webrtcup_at,
        subscribed_at=new_subscriber.webrtcup_at,
        first_frame_at=new_subscriber.first_frame_at,
    )
