"""kill -9 under call-protocol load: nothing a client was told about is lost, and calls, rings and
connections carry on after the restart.

One state directory. Real clients (websockets on ``/v1/connect``) run ring/join/leave load: two
callers ring one or two callees in ``ringing`` calls (and later cancel or end some), three callees
accept, join, decline or ignore their rings after a random delay and leave again, one more callee
(``zoe``) never answers so that rings are always going, and three users join, leave and end
``default`` meetings (reopening ended ones). Every answer and every event is a fact the client was
told; the test keeps them all (calls and their sessions and ends, members' ring states and
deadlines, participant sessions and their leaving).

Each cycle starts the daemon on the state directory (``--port 0 --admin-port 0``), resumes every
client with its ``resume_token`` and ``last_seq`` *before* any load runs, checks the resume, runs
the load, and SIGKILLs the daemon by PID after a seeded-random 0.2-1.5 s with requests in flight.
After each kill the store is opened once the way the daemon opens it (``switchboard migrate``),
which folds what the crash left in the batch log into the tables (ADR 0010); the database, then
read read-only, must pass ``PRAGMA integrity_check`` and hold every fact told so far. One cycle stays down past the ring
timeout, so that deadlines pass while nothing runs.

On every resume: ``resumed`` is true with the same connection and resume token, the replay is
marked incomplete, ``seq`` keeps increasing; the ``sessions`` listed are exactly the ones the
client holds (give or take requests that were in flight at the kill, checked against the store);
each of them is still a participant of its live call (``call.get``); every ring known to be going
(and not near its deadline or touched by an in-flight request) is rung again with its original
``ring_deadline``; nothing known to be answered is rung again; a ring the client believed going
but that is not rung again is not ``ringing`` any more (``call.get``); a ring whose deadline passed
while the daemon was down ends (``missed``) right after the start.

At the end the last daemon runs until every ring deadline has passed, stops cleanly with SIGTERM,
and the store must hold every fact, no member may still be ``ringing``, every rung call that
nobody accepted must have ended, and each ``missed`` must lie between its deadline and shortly
after the first moment a daemon was up after it.

Seeded (``TEST_CALL_CRASH_SEED``); the seed is in every failure message. Only the processes this
test starts are ended, by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from conftest import CALLS_API_SECRET, READY_PATTERN, _daemon_binary, daemon_env, mint_token

SEED = int(os.environ.get("TEST_CALL_CRASH_SEED", "20261122"))
CYCLES = 15
LONG_DOWN_CYCLE = 5  # after this cycle's kill the daemon stays down past the ring timeout
INCOMING_MS = 3000
AUTO_CANCEL_MS = 3500
KILL_AFTER_S = (0.2, 1.5)
RESUME_MARGIN_MS = 800  # rings this close to their deadline may end while a client resumes
MISSED_SLACK_MS = 1500  # a due deadline fires within this long of a daemon being up
START_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 10.0
RECV_TIMEOUT_S = 10.0
TEST_TIMEOUT_S = 150.0
BUDGET_S = 90.0

CALLERS = ("alice", "bob")
CALLEES = ("carol", "dave", "erin")
SILENT = "zoe"  # a callee that never answers: its rings always run into their deadline
MEETERS = ("mike", "nina", "oscar")
ROOMS = 4
FINAL = ("accepted", "rejected", "missed")
#: Error codes a racing request may get (the state moved under it); anything else is a failure.
RACE_ERRORS = {"conflict", "call_ended", "not_a_member", "session_not_found", "call_not_found"}


def ms_now() -> int:
    return int(time.time() * 1000)


def db_ms(text: str | None) -> int | None:
    """A GRDB date column ("YYYY-MM-DD HH:MM:SS.SSS", UTC) in milliseconds."""
    if text is None:
        return None
    parsed = datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
    return round(parsed.timestamp() * 1000)


class Disconnected(Exception):
    """The socket went away before the answer came (the daemon was killed)."""


# --------------------------------------------------------------------------------------------
# The daemon


class Daemon:
    """``switchboard serve`` on the state directory; merged output pumped on a thread."""

    def __init__(self, state_dir: Path, cwd: Path, env: dict[str, str]):
        self.lines: list[str] = []
        self.port: int | None = None
        self.ready = threading.Event()
        self.ready_ms: int | None = None
        self.end_ms: int | None = None
        self.process = subprocess.Popen(
            [str(_daemon_binary()), "serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0",
             "--state-dir", str(state_dir)],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace",
        )
        threading.Thread(target=self._pump, name="switchboard-output", daemon=True).start()

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if self.port is None:
                match = READY_PATTERN.search(line)
                if match and "admin=" in line:
                    self.port = int(match.group(1))
                    self.ready_ms = ms_now()
                    self.ready.set()
        self.ready.set()

    def wait_ready(self) -> int:
        assert self.ready.wait(START_TIMEOUT_S), f"no ready line within {START_TIMEOUT_S:.0f} s:\n{self.output()}"
        assert self.port is not None, "the daemon exited before its ready line:\n" + self.output()
        return self.port

    def output(self) -> str:
        return "".join(self.lines[-200:])

    def kill(self) -> int:
        """SIGKILL by PID and reap; returns the exit status (negative signal number)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        status = self.process.wait(timeout=EXIT_TIMEOUT_S)
        self.end_ms = ms_now()
        return status

    def terminate(self) -> int:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
        status = self.process.wait(timeout=20)
        self.end_ms = ms_now()
        return status


