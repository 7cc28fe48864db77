"""Real-peer end-to-end tests: two aiortc peers signal through the daemon.

The peers speak the PeerJS wire format (OFFER / ANSWER / CANDIDATE envelopes,
payloads shaped like the peerjs 1.5 client's) over the daemon's WebSocket,
then open an RTCDataChannel over loopback and exchange one message each way.
Every relayed envelope is checked: ``src`` stamped with the sender's id,
``dst`` the receiver, keys exactly ``type, src, dst, payload`` in that order,
and the payload unchanged.

All waiting is on events, bounded by asyncio timeouts; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import pytest
from aiortc import (
    RTCConfiguration,
    RTCDataChannel,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.sdp import candidate_from_sdp
from websockets.asyncio.client import ClientConnection, connect

if TYPE_CHECKING:
    from conftest import Switchboard

TEST_TIMEOUT_S = 30.0
RECV_TIMEOUT_S = 10.0
KEY = "peerjs"
LABEL = "chat"
ENVELOPE_KEYS = ["type", "src", "dst", "payload"]

pytestmark = pytest.mark.usefixtures("loopback_ice")


# --------------------------------------------------------------------------- signaling


def fetch_peer_id(daemon: Switchboard) -> str:
    """GET ``/peerjs/id`` and return the fresh id (a UUID served as text/html)."""
    with urllib.request.urlopen(f"{daemon.http_base}/{KEY}/id", timeout=RECV_TIMEOUT_S) as resp:
        assert resp.status == 200
        content_type = resp.headers.get("Content-Type", "")
        body = resp.read().decode("utf-8")
    assert content_type.startswith("text/html"), content_type
    assert str(uuid.UUID(body)) == body, f"id body is not a canonical UUID: {body!r}"
    return body


@dataclass
class SignalingPeer:
    """One PeerJS signaling connection: an id, its WebSocket and its RTCPeerConnection."""

    name: str
    peer_id: str
    ws: ClientConnection | None = None
    pc: RTCPeerConnection = field(
        default_factory=lambda: RTCPeerConnection(RTCConfiguration(iceServers=[]))
    )
    received: list[dict[str, Any]] = field(default_factory=list)

    async def connect(self, daemon: Switchboard) -> None:
        """Open the WebSocket and require ``{"type":"OPEN"}`` as the first frame."""
        token = secrets.token_hex(8)
        url = f"{daemon.ws_url}?key={KEY}&id={self.peer_id}&token={token}"
        self.ws = await asyncio.wait_for(connect(url), RECV_TIMEOUT_S)
        first = await self._recv_json()
        assert first == {"type": "OPEN"}, f"{self.name}: expected OPEN, got {first!r}"

    async def send(self, msg_type: str, dst: str, payload: Any) -> None:
        """Send a client frame ``{type, dst, payload}`` (the client sends no src)."""
        assert self.ws is not None
        await self.ws.send(json.dumps({"type": msg_type, "dst": dst, "payload": payload}))

    async def recv_relayed(self, timeout: float | None = RECV_TIMEOUT_S) -> dict[str, Any]:
        """Receive one relayed envelope and check its shape and ``dst``."""
        msg = await self._recv_json(timeout)
        assert list(msg) == ENVELOPE_KEYS, f"{self.name}: envelope keys {list(msg)}: {msg!r}"
        assert msg["dst"] == self.peer_id, f"{self.name}: dst is {msg['dst']!r}"
        self.received.append(msg)
        return msg

    async def _recv_json(self, timeout: float | None = RECV_TIMEOUT_S) -> dict[str, Any]:
        """Receive one text frame holding a JSON object (``timeout=None``: no own bound)."""
        assert self.ws is not None
        try:
            frame = await asyncio.wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            raise AssertionError(f"{self.name}: no frame within {timeout} s") from None
        assert isinstance(frame, str), f"{self.name}: relayed frames must be text, got {frame!r}"
        msg = json.loads(frame)
        assert isinstance(msg, dict), f"{self.name}: frame is not a JSON object: {frame!r}"
        return msg

    async def close(self) -> None:
        """Close the peer connection and the WebSocket."""
        await self.pc.close()
        if self.ws is not None:
            await self.ws.close()


async def open_peer(daemon: Switchboard, name: str) -> SignalingPeer:
    """Fetch a fresh id and connect it."""
    peer = SignalingPeer(name=name, peer_id=await asyncio.to_thread(fetch_peer_id, daemon))
    await peer.connect(daemon)
    return peer


# --------------------------------------------------------------------------- SDP helpers


def sdp_mid(sdp: str) -> str:
    """The ``a=mid`` of the (single, data-channel) media section."""
    for line in sdp.splitlines():
        if line.startswith("a=mid:"):
            return line[len("a=mid:") :]
    raise AssertionError(f"no a=mid in SDP:\n{sdp}")


def sdp_candidates(sdp: str) -> list[str]:
    """The ``candidate:…`` strings of the ``a=candidate`` lines, as a browser would trickle them."""
    return [line[len("a=") :] for line in sdp.splitlines() if line.startswith("a=candidate:")]


async def send_candidates(peer: SignalingPeer, dst: str, connection_id: str) -> int:
    """Trickle the local SDP's candidates as PeerJS CANDIDATE messages; return how many.

    aiortc gathers candidates inside setLocalDescription, so they are already in
    the SDP; sending them again exercises the CANDIDATE relay path.
    """
    sdp = peer.pc.localDescription.sdp
    mid = sdp_mid(sdp)
    candidates = sdp_candidates(sdp)
    assert candidates, f"{peer.name}: local SDP has no candidates:\n{sdp}"
    for candidate in candidates:
        await peer.send(
            "CANDIDATE",
            dst,
            {
                "candidate": {"candidate": candidate, "sdpMid": mid, "sdpMLineIndex": 0},
                "type": "data",
                "connectionId": connection_id,
            },
        )
    return len(candidates)


async def add_candidate(peer: SignalingPeer, payload: dict[str, Any]) -> None:
    """Add a relayed PeerJS CANDIDATE payload to the peer connection."""
    init = payload["candidate"]
    text = init["candidate"]
    assert text.startswith("candidate:"), text
    candidate = candidate_from_sdp(text[len("candidate:") :])
    candidate.sdpMid = init["sdpMid"]
    candidate.sdpMLineIndex = init["sdpMLineIndex"]
    await peer.pc.addIceCandidate(candidate)


# --------------------------------------------------------------------------- WebRTC roles


@dataclass
class Offer:
    """What the offering side sent: its channel, the OFFER payload and candidate count."""

    channel: RTCDataChannel
    payload: dict[str, Any]
    candidates_sent: int

    @property
    def connection_id(self) -> str:
        return self.payload["connectionId"]


async def start_offer(peer: SignalingPeer, dst: str) -> Offer:
    """Create the "chat" data channel and an offer; send OFFER and CANDIDATEs to ``dst``."""
    channel = peer.pc.createDataChannel(LABEL)
    await peer.pc.setLocalDescription(await peer.pc.createOffer())
    payload = {
        "sdp": {"type": "offer", "sdp": peer.pc.localDescription.sdp},
        "type": "data",
        "connectionId": f"dc_{secrets.token_hex(6)}",
        "label": LABEL,
        "reliable": True,
        "serialization": "binary",
    }
    await peer.send("OFFER", dst, payload)
    sent = await send_candidates(peer, dst, payload["connectionId"])
    return Offer(channel=channel, payload=payload, candidates_sent=sent)


def expect_offer(msg: dict[str, Any], offerer: SignalingPeer, offer: Offer) -> None:
    """Check a relayed OFFER: type, stamped src, payload unchanged."""
    assert msg["type"] == "OFFER", msg
    assert msg["src"] == offerer.peer_id, msg
    assert msg["payload"] == offer.payload


@dataclass
class Answer:
    """What the answering side sent: a future for its data channel, and candidate count."""

    channel: asyncio.Future
    candidates_sent: int


async def accept_offer(peer: SignalingPeer, offer_msg: dict[str, Any]) -> Answer:
    """Answer a relayed OFFER; send ANSWER and CANDIDATEs back to its src."""
    channel_future: asyncio.Future = asyncio.get_running_loop().create_future()

    @peer.pc.on("datachannel")
    def on_datachannel(channel: RTCDataChannel) -> None:
        if not channel_future.done():
            channel_future.set_result(channel)

    payload = offer_msg["payload"]
    await peer.pc.setRemoteDescription(
        RTCSessionDescription(sdp=payload["sdp"]["sdp"], type=payload["sdp"]["type"])
    )
    await peer.pc.setLocalDescription(await peer.pc.createAnswer())
    await peer.send(
        "ANSWER",
        offer_msg["src"],
        {
            "sdp": {"type": "answer", "sdp": peer.pc.localDescription.sdp},
            "type": "data",
            "connectionId": payload["connectionId"],
        },
    )
    sent = await send_candidates(peer, offer_msg["src"], payload["connectionId"])
    return Answer(channel=channel_future, candidates_sent=sent)


async def signaling_loop(
    peer: SignalingPeer, remote: SignalingPeer, connection_id: str, *, answers: int, candidates: int
) -> None:
    """Apply relayed ANSWER / CANDIDATE messages from ``remote`` until all expected have come.

    ``answers`` and ``candidates`` are exactly how many of each ``remote`` sent;
    anything else, or more of either, fails.
    """
    pending = {"ANSWER": answers, "CANDIDATE": candidates}
    while any(pending.values()):
        try:
            msg = await peer.recv_relayed()
        except AssertionError as error:
            raise AssertionError(f"{error}; still expecting {pending} from {remote.name}") from None
        assert msg["src"] == remote.peer_id, f"{peer.name}: unexpected src in {msg!r}"
        assert pending.get(msg["type"], 0) > 0, f"{peer.name}: unexpected message {msg!r}"
        assert msg["payload"]["connectionId"] == connection_id, msg
        pending[msg["type"]] -= 1
        if msg["type"] == "ANSWER":
            sdp = msg["payload"]["sdp"]
            assert sdp["type"] == "answer", msg
            await peer.pc.setRemoteDescription(RTCSessionDescription(sdp=sdp["sdp"], type="answer"))
        else:
            await add_candidate(peer, msg["payload"])


async def wait_open(channel: RTCDataChannel) -> None:
    """Wait until the data channel is open."""
    if channel.readyState == "open":
        return
    opened = asyncio.get_running_loop().create_future()
    channel.once("open", lambda: opened.done() or opened.set_result(None))
    await opened


def next_message(channel: RTCDataChannel) -> asyncio.Future:
    """A future for the next message received on ``channel``."""
    future = asyncio.get_running_loop().create_future()
    channel.once("message", lambda data: future.done() or future.set_result(data))
    return future


async def chat(offer: Offer, answer: Answer) -> None:
    """A says hello over the data channel, B replies; both contents are checked."""
    a_channel = offer.channel
    a_inbox = next_message(a_channel)
    await wait_open(a_channel)

    b_channel: RTCDataChannel = await answer.channel
    assert b_channel.label == LABEL
    b_inbox = next_message(b_channel)

    a_channel.send("hello from A")
    assert await b_inbox == "hello from A"
    b_channel.send("hello from B")
    assert await a_inbox == "hello from B"


async def connect_and_chat(
    a: SignalingPeer, b: SignalingPeer, offer: Offer, offer_msg: dict[str, Any]
) -> None:
    """B accepts ``offer_msg``; both apply the other's signaling while the peers chat.

    The TaskGroup ends only when the chat is done and each side has applied
    every ANSWER / CANDIDATE the other sent through the daemon.
    """
    answer = await accept_offer(b, offer_msg)
    async with asyncio.TaskGroup() as group:
        group.create_task(
            signaling_loop(a, b, offer.connection_id, answers=1, candidates=answer.candidates_sent)
        )
        group.create_task(
            signaling_loop(b, a, offer.connection_id, answers=0, candidates=offer.candidates_sent)
        )
        group.create_task(chat(offer, answer))


# --------------------------------------------------------------------------- tests


def run_bounded(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async scenario on a fresh event loop, failing if it exceeds TEST_TIMEOUT_S."""

    async def bounded() -> None:
        deadline = asyncio.timeout(TEST_TIMEOUT_S)
        try:
            async with deadline:
                await scenario()
        except TimeoutError:
            if deadline.expired():
                pytest.fail(f"scenario did not finish within {TEST_TIMEOUT_S:.0f} s")
            raise

    asyncio.run(bounded())


