"""Real-peer end-to-end test of the call protocol: two aiortc peers join one call through
``/v1/connect``, exchange offer, answer and ICE candidates with ``signal.send``, and open an
RTCDataChannel over loopback.

Every relayed ``signal`` event is checked: stamped by the server with the sender's session
and user, addressed to the receiver's session, payload unchanged, ``seq`` increasing.
All waiting is on frames, bounded by asyncio timeouts; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from aiortc import RTCConfiguration, RTCDataChannel, RTCPeerConnection, RTCSessionDescription
from aiortc.sdp import candidate_from_sdp
from websockets.asyncio.client import ClientConnection, connect

from conftest import mint_token

if TYPE_CHECKING:
    from conftest import Switchboard

TEST_TIMEOUT_S = 40.0
RECV_TIMEOUT_S = 10.0

pytestmark = pytest.mark.usefixtures("loopback_ice")


@dataclass
class CallPeer:
    """One call-protocol connection with its RTCPeerConnection."""

    user: str
    ws: ClientConnection | None = None
    pc: RTCPeerConnection = field(default_factory=lambda: RTCPeerConnection(RTCConfiguration(iceServers=[])))
    events: list[dict[str, Any]] = field(default_factory=list)
    last_seq: int = 0
    next_id: int = 0
    session_id: str = ""

    async def connect(self, daemon: Switchboard) -> dict[str, Any]:
        """Open ``/v1/connect``, authenticate with the first frame, return ``connection.ok``'s data."""
        self.ws = await asyncio.wait_for(connect(f"ws://127.0.0.1:{daemon.port}/v1/connect"), RECV_TIMEOUT_S)
        token = await asyncio.to_thread(mint_token, self.user)
        await self.ws.send(json.dumps({"type": "auth", "token": token}))
        ok = await self._recv()
        assert ok["type"] == "connection.ok", ok
        assert ok["data"]["user_id"] == self.user
        return ok["data"]

    async def request(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its response's ``data``; events that arrive first are kept."""
        assert self.ws is not None
        self.next_id += 1
        await self.ws.send(json.dumps({"id": self.next_id, "type": kind, "data": data}))
        while True:
            frame = await self._recv()
            if frame.get("id") == self.next_id:
                assert frame["type"] == "response", f"{self.user}: {kind} failed: {frame!r}"
                return frame["data"]
            self._keep(frame)

    async def event(self, kind: str) -> dict[str, Any]:
        """The next event of ``kind`` (earlier-kept ones first)."""
        for index, frame in enumerate(self.events):
            if frame["type"] == kind:
                return self.events.pop(index)
        while True:
            frame = await self._recv()
            if frame["type"] == kind:
                self._check_seq(frame)
                return frame
            self._keep(frame)

    def _keep(self, frame: dict[str, Any]) -> None:
        assert "seq" in frame, f"{self.user}: unexpected non-event frame {frame!r}"
        self._check_seq(frame)
        self.events.append(frame)

    def _check_seq(self, frame: dict[str, Any]) -> None:
        assert frame["seq"] > self.last_seq, f"{self.user}: seq went from {self.last_seq} to {frame['seq']}"
        self.last_seq = frame["seq"]

    async def _recv(self) -> dict[str, Any]:
        assert self.ws is not None
        try:
            text = await asyncio.wait_for(self.ws.recv(), RECV_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"{self.user}: no frame within {RECV_TIMEOUT_S} s") from None
        assert isinstance(text, str)
        return json.loads(text)

    async def signal(self, to: str, kind: str, payload: Any) -> None:
        result = await self.request("signal.send", {"to_session": to, "kind": kind, "payload": payload})
        assert result == {"delivered_to": to}

    async def next_signal(self, kind: str, sender: CallPeer) -> dict[str, Any]:
        """The next ``signal`` event, checked to be of ``kind`` and stamped with ``sender``."""
        frame = await self.event("signal")
        data = frame["data"]
        assert data["kind"] == kind, data
        assert data["from_session"] == sender.session_id
        assert data["from_user"] == sender.user
        assert data["to_session"] == self.session_id
        return data["payload"]

    async def close(self) -> None:
        await self.pc.close()
        if self.ws is not None:
            await self.ws.close()


def candidates(sdp: str) -> tuple[str, list[str]]:
    """The media section's ``a=mid`` and its ``candidate:…`` lines."""
    mid = next(line[len("a=mid:") :] for line in sdp.splitlines() if line.startswith("a=mid:"))
    return mid, [line[len("a=") :] for line in sdp.splitlines() if line.startswith("a=candidate:")]


async def trickle(peer: CallPeer, to: str) -> int:
    """Send the local description's candidates one by one, as a browser would trickle them."""
    mid, lines = candidates(peer.pc.localDescription.sdp)
    assert lines, f"{peer.user}: no local candidates"
    for line in lines:
        await peer.signal(to, "candidate", {"candidate": line, "sdpMid": mid, "sdpMLineIndex": 0})
    return len(lines)


async def add_candidates(peer: CallPeer, sender: CallPeer, count: int) -> None:
    for _ in range(count):
        payload = await peer.next_signal("candidate", sender)
        candidate = candidate_from_sdp(payload["candidate"].split(":", 1)[1])
        candidate.sdpMid = payload["sdpMid"]
        candidate.sdpMLineIndex = payload["sdpMLineIndex"]
        await peer.pc.addIceCandidate(candidate)


async def scenario(sb_alice: Switchboard, sb_bob: Switchboard | None = None) -> None:
    """Alice connects to ``sb_alice``, bob to ``sb_bob`` (default: the same daemon)."""
    alice, bob = CallPeer("alice"), CallPeer("bob")
    call = {"type": "default", "id": f"e2e-{secrets.token_hex(4)}"}
    try:
        await alice.connect(sb_alice)
        await bob.connect(sb_bob or sb_alice)
        joined = await alice.request("call.join", {**call, "create": True})
        alice.session_id = joined["session_id"]
        assert joined["role"] == "initiator"
        joined = await bob.request("call.join", call)
        bob.session_id = joined["session_id"]
        assert [p["user_id"] for p in joined["participants"]] == ["alice", "bob"]
        arrival = await alice.event("call.participant_joined")
        assert arrival["data"]["participant"]["session_id"] == bob.session_id

        channel = alice.pc.createDataChannel("chat")
        await alice.pc.setLocalDescription(await alice.pc.createOffer())
        offer = {"type": "offer", "sdp": alice.pc.localDescription.sdp}
        await alice.signal(bob.session_id, "offer", offer)
        sent_by_alice = await trickle(alice, bob.session_id)

        received = await bob.next_signal("offer", alice)
        assert received == offer, "the offer must arrive unchanged"
        inbound: asyncio.Future[RTCDataChannel] = asyncio.get_running_loop().create_future()
        bob.pc.on("datachannel", lambda ch: inbound.done() or inbound.set_result(ch))
        await bob.pc.setRemoteDescription(RTCSessionDescription(**received))
        await add_candidates(bob, alice, sent_by_alice)
        await bob.pc.setLocalDescription(await bob.pc.createAnswer())
        answer = {"type": "answer", "sdp": bob.pc.localDescription.sdp}
        await bob.signal(alice.session_id, "answer", answer)
        sent_by_bob = await trickle(bob, alice.session_id)

        assert await alice.next_signal("answer", bob) == answer
        await alice.pc.setRemoteDescription(RTCSessionDescription(**answer))
        await add_candidates(alice, bob, sent_by_bob)

        await chat(channel, await asyncio.wait_for(inbound, RECV_TIMEOUT_S))
        left = await bob.request("call.leave", call)
        assert left == {"left": [bob.session_id]}
        gone = await alice.event("call.participant_left")
        assert gone["data"]["participant"]["reason"] == "left"
    finally:
        await alice.close()
        await bob.close()


async def chat(outbound: RTCDataChannel, inbound: RTCDataChannel) -> None:
    """One message each way over the open DataChannel."""
    if outbound.readyState != "open":
        opened = asyncio.get_running_loop().create_future()
        outbound.on("open", lambda: opened.done() or opened.set_result(True))
        await asyncio.wait_for(opened, RECV_TIMEOUT_S)
    loop = asyncio.get_running_loop()
    at_bob, at_alice = loop.create_future(), loop.create_future()
    inbound.on("message", lambda m: at_bob.done() or at_bob.set_result(m))
    outbound.on("message", lambda m: at_alice.done() or at_alice.set_result(m))
    outbound.send("hello from alice")
    assert await asyncio.wait_for(at_bob, RECV_TIMEOUT_S) == "hello from alice"
    inbound.send("hello from bob")
    assert await asyncio.wait_for(at_alice, RECV_TIMEOUT_S) == "hello from bob"


def test_two_peers_join_a_call_signal_through_it_and_open_a_datachannel(switchboard_calls: Switchboard) -> None:
    asyncio.run(asyncio.wait_for(scenario(switchboard_calls), TEST_TIMEOUT_S))


def test_signal_to_a_session_of_another_call_is_forbidden(switchboard_calls: Switchboard) -> None:
    async def run() -> None:
        alice, mallory = CallPeer("alice"), CallPeer("mallory")
        try:
            await alice.connect(switchboard_calls)
            await mallory.connect(switchboard_calls)
            target = (await alice.request("call.join", {"type": "default", "id": "one", "create": True}))["session_id"]
            await mallory.request("call.join", {"type": "default", "id": "two", "create": True})
            assert mallory.ws is not None
            await mallory.ws.send(json.dumps({"id": 9, "type": "signal.send", "data": {"to_session": target, "kind": "offer", "payload": {"sdp": "x"}}}))
            frame = await mallory._recv()
            assert frame == {"id": 9, "type": "error", "error": {"code": "forbidden", "message": frame["error"]["message"]}}
        finally:
            await alice.close()
            await mallory.close()

    asyncio.run(asyncio.wait_for(run(), TEST_TIMEOUT_S))