def daemon_environment() -> dict[str, str]:
    env = daemon_env()
    env.update({
        "SWITCHBOARD_AUTH_API_SECRET": CALLS_API_SECRET,
        "SWITCHBOARD_CALL_TYPES_RINGING_INCOMING_TIMEOUT_MS": str(INCOMING_MS),
        "SWITCHBOARD_CALL_TYPES_RINGING_AUTO_CANCEL_TIMEOUT_MS": str(AUTO_CANCEL_MS),
        # Rate limits are not what this test is about: let every ring and request through.
        "SWITCHBOARD_CALLS_RING_BURST": "10000",
        "SWITCHBOARD_CALLS_RING_RATE_PER_MINUTE": "10000",
        "SWITCHBOARD_LIMITS_MESSAGES_PER_SECOND": "10000",
        "SWITCHBOARD_LIMITS_MESSAGE_BURST": "10000",
        "SWITCHBOARD_CALLS_CREATES_PER_MINUTE_PER_USER": "100000",
        "SWITCHBOARD_CALLS_CREATE_BURST_PER_USER": "100000",
        "SWITCHBOARD_SHUTDOWN_DRAIN_TIMEOUT_MS": "2000",
    })
    return env


# --------------------------------------------------------------------------------------------
# What the clients were told


@dataclass
class MemberFact:
    state: str = "none"
    reason: str | None = None
    updated: int | None = None  # ring_updated_at of `state`, when told
    deadline: int | None = None  # the incoming deadline, when it rang
    source: str = ""


@dataclass
class CallFact:
    cid: str
    created_by: str | None = None
    session: int = 0  # highest call session told
    ended: dict[int, tuple[str, int]] = field(default_factory=dict)  # session -> (reason, ended_at)
    members: dict[str, MemberFact] = field(default_factory=dict)


@dataclass
class SessionFact:
    sid: str
    cid: str
    user: str
    connection: str | None = None
    call_session: int | None = None
    left: str | None = None  # the reason told, "?" when told it left without a reason
    source: str = ""


class World:
    """Every fact any client was told, and the failures found on the way."""

    def __init__(self, seed: int):
        self.seed = seed
        self.calls: dict[str, CallFact] = {}
        self.sessions: dict[str, SessionFact] = {}
        self.violations: list[str] = []
        self.stats: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.call_numbers = 0
        self.cycle = -1

    def violation(self, message: str) -> None:
        self.violations.append(f"cycle {self.cycle}: {message}")

    def call(self, cid: str) -> CallFact:
        if cid not in self.calls:
            self.calls[cid] = CallFact(cid)
        return self.calls[cid]

    # -- calls and members

    def observe_state(self, data: dict[str, Any], source: str) -> None:
        """A `{call, members?, participants?}` object from an answer or an event."""
        call = data.get("call")
        if not isinstance(call, dict):
            return
        self.observe_call(call, source)
        cid = call["cid"]
        for member in data.get("members") or []:
            self.observe_member(cid, member["user_id"], member["ring_state"], member.get("ring_reason"),
                                member.get("ring_updated_at"), source)
        if call["ended_at"] is None:
            for participant in data.get("participants") or []:
                self.observe_session(participant["session_id"], cid, participant["user_id"], call["session"], source)

    def observe_call(self, call: dict[str, Any], source: str) -> None:
        fact = self.call(call["cid"])
        if fact.created_by is None:
            fact.created_by = call["created_by"]
        elif fact.created_by != call["created_by"]:
            self.violation(f"{call['cid']}: created_by told as {fact.created_by} and as {call['created_by']} ({source})")
        fact.session = max(fact.session, call["session"])
        if call["ended_at"] is not None:
            told = (call["ended_reason"], call["ended_at"])
            before = fact.ended.setdefault(call["session"], told)
            if before != told:
                self.violation(f"{call['cid']} session {call['session']} told ended as {before} and as {told} ({source})")
            for session in self.sessions.values():
                if session.cid == fact.cid and session.call_session == call["session"] and session.left is None:
                    session.left = "?"  # closed with the call (call_ended, or an untold leave before it)

    def observe_member(self, cid: str, user: str, state: str, reason: str | None, updated: int | None, source: str,
                       deadline: int | None = None) -> None:
        if state == "none":
            return
        fact = self.call(cid).members.setdefault(user, MemberFact())
        if state == "ringing" and updated is not None:
            computed = updated + INCOMING_MS
            if deadline is None:
                deadline = computed
            elif deadline != computed:
                self.violation(f"{cid}/{user}: ring_deadline {deadline} is not ring_updated_at {updated} + {INCOMING_MS} ({source})")
        if deadline is not None:
            if fact.deadline is not None and fact.deadline != deadline:
                self.violation(f"{cid}/{user}: ring deadline told as {fact.deadline} and as {deadline} ({source})")
            fact.deadline = fact.deadline or deadline
        if fact.state in FINAL:
            if state in FINAL:
                if state != fact.state or (reason is not None and fact.reason is not None and reason != fact.reason):
                    self.violation(f"{cid}/{user}: final ring state told as {fact.state}/{fact.reason} ({fact.source}) "
                                   f"and as {state}/{reason} ({source})")
                if updated is not None and fact.updated is not None and updated != fact.updated:
                    self.violation(f"{cid}/{user}: {state} told at {fact.updated} and at {updated}")
                fact.reason = fact.reason or reason
                fact.updated = fact.updated or updated
            return  # a ringing snapshot older than the final state
        if state == "ringing":
            fact.state, fact.source = "ringing", source
            fact.updated = updated or fact.updated
            return
        fact.state, fact.reason, fact.updated, fact.source = state, reason, updated, source

    def member(self, cid: str, user: str) -> MemberFact | None:
        fact = self.calls.get(cid)
        return fact.members.get(user) if fact else None

    def call_session_ended(self, cid: str, number: int | None) -> bool:
        fact = self.calls.get(cid)
        return bool(fact and number is not None and number in fact.ended)

    # -- sessions

    def observe_session(self, sid: str, cid: str, user: str, number: int | None, source: str, *,
                        connection: str | None = None) -> SessionFact:
        fact = self.sessions.get(sid)
        if fact is None:
            fact = self.sessions[sid] = SessionFact(sid, cid, user, source=source)
        if (fact.cid, fact.user) != (cid, user):
            self.violation(f"session {sid} told as {fact.cid}/{fact.user} and as {cid}/{user} ({source})")
        if number is not None:
            if fact.call_session is not None and fact.call_session != number:
                self.violation(f"session {sid} told in call session {fact.call_session} and {number} ({source})")
            fact.call_session = number
        fact.connection = fact.connection or connection
        if fact.left is None and self.call_session_ended(cid, fact.call_session):
            fact.left = "?"
        return fact

    def observe_left(self, sid: str, cid: str, user: str, reason: str, source: str) -> None:
        fact = self.observe_session(sid, cid, user, None, source)
        if fact.left not in (None, "?", reason):
            # Told "left" by the leave's answer, or the reason of participant_left: they must agree.
            self.violation(f"session {sid} told left as {fact.left} and as {reason} ({source})")
        if fact.left in (None, "?"):
            fact.left = reason

    def session_closed(self, sid: str) -> bool:
        fact = self.sessions[sid]
        return fact.left is not None or self.call_session_ended(fact.cid, fact.call_session)


