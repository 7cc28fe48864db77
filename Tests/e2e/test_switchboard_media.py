"""Real VP8 media through the Janus SFU Switchboard chooses, and through the one it moves the call to.

Issue #13's end-to-end test. Everything runs inside a network namespace this test creates
(``netns.Namespace``; Janus gathers no ICE candidates on loopback, see janus_harness.py): two
Janus 1.1.2 servers whose ``interface`` and ``ice_enforce_list`` are the namespace's veth
address (distinct RTP ranges), the Switchboard daemon (``$TEST_SWITCHBOARD_BIN``, default
``.build/debug/switchboard``) and the aiortc clients, all signalling on the namespace's
127.0.0.1. The scenario itself runs in a child Python started with ``ip netns exec``
(``Namespace.call("test_switchboard_media:run_scenario", ...)``); leaving the namespace's
``with`` block kills by PID whatever is left inside and deletes it, also after a failure.

Set-up: a standby Janus registered as SFU ``janus-ams`` (region ams), the daemon with
``auth.api_secret`` = conftest's ``CALLS_API_SECRET``, polling every 200 ms (timeout 300 ms,
``stale_after`` 1000 ms), each Janus's admin secret in an environment variable of its own.

Each trial (``trials``, default 3 here; ``scripts/bench janus`` runs the same function):

1. A fresh Janus is started and registered as ``janus-fra-K`` (region fra); polled until
   ``GET /v1/sfus/janus-fra-K`` says ``fresh``.
2. alice and bob open ``/v1/connect`` with their user tokens and send ``call.join`` (type
   default, a new call id, ``create: true``, location region fra) at the same moment. Both
   answers must name ``janus-fra-K`` and its URL, the same room, and a token of their own.
3. alice joins that room as publisher with HER token and the PIN and sends a generated VP8
   track; bob subscribes to her feed with HIS token and the PIN and decodes >= 10 frames.
   Provisioning follows the join's commit, so a start refused with 403 (token not added yet),
   426 (no room yet) or 433 (token not yet in the room's ``allowed`` list) is retried for up
   to ``PROVISION_RETRY_S``. The room must be the join's (Janus lists it under the call's
   name, and lists alice's feed in it). Measured: join-to-first-frame, from sending
   ``call.join`` to bob's first decoded frame. (bob learns alice's feed id from her
   publisher object in this process, as a client would from Janus's ``publishers`` event.)
4. Trial 1 only: a made-up ``sb1.`` token cannot create a Janus session (403); bob's token
   with a wrong PIN cannot subscribe (433); bob's token is unknown to the other Janus (403).
5. ``janus-fra-K`` is SIGKILLed by its PID. Both clients must get ``call.sfu_changed`` naming
   ``janus-ams``: its URL, another room, a new token each (their own session id) and a PIN.
   Each moves there on its own event (with the same retries), bob decodes >= 10 frames again.
   Measured: kill-to-first-frame (bob's first frame on the new Janus).
6. The clients close, the call is ended through the admin API, the dead SFU is deleted through the admin API and
   the test polls until the standby Janus holds no Switchboard room or token any more.

The median and max of both measures are printed (``-s``). Needs root (``ip netns``), as
scripts/test runs pytest. Every wait is bounded and polls or awaits an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import netns

#: Trials of the pytest test (``TEST_SWITCHBOARD_MEDIA_TRIALS`` overrides it).
DEFAULT_TRIALS = 3
FRAMES = 10
STEP_TIMEOUT_S = 15.0
SETUP_BUDGET_S = 60.0
TRIAL_BUDGET_S = 45.0
#: How long a client retries a Janus refusal that provisioning lag explains (403/426/433).
PROVISION_RETRY_S = 2.0
PROVISION_CODES = (403, 426, 433)
RETRY_PAUSE_S = 0.02
POLL_INTERVAL_MS = 200
POLL_TIMEOUT_MS = 250
STALE_AFTER_MS = 1000
ADMIN_PATTERN = re.compile(r"admin=http://127\.0\.0\.1:([0-9]+)")
CALL_TYPE = "default"


def scenario_timeout(trials: int) -> float:
    return SETUP_BUDGET_S + TRIAL_BUDGET_S * trials


def require_namespace_tools() -> None:
    reason = netns.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)


#: Every per-trial measure (ms), in the order of a trial, with what it is measured between.
MEASURES = (
    ("join_answer_ms", "call.join sent → both join answers received"),
    ("publisher_up_ms", "call.join sent → alice's publisher up (Janus webrtcup)"),
    ("subscriber_up_ms", "call.join sent → bob's subscriber up (webrtcup)"),
    ("join_to_first_frame_ms", "call.join sent → bob's first decoded frame"),
    ("kill_to_janus_lost_ms", "SIGKILL → first client's long-poll to the dead Janus fails"),
    ("kill_to_sfu_changed_ms", "SIGKILL → the later of alice's and bob's call.sfu_changed"),
    ("kill_to_room_on_new_janus_ms", "SIGKILL → the call's room listed on the other Janus"),
    ("kill_to_tokens_on_new_janus_ms", "SIGKILL → both new tokens listed on the other Janus"),
    ("sfu_changed_to_tokens_ms", "later call.sfu_changed → both new tokens on the other Janus"),
    ("kill_to_publisher_up_ms", "SIGKILL → alice's publisher up on the other Janus"),
    ("kill_to_subscriber_up_ms", "SIGKILL → bob's subscriber up on the other Janus"),
    ("kill_to_first_frame_ms", "SIGKILL → bob's first decoded frame on the other Janus"),
)


def summarize(trials: list[dict]) -> dict:
    """Median, max and min (ms) of each measure over the trials, with the samples."""
    out: dict[str, Any] = {"trials": len(trials)}
    for key, _ in MEASURES:
        values = [t[key] for t in trials if t.get(key) is not None]
        if values:
            out[key] = {"median": round(statistics.median(values), 1), "max": round(max(values), 1),
                        "min": round(min(values), 1), "samples": values}
    out["provisioning_refusals"] = {
        role: sum(len(t["refusals"][role]) for t in trials) for role in trials[0]["refusals"]} if trials else {}
    out["provisioning_retries"] = sum(out["provisioning_refusals"].values())
    return out


def test_media_through_switchboard_chosen_janus_and_failover_after_sigkill() -> None:
    require_namespace_tools()
    trials = int(os.environ.get("TEST_SWITCHBOARD_MEDIA_TRIALS", DEFAULT_TRIALS))
    with netns.Namespace.create() as ns:
        name = ns.name
        result = ns.call("test_switchboard_media:run_scenario", {"address": ns.address, "trials": trials},
                         timeout=scenario_timeout(trials))
    assert not netns.exists(name), f"namespace {name} left behind"
    summary = result["summary"]
    assert summary["trials"] == trials
    join, kill = summary["join_to_first_frame_ms"], summary["kill_to_first_frame_ms"]
    print(
        f"\n[switchboard media] namespace {name} ({result['address']}), {trials} trials, "
        f"{result['daemon']}: join-to-first-frame median {join['median']:.0f} ms, max {join['max']:.0f} ms; "
        f"kill-to-first-frame median {kill['median']:.0f} ms, max {kill['max']:.0f} ms "
        f"(call.sfu_changed median {summary['kill_to_sfu_changed_ms']['median']:.0f} ms after the kill; "
        f"stale_after {STALE_AFTER_MS} ms); provisioning retries: {summary['provisioning_retries']}; "
        f"refused: {result['refused']}"
    )
    # Failover is bounded by detection (stale_after plus a poll or two) plus reconnecting.
    assert kill["max"] < STALE_AFTER_MS + 2 * POLL_INTERVAL_MS + 5000, kill
    assert join["max"] < STEP_TIMEOUT_S * 1000, join


# ---------------------------------------------------------------------- inside the namespace


def _log(message: str) -> None:
    print(f"[switchboard media {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


class Admin:
    """The daemon's admin API on the namespace's loopback (``admin.auth = none``), no proxies."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        from janus_harness import http_json

        status, text = http_json(method, self.base + path, body, timeout=10)
        return status, json.loads(text or "null")

    def sfu(self, sfu_id: str) -> dict:
        status, body = self.call("GET", f"/v1/sfus/{sfu_id}")
        assert status == 200, (status, body)
        return body

    def register(self, sfu_id: str, janus, region: str, secret_env: str) -> dict:
        status, body = self.call("POST", "/v1/sfus", {
            "id": sfu_id, "kind": "janus", "url": janus.http_url, "region": region, "capacity": 50,
            "janus": {"admin_url": janus.admin_url, "admin_secret_env": secret_env},
        })
        assert status == 201, (status, body)
        return body


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = STEP_TIMEOUT_S, every: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s (last: {value!r})")
        time.sleep(every)  # a polling cadence, not a wait for an outcome


