"""Asyncio Janus VideoRoom clients with real VP8 media (aiortc), over Janus's HTTP API.

``Publisher`` joins a VideoRoom room as a publisher and sends a generated video track
(a moving gradient, VP8 only); ``Subscriber`` subscribes to one publisher's feed and
counts the frames aiortc decodes from it. ``move`` closes both on one Janus and
reconnects them to another room (another Janus), timing the first decoded frame.

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

Signalling is ``janus_session``'s (``JanusSession``: one Janus session per client
over the HTTP transport, with a long-poll and keepalives; its ``lost`` is set as soon
as Janus stops answering), the aiortc plumbing ``janus_peer``'s (``host_candidates``,
``PatternVideoTrack``, the shared ``_Client``); their names are importable from here too.

Only aiortc (and its av) beside the standard library; ``JanusError`` and the
transaction ids are ``janus_harness``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from aiortc.mediastreams import MediaStreamError

# Also re-exported, so that ``from janus_media import …`` keeps working for every name
# this module had before the session and peer-connection code moved out.
from janus_api import LONG_POLL_HOLD_S, JanusError, new_transaction, raise_for_error  # noqa: F401
from janus_config import VIDEOROOM
from janus_peer import (  # noqa: F401
    PC_CLOSE_TIMEOUT_S,
    PatternVideoTrack,
    _Client,
    _first_of,
    host_candidates,
    new_peer_connection,
    sdp_video_codec,
    vp8_codecs,
)
from janus_session import (  # noqa: F401
    CLOSE_REQUEST_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    KEEPALIVE_INTERVAL_S,
    REQUEST_TIMEOUT_S,
    JanusLost,
    JanusSession,
    http_request,
    log,
)


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
