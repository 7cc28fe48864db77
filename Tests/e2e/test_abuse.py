"""Abuse end-to-end tests: slow consumers, frame floods (many small frames, and a volume flood of
large ones), a connection flood from one address and one user, a ring flood at one user,
oversized frames and half-open handshakes, each against a daemon started with small limits.

Every test asserts three things:

- the abuse is contained the documented way (the close code on the wire, and the error frames
  or metrics where the protocol has them; docs/protocol.md, config/README.md);
- the daemon's resident memory stays under ``baseline + RSS_HEADROOM`` (sampled every 20 ms
  during the test, so peaks count, and checked again at the end);
- a well-behaved client on the side (:class:`Bystander`: a PeerJS peer pair bouncing messages and
  a call-protocol client doing ``ping`` and ``call.get``, all from another loopback address,
  127.0.0.2, so per-address limits do not touch it) gets every answer, in time, during the abuse
  and after it.

The abusers use :class:`RawWebSocket`, a small blocking client (in hostile.py, shared with
test_hostile.py), because the abuse needs what a well-behaved library refuses to do: not reading,
a tiny receive buffer, frames over the limit, fragments, declared lengths that never arrive,
stopping half-way through a handshake.
Every wait is bounded; nothing here uses a fixed port.
"""

from __future__ import annotations

import collections
import contextlib
import json
import secrets
import select
import socket
import threading
import time
import urllib.request
from typing import Any

import pytest

from hostile import (  # noqa: F401 - start_daemon is a fixture: importing it is how pytest finds it
    ABUSER_ADDRESS,
    BYSTANDER_ADDRESS,
    RSS_HEADROOM,
    WAIT_S,
    Bystander,
    Closed,
    RawWebSocket,
    ResourceMonitor,
    call_request,
    call_socket,
    mib,
    peerjs_socket,
    start_daemon,
    user_token,
)


# ---------------------------------------------------------------------------------------------
# 1. Slow consumer


def test_slow_consumers_are_closed_with_1008_and_the_sender_gets_leave_then_expire(start_daemon) -> None:
    """Eight PeerJS peers with a 4 KiB receive buffer stop reading while another peer floods them
    with 4 KiB messages: the daemon closes each with 1008 once its outbox
    (``transport.outbox_bytes`` = 256 KiB) is full, the flooder gets one ``LEAVE`` from each, a
    reader that reads again gets a gap-free prefix of the flood and then the close, and later
    messages to a freed id are queued and answered with ``EXPIRE``."""
    daemon = start_daemon(
        TRANSPORT_OUTBOX_BYTES=256 * 1024, TRANSPORT_MAX_MESSAGE_BYTES=65536, PEERJS_EXPIRE_TIMEOUT=1000, PEERJS_MESSAGES_BURST=100_000
    )
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "slow consumers")
        tag = secrets.token_hex(3)
        flood_id = f"flood-{tag}"
        readers = {f"slow-{tag}-{k}": peerjs_socket(daemon, f"slow-{tag}-{k}", rcvbuf=4096) for k in range(8)}
        flooder = peerjs_socket(daemon, flood_id)
        chunk = "x" * 4096
        sent: collections.Counter = collections.Counter()
        expires: list[dict[str, Any]] = []

        def flood() -> dict[str, tuple[Closed, list[str]]]:
            closes: dict[str, tuple[Closed, list[str]]] = {}
            deadline = time.monotonic() + 30
            while len(closes) < len(readers):
                assert time.monotonic() < deadline and max(sent.values(), default=0) < 4096, (
                    f"no LEAVE from {sorted(set(readers) - set(closes))} after {dict(sent)} messages of 4 KiB"
                )
                flooder.send_raw(b"".join(
                    RawWebSocket.frame(json.dumps({"type": "CANDIDATE", "dst": rid, "payload": {"n": sent[rid] + i, "pad": chunk}}).encode())
                    for rid in readers if rid not in closes for i in range(4)
                ))
                for rid in readers:
                    if rid not in closes:
                        sent[rid] += 4
                time.sleep(0.01)  # ≤ 13 MB/s: the abuse here is not reading, not the inbound volume
                for message in flooder.poll_json():
                    if message["type"] == "EXPIRE":  # flood messages in flight at a LEAVE, queued, expired
                        expires.append(message)
                        continue
                    assert message["type"] == "LEAVE" and message["dst"] == flood_id, message
                    assert message["src"] in readers and message["src"] not in closes, message
                    # The slow reader reads again: what the daemon had written, then the close.
                    closes[message["src"]] = readers[message["src"]].until_close()
                monitor.check()
            return closes

        closes = bystander.assert_healthy_through(flood)
        delivered = {}
        for rid, (closed, received) in closes.items():
            assert closed.code == 1008, f"{rid}: expected close 1008, got {closed.code} {closed.reason!r}"
            assert "outbox" in closed.reason, closed.reason
            numbers = [json.loads(text)["payload"]["n"] for text in received]
            assert numbers == list(range(len(numbers))), f"{rid}: the reader must get a gap-free prefix"
            assert len(numbers) < sent[rid], f"{rid}: got everything ({len(numbers)}) although its outbox overflowed"
            delivered[rid] = len(numbers)
        print(f"\n[abuse] slow consumers: sent {dict(sent)} messages of 4 KiB, delivered {delivered} before 1008")
        assert daemon.metrics().get('switchboard_closes_total{code="1008"}', 0) >= len(readers)

        # A freed id: messages to it are queued (256 per destination, so of 300 at least 44 are
        # answered with EXPIRE at once) and the queued ones EXPIRE after peerjs.expire_timeout
        # (1 s). Flood messages in flight at the LEAVEs were queued too, so counts are lower bounds.
        first = next(iter(readers))
        flooder.send_raw(b"".join(
            RawWebSocket.frame(json.dumps({"type": "OFFER", "dst": first, "payload": {"n": i}}).encode()) for i in range(300)
        ))
        listen_until = time.monotonic() + 2.5
        with contextlib.suppress(TimeoutError):
            while time.monotonic() < listen_until:
                expires.append(flooder.recv_json(listen_until - time.monotonic()))
        assert all(m["type"] == "EXPIRE" and m["dst"] == flood_id and m["src"] in readers and set(m) == {"type", "src", "dst"} for m in expires), expires[:5]
        to_first = sum(1 for m in expires if m["src"] == first)
        assert to_first >= 300 - 256 + 1, f"expected ≥ 44 EXPIREs for the overflow and ≥ 1 for the queue, got {to_first}"
        flooder.close()
        for reader in readers.values():
            reader.close()
        bystander.wait_for_rounds(5)
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# 2. Frame floods