async def offer_answer_chat(daemon_a: Switchboard, daemon_b: Switchboard | None = None) -> None:
    """Peer A (on ``daemon_a``) offers to peer B (on ``daemon_b``, default the same daemon), B
    answers, both trickle candidates, and they exchange one message each way."""
    a = await open_peer(daemon_a, "A")
    b = await open_peer(daemon_b or daemon_a, "B")
    try:
        offer = await start_offer(a, b.peer_id)
        offer_msg = await b.recv_relayed()
        expect_offer(offer_msg, a, offer)
        await connect_and_chat(a, b, offer, offer_msg)
    finally:
        await a.close()
        await b.close()


def test_offer_answer_candidate_then_datachannel(switchboard: Switchboard) -> None:
    """Two live peers signal through the daemon and exchange one message each way."""
    run_bounded(lambda: offer_answer_chat(switchboard))


def test_offer_queued_for_offline_peer_is_delivered_after_open(switchboard: Switchboard) -> None:
    """An OFFER to an id not yet connected is queued and delivered right after its OPEN.

    A sends OFFER and CANDIDATEs to C's id before C connects. To know the daemon
    has handled them (and so queued them) without sleeping, A then sends a frame
    to itself and waits for it: relay is FIFO per sending socket. C then connects,
    gets OPEN, then the OFFER with src=A, then the queued CANDIDATEs, and the
    WebRTC session completes as usual.
    """

    async def scenario() -> None:
        a = await open_peer(switchboard, "A")
        c = SignalingPeer(name="C", peer_id=await asyncio.to_thread(fetch_peer_id, switchboard))
        try:
            offer = await start_offer(a, c.peer_id)

            barrier = {"barrier": secrets.token_hex(8)}
            await a.send("CANDIDATE", a.peer_id, barrier)
            echoed = await a.recv_relayed()
            assert echoed == {"type": "CANDIDATE", "src": a.peer_id, "dst": a.peer_id,
                              "payload": barrier}
            a.received.clear()

            await c.connect(switchboard)  # asserts the first frame is exactly OPEN
            offer_msg = await c.recv_relayed()
            expect_offer(offer_msg, a, offer)
            await connect_and_chat(a, c, offer, offer_msg)
        finally:
            await a.close()
            await c.close()

    run_bounded(scenario)
