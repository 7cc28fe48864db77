"""What the hostile-client tests share (test_abuse.py, test_hostile.py): the daemon under abuse
(:class:`AbuseDaemon`, the ``start_daemon`` fixture), its resource monitor, the well-behaved
client on the side (:class:`Bystander`) and a raw WebSocket client (:class:`RawWebSocket`) that
does exactly what it is told.

Test modules import the ``start_daemon`` fixture from here, which is how pytest finds it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import os
import re
import secrets
import select
import signal
import socket
import subprocess
import struct
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from conftest import CALLS_API_SECRET, SERVE_ARGS, STOP_TIMEOUT_S, Switchboard, _daemon_binary, _launch, daemon_env
from call_client import user_token

#: How much the daemon's RSS may grow over its baseline (measured after the bystanders are up).
RSS_HEADROOM = 64 * 1024 * 1024
#: Longest a bystander waits for any one answer before it counts as an error.
BYSTANDER_TIMEOUT_S = 5.0
#: Longest any single wait on an abusive socket takes.
WAIT_S = 10.0
#: The address the abusers connect from, and the one the bystanders use.
ABUSER_ADDRESS = "127.0.0.1"
BYSTANDER_ADDRESS = "127.0.0.2"

ADMIN_PATTERN = re.compile(r"admin=http://127\.0\.0\.1:([0-9]+)")


# ---------------------------------------------------------------------------------------------
# Tokens


# ---------------------------------------------------------------------------------------------
# The daemon under abuse


@dataclass
class AbuseDaemon:
    """A running daemon with small limits, its admin port and /proc views of its process."""

    switchboard: Switchboard
    admin_port: int
    #: Its state directory (``store.directory``: ``data`` under the launch directory by default).
    state_dir: Path
    #: The launch generator; advancing it stops the daemon (SIGTERM, exit code 0 required).
    launch: Iterator[Switchboard] | None = None

    @property
    def port(self) -> int:
        return self.switchboard.port

    @property
    def pid(self) -> int:
        return self.switchboard.process.pid

    def rss(self) -> int:
        """Resident set size in bytes (VmRSS)."""
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc status")

    def fds(self) -> int:
        """Open file descriptors."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def cpu_seconds(self) -> float:
        """User plus system CPU time the process has used so far."""
        with open(f"/proc/{self.pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cpu_share(self, seconds: float = 2.0) -> float:
        """The share of one core the process used over the next ``seconds``."""
        before, started = self.cpu_seconds(), time.monotonic()
        time.sleep(seconds)
        return (self.cpu_seconds() - before) / (time.monotonic() - started)

    def metrics(self) -> dict[str, float]:
        """``GET /metrics`` on the admin port, as ``{'name{labels}': value}``."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}/metrics", timeout=WAIT_S) as response:
            text = response.read().decode()
        values: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values

    def admin(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
        timeout: float = WAIT_S,
    ) -> tuple[int, dict[str, str], bytes]:
        """One admin API request with exactly ``headers`` (a ``Host`` given there replaces the
        default ``127.0.0.1:<port>``); returns the status, the headers (lower-case names) and
        the body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=timeout)
        try:
            headers = dict(headers or {})
            connection.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
            for name, value in headers.items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def output(self) -> str:
        return self.switchboard.output.text()

    def assert_alive(self) -> None:
        assert self.switchboard.process.poll() is None, (
            f"switchboard died with {self.switchboard.process.returncode}. Output:\n{self.switchboard.output.text()}"
        )

    def stop(self) -> None:
        """SIGTERM now, requiring exit code 0 (the fixture would do it at the end of the test)."""
        if self.launch is not None:
            next(self.launch, None)


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[Callable[..., AbuseDaemon]]:
    """Starts the daemon with user tokens enabled and the given ``SWITCHBOARD_*`` overrides
    (keyword arguments without the prefix); stops each one it started (SIGTERM, exit code 0
    required) at the end of the test.

    Options: ``args`` replaces the command line (``serve --host 127.0.0.1 --port 0 --admin-port
    0``), ``preexec_fn`` runs in the child before exec, ``admin_auth`` is passed to
    :func:`daemon_env` (``None`` keeps the daemon's default, a generated admin token), and
    ``state_dir`` says where the state directory is when ``args`` moves it. Every daemon runs
    in ``tmp_path``, so by default they share the state directory ``tmp_path/data``."""
    launches: list[Iterator[Switchboard]] = []

    def start(
        *, args: tuple[str, ...] | list[str] = SERVE_ARGS, preexec_fn: Callable[[], None] | None = None,
        admin_auth: str | None = "none", state_dir: Path | None = None, **overrides: Any,
    ) -> AbuseDaemon:
        env = daemon_env(admin_auth)
        env["SWITCHBOARD_AUTH_API_SECRET"] = CALLS_API_SECRET
        env["SWITCHBOARD_SHUTDOWN_DRAIN_TIMEOUT_MS"] = "3000"
        env.update({f"SWITCHBOARD_{key}": str(value) for key, value in overrides.items()})
        launch = _launch(tmp_path, env, args=args, preexec_fn=preexec_fn)
        switchboard = next(launch)
        launches.append(launch)
        match = ADMIN_PATTERN.search(switchboard.output.text())
        assert match, f"no admin URL in the ready line:\n{switchboard.output.text()}"
        return AbuseDaemon(switchboard, int(match.group(1)), state_dir or tmp_path / "data", launch)

    yield start
    failures: list[BaseException] = []
    for launch in reversed(launches):  # every daemon is stopped, even when one fails to stop cleanly
        try:
            next(launch, None)
        except BaseException as failure:  # noqa: BLE001 - pytest.fail raises a BaseException
            failures.append(failure)
    if failures:
        raise failures[0]