def test_call_protocol_request_flood_gets_rate_limited_then_1008(start_daemon) -> None:
    """Four call-protocol sockets (four users) that send 2000 pings each at once: on each the
    first burst (``limits.message_burst`` = 100) is answered, then ``rate_limited`` errors, then
    close 1008 ("message flood") after another burst of refusals, with no answer for the request
    that tipped it over; answers stay in request order."""
    daemon = start_daemon(LIMITS_MESSAGES_PER_SECOND=50, LIMITS_MESSAGE_BURST=100)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "call request flood")
        flooders = [call_socket(daemon, f"flooder-{n}") for n in range(4)]

        def flood() -> list[tuple[Closed, list[str]]]:
            # Each flood is one write (~50 KB), so it is all in the daemon's receive buffer before
            # the close: a client still sending when the daemon closes could lose the close frame
            # to a TCP reset.
            data = b"".join(RawWebSocket.frame(b'{"id":%d,"type":"ping"}' % i) for i in range(2000))
            for flooder in flooders:
                flooder.send_raw(data)
            return [flooder.until_close() for flooder in flooders]

        results = bystander.assert_healthy_through(flood)
        total_limited = 0
        for n, (closed, answers) in enumerate(results):
            # The daemon stops reading and closes with 1008; if the rest of the flood is still in
            # its receive buffer the kernel answers the close with a TCP reset, which can discard
            # the close frame on its way. Either way the socket must be gone, after the refusals.
            assert (closed.code, closed.reason) in [(1008, "message flood"), (None, "the connection ended without a close frame")], (
                n, closed.code, closed.reason)
            frames = [json.loads(text) for text in answers]
            pongs = [f["id"] for f in frames if f["type"] == "pong"]
            limited = [f for f in frames if f["type"] == "error"]
            assert all(f["error"]["code"] == "rate_limited" for f in limited), limited[:3]
            ids = [f["id"] for f in frames]
            assert ids == list(range(len(ids))), f"flooder {n}: answers must come once each, in order, without gaps"
            assert pongs[:100] == list(range(100)), f"flooder {n}: the first burst is answered"
            assert len(limited) >= 100, f"flooder {n}: expected a burst of rate_limited before the close, got {len(limited)}"
            assert len(frames) < 2000, f"flooder {n}: the socket must be closed before the flood is through"
            total_limited += len(limited)
            print(f"\n[abuse] call flood {n}: {len(pongs)} pongs, {len(limited)} rate_limited, then 1008")
        metrics = daemon.metrics()
        assert metrics.get('switchboard_rate_limited_total{kind="call_request"}', 0) >= total_limited
        for flooder in flooders:
            flooder.close()
        monitor.finish()
    daemon.assert_alive()


