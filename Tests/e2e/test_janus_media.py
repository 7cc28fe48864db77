"""Real VP8 media through Janus VideoRoom rooms, and a move to a second Janus after a SIGKILL.

The client half of the Switchboard SFU story, against Janus directly (no Switchboard
build needed): two Janus 1.1.2 servers (Debian's package, ``janus_harness``), rooms
provisioned through the admin API as Switchboard provisions them (a ``secret``, an
``allowed`` list of two tokens, the tokens added with ``add_token`` for VideoRoom only),
a publisher A and a subscriber B (``janus_media``, aiortc) meeting in the room on
Janus 1 with B decoding frames, a third token refused by the room, then Janus 1
SIGKILLed by PID and both clients moved to the room on Janus 2, B decoding again.

Why a network namespace: Janus gathers no ICE candidates on loopback, so the whole
scenario runs in a namespace this test creates (``netns.Namespace``: ``lo`` up and a
veth pair with a private /30 on one end, leading nowhere), in a child Python started
with ``ip netns exec`` (``Namespace.call``). Both Janus servers get the veth address as
``interface`` and ``ice_enforce_list``; aiortc offers only that address; all HTTP
signalling uses 127.0.0.1 of the namespace. Leaving the namespace's ``with`` block
kills by PID whatever is left inside (e.g. after a timeout) and deletes it.

Needs root (``ip netns``), as scripts/test runs pytest. Every wait is bounded and
polls or awaits an event; nothing sleeps to wait. Run with ``-s`` for the timings.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import sys
import time

import pytest

import netns

SCENARIO_TIMEOUT_S = 120.0
STEP_TIMEOUT_S = 15.0
FRAMES = 10
ROOM_SECRET_BYTES = 12


def test_vp8_through_janus_room_then_move_to_second_janus_after_sigkill() -> None:
    reason = netns.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    with netns.Namespace.create() as ns:
        name = ns.name
        result = ns.call("test_janus_media:run_scenario", {"address": ns.address}, timeout=SCENARIO_TIMEOUT_S)
    assert not netns.exists(name), f"namespace {name} left behind"
    first, moved = result["janus1"], result["janus2"]
    print(
        f"\n[janus media] namespace {name} ({result['address']}): "
        f"Janus 1: publisher up {first['publisher_webrtcup_s']:.3f} s, subscriber up "
        f"{first['subscriber_webrtcup_s']:.3f} s, first frame {first['first_frame_s']:.3f} s after subscribing; "
        f"{first['frames']} frames ({first['codec']}, {first['frame_size']}); "
        f"refused: {result['refused']}; "
        f"SIGKILL -> lost publisher {result['lost_s']['publisher']:.3f} s / subscriber "
        f"{result['lost_s']['subscriber']:.3f} s, Janus 2 room {result['provisioned_s']:.3f} s, "
        f"publisher up {moved['published']:.3f} s, subscriber up {moved['subscribed']:.3f} s, "
        f"first frame {moved['first_frame']:.3f} s after the kill; {moved['frames']} frames ({moved['codec']})"
    )
    assert moved["first_frame"] < STEP_TIMEOUT_S


# ---------------------------------------------------------------------- inside the namespace


def _log(message: str) -> None:
    print(f"[janus media {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def provision(janus, room: int, secret: str, allowed: list[str], tokens: list[str]) -> dict:
    """What Switchboard does on a Janus: tokens for VideoRoom only, and a room with a secret
    and an ``allowed`` list, through the admin API (``message_plugin``)."""
    from janus_harness import VIDEOROOM

    for token in tokens:
        janus.add_token(token, plugins=[VIDEOROOM])
    return janus.videoroom({
        "request": "create", "room": room, "secret": secret, "permanent": False,
        "description": "switchboard media test", "publishers": 4, "videocodec": "vp8",
        "allowed": allowed,
    })


def run_scenario(address: str) -> dict:
    """The whole scenario; must run inside the namespace that holds ``address``. Returns timings."""
    from janus_harness import JanusInstance

    local = netns.local_addresses()
    assert sorted(local) == sorted(["127.0.0.1", address]), f"not inside the media namespace: {local}"
    with JanusInstance(interface=address, ice_enforce_list=address) as janus1, \
            JanusInstance(interface=address, ice_enforce_list=address) as janus2:
        assert janus1.rtp_port_range != janus2.rtp_port_range
        _log(f"Janus 1 pid {janus1.pid} {janus1.http_url} rtp {janus1.rtp_port_range}; "
             f"Janus 2 pid {janus2.pid} {janus2.http_url} rtp {janus2.rtp_port_range}")
        try:
            return asyncio.run(asyncio.wait_for(_scenario(address, janus1, janus2), SCENARIO_TIMEOUT_S - 10))
        except BaseException:
            for janus in (janus1, janus2):
                _log(f"--- tail of {janus.server_name}'s log ---\n{janus.log_text()[-3000:]}")
            raise


async def _scenario(address: str, janus1, janus2) -> dict:
    from janus_harness import JanusError
    from janus_media import Publisher, Subscriber, connect_pair, host_candidates, move, room_publishers

    tok_a, tok_b, tok_c = (f"tok-{who}-{secrets.token_hex(8)}" for who in "abc")
    room1, room2 = (secrets.randbelow(2**31) + 1 for _ in range(2))
    secret = secrets.token_urlsafe(ROOM_SECRET_BYTES)
    created = provision(janus1, room1, secret, [tok_a, tok_b], [tok_a, tok_b, tok_c])
    assert created.get("videoroom") == "created" and created.get("room") == room1, created
    result: dict = {"address": address}

    with host_candidates(address):
        # -- A and B meet on Janus 1.
        publisher, subscriber = await connect_pair(janus1.http_url, room1, tok_a, tok_b, timeout=STEP_TIMEOUT_S)
        try:
            await subscriber.wait_frames(FRAMES, timeout=STEP_TIMEOUT_S)
            assert publisher.video_codec == "vp8" and subscriber.video_codec == "VP8", (
                publisher.video_codec, subscriber.video_codec)
            assert subscriber.frame_size == (publisher.width, publisher.height), subscriber.frame_size
            assert subscriber.distinct_samples > 1, "the decoded picture never changed"
            assert f"c=IN IP4 {address}" in subscriber.pc.remoteDescription.sdp
            listed = await room_publishers(janus1.http_url, room1, tok_b)
            assert [p["id"] for p in listed] == [publisher.feed_id], listed
            result["janus1"] = {
                "publisher_webrtcup_s": round(publisher.webrtcup_at - publisher.started_at, 4),
                "subscriber_webrtcup_s": round(subscriber.webrtcup_at - subscriber.started_at, 4),
                "first_frame_s": round(subscriber.first_frame_at - subscriber.started_at, 4),
                "frames": subscriber.frames, "codec": subscriber.video_codec,
                "frame_size": list(subscriber.frame_size),
            }
            _log(f"Janus 1: {result['janus1']}")

            # -- A token Janus knows but the room does not allow is refused as publisher (433);
            # a token Janus does not know is refused at session create (403). Janus 1.1.2 checks
            # the room's `allowed` list for publishers only: a subscriber with that token is
            # admitted (measured; a room `pin` is what guards subscriptions too).
            refused = {}
            for label, client in (
                ("publisher_not_allowed", Publisher(janus1.http_url, room1, tok_c, display="intruder")),
                ("unknown_token", Publisher(janus1.http_url, room1, "tok-unknown-" + secrets.token_hex(4))),
                ("unknown_token_subscriber",
                 Subscriber(janus1.http_url, room1, "tok-unknown-" + secrets.token_hex(4), publisher.feed_id)),
            ):
                with pytest.raises(JanusError) as error:
                    await client.start()
                refused[label] = error.value.code
            assert refused == {"publisher_not_allowed": 433, "unknown_token": 403,
                               "unknown_token_subscriber": 403}, refused
            result["refused"] = refused
            outsider = await Subscriber(janus1.http_url, room1, tok_c, publisher.feed_id,
                                        timeout=STEP_TIMEOUT_S).start()
            await outsider.close()
            result["subscriber_not_in_allowed"] = "admitted (Janus checks `allowed` for publishers only)"
            # The refused clients closed their sessions: only A's and B's are left.
            assert len(await asyncio.to_thread(janus1.list_sessions)) == 2

            # -- SIGKILL Janus 1 by PID; the clients notice through their long-polls.
            frames_before = subscriber.frames
            killed_at = time.monotonic()
            status = await asyncio.to_thread(janus1.kill)
            assert status == -signal.SIGKILL, status
            async with asyncio.timeout(STEP_TIMEOUT_S):
                await asyncio.gather(publisher.lost.wait(), subscriber.lost.wait())
            result["lost_s"] = {
                "publisher": round(publisher.session.lost_at - killed_at, 4),
                "subscriber": round(subscriber.session.lost_at - killed_at, 4),
            }
            _log(f"Janus 1 killed; lost after {result['lost_s']} ({subscriber.session.lost_reason})")

            # -- Janus 2 gets the room now (as Switchboard would after noticing), and both move there.
            created = await asyncio.to_thread(provision, janus2, room2, secret, [tok_a, tok_b], [tok_a, tok_b, tok_c])
            assert created.get("room") == room2, created
            result["provisioned_s"] = round(time.monotonic() - killed_at, 4)
            moved = await move(publisher, subscriber, janus2.http_url, room2, tok_a, tok_b,
                               timeout=STEP_TIMEOUT_S)
        except BaseException:
            await asyncio.gather(publisher.close(), subscriber.close(), return_exceptions=True)
            raise

        try:
            publisher, subscriber = moved.publisher, moved.subscriber
            await subscriber.wait_frames(FRAMES, timeout=STEP_TIMEOUT_S)
            assert subscriber.video_codec == "VP8" and subscriber.distinct_samples > 1
            assert frames_before >= FRAMES
            result["janus2"] = {**moved.seconds(since=killed_at), "frames": subscriber.frames,
                                "codec": subscriber.video_codec}
            _log(f"Janus 2: {result['janus2']}")
            assert len(await asyncio.to_thread(janus2.list_sessions)) == 2
        finally:
            await moved.close()
    # Clean close: leave, detach and destroy left no session behind on Janus 2.
    assert await asyncio.to_thread(janus2.list_sessions) == []
    return result