# ---------------------------------------------------------------------------------------------
# Resource monitor


class ResourceMonitor:
    """Samples the daemon's RSS and fd count every 20 ms on a thread; keeps the peaks."""

    def __init__(self, daemon: AbuseDaemon, name: str) -> None:
        self.daemon = daemon
        self.name = name
        self.baseline_rss = daemon.rss()
        self.baseline_fds = daemon.fds()
        self.peak_rss = self.baseline_rss
        self.peak_fds = self.baseline_fds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rss-{name}", daemon=True)
        self._thread.start()

    @property
    def bound(self) -> int:
        return self.baseline_rss + RSS_HEADROOM

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            with contextlib.suppress(OSError, AssertionError):
                self.peak_rss = max(self.peak_rss, self.daemon.rss())
                self.peak_fds = max(self.peak_fds, self.daemon.fds())

    def check(self) -> None:
        """The peak so far and the RSS now are within the bound."""
        now = self.daemon.rss()
        self.peak_rss = max(self.peak_rss, now)
        assert self.peak_rss <= self.bound, (
            f"{self.name}: RSS peaked at {mib(self.peak_rss)}, over the bound {mib(self.bound)} "
            f"(baseline {mib(self.baseline_rss)} + {mib(RSS_HEADROOM)})"
        )

    def finish(self) -> None:
        """Stops sampling, checks the bound and prints the figures (shown with ``-s``)."""
        self._stop.set()
        self._thread.join(timeout=WAIT_S)
        end = self.daemon.rss()
        self.peak_rss = max(self.peak_rss, end)
        print(
            f"\n[abuse] {self.name}: RSS baseline {mib(self.baseline_rss)}, peak {mib(self.peak_rss)}, "
            f"end {mib(end)}, bound {mib(self.bound)}; fds baseline {self.baseline_fds}, "
            f"peak {self.peak_fds}, end {self.daemon.fds()}"
        )
        assert end <= self.bound, f"{self.name}: RSS at the end {mib(end)} is over the bound {mib(self.bound)}"
        self.check()