def test_peerjs_message_flood_and_malformed_flood_are_closed_with_1008(start_daemon) -> None:
    """Four PeerJS sockets sending 3000 messages each at once to one peer: past
    ``peerjs.messages.burst`` (200) they are dropped, and after another burst of drops each is
    closed with 1008 ("message flood"); what was relayed is a gap-free prefix per sender. A socket
    sending garbage is closed with 1008 past ``peerjs.malformed.burst`` (20)."""
    daemon = start_daemon(PEERJS_MESSAGES_RATE=100, PEERJS_MESSAGES_BURST=200, PEERJS_MALFORMED_RATE=5, PEERJS_MALFORMED_BURST=20)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "PeerJS message flood")
        tag = secrets.token_hex(3)
        sink_id = f"sink-{tag}"
        sink = peerjs_socket(daemon, sink_id)
        flooders = {f"pflood-{tag}-{n}": peerjs_socket(daemon, f"pflood-{tag}-{n}") for n in range(4)}
        garbage = peerjs_socket(daemon, f"garbage-{tag}")

        def flood() -> tuple[dict[str, Closed], Closed]:
            data = b"".join(RawWebSocket.frame(json.dumps({"type": "OFFER", "dst": sink_id, "payload": {"n": i}}).encode()) for i in range(3000))
            for flooder in flooders.values():
                flooder.send_raw(data)  # one write each (~200 KB), in the daemon's buffer before the close
            garbage.send_raw(b"".join(RawWebSocket.frame(b"not json %d" % i) for i in range(200)))
            return {flood_id: flooder.until_close()[0] for flood_id, flooder in flooders.items()}, garbage.until_close()[0]

        flood_closes, garbage_closed = bystander.assert_healthy_through(flood)
        for flood_id, closed in flood_closes.items():
            assert (closed.code, closed.reason) == (1008, "message flood"), (flood_id, closed.code, closed.reason)
        assert (garbage_closed.code, garbage_closed.reason) == (1008, "too many malformed frames")

        relayed: dict[str, list[int]] = collections.defaultdict(list)
        with contextlib.suppress(TimeoutError):
            while True:
                message = sink.recv_json(1.0)
                relayed[message["src"]].append(message["payload"]["n"])
        assert set(relayed) == set(flooders), set(relayed)
        for flood_id, numbers in relayed.items():
            assert numbers[:200] == list(range(200)), f"{flood_id}: the first burst is relayed, in order"
            assert numbers == sorted(numbers) and len(numbers) < 3000, f"{flood_id}: the rest of the flood is dropped"
        print(f"\n[abuse] PeerJS flood: relayed {({k: len(v) for k, v in relayed.items()})} of 3000 each, then 1008")
        metrics = daemon.metrics()
        assert metrics.get('switchboard_rate_limited_total{kind="peerjs_message"}', 0) >= 4 * 200
        for ws in (sink, garbage, *flooders.values()):
            ws.close()
        monitor.finish()
    daemon.assert_alive()


def push(ws: RawWebSocket, frame: bytes, total: int, seconds: float) -> int:
    """Sends ``frame`` over and over, as fast as the daemon takes it, until ``total`` bytes are
    out, ``seconds`` have passed, the daemon stops reading for 2 s, or the connection breaks.
    Returns the bytes sent."""
    chunk = frame * max(1, (1 << 20) // len(frame))
    sent = 0
    deadline = time.monotonic() + seconds
    ws.sock.settimeout(2.0)
    try:
        while sent < total and time.monotonic() < deadline:
            ws.sock.sendall(chunk)
            sent += len(chunk)
    except (TimeoutError, BrokenPipeError, ConnectionResetError):
        pass
    finally:
        ws.sock.settimeout(WAIT_S)
    return sent


FLOOD_BYTES = 128 << 20
LARGE_FRAME = 60_000


@pytest.mark.parametrize("protocol", ["peerjs", "call"])
def test_flood_of_large_frames_keeps_memory_bounded(start_daemon, protocol: str) -> None:
    """One socket pushes 128 MiB of 60 KB frames (under ``transport.max_message_bytes``) as fast
    as the daemon takes them: PeerJS ``HEARTBEAT``s past ``peerjs.messages.*`` (rate 100/s,
    burst 200), or call-protocol ``ping``s past ``limits.messages_per_second`` (50/s, burst 100).
    The call-protocol flood starts with eight requests that are slow to parse (arrays of 30,000
    numbers, ~60 KB each), so that what follows arrives faster than the daemon handles it on any
    machine. The daemon must contain it with its message limits (PeerJS: close 1008 "message
    flood"; call protocol: ``rate_limited``, then 1008 if the flood goes on through another burst)
    while its RSS stays within the bound: it may not read a flood into memory faster than it
    handles it (it has to stop reading the socket, as TCP lets it)."""
    daemon = start_daemon(PEERJS_MESSAGES_RATE=100, PEERJS_MESSAGES_BURST=200)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, f"{protocol} flood of large frames")
        if protocol == "peerjs":
            flooder = peerjs_socket(daemon, f"heavy-{bystander.tag}")
            frame = RawWebSocket.frame(padded('{"type":"HEARTBEAT"', LARGE_FRAME))
        else:
            flooder = call_socket(daemon, "heavy")
            frame = RawWebSocket.frame(padded('{"type":"ping"', LARGE_FRAME))

        def flood() -> tuple[int, float, Closed | None, list[str]]:
            started = time.monotonic()
            if protocol == "call":
                # Requests the daemon is slow to parse (arrays of 30,000 numbers) go first, so that
                # the flood behind them arrives faster than it is handled, whatever the machine.
                flooder.send_raw(RawWebSocket.frame(('{"type":"ping","pad":[' + ",".join(["0"] * 29_990) + "]}").encode()) * 8)
            sent = push(flooder, frame, FLOOD_BYTES, 20.0)
            pushed_s = time.monotonic() - started
            closed, answers = flooder.read_for(5.0)
            return sent, pushed_s, closed, answers

        (sent, pushed_s, closed, answers), problems = bystander.through(flood)
        print(
            f"\n[abuse] {protocol} flood: {sent >> 20} MiB of {LARGE_FRAME}-byte frames taken in {pushed_s:.2f} s; "
            f"then {len(answers)} answers and {closed}; RSS peak {mib(monitor.peak_rss)}"
        )
        if monitor.peak_rss > monitor.bound:
            problems.append(
                f"RSS peaked at {mib(monitor.peak_rss)}, over the bound {mib(monitor.bound)} "
                f"(baseline {mib(monitor.baseline_rss)} + {mib(RSS_HEADROOM)}) after {sent >> 20} MiB were taken in {pushed_s:.2f} s"
            )
        if protocol == "peerjs":
            if closed is None:
                problems.append("the flooder was not closed")
            elif closed.code is None:  # the close frame can be lost to a reset while the flood still arrives
                if daemon.metrics().get('switchboard_closes_total{code="1008"}', 0) < 1:
                    problems.append("the flooder's socket ended without a 1008 close")
            elif (closed.code, closed.reason) != (1008, "message flood"):
                problems.append(f"the flooder was closed with {closed.code} {closed.reason!r}, not 1008 'message flood'")
        else:
            codes = [json.loads(text).get("error", {}).get("code") for text in answers]
            if "rate_limited" not in codes and (closed is None or closed.code != 1008):
                problems.append(f"the flooder got neither rate_limited nor 1008: {closed}, answers {codes[:5]}")
        assert not problems, f"{protocol} flood of large frames not contained:\n" + "\n".join(problems)
        flooder.close()
        bystander.wait_for_rounds(5)
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# 3. Connection flood from one address


