"""The aiortc side of the Janus VideoRoom clients: peer connections, the video track,
and ``_Client``, what ``janus_media.Publisher`` and ``janus_media.Subscriber`` share.

Media: ``RTCConfiguration(iceServers=[])`` (aiortc otherwise uses a public STUN
server); host candidates come from ``aioice.ice.get_host_addresses``, which the
caller limits with ``host_candidates(address)`` (inside the network namespace of
``netns.py``: the veth address, the one Janus is given as ``interface`` and
``ice_enforce_list``). The subscriber answers Janus's offer as DTLS server
(``a=setup:passive``): as DTLS client its first media sometimes came 1 s late.
Janus's candidates are taken from its SDP and from ``trickle`` events.

``_Client.close()`` sends ``leave``, ``detach`` and ``destroy`` (skipped once Janus is
lost, each bounded by 1 s), closes the peer connection and stops the tracks.
Every public name here is also importable from ``janus_media``.

Only aiortc (and its av) beside the standard library.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Callable, Iterator

import aioice.ice
from aiortc import (
    RTCConfiguration,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
    VideoStreamTrack,
)
from aiortc.sdp import candidate_from_sdp
from av import VideoFrame

from janus_api import JanusError
from janus_config import VIDEOROOM
from janus_session import CLOSE_REQUEST_TIMEOUT_S, JanusLost, JanusSession

# The logger keeps the name it had before janus_media.py was split.
log = logging.getLogger("janus_media")

PC_CLOSE_TIMEOUT_S = 5.0


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