def mib(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB"


# ---------------------------------------------------------------------------------------------
# The well-behaved client on the side


class Bystander:
    """Well-behaved clients on :data:`BYSTANDER_ADDRESS`, running on their own thread and event
    loop until stopped:

    - a PeerJS pair: ``a`` sends an OFFER to ``b``, ``b`` answers with an ANSWER carrying the same
      number, every 20 ms;
    - a call-protocol client of ``call_user``: ``ping`` then ``call.get`` of its own call, every
      100 ms (20 requests a second, well under the default 50). Events (``seq`` frames, such as
      the ``call.ring`` of a ring flood) are kept in ``events``.

    Anything unexpected (an error frame, a close, no answer within :data:`BYSTANDER_TIMEOUT_S`)
    is recorded in ``errors`` and stops that loop.
    """

    def __init__(self, daemon: AbuseDaemon, call_user: str = "bystander") -> None:
        self.daemon = daemon
        self.call_user = call_user
        self.tag = secrets.token_hex(3)
        self.errors: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.peer_rounds = 0
        self.call_rounds = 0
        self.max_latency = 0.0
        self.ready = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), name="bystander", daemon=True)

    def __enter__(self) -> Bystander:
        self._thread.start()
        assert self.ready.wait(WAIT_S), "the bystanders did not connect"
        assert not self.errors, f"bystander errors while connecting: {self.errors}"
        self.wait_for_rounds(3)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join(timeout=WAIT_S + BYSTANDER_TIMEOUT_S)

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.peer_rounds, self.call_rounds

    def wait_for_rounds(self, more: int, timeout: float = WAIT_S) -> None:
        """Waits until both loops have done ``more`` further round trips; fails on an error."""
        peer0, call0 = self.counts()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert not self.errors, f"the bystanders saw errors: {self.errors}"
            peer, call = self.counts()
            if peer >= peer0 + more and call >= call0 + more:
                return
            time.sleep(0.02)
        raise AssertionError(
            f"the bystanders stalled: {self.counts()} round trips, {(peer0, call0)} {timeout} s ago; errors {self.errors}"
        )

    def through(self, abuse: Callable[[], Any]) -> tuple[Any, list[str]]:
        """Runs ``abuse`` (blocking); returns its result and what went wrong for the bystanders
        during it and after (errors; no round trip while it lasted; no recovery after it)."""
        before, started = self.counts(), time.monotonic()
        result = abuse()
        elapsed = time.monotonic() - started
        during = self.counts()
        problems = [f"the bystanders saw errors during the abuse: {self.errors}"] if self.errors else []
        if elapsed >= 0.5 and not (during[0] > before[0] and during[1] > before[1]):  # several rounds were due
            problems.append(
                f"the bystanders got no answer during {elapsed:.2f} s of abuse: round trips {before} → {during}"
            )
        try:
            self.wait_for_rounds(5)
        except AssertionError as error:
            problems.append(f"the bystanders did not recover after the abuse: {error}")
        print(
            f"\n[abuse] bystanders: {during[0] - before[0]} PeerJS and {during[1] - before[1]} call round trips "
            f"during {elapsed:.2f} s of abuse, slowest round trip so far {self.max_latency * 1000:.0f} ms"
        )
        return result, problems

    def assert_healthy_through(self, abuse: Callable[[], Any]) -> Any:
        """Runs ``abuse`` (blocking) and checks the bystanders kept answering during it and after."""
        result, problems = self.through(abuse)
        assert not problems, "\n".join(problems)
        return result

    def call_events(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [event for event in self.events if event["type"] == kind]

    # -- the loops --------------------------------------------------------------------------

    async def _main(self) -> None:
        port = self.daemon.port
        a_id, b_id = f"by-a-{self.tag}", f"by-b-{self.tag}"
        try:
            peer_a = await self._connect(f"ws://127.0.0.1:{port}/peerjs?key=peerjs&id={a_id}&token=ta")
            peer_b = await self._connect(f"ws://127.0.0.1:{port}/peerjs?key=peerjs&id={b_id}&token=tb")
            for peer in (peer_a, peer_b):
                assert json.loads(await self._recv(peer)) == {"type": "OPEN"}
            call = await self._connect(f"ws://127.0.0.1:{port}/v1/connect")
            await call.send(json.dumps({"type": "auth", "token": user_token(self.call_user)}))
            ok = json.loads(await self._recv(call))
            assert ok["type"] == "connection.ok", ok
        except Exception as error:  # noqa: BLE001 - recorded and reported by the test
            self.errors.append(f"connect: {error!r}")
            self.ready.set()
            return
        self.ready.set()
        try:
            await asyncio.gather(self._peer_loop(peer_a, peer_b, a_id, b_id), self._call_loop(call))
        finally:
            for ws in (peer_a, peer_b, call):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(ws.close(), BYSTANDER_TIMEOUT_S)

    async def _connect(self, url: str) -> ClientConnection:
        return await asyncio.wait_for(
            connect(url, local_addr=(BYSTANDER_ADDRESS, 0), max_size=None, ping_interval=None),
            BYSTANDER_TIMEOUT_S,
        )

    async def _recv(self, ws: ClientConnection) -> str:
        frame = await asyncio.wait_for(ws.recv(), BYSTANDER_TIMEOUT_S)
        return frame if isinstance(frame, str) else frame.decode()

    def _latency(self, started: float) -> None:
        self.max_latency = max(self.max_latency, time.monotonic() - started)

    async def _peer_loop(self, a: ClientConnection, b: ClientConnection, a_id: str, b_id: str) -> None:
        number = 0
        try:
            while not self._stopping.is_set():
                number += 1
                started = time.monotonic()
                await a.send(json.dumps({"type": "OFFER", "dst": b_id, "payload": {"n": number}}))
                offer = json.loads(await self._recv(b))
                assert offer == {"type": "OFFER", "src": a_id, "dst": b_id, "payload": {"n": number}}, offer
                await b.send(json.dumps({"type": "ANSWER", "dst": a_id, "payload": {"n": number}}))
                answer = json.loads(await self._recv(a))
                assert answer == {"type": "ANSWER", "src": b_id, "dst": a_id, "payload": {"n": number}}, answer
                self._latency(started)
                with self._lock:
                    self.peer_rounds += 1
                await asyncio.sleep(0.02)
        except Exception as error:  # noqa: BLE001
            self.errors.append(f"PeerJS round {number}: {error!r}")

    async def _call_loop(self, ws: ClientConnection) -> None:
        cid = {"type": "default", "id": f"bystander-{self.tag}"}
        request_id = 0

        async def request(kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
            nonlocal request_id
            request_id += 1
            frame: dict[str, Any] = {"id": request_id, "type": kind}
            if data is not None:
                frame["data"] = data
            await ws.send(json.dumps(frame))
            while True:
                answer = json.loads(await self._recv(ws))
                if "seq" in answer:
                    with self._lock:
                        self.events.append(answer)
                    continue
                assert answer.get("id") == request_id, f"{kind}: answer out of order: {answer}"
                assert answer["type"] in ("response", "pong"), f"{kind}: {answer}"
                return answer

        try:
            await request("call.get_or_create", cid)
            while not self._stopping.is_set():
                started = time.monotonic()
                assert (await request("ping"))["type"] == "pong"
                state = await request("call.get", cid)
                assert state["data"]["call"]["cid"] == f"default:{cid['id']}", state
                self._latency(started)
                with self._lock:
                    self.call_rounds += 1
                await asyncio.sleep(0.1)
        except Exception as error:  # noqa: BLE001
            self.errors.append(f"call request {request_id}: {error!r}")


# ---------------------------------------------------------------------------------------------
# A raw WebSocket client


class Closed(Exception):
    """The server closed: ``code`` is the close frame's code, or ``None`` for no close frame."""

    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"closed with {code} {reason!r}")
        self.code = code
        self.reason = reason


class RawWebSocket:
    """A blocking WebSocket client over a plain socket that does exactly what it is told."""

    def __init__(
        self,
        port: int,
        path: str,
        *,
        source: str = ABUSER_ADDRESS,
        rcvbuf: int | None = None,
        headers: dict[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        """A socket from ``source`` (any address, ``0.0.0.0``, for a ``host`` off loopback)."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind((source, 0))
        self.sock.settimeout(WAIT_S)
        self.sock.connect((host, port))
        self.buffer = b""
        self.closed: Closed | None = None
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        deadline = time.monotonic() + WAIT_S
        while b"\r\n\r\n" not in self.buffer:
            self._fill(deadline - time.monotonic())
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0]
        assert status.startswith(b"HTTP/1.1 101"), f"upgrade of {path} refused: {head!r}"

    # -- sending ------------------------------------------------------------------------------

    @staticmethod
    def frame(payload: bytes, opcode: int = 0x1, fin: bool = True, declared: int | None = None) -> bytes:
        """One masked client frame; ``declared`` overrides the length written in the header."""
        length = len(payload) if declared is None else declared
        head = bytes([(0x80 if fin else 0) | opcode])
        if length < 126:
            head += bytes([0x80 | length])
        elif length < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", length)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", length)
        key = os.urandom(4)
        return head + key + mask(payload, key)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_text(self, text: str | bytes, opcode: int = 0x1, fin: bool = True) -> None:
        self.sock.sendall(self.frame(text.encode() if isinstance(text, str) else text, opcode, fin))

    def send_json(self, value: Any) -> None:
        self.send_text(json.dumps(value, separators=(",", ":")))

    # -- receiving ----------------------------------------------------------------------------

    def _fill(self, timeout: float) -> None:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            raise TimeoutError(f"no data within {timeout:.1f} s")
        try:
            chunk = self.sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.closed = Closed(None, "the connection ended without a close frame")
            raise self.closed
        self.buffer += chunk

    def _frame(self) -> tuple[int, bytes] | None:
        """Takes one complete frame (first byte, payload) off the buffer, or ``None`` if incomplete."""
        buffer = self.buffer
        if len(buffer) < 2:
            return None
        length, offset = buffer[1] & 0x7F, 2
        if length == 126:
            if len(buffer) < 4:
                return None
            (length,), offset = struct.unpack("!H", buffer[2:4]), 4
        elif length == 127:
            if len(buffer) < 10:
                return None
            (length,), offset = struct.unpack("!Q", buffer[2:10]), 10
        if len(buffer) < offset + length:
            return None
        self.buffer = buffer[offset + length :]
        return buffer[0], buffer[offset : offset + length]

    def recv(self, timeout: float = WAIT_S) -> str:
        """The next text message; answers pings; raises :class:`Closed` at a close frame or EOF."""
        if self.closed:
            raise self.closed
        deadline = time.monotonic() + timeout
        message = b""
        while True:
            frame = self._frame()
            if frame is None:
                self._fill(deadline - time.monotonic())
                continue
            first, payload = frame
            opcode = first & 0x0F
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                self.closed = Closed(code, payload[2:].decode(errors="replace"))
                raise self.closed
            if opcode == 0x9:
                self.sock.sendall(self.frame(payload, 0xA))
                continue
            if opcode == 0xA:
                continue
            message += payload
            if first & 0x80:
                return message.decode()

    def recv_json(self, timeout: float = WAIT_S) -> dict[str, Any]:
        return json.loads(self.recv(timeout))

    def poll_json(self) -> list[dict[str, Any]]:
        """Every complete message already readable, without waiting."""
        messages = []
        while True:
            ready, _, _ = select.select([self.sock], [], [], 0)
            if not ready and not self.buffer:
                return messages
            try:
                messages.append(self.recv_json(0.5))
            except TimeoutError:
                return messages

    def until_close(self, timeout: float = WAIT_S) -> tuple[Closed, list[str]]:
        """Reads until the server closes; returns the close and the messages before it."""
        closed, messages = self.read_for(timeout)
        if closed is None:
            raise TimeoutError(f"not closed within {timeout:.1f} s; got {len(messages)} messages")
        return closed, messages

    def read_for(self, timeout: float) -> tuple[Closed | None, list[str]]:
        """Reads until the server closes or ``timeout`` passes; returns the close (or ``None``)
        and the messages read."""
        deadline = time.monotonic() + timeout
        messages = []
        while True:
            try:
                messages.append(self.recv(deadline - time.monotonic()))
            except Closed as closed:
                return closed, messages
            except TimeoutError:
                return None, messages

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def mask(payload: bytes, key: bytes) -> bytes:
    """XOR ``payload`` with the repeated 4-byte ``key`` (fast for large payloads)."""
    if not payload:
        return b""
    repeated = (key * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


def peerjs_socket(daemon: AbuseDaemon, peer_id: str, **options: Any) -> RawWebSocket:
    """A PeerJS socket registered as ``peer_id``, its OPEN already read."""
    ws = RawWebSocket(daemon.port, f"/peerjs?key=peerjs&id={peer_id}&token=t-{peer_id}", **options)
    assert ws.recv_json() == {"type": "OPEN"}
    return ws


def call_socket(daemon: AbuseDaemon, user: str, **options: Any) -> RawWebSocket:
    """A call-protocol socket authenticated as ``user`` with an auth frame."""
    ws = RawWebSocket(daemon.port, "/v1/connect", **options)
    ws.send_json({"type": "auth", "token": user_token(user)})
    ok = ws.recv_json()
    assert ok["type"] == "connection.ok", ok
    return ws


def call_request(ws: RawWebSocket, request_id: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """Sends one request and returns its answer (events before it are skipped)."""
    ws.send_json({"id": request_id, "type": kind, "data": data})
    while True:
        frame = ws.recv_json()
        if "seq" not in frame:
            assert frame.get("id") == request_id, frame
            return frame


# ---------------------------------------------------------------------------------------------
# Raw TCP, and processes that must not start


def raw_connect(port: int, source: str = ABUSER_ADDRESS, timeout: float = WAIT_S) -> socket.socket:
    """A plain TCP connection from ``source`` to the daemon's ``port``."""
    return socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))


def read_until_closed(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """Reads until the peer closes (EOF or reset) or ``seconds`` pass; returns whether it
    closed, and what arrived before."""
    deadline = time.monotonic() + seconds
    data = b""
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            break
        try:
            chunk = sock.recv(1 << 16)
        except (ConnectionResetError, ConnectionAbortedError):
            return True, data
        if not chunk:
            return True, data
        data += chunk
    return False, data


def http_response(data: bytes) -> tuple[int, dict[str, str], bytes] | None:
    """The first complete HTTP response in ``data`` (status, lower-case headers, body), or
    ``None`` when its head or its ``Content-Length`` body is incomplete."""
    head, separator, rest = data.partition(b"\r\n\r\n")
    if not separator:
        return None
    lines = head.decode("latin-1").split("\r\n")
    match = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    assert match, f"not an HTTP response: {data[:200]!r}"
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    if len(rest) < length:
        return None
    return int(match.group(1)), headers, rest[:length]


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Polls ``predicate`` until it holds or ``timeout`` passes; returns whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if predicate():
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def run_to_exit(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 10.0) -> tuple[int | None, str]:
    """Runs the daemon binary with ``args`` and waits up to ``timeout`` for it to exit; returns
    its exit code (``None`` when it was still running and had to be stopped, by its PID) and
    its merged output."""
    process = subprocess.Popen(
        [str(_daemon_binary()), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            output, _ = process.communicate(timeout=STOP_TIMEOUT_S)
        return None, output