def test_connection_flood_from_one_address_is_refused_with_1013(start_daemon) -> None:
    """300 WebSockets opened from one address in a tight loop: 50 are admitted
    (``limits.connections_per_ip``), the rest are closed with 1013 right after the upgrade
    (reason ``connections_per_ip`` or ``connect_rate``: burst 150, 5/s), the metrics count each
    refusal, the address's fds are released, and the address gets in again once it has closed
    its sockets."""
    daemon = start_daemon(LIMITS_CONNECTIONS_PER_IP=50, LIMITS_CONNECT_BURST_PER_IP=150, LIMITS_CONNECT_RATE_PER_IP=5)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "connection flood")
        tag = secrets.token_hex(3)
        attempts = 300

        def flood() -> tuple[list[RawWebSocket], collections.Counter]:
            sockets = [
                RawWebSocket(daemon.port, f"/peerjs?key=peerjs&id=cf-{tag}-{i}&token=t") for i in range(attempts - 10)
            ]
            sockets += [RawWebSocket(daemon.port, "/v1/connect") for _ in range(10)]
            outcome: collections.Counter = collections.Counter()
            admitted = []
            for index, ws in enumerate(sockets):
                try:
                    first = ws.recv_json(WAIT_S if index < attempts - 10 else 1.0)
                except Closed as closed:
                    outcome[(closed.code, closed.reason)] += 1
                    ws.close()
                    continue
                except TimeoutError:  # an admitted /v1/connect socket waits for its auth frame
                    first = {"type": "auth pending"}
                outcome[first["type"]] += 1
                admitted.append(ws)
            bystander.wait_for_rounds(3)  # while the address holds all it may
            return admitted, outcome

        admitted, outcome = bystander.assert_healthy_through(flood)
        print(f"\n[abuse] connection flood: {dict(outcome)}")
        assert len(admitted) == 50, f"expected exactly 50 admitted sockets, got {len(admitted)}: {dict(outcome)}"
        per_ip = outcome[(1013, "connections_per_ip")]
        rate = outcome[(1013, "connect_rate")]
        assert per_ip + rate == attempts - 50, f"every refusal must be a 1013 with its reason: {dict(outcome)}"
        assert per_ip >= 1 and rate >= 1, dict(outcome)
        metrics = daemon.metrics()
        assert metrics.get('switchboard_connections_refused_total{reason="connections_per_ip"}', 0) == per_ip
        assert metrics.get('switchboard_connections_refused_total{reason="connect_rate"}', 0) == rate

        # The admitted sockets work: two of them relay a message.
        admitted[0].send_json({"type": "OFFER", "dst": f"cf-{tag}-1", "payload": {"hello": 1}})
        assert admitted[1].recv_json() == {"type": "OFFER", "src": f"cf-{tag}-0", "dst": f"cf-{tag}-1", "payload": {"hello": 1}}

        # The refused sockets are gone from the daemon; after closing its sockets the address is let in.
        for ws in admitted:
            ws.close()
        deadline = time.monotonic() + WAIT_S
        while daemon.fds() > monitor.baseline_fds + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon.fds() <= monitor.baseline_fds + 2, f"fds {daemon.fds()} > baseline {monitor.baseline_fds} + 2"
        time.sleep(0.5)  # at 5/s the connect bucket has a token again
        again = peerjs_socket(daemon, f"cf-{tag}-again")
        again.close()
        monitor.finish()
    daemon.assert_alive()