def switchboard_rooms(janus) -> dict[int, dict]:
    return {room["room"]: room for room in janus.videoroom({"request": "list"})["list"]
            if room.get("description", "").startswith("switchboard ")}


def switchboard_tokens(janus) -> set[str]:
    return {entry["token"] for entry in janus.list_tokens() if entry["token"].startswith("sb1.")}


def watch_provisioning(janus, cid: str, tokens: int, timeout: float, stop: threading.Event) -> dict[str, float]:
    """Poll ``janus``'s admin API (every 5 ms) until it holds the room of ``cid`` and at least
    ``tokens`` Switchboard tokens; the ``time.monotonic()`` each was first seen. ``stop`` ends
    it early (the trial failed)."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < 2 and not stop.is_set():
        if time.monotonic() > deadline:
            raise AssertionError(f"{cid}: only {sorted(seen)} on {janus.http_url} within {timeout} s")
        rooms = switchboard_rooms(janus)
        at = time.monotonic()
        if "room" not in seen and any(r.get("description") == f"switchboard {cid}" for r in rooms.values()):
            seen["room"] = at
        if "tokens" not in seen and len(switchboard_tokens(janus)) >= tokens:
            seen["tokens"] = time.monotonic()
        time.sleep(0.005)  # a polling cadence, not a wait for an outcome
    return seen


class CallClient:
    """One ``/v1/connect`` connection: requests answered by id, events kept with their arrival time."""

    def __init__(self, ws, user: str) -> None:
        self.ws = ws
        self.user = user
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.events: list[tuple[float, dict]] = []
        self.changed = asyncio.Condition()
        self.closed_reason: str | None = None
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, port: int, user: str, token: str) -> "CallClient":
        from websockets.asyncio.client import connect

        ws = await asyncio.wait_for(connect(f"ws://127.0.0.1:{port}/v1/connect", proxy=None), STEP_TIMEOUT_S)
        await ws.send(json.dumps({"type": "auth", "token": token}))
        ok = json.loads(await asyncio.wait_for(ws.recv(), STEP_TIMEOUT_S))
        assert ok["type"] == "connection.ok", ok
        return cls(ws, user)

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                at = time.monotonic()
                frame = json.loads(message)
                future = self.pending.pop(frame.get("id"), None) if "id" in frame else None
                if future is not None:
                    if not future.done():
                        future.set_result(frame)
                    continue
                async with self.changed:
                    self.events.append((at, frame))
                    self.changed.notify_all()
        except Exception as error:  # noqa: BLE001 - recorded; waiters see it
            self.closed_reason = repr(error)
        finally:
            self.closed_reason = self.closed_reason or "closed"
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError(f"{self.user}: socket {self.closed_reason}"))
            async with self.changed:
                self.changed.notify_all()

    async def send(self, kind: str, data: dict) -> tuple[float, asyncio.Future]:
        """Send a request; (time sent, future of its answer frame)."""
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        sent_at = time.monotonic()
        await self.ws.send(json.dumps({"id": self.next_id, "type": kind, "data": data}))
        return sent_at, future

    async def request(self, kind: str, data: dict) -> dict:
        _, future = await self.send(kind, data)
        return answer_data(await asyncio.wait_for(future, STEP_TIMEOUT_S), f"{self.user} {kind}")

    async def event(self, kind: str, timeout: float = STEP_TIMEOUT_S) -> tuple[float, dict]:
        """The first event of ``kind`` not taken yet (removed from the list), with its arrival time."""
        async with asyncio.timeout(timeout):
            async with self.changed:
                while True:
                    for i, (at, frame) in enumerate(self.events):
                        if frame.get("type") == kind:
                            del self.events[i]
                            return at, frame
                    if self.reader.done():
                        raise ConnectionError(f"{self.user}: socket {self.closed_reason} before {kind}")
                    await self.changed.wait()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 5)
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.reader


def answer_data(frame: dict, what: str) -> dict:
    assert frame.get("type") == "response", f"{what}: {frame}"
    return frame["data"]


async def start_retrying(make: Callable[[], Any], what: str, refusals: list[int]):
    """``make().start()``, again while Janus refuses with a code provisioning lag explains and
    ``PROVISION_RETRY_S`` has not passed; the codes seen are appended to ``refusals``."""
    from janus_harness import JanusError

    deadline = time.monotonic() + PROVISION_RETRY_S
    while True:
        try:
            return await make().start()
        except JanusError as error:
            if error.code not in PROVISION_CODES or time.monotonic() > deadline:
                raise AssertionError(f"{what}: Janus refused with {error.code} ({error.reason}); "
                                     f"earlier refusals {refusals}") from error
            refusals.append(error.code)
        await asyncio.sleep(RETRY_PAUSE_S)  # retry cadence while provisioning catches up


def check_sfu(sfu: dict, *, sfu_id: str, url: str, what: str) -> None:
    assert sfu["id"] == sfu_id and sfu["kind"] == "janus" and sfu["url"] == url, f"{what}: {sfu}"
    assert isinstance(sfu["room"], int) and 0 < sfu["room"] < 2**53, f"{what}: {sfu}"
    assert sfu["token"].startswith("sb1.") and sfu["pin"], f"{what}: {sfu}"


def run_scenario(address: str, trials: int = DEFAULT_TRIALS, frames: int = FRAMES,
                 stale_after_ms: int = STALE_AFTER_MS, poll_interval_ms: int = POLL_INTERVAL_MS,
                 poll_timeout_ms: int = POLL_TIMEOUT_MS) -> dict:
    """The whole scenario; must run inside the namespace that holds ``address``. Returns the
    per-trial timings and their summary (JSON-able)."""
    from conftest import CALLS_API_SECRET, _daemon_binary, _launch, daemon_env, mint_token
    from janus_harness import JanusInstance

    local = netns.local_addresses()
    assert sorted(local) == sorted(["127.0.0.1", address]), f"not inside the media namespace: {local}"
    assert trials >= 1
    # Every Janus is made (with its admin secret) before the daemon starts, which reads each
    # secret from an environment variable of its own; the fra ones are started one per trial.
    standby = JanusInstance(interface=address, ice_enforce_list=address)
    primaries = [JanusInstance(interface=address, ice_enforce_list=address) for _ in range(trials)]
    env = daemon_env()
    env.update({
        "SWITCHBOARD_AUTH_API_SECRET": CALLS_API_SECRET,
        "SWITCHBOARD_PLACEMENT_POLL_INTERVAL_MS": str(poll_interval_ms),
        "SWITCHBOARD_PLACEMENT_POLL_TIMEOUT_MS": str(poll_timeout_ms),
        "SWITCHBOARD_PLACEMENT_STALE_AFTER_MS": str(stale_after_ms),
        "JANUS_AMS_SECRET": standby.admin_secret,
    })
    for k, janus in enumerate(primaries, 1):
        env[f"JANUS_FRA_{k}_SECRET"] = janus.admin_secret
    tokens = {user: mint_token(user) for user in ("alice", "bob")}

    with contextlib.ExitStack() as stack:
        stack.enter_context(standby)
        for janus in primaries:
            stack.callback(janus.close)
        work = Path(tempfile.mkdtemp(prefix="sb-media-"))
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        daemon = stack.enter_context(contextlib.contextmanager(_launch)(work, env))
        admin = Admin(int(wait_for(lambda: (m := ADMIN_PATTERN.search(daemon.output.text())) and m.group(1),
                                   "the daemon's admin URL")))
        _log(f"daemon pid {daemon.process.pid} port {daemon.port}; standby Janus pid {standby.pid} "
             f"{standby.http_url} rtp {standby.rtp_port_range}")
        admin.register("janus-ams", standby, "ams", "JANUS_AMS_SECRET")
        wait_for(lambda: admin.sfu("janus-ams")["fresh"], "janus-ams fresh")
        context = {"address": address, "admin": admin, "daemon": daemon, "standby": standby,
                   "tokens": tokens, "frames": frames}
        results: list[dict] = []
        refused: dict = {}
        try:
            for k, janus in enumerate(primaries, 1):
                janus.start()
                assert janus.rtp_port_range != standby.rtp_port_range
                sfu_id = f"janus-fra-{k}"
                admin.register(sfu_id, janus, "fra", f"JANUS_FRA_{k}_SECRET")
                wait_for(lambda: admin.sfu(sfu_id)["fresh"], f"{sfu_id} fresh")
                _log(f"trial {k}: {sfu_id} pid {janus.pid} {janus.http_url} rtp {janus.rtp_port_range}")
                trial = asyncio.run(asyncio.wait_for(
                    _trial(k, janus, sfu_id, context, refused), TRIAL_BUDGET_S - 5))
                results.append(trial)
                _log(f"trial {k}: {trial}")
                status, body = admin.call("DELETE", f"/v1/sfus/{sfu_id}")
                assert status == 200 and body["reassigned"] == [], (status, body)
                wait_for(lambda: not switchboard_rooms(standby) and not switchboard_tokens(standby),
                         "the standby Janus emptied of the ended call's room and tokens")
                janus.close()
        except BaseException:
            for janus in (standby, *primaries):
                if janus.log_path:
                    _log(f"--- tail of {janus.server_name}'s log ---\n{janus.log_text()[-2000:]}")
            _log(f"--- tail of the daemon's output ---\n{daemon.output.text()[-4000:]}")
            raise
    return {"address": address, "daemon": str(_daemon_binary()), "trials": results,
            "summary": summarize(results), "refused": refused,
            "stale_after_ms": stale_after_ms, "poll_interval_ms": poll_interval_ms,
            "poll_timeout_ms": poll_timeout_ms, "frames": frames}


async def _trial(k: int, janus, sfu_id: str, context: dict, refused: dict) -> dict:
    from janus_harness import JanusError
    from janus_media import JanusSession, Publisher, Subscriber, host_candidates, room_publishers

    address, admin, daemon, standby = context["address"], context["admin"], context["daemon"], context["standby"]
    frames = context["frames"]
    call_id = f"media-{k}-{secrets.token_hex(4)}"
    cid = f"{CALL_TYPE}:{call_id}"
    join = {"type": CALL_TYPE, "id": call_id, "create": True, "location": {"region": "fra"}}
    refusals: dict[str, list[int]] = {"publisher": [], "subscriber": [], "publisher_moved": [], "subscriber_moved": []}
    clients: list = []
    closing: list = []
    sockets: list[CallClient] = []
    stop_probe = threading.Event()
    try:
        alice = await CallClient.open(daemon.port, "alice", context["tokens"]["alice"])
        sockets.append(alice)
        bob = await CallClient.open(daemon.port, "bob", context["tokens"]["bob"])
        sockets.append(bob)
        with host_candidates(address):
            # -- Both join at once; the clock starts with the first call.join sent.
            joined_at, alice_answer = await alice.send("call.join", join)
            _, bob_answer = await bob.send("call.join", join)
            a_frame, b_frame = await asyncio.wait_for(asyncio.gather(alice_answer, bob_answer), STEP_TIMEOUT_S)
            answered_at = time.monotonic()
            a_join, b_join = answer_data(a_frame, "alice call.join"), answer_data(b_frame, "bob call.join")
            a_sfu, b_sfu = a_join["sfu"], b_join["sfu"]
            check_sfu(a_sfu, sfu_id=sfu_id, url=janus.http_url, what="alice's join")
            check_sfu(b_sfu, sfu_id=sfu_id, url=janus.http_url, what="bob's join")
            room = a_sfu["room"]
            assert b_sfu["room"] == room and a_sfu["token"] != b_sfu["token"], (a_sfu, b_sfu)
            assert "token" not in a_join["call"]["sfu"] and "pin" not in a_join["call"]["sfu"], a_join["call"]

            # -- Media through the Janus Switchboard chose, each with their own token and the PIN.
            publisher = await start_retrying(
                lambda: Publisher(a_sfu["url"], room, a_sfu["token"], pin=a_sfu["pin"],
                                  display=a_join["session_id"], timeout=STEP_TIMEOUT_S),
                "alice publishing", refusals["publisher"])
            clients.append(publisher)
            subscriber = await start_retrying(
                lambda: Subscriber(b_sfu["url"], room, b_sfu["token"], publisher.feed_id, pin=b_sfu["pin"],
                                   timeout=STEP_TIMEOUT_S),
                "bob subscribing", refusals["subscriber"])
            clients.append(subscriber)
            await subscriber.wait_frames(1, timeout=STEP_TIMEOUT_S)
            join_to_first_frame = subscriber.first_frame_at - joined_at
            await subscriber.wait_frames(frames, timeout=STEP_TIMEOUT_S)
            assert publisher.video_codec == "vp8" and subscriber.video_codec == "VP8", (
                publisher.video_codec, subscriber.video_codec)
            assert subscriber.frame_size == (publisher.width, publisher.height), subscriber.frame_size
            assert subscriber.distinct_samples > 1, "the decoded picture never changed"
            assert f"c=IN IP4 {address}" in subscriber.pc.remoteDescription.sdp
            # The room is the join's: Janus holds it under the call's name and lists alice in it.
            rooms = await asyncio.to_thread(switchboard_rooms, janus)
            assert rooms.get(room, {}).get("description") == f"switchboard {cid}", (room, rooms)
            assert room not in await asyncio.to_thread(switchboard_rooms, standby)
            listed = await room_publishers(janus.http_url, room, b_sfu["token"])
            assert [(p["id"], p.get("display")) for p in listed] == [(publisher.feed_id, a_join["session_id"])], listed
            status, detail = await asyncio.to_thread(admin.call, "GET", f"/v1/calls/{CALL_TYPE}/{call_id}?events=0")
            assert status == 200 and detail["sfu"]["id"] == sfu_id and detail["sfu"]["room"] == room, (status, detail)

            if k == 1:
                # -- Janus refuses what Switchboard did not grant.
                made_up = JanusSession(janus.http_url, "sb1." + secrets.token_hex(16))
                with pytest.raises(JanusError) as error:
                    await made_up.create()
                refused["made_up_token_session"] = error.value.code
                with pytest.raises(JanusError) as error:
                    await Subscriber(janus.http_url, room, b_sfu["token"], publisher.feed_id,
                                     pin="0" * len(b_sfu["pin"]), timeout=STEP_TIMEOUT_S).start()
                refused["bob_token_wrong_pin_subscriber"] = error.value.code
                other = JanusSession(standby.http_url, b_sfu["token"])
                with pytest.raises(JanusError) as error:
                    await other.create()
                refused["bob_token_on_other_janus"] = error.value.code
                assert refused == {"made_up_token_session": 403, "bob_token_wrong_pin_subscriber": 433,
                                   "bob_token_on_other_janus": 403}, refused
                assert subscriber.frames > frames - 1  # bob's own subscription is unaffected

            # -- SIGKILL the Janus holding the call, by PID.
            frames_before = subscriber.frames
            probe = asyncio.ensure_future(
                asyncio.to_thread(watch_provisioning, standby, cid, 2, STEP_TIMEOUT_S, stop_probe))
            killed_at = time.monotonic()
            status = await asyncio.to_thread(janus.kill)
            assert status == -signal.SIGKILL, status

            async def on_sfu_changed(client: CallClient, answer: dict) -> tuple[float, dict]:
                at, event = await client.event("call.sfu_changed", timeout=STEP_TIMEOUT_S)
                data = event["data"]
                assert data["call_cid"] == cid and data["session_id"] == answer["session_id"], event
                check_sfu(data["sfu"], sfu_id="janus-ams", url=standby.http_url, what=f"{client.user}'s sfu_changed")
                assert data["sfu"]["room"] != room and data["sfu"]["token"] != answer["sfu"]["token"], event
                return at, data["sfu"]

            async def alice_moves() -> tuple[float, Any, dict]:
                at, sfu = await on_sfu_changed(alice, a_join)
                closing.append(asyncio.ensure_future(publisher.close()))
                moved = await start_retrying(
                    lambda: Publisher(sfu["url"], sfu["room"], sfu["token"], pin=sfu["pin"],
                                      display=a_join["session_id"], timeout=STEP_TIMEOUT_S),
                    "alice publishing on the new Janus", refusals["publisher_moved"])
                clients.append(moved)
                return at, moved, sfu

            async def bob_moves(alice_moved: asyncio.Future) -> tuple[float, Any, dict]:
                at, sfu = await on_sfu_changed(bob, b_join)
                closing.append(asyncio.ensure_future(subscriber.close()))
                _, new_publisher, alice_sfu = await alice_moved
                assert sfu["room"] == alice_sfu["room"], (sfu, alice_sfu)
                moved = await start_retrying(
                    lambda: Subscriber(sfu["url"], sfu["room"], sfu["token"], new_publisher.feed_id,
                                       pin=sfu["pin"], timeout=STEP_TIMEOUT_S),
                    "bob subscribing on the new Janus", refusals["subscriber_moved"])
                clients.append(moved)
                await moved.wait_frames(1, timeout=STEP_TIMEOUT_S)
                return at, moved, sfu

            alice_moved = asyncio.ensure_future(alice_moves())
            try:
                (alice_event_at, new_publisher, new_sfu), (bob_event_at, new_subscriber, _) = await asyncio.gather(
                    alice_moved, bob_moves(alice_moved))
            except BaseException:
                alice_moved.cancel()
                raise
            kill_to_first_frame = new_subscriber.first_frame_at - killed_at
            provisioned = await probe
            await new_subscriber.wait_frames(frames, timeout=STEP_TIMEOUT_S)
            assert new_subscriber.video_codec == "VP8" and new_subscriber.distinct_samples > 1
            assert frames_before >= frames
            lost = [c.session.lost_at for c in (publisher, subscriber) if c.session.lost_at is not None]
            new_rooms = await asyncio.to_thread(switchboard_rooms, standby)
            assert new_rooms.get(new_sfu["room"], {}).get("description") == f"switchboard {cid}", new_rooms
            view = await asyncio.to_thread(admin.sfu, sfu_id)
            assert view["state"] == "down" and view["fresh"] is False, view
            return {
                "trial": k, "call": cid, "sfu": sfu_id, "room": room, "new_room": new_sfu["room"],
                "join_answer_ms": ms(answered_at - joined_at),
                "publisher_up_ms": ms(publisher.webrtcup_at - joined_at),
                "subscriber_up_ms": ms(subscriber.webrtcup_at - joined_at),
                "join_to_first_frame_ms": ms(join_to_first_frame),
                "kill_to_janus_lost_ms": ms(min(lost) - killed_at) if lost else None,
                "kill_to_sfu_changed_ms": ms(max(alice_event_at, bob_event_at) - killed_at),
                "kill_to_room_on_new_janus_ms": ms(provisioned["room"] - killed_at),
                "kill_to_tokens_on_new_janus_ms": ms(provisioned["tokens"] - killed_at),
                "sfu_changed_to_tokens_ms": ms(provisioned["tokens"] - max(alice_event_at, bob_event_at)),
                "kill_to_publisher_up_ms": ms(new_publisher.webrtcup_at - killed_at),
                "kill_to_subscriber_up_ms": ms(new_subscriber.webrtcup_at - killed_at),
                "kill_to_first_frame_ms": ms(kill_to_first_frame),
                "frames_before": frames_before, "frames_after": new_subscriber.frames,
                "refusals": refusals,
            }
    finally:
        stop_probe.set()
        await asyncio.gather(*(c.close() for c in clients), *closing, return_exceptions=True)
        # Through the admin API: whichever join committed first made its user the initiator.
        status, body = await asyncio.to_thread(admin.call, "POST", f"/v1/calls/{CALL_TYPE}/{call_id}/end")
        if status != 200:
            _log(f"ending {cid} through the admin API answered {status}: {body}")
        await asyncio.gather(*(socket.close() for socket in sockets))