# --------------------------------------------------------------------------------------------
# A client


@dataclass
class Planned:
    at: float
    action: str


class Client:
    """One user with one client connection on ``/v1/connect``, resumed across restarts."""

    def __init__(self, name: str, role: str, token: str, world: World, rng: random.Random):
        self.name, self.role, self.token, self.world, self.rng = name, role, token, world, rng
        self.ws: ClientConnection | None = None
        self.connection_id: str | None = None
        self.resume_token: str | None = None
        self.last_seq = 0
        self.next_id = 0
        self.pending: dict[int, tuple[str, dict[str, Any], asyncio.Future]] = {}
        self.inflight: dict[int, tuple[str, dict[str, Any]]] = {}
        self.reader: asyncio.Task | None = None
        self.sessions: dict[str, str] = {}  # session id -> cid, believed active
        self.leave_at: dict[str, float] = {}
        self.ringing: dict[str, Planned] = {}  # callee: cid -> what to do when
        self.own: dict[str, Planned] = {}  # caller: live calls it created -> what to do when
        # Rings received during a resume: cid -> (ring_deadline, what was known of the member then).
        self.resent: dict[str, tuple[int, MemberFact | None]] = {}
        self.expect_seq = 1

    # -- transport

    async def open(self, port: int) -> dict[str, Any]:
        """Connect (resuming when it can) and read up to the answer of a ping sent right behind
        ``connection.ok``: the replayed events and the re-sent rings all come before it."""
        self.ws = await asyncio.wait_for(connect(f"ws://127.0.0.1:{port}/v1/connect", max_size=None), RECV_TIMEOUT_S)
        auth: dict[str, Any] = {"type": "auth", "token": self.token}
        if self.resume_token:
            auth.update(resume_token=self.resume_token, last_seq=self.last_seq)
        await self.ws.send(json.dumps(auth))
        ok = await self._recv()
        assert ok["type"] == "connection.ok", f"{self.name}: {ok}"
        if ok["data"]["last_seq"] < self.last_seq:
            self.world.violation(f"{self.name}: connection.ok last_seq {ok['data']['last_seq']} is below {self.last_seq}, "
                                 "the last seq this connection processed")
        # Replayed events end at last_seq; new ones go on from there without a gap.
        self.expect_seq = ok["data"]["last_seq"] - ok["data"]["replayed"] + 1
        self.resent = {}
        await self.ws.send(json.dumps({"id": "resume-check", "type": "ping"}))
        while True:
            frame = await self._recv()
            if frame.get("type") == "pong" and frame.get("id") == "resume-check":
                break
            if "seq" in frame:
                if frame["type"] == "call.ring":
                    # What was known when it rang again (a ring_stopped may follow: the deadline passed).
                    known = self.world.member(frame["call_cid"], self.name)
                    self.resent[frame["call_cid"]] = (frame["data"]["ring_deadline"], known and replace(known))
                self._event(frame)
            else:
                self.world.violation(f"{self.name}: unexpected frame during the resume: {frame}")
        self.reader = asyncio.create_task(self._read(), name=f"reader-{self.name}")
        return ok["data"]

    async def _recv(self) -> dict[str, Any]:
        assert self.ws is not None
        text = await asyncio.wait_for(self.ws.recv(), RECV_TIMEOUT_S)
        return json.loads(text)

    async def _read(self) -> None:
        assert self.ws is not None
        try:
            async for text in self.ws:
                frame = json.loads(text)
                if frame.get("id") in self.pending:
                    kind, data, future = self.pending.pop(frame["id"])
                    self.inflight.pop(frame["id"], None)
                    if not future.done():
                        future.set_result(frame)
                elif "seq" in frame:
                    self._event(frame)
                else:
                    self.world.violation(f"{self.name}: unexpected frame {frame}")
        except ConnectionClosed:
            pass
        finally:
            for _, _, future in self.pending.values():
                if not future.done():
                    future.set_exception(Disconnected())
            self.pending.clear()

    async def closed(self) -> None:
        """Wait until the socket is gone and every frame it delivered has been handled."""
        if self.reader is not None:
            await asyncio.wait_for(self.reader, RECV_TIMEOUT_S)
            self.reader = None

    async def request(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Send a request; the answer frame (response or error). Raises ``Disconnected``."""
        assert self.ws is not None
        self.next_id += 1
        rid = self.next_id
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[rid] = (kind, data, future)
        self.inflight[rid] = (kind, data)
        try:
            await self.ws.send(json.dumps({"id": rid, "type": kind, "data": data}))
        except ConnectionClosed:
            self.pending.pop(rid, None)
            raise Disconnected() from None
        frame = await asyncio.wait_for(future, RECV_TIMEOUT_S)
        if frame["type"] == "pong":
            pass
        elif frame["type"] == "response":
            self.world.stats[f"ack {kind}"] += 1
            self._answer(kind, data, frame["data"])
        elif frame["type"] == "error":
            code = frame["error"]["code"]
            self.world.errors[f"{kind}: {code}"] += 1
            if code not in RACE_ERRORS:
                self.world.violation(f"{self.name}: {kind} {data} failed: {frame['error']}")
        else:
            self.world.violation(f"{self.name}: {kind} answered with {frame}")
        return frame

    # -- what the answers and events tell

    def _answer(self, kind: str, request: dict[str, Any], data: dict[str, Any]) -> None:
        world, source = self.world, f"{self.name} {kind} answer"
        world.observe_state(data, source)
        cid = f"{request.get('type')}:{request.get('id')}"
        if kind == "call.join":
            world.observe_session(data["session_id"], data["call"]["cid"], self.name, data["call"]["session"], source,
                                  connection=self.connection_id)
            self.sessions[data["session_id"]] = data["call"]["cid"]
            self.leave_at[data["session_id"]] = time.monotonic() + self.rng.uniform(0.1, 2.0)
        elif kind == "call.leave":
            for sid in data["left"]:
                world.observe_left(sid, cid, self.name, "left", source)
                self.sessions.pop(sid, None)
        elif kind == "call.get_or_create" and data.get("created"):
            world.stats["calls created"] += 1
        if "call" in data:
            self._forget_if_ended(data["call"])

    def _event(self, frame: dict[str, Any]) -> None:
        world, kind, data = self.world, frame["type"], frame["data"]
        if frame["seq"] <= self.last_seq:
            world.violation(f"{self.name}: seq went from {self.last_seq} to {frame['seq']} ({kind})")
        elif frame["seq"] != self.expect_seq:
            world.violation(f"{self.name}: seq {frame['seq']} ({kind}) where {self.expect_seq} was next")
        self.expect_seq = frame["seq"] + 1
        self.last_seq = max(self.last_seq, frame["seq"])
        world.stats[f"event {kind}"] += 1
        source = f"{self.name} {kind} event"
        cid = frame.get("call_cid")
        world.observe_state(data, source)
        if kind == "call.ring":
            world.observe_member(cid, self.name, "ringing", None, None, source, deadline=data["ring_deadline"])
            if cid not in self.ringing and self.role in ("callee", "silent"):
                self.ringing[cid] = self._plan_answer()
        elif kind == "call.accepted":
            world.observe_member(cid, data["user_id"], "accepted", None, None, source)
        elif kind == "call.rejected":
            world.observe_member(cid, data["user_id"], "rejected", data["reason"], None, source)
        elif kind == "call.ring_stopped":
            state, reason = {"timeout": ("missed", None), "cancelled": ("rejected", "cancel"),
                             "accepted_elsewhere": ("accepted", None)}[data["reason"]]
            world.observe_member(cid, self.name, state, reason, None, source)
            self.ringing.pop(cid, None)
        elif kind == "call.participant_joined":
            participant = data["participant"]
            world.observe_session(participant["session_id"], cid, participant["user_id"], None, source)
        elif kind == "call.participant_left":
            participant = data["participant"]
            world.observe_left(participant["session_id"], cid, participant["user_id"], participant["reason"], source)
            self.sessions.pop(participant["session_id"], None)
        if "call" in data:
            self._forget_if_ended(data["call"])

    def _forget_if_ended(self, call: dict[str, Any]) -> None:
        if call["ended_at"] is None:
            return
        cid = call["cid"]
        self.own.pop(cid, None)
        self.ringing.pop(cid, None)
        for sid in [sid for sid, c in self.sessions.items() if c == cid and self.world.session_closed(sid)]:
            del self.sessions[sid]

    def _plan_answer(self) -> Planned:
        if self.role == "silent":
            return Planned(float("inf"), "ignore")
        action = self.rng.choices(["accept", "join", "reject", "ignore"], weights=[3, 3, 3, 2])[0]
        return Planned(time.monotonic() + self.rng.uniform(0.05, 2.5), action)

    # -- load

    async def run(self, stop: asyncio.Event) -> None:
        """Requests until ``stop`` is set or the daemon goes away."""
        try:
            while not stop.is_set():
                if self.role == "caller":
                    await self._caller_step()
                elif self.role == "callee":
                    await self._callee_step()
                elif self.role == "meeter":
                    await self._meeter_step()
                else:
                    return
                await asyncio.sleep(self.rng.uniform(0, 0.03))
        except (Disconnected, ConnectionClosed):
            return

    def _split(self, cid: str) -> dict[str, str]:
        kind, ident = cid.split(":", 1)
        return {"type": kind, "id": ident}

    async def _caller_step(self) -> None:
        now = time.monotonic()
        due = [cid for cid, plan in sorted(self.own.items()) if plan.at <= now]
        if due and self.rng.random() < 0.7:
            cid = self.rng.choice(due)
            plan = self.own.pop(cid)
            if plan.action == "cancel":
                await self.request("call.reject", {**self._split(cid), "reason": "cancel"})
            elif plan.action == "end":
                await self.request("call.end", self._split(cid))
            else:
                await self.request("call.get", self._split(cid))
            return
        self.world.call_numbers += 1
        ident = f"r{self.world.call_numbers}"
        callees = [self.rng.choice(CALLEES)] + ([SILENT] if self.rng.random() < 0.4 else [])
        frame = await self.request("call.get_or_create", {"type": "ringing", "id": ident, "members": callees, "ring": True})
        if frame["type"] == "response" and frame["data"]["call"]["ended_at"] is None:
            action = self.rng.choices(["cancel", "end", "watch"], weights=[2, 2, 3])[0]
            self.own[f"ringing:{ident}"] = Planned(now + self.rng.uniform(0.1, 3.0), action)

    async def _callee_step(self) -> None:
        now = time.monotonic()
        leaving = [sid for sid in sorted(self.sessions) if self.leave_at.get(sid, 0) <= now]
        if leaving and self.rng.random() < 0.6:
            sid = self.rng.choice(leaving)
            await self.request("call.leave", {**self._split(self.sessions[sid]), "session_id": sid})
            return
        due = [cid for cid, plan in sorted(self.ringing.items()) if plan.at <= now and plan.action != "ignore"]
        if due:
            cid = self.rng.choice(due)
            action = self.ringing.pop(cid).action
            if action == "accept":
                await self.request("call.accept", self._split(cid))
            elif action == "join":
                await self.request("call.join", self._split(cid))
            else:
                await self.request("call.reject", {**self._split(cid), "reason": "decline"})
            return
        await self.request("ping", {})

    async def _meeter_step(self) -> None:
        now = time.monotonic()
        leaving = [sid for sid in sorted(self.sessions) if self.leave_at.get(sid, 0) <= now]
        choice = self.rng.random()
        if leaving and (choice < 0.45 or len(self.sessions) >= 3):
            sid = self.rng.choice(leaving)
            await self.request("call.leave", {**self._split(self.sessions[sid]), "session_id": sid})
        elif choice < 0.85 and len(self.sessions) < 3:
            await self.request("call.join", {"type": "default", "id": f"room-{self.rng.randrange(ROOMS)}", "create": True})
        elif choice < 0.88:
            mine = sorted(c for c, f in self.world.calls.items()
                          if c.startswith("default:") and f.created_by == self.name and f.session not in f.ended)
            if mine:
                await self.request("call.end", self._split(self.rng.choice(mine)))
        else:
            await self.request("call.get", self._split(f"default:room-{self.rng.randrange(ROOMS)}"))


# --------------------------------------------------------------------------------------------
# Checks on the store


def recover_store(state_dir: Path, cwd: Path) -> bool:
    """Opens the store as the daemon does at start (``switchboard migrate``): what the killed
    daemon committed to the batch log goes into the tables. True when the log held any."""
    held = any(segment.stat().st_size > 0 for segment in (state_dir / "batches").glob("*.batches"))
    result = subprocess.run([str(_daemon_binary()), "migrate", "--state-dir", str(state_dir)], cwd=cwd,
                            env=daemon_environment(), capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"opening the store after the kill failed: {result.stdout}{result.stderr}"
    left = list((state_dir / "batches").glob("*.batches"))
    assert left == [], f"the open folded the batch log and removed its segments, but {left} remain"
    return held


def read_store(path: Path) -> dict[str, Any]:
    """integrity_check and the call tables, read-only (the crash's WAL is left for recovery)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    connection.row_factory = sqlite3.Row
    try:
        return {
            "integrity": [tuple(row) for row in connection.execute("PRAGMA integrity_check")],
            "calls": {row["cid"]: dict(row) for row in connection.execute("SELECT * FROM call")},
            "members": {(row["cid"], row["user_id"]): dict(row) for row in connection.execute("SELECT * FROM call_member")},
            "sessions": {row["session_id"]: dict(row) for row in connection.execute("SELECT * FROM call_session")},
            "connections": {row["id"]: dict(row) for row in connection.execute("SELECT * FROM client_connection")},
        }
    finally:
        connection.close()


def missed_bound(deadline: int, daemons: list[Daemon]) -> int | None:
    """The latest a ring with `deadline` may turn missed: shortly after the first daemon that was up
    from max(deadline, its start) for MISSED_SLACK_MS."""
    for daemon in daemons:
        if daemon.ready_ms is None:
            continue
        due = max(deadline, daemon.ready_ms)
        if daemon.end_ms is None or daemon.end_ms >= due + MISSED_SLACK_MS:
            return due + MISSED_SLACK_MS
    return None


def check_store(path: Path, world: World, daemons: list[Daemon], *, final: bool) -> list[str]:
    """Every fact told so far is in the store (plus, at the end, every ring is over)."""
    store = read_store(path)
    problems: list[str] = []
    if store["integrity"] != [("ok",)]:
        problems.append(f"integrity_check: {store['integrity'][:10]}")
    for cid, fact in sorted(world.calls.items()):
        row = store["calls"].get(cid)
        if row is None:
            problems.append(f"call {cid} (told: {fact}) is not in the store")
            continue
        if fact.created_by is not None and row["created_by"] != fact.created_by:
            problems.append(f"{cid}: created_by {row['created_by']}, told {fact.created_by}")
        if row["session"] < fact.session:
            problems.append(f"{cid}: session {row['session']} in the store, {fact.session} told")
        for number, (reason, ended_at) in sorted(fact.ended.items()):
            if row["session"] == number and (row["ended_reason"], db_ms(row["ended_at"])) != (reason, ended_at):
                problems.append(f"{cid}: session {number} told ended ({reason} at {ended_at}), "
                                f"store has {row['ended_reason']} at {db_ms(row['ended_at'])} ({row['ended_at']})")
        for user, member in sorted(fact.members.items()):
            mrow = store["members"].get((cid, user))
            if mrow is None:
                problems.append(f"{cid}/{user}: told {member.state}, no member row")
                continue
            state, updated = mrow["ring_state"], db_ms(mrow["ring_updated_at"])
            if member.state in FINAL:
                if state != member.state or (member.reason is not None and mrow["ring_reason"] != member.reason):
                    problems.append(f"{cid}/{user}: told {member.state}/{member.reason} ({member.source}), "
                                    f"store has {state}/{mrow['ring_reason']}")
                elif member.updated is not None and updated != member.updated:
                    problems.append(f"{cid}/{user}: told {member.state} at {member.updated}, store has {updated} ({mrow['ring_updated_at']})")
            elif member.state == "ringing":
                if state == "none":
                    problems.append(f"{cid}/{user}: told ringing ({member.source}), store has none")
                elif state == "ringing" and member.deadline is not None and db_ms(mrow["ring_deadline"]) != member.deadline:
                    problems.append(f"{cid}/{user}: ring deadline told {member.deadline}, store has "
                                    f"{db_ms(mrow['ring_deadline'])} ({mrow['ring_deadline']})")
            if final and member.deadline is not None and state == "missed" and updated is not None:
                bound = missed_bound(member.deadline, daemons)
                if updated < member.deadline:
                    problems.append(f"{cid}/{user}: missed at {updated}, before its deadline {member.deadline}")
                elif bound is not None and updated > bound:
                    problems.append(f"{cid}/{user}: missed at {updated}, {updated - member.deadline} ms after its deadline "
                                    f"{member.deadline} and after {bound} (a daemon was up by then)")
                else:
                    world.stats["missed checked against its deadline"] += 1
    for sid, session in sorted(world.sessions.items()):
        row = store["sessions"].get(sid)
        if row is None:
            problems.append(f"session {sid} ({session}) is not in the store")
            continue
        if (row["cid"], row["user_id"]) != (session.cid, session.user):
            problems.append(f"session {sid}: store has {row['cid']}/{row['user_id']}, told {session.cid}/{session.user}")
        if session.call_session is not None and row["call_session"] != session.call_session:
            problems.append(f"session {sid}: store has call session {row['call_session']}, told {session.call_session}")
        if session.connection is not None and row["connection_id"] != session.connection:
            problems.append(f"session {sid}: store has connection {row['connection_id']}, joined on {session.connection}")
        if session.left is not None:
            if row["left_at"] is None:
                problems.append(f"session {sid} in {session.cid}: told it left ({session.left}), store has it active")
            elif session.left not in ("?", row["left_reason"]):
                problems.append(f"session {sid} in {session.cid}: told it left ({session.left}), store has {row['left_reason']}")
    if final:
        ringing = sorted(key for key, row in store["members"].items() if row["ring_state"] == "ringing")
        if ringing:
            problems.append(f"members still ringing after every deadline passed: {ringing[:10]}")
        for cid, row in sorted(store["calls"].items()):
            if not row["rung"] or row["ended_at"] is not None or row["session"] != 1:
                continue  # (a reopened call never rings again)
            states = [m["ring_state"] for (c, _), m in store["members"].items() if c == cid]
            if "accepted" not in states:
                problems.append(f"{cid}: rang, nobody accepted, every deadline passed, but it is still live ({states})")
    world.stats["store rows: calls"] = len(store["calls"])
    world.stats["store rows: sessions"] = len(store["sessions"])
    return problems


# --------------------------------------------------------------------------------------------
# The scenario


@dataclass
class Scenario:
    state_dir: Path
    cwd: Path
    world: World
    rng: random.Random
    clients: list[Client]
    daemons: list[Daemon] = field(default_factory=list)
    inflight: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)

    @property
    def database(self) -> Path:
        return self.state_dir / "switchboard.sqlite"

    def start(self) -> Daemon:
        began = time.monotonic()
        daemon = Daemon(self.state_dir, self.cwd, daemon_environment())
        self.daemons.append(daemon)
        daemon.wait_ready()
        took = int((time.monotonic() - began) * 1000)
        self.world.stats["start ms (max)"] = max(self.world.stats["start ms (max)"], took)
        return daemon

    def uncertain_cids(self) -> set[str]:
        """Calls that a request in flight at the kill may have changed."""
        cids = set()
        for requests in self.inflight.values():
            for kind, data in requests:
                if "type" in data and "id" in data:
                    cids.add(f"{data['type']}:{data['id']}")
        return cids

    def inflight_of(self, client: Client, kind: str) -> set[str]:
        return {f"{d['type']}:{d['id']}" for k, d in self.inflight.get(client.name, []) if k == kind}

    async def resume_all(self, port: int, restarted: bool) -> None:
        for client in self.clients:
            await self.resume(client, port, restarted)

    async def resume(self, client: Client, port: int, restarted: bool) -> None:
        world = self.world
        uncertain = self.uncertain_cids()
        before_sessions = dict(client.sessions)
        sent_ms = ms_now()
        ok = await client.open(port)
        name = client.name
        if client.connection_id is None:
            assert ok["resumed"] is False and ok["sessions"] == [], ok
            client.connection_id, client.resume_token = ok["connection_id"], ok["resume_token"]
            return
        world.stats["resumes"] += 1
        if not ok["resumed"] or ok["connection_id"] != client.connection_id or ok["resume_token"] != client.resume_token:
            world.violation(f"{name}: the resume was refused: {ok} (connection {client.connection_id})")
            client.connection_id, client.resume_token = ok["connection_id"], ok["resume_token"]
            return
        if restarted and ok["replay_complete"]:
            world.violation(f"{name}: the first resume after a restart says replay_complete: true")

        # Sessions: exactly the ones held, give or take requests in flight at the kill.
        listed = set(ok["sessions"])
        for sid, cid in sorted(before_sessions.items()):
            closed = world.session_closed(sid)
            if sid in listed and closed:
                world.violation(f"{name}: session {sid} in {cid} is listed on resume but was told closed ({world.sessions[sid]})")
            elif sid not in listed and not closed and cid not in uncertain:
                world.violation(f"{name}: session {sid} in {cid} vanished over the restart without a word "
                                f"({world.sessions[sid]})")
            elif sid not in listed:
                client.sessions.pop(sid, None)
                if not closed:
                    world.sessions[sid].left = "?"  # told, by its absence, that it is gone
        store_sessions = None
        for sid in sorted(listed - set(before_sessions)):
            if store_sessions is None:
                store_sessions = read_store(self.database)["sessions"]
            row = store_sessions.get(sid)
            joins = self.inflight_of(client, "call.join")
            if row is None or row["cid"] not in joins or row["user_id"] != name or (sid in world.sessions and world.session_closed(sid)):
                world.violation(f"{name}: resume lists session {sid} ({row}) that no join in flight explains ({sorted(joins)})")
                continue
            world.stats["sessions of joins in flight, learned on resume"] += 1
            world.observe_session(sid, row["cid"], name, row["call_session"], f"{name} connection.ok",
                                  connection=client.connection_id)
            client.sessions[sid] = row["cid"]
            client.leave_at[sid] = time.monotonic() + client.rng.uniform(0.1, 2.0)

        # Rings: every ring known to be going is rung again, with its original deadline.
        for cid, (deadline, member) in sorted(client.resent.items()):
            if member is None:
                if not any(cid in self.inflight_of(c, "call.get_or_create") for c in self.clients):
                    world.violation(f"{name}: rung again for {cid}, a call nobody was told of and no create explains")
                continue
            if member.state in FINAL:
                world.violation(f"{name}: rung again for {cid}, but was told {member.state}/{member.reason} ({member.source})")
            elif member.deadline is not None and deadline != member.deadline:
                world.violation(f"{name}: {cid} rung again with ring_deadline {deadline}, told {member.deadline} before the restart")
            else:
                world.stats["rings resumed with their deadline"] += 1
        for cid, fact in sorted(world.calls.items()):
            member = fact.members.get(name)
            if member is None or member.state != "ringing" or member.deadline is None or cid in uncertain:
                continue
            if member.deadline <= sent_ms + RESUME_MARGIN_MS or (fact.session in fact.ended):
                continue
            if cid not in client.resent:
                world.violation(f"{name}: {cid} is ringing until {member.deadline} ({member.deadline - sent_ms} ms after the "
                                f"resume) but was not rung again")
        for cid in client.resent:
            if client.role in ("callee", "silent") and cid not in client.ringing:
                client.ringing[cid] = client._plan_answer()

        # Re-fetch what this client cares about (what 6.11 asks of a client after an incomplete
        # replay): every session is a participant of a live call; a ring believed going that was
        # not rung again is over.
        mine_in_flight = {f"{d['type']}:{d['id']}" for _, d in self.inflight.get(name, []) if "type" in d and "id" in d}
        cared = sorted(set(client.sessions.values()) | set(client.ringing) | set(client.own) | mine_in_flight)
        for cid in cared:
            frame = await client.request("call.get", client._split(cid))
            if frame["type"] != "response":
                continue
            data = frame["data"]
            participants = {p["session_id"] for p in data["participants"]}
            for sid in [s for s, c in client.sessions.items() if c == cid]:
                if data["call"]["ended_at"] is None and sid in participants:
                    world.stats["sessions resumed in live calls"] += 1
                elif sid in listed:
                    world.violation(f"{name}: session {sid} listed on resume is not a participant of {cid}: {data}")
            mine = next((m for m in data["members"] if m["user_id"] == name), None)
            if cid in client.ringing and cid not in client.resent and mine is not None and mine["ring_state"] == "ringing":
                world.violation(f"{name}: {cid} still rings {name} ({mine}) but was not rung again on resume")
            if cid in client.ringing and (mine is None or mine["ring_state"] != "ringing"):
                client.ringing.pop(cid, None)

    async def refresh_uncertain(self) -> None:
        """``call.get`` by a member of every call a request in flight at the kill may have changed
        (its creator, or the client that had it in flight), so that what is known is current."""
        by_name = {client.name: client for client in self.clients}
        for cid in sorted(self.uncertain_cids()):
            fact = self.world.calls.get(cid)
            asker = by_name.get(fact.created_by) if fact and fact.created_by else None
            if asker is None:
                asker = next(c for c in self.clients if any(f"{d.get('type')}:{d.get('id')}" == cid for _, d in self.inflight.get(c.name, [])))
            await asker.request("call.get", asker._split(cid))

    def going_rings(self, deadline_before: int) -> list[tuple[str, str]]:
        """(cid, callee) of every ring known to be going whose deadline is before `deadline_before`."""
        return sorted(
            (cid, user) for cid, fact in self.world.calls.items() for user, member in fact.members.items()
            if member.state == "ringing" and member.deadline is not None and member.deadline < deadline_before
            and fact.session not in fact.ended
        )

    async def wait_rings_over(self, deadline_before: int, limit_ms: int, what: str) -> None:
        """Every ring known to be going whose deadline is before `deadline_before` is told over
        (every callee is connected) within `limit_ms` of now (a bounded poll of what the clients
        were told)."""
        until = time.monotonic() + limit_ms / 1000
        while (going := self.going_rings(deadline_before)) and time.monotonic() < until:
            await asyncio.sleep(0.05)
        if going:
            self.world.violation(f"{what}: rings past their deadline were not ended within {limit_ms} ms: {going[:10]}")

    async def cycle(self, index: int, daemon: Daemon) -> Daemon:
        """Load, then kill; returns the next daemon, started on the same state directory."""
        world = self.world
        stop = asyncio.Event()
        tasks = [asyncio.create_task(client.run(stop), name=f"load-{client.name}") for client in self.clients]
        await asyncio.sleep(self.rng.uniform(*KILL_AFTER_S))
        status = daemon.kill()
        stop.set()
        assert status == -signal.SIGKILL, f"cycle {index}: the daemon exited with {status} before the kill\n{daemon.output()}"
        await asyncio.gather(*tasks)
        for client in self.clients:
            await client.closed()
        self.inflight = {client.name: list(client.inflight.values()) for client in self.clients}
        for client in self.clients:
            client.inflight.clear()
        in_flight = sum(len(v) for v in self.inflight.values())
        world.stats["kills"] += 1
        world.stats["kills with requests in flight"] += in_flight > 0
        world.stats["requests in flight at kills"] += in_flight
        world.stats["kills that left batches in the batch log"] += recover_store(self.state_dir, self.cwd)
        problems = check_store(self.database, world, self.daemons, final=False)
        assert not problems, failure(world, f"after kill {index} the store lacks what clients were told", problems)

        long_down = index == LONG_DOWN_CYCLE
        if long_down:
            # Every ring going now (and every ring a create in flight may have started) is due
            # before the next start.
            world.stats["rings going at the long kill, due while down"] += len(self.going_rings(ms_now() + INCOMING_MS))
            await asyncio.sleep((AUTO_CANCEL_MS + 300) / 1000)
        world.cycle = index + 1
        daemon = await asyncio.to_thread(self.start)
        await self.resume_all(daemon.port, restarted=True)
        await self.refresh_uncertain()
        if long_down:
            await self.wait_rings_over(daemon.ready_ms, MISSED_SLACK_MS, "deadlines passed while the daemon was down")
        self.inflight = {}
        return daemon


def failure(world: World, what: str, problems: list[str]) -> str:
    """A failure message: the seed, the store's problems and what the clients found."""
    lines = [f"seed {world.seed} (TEST_CALL_CRASH_SEED), cycle {world.cycle}: {what}"]
    if problems:
        lines += [f"{len(problems)} problems in the store:"] + problems[:30]
    if world.violations:
        lines += [f"{len(world.violations)} failures seen by the clients:"] + world.violations[:30]
    return "\n".join(lines)


async def scenario(tmp_path: Path) -> World:
    world = World(SEED)
    rng = random.Random(SEED)
    users = [(name, "caller") for name in CALLERS] + [(name, "callee") for name in CALLEES] + [(SILENT, "silent")] + [
        (name, "meeter") for name in MEETERS]
    with ThreadPoolExecutor(max_workers=len(users)) as pool:
        tokens = list(pool.map(lambda user: mint_token(user[0], "2h"), users))
    clients = [Client(name, role, token, world, random.Random(f"{SEED}-{name}")) for (name, role), token in zip(users, tokens)]
    run = Scenario(tmp_path / "state", tmp_path, world, rng, clients)
    started = time.monotonic()
    daemon: Daemon | None = None
    try:
        world.cycle = 0
        daemon = await asyncio.to_thread(run.start)
        await run.resume_all(daemon.port, restarted=False)
        for index in range(CYCLES):
            daemon = await run.cycle(index, daemon)

        # The last daemon: every ring runs out (the ones given in the last cycle included), then
        # a clean stop.
        last_ring = max([m.deadline for f in world.calls.values() for m in f.members.values() if m.deadline] + [0])
        wait_until = max(last_ring, run.daemons[-2].end_ms + AUTO_CANCEL_MS) + 400
        await asyncio.sleep(max(0, wait_until - ms_now()) / 1000)
        await run.wait_rings_over(wait_until, MISSED_SLACK_MS, "the last daemon")
        for client in clients:
            assert client.ws is not None
            await client.ws.close()
            await client.closed()
        status = daemon.terminate()
        assert status == 0, f"SIGTERM: exit {status}\n{daemon.output()}"
        daemon = None
        problems = check_store(run.database, world, run.daemons, final=True)
        assert not problems, failure(world, "after the clean stop the store lacks what clients were told", problems)
    finally:
        if daemon is not None and daemon.process.poll() is None:
            daemon.kill()
    world.stats["elapsed ms"] = int((time.monotonic() - started) * 1000)
    return world


def test_kill_9_under_call_load_loses_nothing_told_and_resumes_calls_rings_and_connections(tmp_path: Path) -> None:
    try:
        world = asyncio.run(asyncio.wait_for(scenario(tmp_path), TEST_TIMEOUT_S))
    except AssertionError:
        raise
    except Exception as error:  # a timeout or a protocol surprise: say which seed
        raise AssertionError(f"seed {SEED} (TEST_CALL_CRASH_SEED): {type(error).__name__}: {error}") from error
    stats, errors = world.stats, world.errors
    summary = ", ".join(f"{k}={v}" for k, v in sorted(stats.items()))
    print(f"call crash loop (seed {SEED}): {summary}; errors: {dict(sorted(errors.items()))}")
    assert not world.violations, failure(world, "clients were not resumed, or not told", [])
    assert stats["kills"] == CYCLES
    assert stats["kills with requests in flight"] > 0, "no kill happened with a request in flight"
    assert stats["rings resumed with their deadline"] > 0, "no ring was going across a restart"
    assert stats["sessions resumed in live calls"] > 0, "no session was live across a restart"
    assert stats["missed checked against its deadline"] > 0
    assert stats["rings going at the long kill, due while down"] > 0
    assert stats["elapsed ms"] < BUDGET_S * 1000, f"took {stats['elapsed ms']} ms"