def test_connections_per_user_over_the_cap_are_refused_with_1013(start_daemon) -> None:
    """One user opening call-protocol connections past ``limits.connections_per_user`` (4): the
    next ones get ``rate_limited`` and close 1013; once one of the four closes, the user gets in
    again."""
    daemon = start_daemon(LIMITS_CONNECTIONS_PER_USER=4)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "connections per user")

        def abuse() -> tuple[list[RawWebSocket], list[tuple[Closed, list[str]]]]:
            held = [call_socket(daemon, "hog") for _ in range(4)]
            refusals = []
            for _ in range(6):
                ws = RawWebSocket(daemon.port, "/v1/connect")
                ws.send_json({"type": "auth", "id": "a", "token": user_token("hog")})
                refusals.append(ws.until_close())
                ws.close()
            return held, refusals

        held, refusals = bystander.assert_healthy_through(abuse)
        for closed, frames in refusals:
            assert closed.code == 1013, (closed.code, closed.reason)
            assert [json.loads(frame)["error"]["code"] for frame in frames] == ["rate_limited"], frames
        for ws in held:  # the four held connections still work
            assert call_request(ws, 1, "ping", {}) == {"id": 1, "type": "pong"}
        held.pop().close()
        deadline = time.monotonic() + WAIT_S
        while True:  # the daemon notices the close asynchronously
            again = RawWebSocket(daemon.port, "/v1/connect")
            again.send_json({"type": "auth", "token": user_token("hog")})
            first = again.recv_json()
            if first["type"] == "connection.ok":
                break
            again.close()
            assert time.monotonic() < deadline, f"the user was not let in again: {first}"
            time.sleep(0.1)
        for ws in (*held, again):
            ws.close()
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# 4. Ring flood at one user


def test_ring_flood_at_one_user_is_rate_limited_and_the_victim_keeps_working(start_daemon) -> None:
    """Three callers ring one victim with 30 calls: ``calls.ring_burst`` (5) ring, the others are
    ``rate_limited`` and not created; another user can still be rung; the victim's client (the
    bystander's call-protocol client) answers every ping and ``call.get`` throughout and gets
    exactly one ``call.ring`` per call that rang."""
    daemon = start_daemon(CALLS_RING_BURST=5, CALLS_RING_RATE_PER_MINUTE=1)
    with Bystander(daemon, call_user="victim") as victim:
        monitor = ResourceMonitor(daemon, "ring flood")
        tag = secrets.token_hex(3)
        callers = [call_socket(daemon, f"caller-{n}") for n in range(3)]

        def flood() -> dict[str, list[str]]:
            result: dict[str, list[str]] = {"rang": [], "limited": []}
            for i in range(10):
                for n, caller in enumerate(callers):
                    call_id = f"rf-{tag}-{n}-{i}"
                    answer = call_request(caller, i, "call.get_or_create", {"type": "ringing", "id": call_id, "members": ["victim"], "ring": True})
                    if answer["type"] == "response":
                        assert answer["data"]["created"] is True and answer["data"]["call"]["ringing"] is True, answer
                        result["rang"].append(call_id)
                    else:
                        assert answer["error"]["code"] == "rate_limited", answer
                        result["limited"].append(call_id)
            return result

        result = victim.assert_healthy_through(flood)
        print(f"\n[abuse] ring flood: {len(result['rang'])} rang, {len(result['limited'])} rate_limited")
        assert len(result["rang"]) == 5, result
        assert len(result["limited"]) == 25, result

        # A refused ring created nothing.
        missing = call_request(callers[0], 100, "call.get", {"type": "ringing", "id": result["limited"][-1]})
        assert missing["type"] == "error" and missing["error"]["code"] == "call_not_found", missing
        # The limit is per receiver: the same callers can ring someone else.
        other = call_request(callers[0], 101, "call.get_or_create", {"type": "ringing", "id": f"rf-{tag}-other", "members": ["other"], "ring": True})
        assert other["type"] == "response" and other["data"]["call"]["ringing"] is True, other

        # The victim got exactly one call.ring per call that rang.
        deadline = time.monotonic() + WAIT_S
        while len(victim.call_events("call.ring")) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim.wait_for_rounds(3)
        rings = sorted(event["call_cid"] for event in victim.call_events("call.ring"))
        assert rings == sorted(f"ringing:{call_id}" for call_id in result["rang"]), rings
        for caller in callers:
            caller.close()
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# 5. Oversized frames


MAX_MESSAGE = 16384


def padded(prefix: str, size: int) -> bytes:
    """A JSON object ``{prefix..., "pad": "xxx"}`` of exactly ``size`` bytes."""
    base = prefix + ',"pad":""}'
    return (prefix + ',"pad":"' + "x" * (size - len(base)) + '"}').encode()


def test_oversized_and_over_reassembled_messages_are_closed_with_1009(start_daemon) -> None:
    """With ``transport.max_message_bytes`` = 16 KiB, on the PeerJS socket and on
    ``/v1/connect``: a message of exactly 16 KiB (one frame or fragments) is handled; one byte
    more in one frame, fragments adding up to more (over in the final fragment, or in an earlier
    one with more behind it), and a frame declaring 64 MiB that stops after 16 KiB + 1 are each
    closed with 1009 (the close frame must reach the client), and nothing of them is relayed."""
    daemon = start_daemon(TRANSPORT_MAX_MESSAGE_BYTES=MAX_MESSAGE)
    tag = secrets.token_hex(3)
    sink = peerjs_socket(daemon, f"big-sink-{tag}", source=BYSTANDER_ADDRESS)
    dst = f"big-sink-{tag}"

    def peer_message(size: int) -> bytes:
        return padded(f'{{"type":"OFFER","dst":"{dst}","payload":{{"n":{size}}}', size)

    def call_message(size: int) -> bytes:
        return padded(f'{{"id":{size},"type":"ping"', size)

    def fragments(message: bytes, count: int) -> bytes:
        step = -(-len(message) // count)
        parts = [message[i : i + step] for i in range(0, len(message), step)]
        return b"".join(
            RawWebSocket.frame(part, 0x1 if index == 0 else 0x0, fin=index == len(parts) - 1)
            for index, part in enumerate(parts)
        )

    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "oversized frames")
        counter = iter(range(1000))
        failures: list[str] = []

        def peer() -> RawWebSocket:
            return peerjs_socket(daemon, f"big-{tag}-{next(counter)}")

        def caller() -> RawWebSocket:
            return call_socket(daemon, f"big-{next(counter)}")

        def abuse() -> None:
            # At the limit: handled, in one frame and in fragments.
            ws = peer()
            ws.send_raw(RawWebSocket.frame(peer_message(MAX_MESSAGE)))
            ws.send_raw(fragments(peer_message(MAX_MESSAGE), 4))
            for _ in range(2):
                assert sink.recv_json()["payload"] == {"n": MAX_MESSAGE}
            ws.close()
            ws = caller()
            ws.send_raw(RawWebSocket.frame(call_message(MAX_MESSAGE)))
            ws.send_raw(fragments(call_message(MAX_MESSAGE), 4))
            assert ws.recv_json() == {"id": MAX_MESSAGE, "type": "pong"}
            assert ws.recv_json() == {"id": MAX_MESSAGE, "type": "pong"}
            ws.close()

            # Over the limit, four ways, on both protocols.
            cases = {
                "one frame of max + 1": lambda build: RawWebSocket.frame(build(MAX_MESSAGE + 1)),
                "2 fragments, over in the final one": lambda build: fragments(build(MAX_MESSAGE + 6000), 2),
                "4 fragments, over in the 3rd, the 4th behind it": lambda build: fragments(build(MAX_MESSAGE + 6000), 4),
                "a frame declaring 64 MiB, max + 1 sent": lambda build: RawWebSocket.frame(build(MAX_MESSAGE + 1), declared=64 << 20),
            }
            for name, data in cases.items():
                for kind, open_socket, build in (("PeerJS", peer, peer_message), ("call", caller, call_message)):
                    ws = open_socket()
                    ws.send_raw(data(build))
                    closed, before = ws.read_for(WAIT_S)
                    outcome = "not closed" if closed is None else f"{closed.code} {closed.reason!r}"
                    if closed is None or closed.code != 1009 or before:
                        failures.append(f"{kind}, {name}: expected close 1009, got {outcome}, after {len(before)} answers")
                    ws.close()
                    monitor.check()

        bystander.assert_healthy_through(abuse)
        with contextlib.suppress(TimeoutError):
            extra = sink.recv_json(0.5)
            raise AssertionError(f"an oversized message was relayed: {str(extra)[:200]}")
        assert not failures, "oversized messages not closed with 1009:\n" + "\n".join(failures)
        assert daemon.metrics().get('switchboard_closes_total{code="1009"}', 0) >= 8
        sink.close()
        monitor.finish()
    daemon.assert_alive()


def sdp_offer(dst: str, n: int, size: int) -> bytes:
    """An OFFER to ``dst`` of exactly ``size`` bytes, its bulk in ``payload.sdp``."""
    empty = json.dumps({"type": "OFFER", "dst": dst, "payload": {"n": n, "sdp": ""}}, separators=(",", ":"))
    return json.dumps({"type": "OFFER", "dst": dst, "payload": {"n": n, "sdp": "v" * (size - len(empty))}}, separators=(",", ":")).encode()


def test_a_large_sdp_is_relayed_with_the_default_limits(start_daemon) -> None:
    """A legitimate offer over 64 KiB (many transceivers, simulcast) is relayed whole by a daemon
    on its defaults, as the PeerJS server relays it: in one frame and in fragments, up to
    just under the 1 MiB ``transport.max_message_bytes``."""
    daemon = start_daemon()
    tag = secrets.token_hex(3)
    sink = peerjs_socket(daemon, f"sdp-sink-{tag}", source=BYSTANDER_ADDRESS)
    sender = peerjs_socket(daemon, f"sdp-sender-{tag}")
    for size in (65_537, 300_000, (1 << 20) - 64):
        offer = sdp_offer(f"sdp-sink-{tag}", size, size)
        sender.send_raw(RawWebSocket.frame(offer))
        got = sink.recv_json()
        assert got["payload"] == json.loads(offer)["payload"] and got["src"] == f"sdp-sender-{tag}", str(got)[:200]
    offer = sdp_offer(f"sdp-sink-{tag}", 1, 900_000)
    parts = [offer[i : i + 100_000] for i in range(0, len(offer), 100_000)]
    sender.send_raw(b"".join(RawWebSocket.frame(p, 0x1 if i == 0 else 0x0, fin=i == len(parts) - 1) for i, p in enumerate(parts)))
    assert sink.recv_json()["payload"] == json.loads(offer)["payload"]
    sender.close()
    sink.close()
    daemon.assert_alive()


PARTIAL_BUDGET = 8 << 20


def test_partial_messages_are_bounded_over_all_sockets(start_daemon) -> None:
    """With 1 MiB messages allowed, 48 sockets that each send 1,000,000 bytes of a message and
    never its end would hold ~48 MB (~96 MB with array growth). ``transport.partial_message_bytes``
    (8 MiB here) bounds them all together: sockets past it are closed with 1013, RSS stays within
    the abuse bound, and once the holders go the budget is free for a whole 1 MB message."""
    daemon = start_daemon(TRANSPORT_PARTIAL_MESSAGE_BYTES=PARTIAL_BUDGET)
    tag = secrets.token_hex(3)
    sink = peerjs_socket(daemon, f"part-sink-{tag}", source=BYSTANDER_ADDRESS)
    monitor = ResourceMonitor(daemon, "partial messages")
    first = RawWebSocket.frame(b'{"type":"OFFER","pad":"' + b"x" * 999_977, 0x1, fin=False)
    sockets = [peerjs_socket(daemon, f"part-{tag}-{n}") for n in range(48)]
    # A socket past the budget is closed while its frame is still arriving: the rest of the
    # frame can then meet a closed connection (EPIPE, or a reset that also drops the 1013 close
    # frame the daemon sent), depending on how far the daemon had read when it closed.
    cut_off = []
    for ws in sockets:
        try:
            ws.send_raw(first)
        except (BrokenPipeError, ConnectionResetError):
            cut_off.append(ws)
    held, codes, reset = [], collections.Counter(), 0
    for ws in sockets:
        try:
            closed, before = ws.read_for(0.3)
        except ConnectionResetError:
            assert ws in cut_off, "only a socket cut off while sending is reset"
            reset += 1
            continue
        assert not before
        if closed is None:
            held.append(ws)
        else:
            codes[(closed.code, closed.reason)] += 1
    monitor.check()
    assert 1 <= len(held) <= PARTIAL_BUDGET // 1_000_000, f"{len(held)} sockets hold a partial message"
    assert codes == {(1013, "server busy: too many partial messages"): 48 - len(held) - reset}, codes
    # Every socket not held was closed by the daemon with 1013, whether or not its close frame
    # survived a reset.
    assert daemon.metrics().get('switchboard_closes_total{code="1013"}', 0) >= 48 - len(held)
    for ws in held:
        ws.close()
    sender = peerjs_socket(daemon, f"part-sender-{tag}")
    offer = sdp_offer(f"part-sink-{tag}", 2, 1_000_000)
    parts = [offer[i : i + 250_000] for i in range(0, len(offer), 250_000)]
    sender.send_raw(b"".join(RawWebSocket.frame(p, 0x1 if i == 0 else 0x0, fin=i == len(parts) - 1) for i, p in enumerate(parts)))
    assert sink.recv_json()["payload"]["n"] == 2, "the budget was not given back"
    sender.close()
    sink.close()
    monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# 6. Half-open handshakes


HANDSHAKE_TIMEOUT_MS = 1000
#: What each half-open connection sends before going silent.
HALF_OPEN_STARTS = (
    b"",
    b"GE",
    b"GET /peerjs?key=peerjs&id=half&token=t HTTP/1.1\r\n",
    b"GET /peerjs?key=peerjs&id=half&token=t HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n",
    b"GET /v1/connect HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
)


def test_half_open_handshakes_are_dropped_after_the_handshake_timeout(start_daemon) -> None:
    """100 TCP connections that send nothing or part of an HTTP upgrade and then nothing: each is
    dropped within ``transport.handshake_timeout_ms`` (1 s) plus 2 s of slack, their fds are
    released, and a fresh well-behaved HTTP request and WebSocket upgrade during the flood are
    served in time."""
    # The per-address pending cap (transport.max_pending_per_address, 32) would refuse most of
    # them at accept; lifted here so that this test measures the deadline (test_hostile.py
    # covers the cap).
    daemon = start_daemon(TRANSPORT_HANDSHAKE_TIMEOUT_MS=HANDSHAKE_TIMEOUT_MS, TRANSPORT_MAX_PENDING_PER_ADDRESS=1000)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "half-open handshakes")
        count = 100
        limit_s = HANDSHAKE_TIMEOUT_MS / 1000 + 2.0
        half_open: list[socket.socket] = []
        try:
            def abuse() -> tuple[list[float | None], dict[str, Any], int]:
                started = time.monotonic()
                for index in range(count):
                    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=WAIT_S, source_address=(ABUSER_ADDRESS, 0))
                    start = HALF_OPEN_STARTS[index % len(HALF_OPEN_STARTS)]
                    if start:
                        sock.sendall(start)
                    half_open.append(sock)
                time.sleep(0.2)
                fds_during = daemon.fds()
                assert fds_during >= monitor.baseline_fds + count // 2, "the half-open connections were not accepted"

                # A newcomer on the side during the flood: an HTTP request, then a WebSocket upgrade.
                newcomer: dict[str, Any] = {}

                def newcome() -> None:
                    try:
                        http_started = time.monotonic()
                        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/", timeout=limit_s) as response:
                            assert response.status == 200
                        newcomer["http_s"] = time.monotonic() - http_started
                        ws = RawWebSocket(daemon.port, f"/peerjs?key=peerjs&id=newcomer-{bystander.tag}&token=t", source=BYSTANDER_ADDRESS)
                        ws.sock.settimeout(limit_s)
                        assert ws.recv_json(limit_s) == {"type": "OPEN"}
                        ws.close()
                        newcomer["total_s"] = time.monotonic() - http_started
                    except Exception as error:  # noqa: BLE001 - asserted below
                        newcomer["error"] = f"{error!r} after {time.monotonic() - http_started:.2f} s"

                thread = threading.Thread(target=newcome, name="newcomer", daemon=True)
                thread.start()

                dropped: list[float | None] = [None] * count
                while None in dropped and time.monotonic() - started < limit_s:
                    waiting = [sock for index, sock in enumerate(half_open) if dropped[index] is None]
                    readable, _, _ = select.select(waiting, [], [], 0.1)
                    for sock in readable:
                        try:
                            data = sock.recv(4096)
                        except OSError:
                            data = b""
                        if not data:
                            dropped[half_open.index(sock)] = time.monotonic() - started
                thread.join(timeout=2 * limit_s + 1)
                return dropped, newcomer, fds_during

            dropped, newcomer, fds_during = bystander.assert_healthy_through(abuse)
            still_open = [HALF_OPEN_STARTS[index % len(HALF_OPEN_STARTS)] for index, at in enumerate(dropped) if at is None]
            print(
                f"\n[abuse] half-open: fds during {fds_during}, newcomer {newcomer}, "
                f"{count - len(still_open)} of {count} dropped within {limit_s} s"
            )
            problems = []
            if still_open:
                problems.append(
                    f"{len(still_open)} of {count} half-open connections were still open {limit_s} s after they started "
                    f"(handshake timeout {HANDSHAKE_TIMEOUT_MS} ms); what they sent: {dict(collections.Counter(still_open))}"
                )
            if "error" in newcomer:
                problems.append(f"a newcomer from another address was not served during the flood: {newcomer['error']}")
            deadline = time.monotonic() + (WAIT_S if not still_open else 0)
            while daemon.fds() > monitor.baseline_fds + 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            if daemon.fds() > monitor.baseline_fds + 2:
                problems.append(f"the daemon still holds {daemon.fds()} fds (baseline {monitor.baseline_fds})")
            assert not problems, "half-open handshakes are not contained:\n" + "\n".join(problems)
        finally:
            for sock in half_open:
                sock.close()
        monitor.finish()
    daemon.assert_alive()


def test_call_sockets_that_never_authenticate_get_4001_and_then_the_address_is_refused(start_daemon) -> None:
    """30 ``/v1/connect`` sockets that upgrade and never send an auth frame: each gets
    ``unauthenticated`` and close 4001 after ``connect.auth_timeout_ms`` (500 ms), their fds are
    released, and the address, having used up ``limits.auth_failure_burst_per_ip`` (30), has its
    next socket refused (``rate_limited``, 1013) while the bystander on another address is not."""
    daemon = start_daemon(CONNECT_AUTH_TIMEOUT_MS=500, LIMITS_AUTH_FAILURE_BURST_PER_IP=30, LIMITS_AUTH_FAILURES_PER_MINUTE_PER_IP=1)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "unauthenticated sockets")
        count = 30

        def abuse() -> tuple[list[tuple[Closed, list[str]]], float]:
            started = time.monotonic()
            sockets = [RawWebSocket(daemon.port, "/v1/connect") for _ in range(count)]
            results = [ws.until_close(WAIT_S) for ws in sockets]
            elapsed = time.monotonic() - started
            for ws in sockets:
                ws.close()
            return results, elapsed

        results, elapsed = bystander.assert_healthy_through(abuse)
        for closed, frames in results:
            assert (closed.code, closed.reason) == (4001, "unauthenticated"), (closed.code, closed.reason)
            assert [json.loads(frame)["error"]["code"] for frame in frames] == ["unauthenticated"], frames
        assert elapsed < 0.5 + 3.0, f"the auth timeouts took {elapsed:.2f} s"
        deadline = time.monotonic() + WAIT_S
        while daemon.fds() > monitor.baseline_fds + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon.fds() <= monitor.baseline_fds + 2, f"fds {daemon.fds()} > baseline {monitor.baseline_fds} + 2"

        # The address has used up its failed authentications: its next socket is refused at once.
        refused = RawWebSocket(daemon.port, "/v1/connect")
        closed, frames = refused.until_close(2.0)
        refused.close()
        assert closed.code == 1013, (closed.code, closed.reason)
        assert [json.loads(frame)["error"]["code"] for frame in frames] == ["rate_limited"], frames
        print(f"\n[abuse] unauthenticated: {count} sockets closed 4001 in {elapsed:.2f} s; the next one 1013")
        bystander.wait_for_rounds(5)
        monitor.finish()
    daemon.assert_alive()
