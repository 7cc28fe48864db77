"""Hostile-client end-to-end tests: black-box replays of the attacks of issue #11 (part 6).

A. Two POSTs on one keep-alive connection (a 10 MB body answered 413, then a 1-byte one) must
   not freeze a listener: 413 with a JSON error, then the connection is closed.
B. Every connection has a deadline: CONNECT, an h2c upgrade, silence, half a request line and an
   idle keep-alive connection are all closed within ``transport.handshake_timeout_ms`` + 3 s.
C. Per-address caps at accept (``transport.max_connections_per_address``,
   ``transport.max_pending_per_address``).
D. Out of file descriptors: no busy loop, bounded logging, recovery.
E. One daemon per port and per state directory.
F. The admin API cannot be driven from a web page: a generated token, Host/Origin checks,
   JSON-only bodies, ``admin.auth = none`` only on a loopback address.

Each test keeps a :class:`Bystander` (a PeerJS pair relaying and a ``/v1/connect`` user pinging,
from 127.0.0.2) served throughout, keeps the daemon's RSS within ``baseline + RSS_HEADROOM``
(:class:`ResourceMonitor`), and the ``start_daemon`` fixture requires exit code 0 on one SIGTERM
at the end. Every wait is bounded, so a frozen daemon fails a test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import json
import re
import resource
import secrets
import select
import socket
import time
from pathlib import Path

import pytest

from conftest import SERVE_ARGS, binary_accepts, daemon_env
from hostile import (  # noqa: F401 - start_daemon is a fixture: importing it is how pytest finds it
    WAIT_S,
    AbuseDaemon,
    Bystander,
    Closed,
    RawWebSocket,
    ResourceMonitor,
    http_response,
    peerjs_socket,
    raw_connect,
    read_until_closed,
    run_to_exit,
    start_daemon,
    wait_until,
)

#: Most of one core the daemon may use while it is not serving anyone but the bystanders.
CPU_LIMIT = 0.5
#: Slack on top of a deadline before a connection that should be closed counts as open.
CLOSE_SLACK_S = 3.0


def assert_calm(daemon: AbuseDaemon, what: str, seconds: float = 2.0) -> None:
    """The daemon uses under :data:`CPU_LIMIT` of a core over the next ``seconds``."""
    share = daemon.cpu_share(seconds)
    print(f"\n[hostile] {what}: CPU {share:.0%} of a core over {seconds:.0f} s")
    assert share < CPU_LIMIT, f"{what}: the daemon used {share:.0%} of a core over {seconds:.0f} s (a busy loop?)"


def assert_serving(daemon: AbuseDaemon, ready_path: str = "/readyz") -> None:
    """A new WebSocket handshake gets its OPEN, and the admin API answers ``ready_path`` with 200."""
    ws = peerjs_socket(daemon, f"newcomer-{secrets.token_hex(4)}")
    ws.close()
    status, _, body = daemon.admin("GET", ready_path)
    assert status == 200, f"GET {ready_path}: {status} {body[:300]!r}"


def error_code_or_none(body: bytes) -> str | None:
    """The ``error.code`` of a JSON error body ``{"error": {"code": ...}}``, or ``None``."""
    try:
        code = json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None


# ---------------------------------------------------------------------------------------------
# A. Two POSTs freeze a listener


def two_posts(port: int, path: str, body_bytes: int = 10_000_000, seconds: float = 20.0) -> dict[str, object]:
    """On one connection: ``POST path`` declaring ``body_bytes`` and streaming them (reading
    whatever comes back meanwhile), then a second ``POST path`` with a 1-byte body; then reads
    until the server closes (5 s at most). Returns what was sent, received, and how it ended."""
    sock = raw_connect(port)
    sock.setblocking(False)
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    pending = (head + f"Content-Length: {body_bytes}\r\n\r\n").encode()
    chunk, queued, received, ended = b"x" * 65536, 0, b"", ""
    deadline = time.monotonic() + seconds
    try:
        while not ended and time.monotonic() < deadline and (pending or queued < body_bytes):
            if not pending:
                pending = chunk[: min(len(chunk), body_bytes - queued)]
                queued += len(pending)
            readable, writable, _ = select.select([sock], [sock], [], 0.1)
            if readable:
                try:
                    data = sock.recv(1 << 16)
                except (ConnectionResetError, ConnectionAbortedError):
                    data, ended = b"", "reset while the body was sent"
                received += data
                ended = ended or ("" if data else "EOF while the body was sent")
            if writable and not ended:
                try:
                    pending = pending[sock.send(pending) :]
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    ended = "reset while the body was sent"
        second = "not sent: connection already ended"
        if not ended:
            sock.setblocking(True)
            sock.settimeout(2.0)
            try:
                sock.sendall((head + "Content-Length: 1\r\n\r\n{").encode())
                second = "sent"
            except OSError as error:
                second = f"failed: {error!r}"
        closed, more = read_until_closed(sock, 5.0)
        received += more
        if not ended:
            ended = "closed after the second POST" if closed else "still open 5 s after the second POST"
    finally:
        sock.close()
    sent = queued - len(pending)
    return {"received": received, "ended": ended, "second": second, "sent": sent, "closed": ended != "still open 5 s after the second POST"}


@pytest.mark.parametrize("listener", ["client", "admin"])
def test_two_posts_on_one_connection_get_413_and_close_and_do_not_freeze_the_listener(start_daemon, listener: str) -> None:
    """A 10 MB ``POST`` (over ``transport.max_request_body_bytes``) then a 1-byte one, on one
    keep-alive connection, to ``/peerjs/id`` on the client port or ``/v1/drain`` (no token) on
    the admin port: a 413 with a JSON error body, then the server closes the connection (the
    body is never parsed as requests). The bystanders are served throughout, a new handshake
    succeeds, ``/readyz`` says 200, and the daemon is not left spinning."""
    daemon = start_daemon()
    port, path = (daemon.port, "/peerjs/id") if listener == "client" else (daemon.admin_port, "/v1/drain")
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, f"two POSTs on the {listener} port")
        result, problems = bystander.through(lambda: two_posts(port, path))
        received = result["received"]
        print(f"\n[hostile] two POSTs to {path}: sent {result['sent']} bytes, {result['ended']}; second POST {result['second']}; got {received[:120]!r}")
        response = http_response(received) if received else None
        if response is None:
            problems.append(f"no complete HTTP response to the 10 MB POST: {received[:300]!r}")
        else:
            status, headers, body = response
            if status != 413:
                problems.append(f"the 10 MB POST was answered {status}, not 413: {received[:300]!r}")
            elif error_code_or_none(body) is None:
                problems.append(f"the 413 has no JSON error body {{\"error\":{{\"code\":...}}}}: {body[:300]!r}")
            if len(received) > len(received.partition(b"\r\n\r\n")[0]) + 4 + int(headers.get("content-length", "0")):
                problems.append(f"more than one response on the connection (the body was parsed as requests): {received[:600]!r}")
        if not result["closed"]:
            problems.append(f"the server did not close the connection after the 413: {result['ended']}")
        try:
            assert_serving(daemon)
            assert_calm(daemon, f"after two POSTs on the {listener} port")
        except (AssertionError, OSError, Closed) as error:
            problems.append(f"the daemon is not serving normally afterwards: {error!r}")
        assert not problems, f"two POSTs to {path} on the {listener} port:\n" + "\n".join(problems)
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# B. Every connection has a deadline


HANDSHAKE_TIMEOUT_MS = 1000
DEADLINE_S = HANDSHAKE_TIMEOUT_MS / 1000 + CLOSE_SLACK_S


def test_every_kind_of_connection_is_closed_at_its_deadline(start_daemon) -> None:
    """With ``transport.handshake_timeout_ms`` = 1 s, each of these is closed by the server
    within 1 s + 3 s: a ``CONNECT`` request (answered 404: no route); an ``Upgrade: h2c`` request (answered 4xx, never
    101, then idle); a connection that sends nothing; half a request line; and a keep-alive
    connection left idle after its response. For the two that get a response, the deadline
    counts from the response."""
    daemon = start_daemon(TRANSPORT_HANDSHAKE_TIMEOUT_MS=HANDSHAKE_TIMEOUT_MS)
    host = f"Host: 127.0.0.1:{daemon.port}\r\n"
    cases: dict[str, tuple[bytes, bool]] = {  # what is sent, whether a response must come first
        "CONNECT": (b"CONNECT x:1 HTTP/1.1\r\nHost: x:1\r\n\r\n", True),
        "h2c upgrade": (
            f"GET / HTTP/1.1\r\n{host}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
            "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n".encode(), True),
        "silent": (b"", False),
        "half a request line": (b"GET /peerjs/id HT", False),
        "idle keep-alive": (f"GET /peerjs/id?ts=1 HTTP/1.1\r\n{host}\r\n".encode(), True),
    }

    def abuse() -> dict[str, tuple[str, bytes]]:
        state: dict[str, dict] = {}
        for name, (data, _) in cases.items():
            sock = raw_connect(daemon.port)
            if data:
                sock.sendall(data)
            state[name] = {"sock": sock, "since": time.monotonic(), "data": b"", "outcome": None}
        while any(s["outcome"] is None for s in state.values()):
            now = time.monotonic()
            for name, s in state.items():
                if s["outcome"] is None and now - s["since"] > DEADLINE_S:
                    s["outcome"] = f"still open {DEADLINE_S:.0f} s after {'its response' if s.get('answered') else 'it connected'}; got {s['data'][:120]!r}"
            waiting = {s["sock"]: name for name, s in state.items() if s["outcome"] is None}
            readable, _, _ = select.select(list(waiting), [], [], 0.1) if waiting else ([], [], [])
            for sock in readable:
                name, s = waiting[sock], state[waiting[sock]]
                try:
                    chunk = sock.recv(1 << 16)
                except (ConnectionResetError, ConnectionAbortedError):
                    chunk = b""
                s["data"] += chunk
                if cases[name][1] and not s.get("answered") and http_response(s["data"]):
                    s["answered"], s["since"] = True, time.monotonic()  # the idle deadline starts now
                if not chunk:
                    s["outcome"] = f"closed after {time.monotonic() - s['since']:.1f} s"
                    if cases[name][1] and not s.get("answered"):
                        s["outcome"] = f"closed without a complete response: {s['data'][:200]!r}"
        for s in state.values():
            s["sock"].close()
        return {name: (s["outcome"], s["data"]) for name, s in state.items()}

    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "connection deadlines")
        outcomes = bystander.assert_healthy_through(abuse)
        problems = []
        for name, (outcome, data) in outcomes.items():
            print(f"\n[hostile] {name}: {outcome}; {data[:60]!r}")
            if not outcome.startswith("closed after"):
                problems.append(f"{name}: {outcome}")
        h2c_status = re.match(rb"HTTP/1\.[01] (\d{3})", outcomes["h2c upgrade"][1])
        if not h2c_status or not h2c_status.group(1).startswith(b"4"):
            problems.append(f"h2c upgrade: expected a 4xx answer (never 101), got {outcomes['h2c upgrade'][1][:200]!r}")
        if not outcomes["CONNECT"][1].startswith(b"HTTP/1.1 404 "):
            problems.append(f"CONNECT: expected a 404 answer, got {outcomes['CONNECT'][1][:200]!r}")
        assert not problems, "connections outlived their deadline:\n" + "\n".join(problems)
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# C. Per-address caps at accept


def test_connections_per_address_are_capped_at_accept(start_daemon) -> None:
    """With ``transport.max_pending_per_address`` = 10 and ``max_connections_per_address`` = 50
    (and ``limits.connections_per_ip`` out of the way): of 200 silent TCP connections from one
    address at most 10 (+2 of slack) stay open, the others are closed at once; then, of 70
    PeerJS WebSockets opened one after another from that address, no more than 50 are open.
    The bystanders (another address) and ``/healthz`` are unaffected."""
    caps = {"TRANSPORT_MAX_CONNECTIONS_PER_ADDRESS": "50", "TRANSPORT_MAX_PENDING_PER_ADDRESS": "10"}
    # A binary without the keys refuses them at start; it runs without, so that the test shows
    # what the flood does to it rather than only the missing keys.
    known = binary_accepts(**{f"SWITCHBOARD_{key}": value for key, value in caps.items()})
    note = "" if known else " (this binary does not know transport.max_*_per_address)"
    daemon = start_daemon(
        TRANSPORT_HANDSHAKE_TIMEOUT_MS=60_000, LIMITS_CONNECTIONS_PER_IP=10_000, LIMITS_CONNECT_BURST_PER_IP=10_000,
        **(caps if known else {}),
    )
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "per-address caps")

        def silent_flood() -> int:
            socks = []
            try:
                for _ in range(200):
                    with contextlib.suppress(OSError):
                        socks.append(raw_connect(daemon.port, timeout=2.0))
                open_now = list(socks)
                deadline = time.monotonic() + 3.0
                while open_now and time.monotonic() < deadline:
                    readable, _, _ = select.select(open_now, [], [], 0.1)
                    for sock in readable:
                        try:
                            closed = not sock.recv(4096)
                        except OSError:  # reset
                            closed = True
                        if closed:
                            open_now.remove(sock)
                status, _, _ = daemon.admin("GET", "/healthz")
                assert status == 200, f"/healthz answered {status} during the flood"
                return len(open_now)
            finally:
                for sock in socks:
                    sock.close()

        still_open = bystander.assert_healthy_through(silent_flood)
        print(f"\n[hostile] 200 silent connections: {still_open} still open after 3 s")
        assert still_open <= 12, f"{still_open} of 200 silent connections from one address stay open (max_pending_per_address = 10){note}"

        assert wait_until(lambda: daemon.fds() <= monitor.baseline_fds + 2, WAIT_S), f"fds {daemon.fds()} > {monitor.baseline_fds} + 2"

        def websocket_flood() -> list[RawWebSocket]:
            admitted = []
            for n in range(70):
                try:
                    ws = peerjs_socket(daemon, f"cap-{bystander.tag}-{n}")
                except (Closed, OSError, AssertionError, TimeoutError):
                    continue
                admitted.append(ws)
            return admitted

        admitted = bystander.assert_healthy_through(websocket_flood)
        try:
            print(f"\n[hostile] 70 WebSockets from one address: {len(admitted)} admitted")
            assert len(admitted) <= 50, f"{len(admitted)} WebSockets open from one address (max_connections_per_address = 50){note}"
            assert len(admitted) >= 40, f"only {len(admitted)} of 70 WebSockets admitted: the cap is 50"
            admitted[0].send_json({"type": "OFFER", "dst": f"cap-{bystander.tag}-1", "payload": {"n": 1}})
            assert admitted[1].recv_json()["payload"] == {"n": 1}
        finally:
            for ws in admitted:
                ws.close()
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# D. Out of file descriptors


FD_LIMIT = 200
FLOOD_SOURCES = ("127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6")


def low_fd_limit() -> None:
    """Run in the daemon's process before exec: at most :data:`FD_LIMIT` descriptors."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def test_running_out_of_descriptors_neither_spins_nor_floods_the_log(start_daemon) -> None:
    """The daemon limited to 200 descriptors, 400 idle connections from four addresses (the
    per-address caps lifted where the binary has them): the daemon does not spin (under half a
    core over 2 s during the flood), logs ``accept failed`` at a bounded rate (at most 20
    lines), and once the flood is closed it answers ``/healthz`` and serves a fresh bystander."""
    caps = {"TRANSPORT_MAX_PENDING_PER_ADDRESS": "10000", "TRANSPORT_MAX_CONNECTIONS_PER_ADDRESS": "10000"}
    lifted = caps if binary_accepts(**{f"SWITCHBOARD_{k}": v for k, v in caps.items()}) else {}
    daemon = start_daemon(preexec_fn=low_fd_limit, TRANSPORT_HANDSHAKE_TIMEOUT_MS=60_000, LIMITS_CONNECTIONS_PER_IP=10_000, **lifted)
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "out of descriptors")
        flood: list[socket.socket] = []

        def abuse() -> float:
            for n in range(400):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind((FLOOD_SOURCES[n % len(FLOOD_SOURCES)], 0))
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", daemon.port))  # not waited for: a full backlog must not stall the test
                flood.append(sock)
            wait_until(lambda: daemon.fds() >= FD_LIMIT - 5, 5.0)
            return daemon.cpu_share(2.0)

        try:
            cpu, problems = bystander.through(abuse)
            accept_failed = [line for line in daemon.output().splitlines() if "accept failed" in line]
            print(f"\n[hostile] 400 connections at {FD_LIMIT} fds: CPU {cpu:.0%}, peak fds {monitor.peak_fds}, {len(accept_failed)} 'accept failed' lines")
            if cpu >= CPU_LIMIT:
                problems.append(f"the daemon used {cpu:.0%} of a core out of descriptors (a busy loop)")
            if len(accept_failed) > 20:
                problems.append(f"{len(accept_failed)} 'accept failed' log lines (unbounded logging): {accept_failed[:3]}")
        finally:
            for sock in flood:
                sock.close()
        healthy = wait_until(lambda: daemon.admin("GET", "/healthz", timeout=2.0)[0] == 200, WAIT_S, 0.2)
        if not healthy:
            problems.append("/healthz did not answer 200 within 10 s of the flood's end")
        assert not problems, "out of descriptors:\n" + "\n".join(problems)
        with Bystander(daemon) as fresh:
            fresh.wait_for_rounds(5)
        monitor.finish()
    daemon.assert_alive()


# ---------------------------------------------------------------------------------------------
# E. One daemon per port and per state directory


def test_a_second_daemon_on_the_same_port_or_state_directory_refuses_to_start(start_daemon, tmp_path: Path) -> None:
    """Daemon 2 on daemon 1's port (another state directory) and daemon 3 on port 0 with daemon
    1's state directory each exit non-zero within 10 s, naming the port in use, or the state
    directory and the PID holding it; daemon 1 keeps relaying throughout."""
    state = tmp_path / "state-1"
    first = start_daemon(args=(*SERVE_ARGS, "--state-dir", str(state)), state_dir=state)
    env = daemon_env()
    with Bystander(first) as bystander:
        monitor = ResourceMonitor(first, "second daemons")

        def second_daemons() -> tuple[tuple[int | None, str], tuple[int | None, str]]:
            same_port = run_to_exit(
                ["serve", "--host", "127.0.0.1", "--port", str(first.port), "--admin-port", "0", "--state-dir", str(tmp_path / "state-2")],
                tmp_path, env)
            same_state = run_to_exit([*SERVE_ARGS, "--state-dir", str(state)], tmp_path, env)
            return same_port, same_state

        ((port_code, port_output), (state_code, state_output)), problems = bystander.through(second_daemons)
        print(f"\n[hostile] same port: exit {port_code}; same state directory: exit {state_code}")
        if port_code in (None, 0) or "in use" not in port_output.lower() or str(first.port) not in port_output:
            problems.append(
                f"a daemon on port {first.port}, which is taken, must exit non-zero within 10 s saying the port is in use; "
                f"it {'kept running' if port_code is None else f'exited {port_code}'}:\n{port_output[-2000:]}")
        if state_code in (None, 0) or str(state) not in state_output or not re.search(rf"\b{first.pid}\b", state_output):
            problems.append(
                f"a daemon on the state directory {state}, held by pid {first.pid}, must exit non-zero within 10 s naming the "
                f"directory and the pid; it {'kept running' if state_code is None else f'exited {state_code}'}:\n{state_output[-2000:]}")
        tag = secrets.token_hex(3)
        a, b = peerjs_socket(first, f"e-a-{tag}"), peerjs_socket(first, f"e-b-{tag}")
        try:
            a.send_json({"type": "OFFER", "dst": f"e-b-{tag}", "payload": {"still": "here"}})
            assert b.recv_json() == {"type": "OFFER", "src": f"e-a-{tag}", "dst": f"e-b-{tag}", "payload": {"still": "here"}}
        finally:
            a.close()
            b.close()
        assert not problems, "\n".join(problems)
        monitor.finish()
    first.assert_alive()


# ---------------------------------------------------------------------------------------------
# F. The admin API from a web page


def test_the_admin_api_generates_a_token_and_requires_it(start_daemon, tmp_path: Path) -> None:
    """With no admin token configured, the daemon writes one to ``<state>/admin.token`` (mode
    0600; the log names the file, never the token), every route but ``/healthz`` answers 401
    without it, and a restart keeps the same token."""
    state = tmp_path / "state"
    args = (*SERVE_ARGS, "--state-dir", str(state))
    daemon = start_daemon(args=args, state_dir=state, admin_auth=None)
    token_file = state / "admin.token"
    assert token_file.is_file(), f"no admin token generated into {token_file}. Output:\n{daemon.output()}"
    assert token_file.stat().st_mode & 0o777 == 0o600, oct(token_file.stat().st_mode)
    token = token_file.read_text().strip()
    assert len(token) >= 16 and token not in daemon.output() and str(token_file) in daemon.output(), daemon.output()
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "admin token")

        def probe() -> list[str]:
            problems = []
            assert daemon.admin("GET", "/healthz")[0] == 200
            routes = (("GET", "/readyz", None), ("GET", "/metrics", None), ("GET", "/v1/stats", None), ("POST", "/v1/tokens", b'{"user_id":"mallory"}'))
            for method, path, body in routes:
                for auth in ({}, {"Authorization": "Bearer wrong-" + token[6:]}, {"Authorization": token}):
                    status, _, answer = daemon.admin(method, path, body, {"Content-Type": "application/json", **auth} if body else auth)
                    if status != 401:
                        problems.append(f"{method} {path} with {auth or 'no token'}: {status}, not 401: {answer[:200]!r}")
            status, _, answer = daemon.admin("GET", "/v1/stats", headers={"Authorization": f"Bearer {token}"})
            if status != 200:
                problems.append(f"GET /v1/stats with the generated token: {status} {answer[:200]!r}")
            return problems

        problems = bystander.assert_healthy_through(probe)
        assert not problems, "the admin API without its token:\n" + "\n".join(problems)
        monitor.finish()
    daemon.stop()
    again = start_daemon(args=args, state_dir=state, admin_auth=None)
    assert token_file.read_text().strip() == token, "a restart replaced the admin token"
    assert token not in again.output(), again.output()
    assert again.admin("GET", "/v1/stats", headers={"Authorization": f"Bearer {token}"})[0] == 200
    assert again.admin("GET", "/v1/stats")[0] == 401


def test_the_admin_api_refuses_foreign_hosts_origins_and_form_posts(start_daemon, tmp_path: Path) -> None:
    """With the generated token: a ``text/plain`` (or form) body is refused with 415, a foreign
    ``Host`` (DNS rebinding) or ``Origin`` (a cross-site request) with 403 and a JSON error;
    ``POST /v1/tokens`` succeeds in none of those shapes, and does with the token, a loopback
    ``Host`` and a JSON body."""
    state = tmp_path / "state"
    daemon = start_daemon(args=(*SERVE_ARGS, "--state-dir", str(state)), state_dir=state, admin_auth=None)
    token_file = state / "admin.token"
    assert token_file.is_file(), f"no admin token generated into {token_file}. Output:\n{daemon.output()}"
    auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
    json_type = {"Content-Type": "application/json"}
    mint = b'{"user_id":"mallory","ttl_seconds":60}'
    bad: dict[str, tuple[dict[str, str], int]] = {
        "text/plain body": ({**auth, "Content-Type": "text/plain"}, 415),
        "form body": ({**auth, "Content-Type": "application/x-www-form-urlencoded"}, 415),
        "foreign Host": ({**auth, **json_type, "Host": "evil.example"}, 403),
        "foreign Host with the admin port": ({**auth, **json_type, "Host": f"evil.example:{daemon.admin_port}"}, 403),
        "foreign Origin": ({**auth, **json_type, "Origin": "http://evil.example"}, 403),
        "null Origin": ({**auth, **json_type, "Origin": "null"}, 403),
    }
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "admin from a web page")

        def probe() -> list[str]:
            problems = []
            for name, (headers, expected) in bad.items():
                status, _, body = daemon.admin("POST", "/v1/tokens", mint, headers)
                if status != expected or error_code_or_none(body) is None:
                    problems.append(f"POST /v1/tokens, {name}: {status}, expected {expected} with a JSON error: {body[:200]!r}")
                if expected == 403:
                    status, _, body = daemon.admin("GET", "/v1/stats", headers={k: v for k, v in headers.items() if k != "Content-Type"})
                    if status != 403 or error_code_or_none(body) is None:
                        problems.append(f"GET /v1/stats, {name}: {status}, expected 403 with a JSON error: {body[:200]!r}")
            status, _, body = daemon.admin("POST", "/v1/tokens", mint, {**auth, **json_type, "Host": f"127.0.0.1:{daemon.admin_port}"})
            if status not in (200, 201) or "token" not in json.loads(body or b"{}"):
                problems.append(f"POST /v1/tokens done right: {status} {body[:200]!r}")
            return problems

        problems = bystander.assert_healthy_through(probe)
        assert not problems, "the admin API let a web page's request through:\n" + "\n".join(problems)
        monitor.finish()
    daemon.assert_alive()


def test_admin_auth_none_is_open_on_loopback_and_refused_on_a_host_name(start_daemon, tmp_path: Path) -> None:
    """``admin.auth = none`` leaves the admin API open on 127.0.0.1; with ``admin.host`` a name
    (127.0.0.1.nip.io resolves to loopback, but is no loopback address) the daemon refuses to
    start: exit 78, naming ``admin.host`` or ``admin.auth``."""
    daemon = start_daemon(admin_auth=None, ADMIN_AUTH="none")
    with Bystander(daemon) as bystander:
        monitor = ResourceMonitor(daemon, "admin.auth none")
        status, _, body = bystander.assert_healthy_through(lambda: daemon.admin("GET", "/v1/stats"))
        assert status == 200, f"admin.auth none on loopback: GET /v1/stats {status} {body[:200]!r}"
        monitor.finish()
    env = {**daemon_env(admin_auth=None), "SWITCHBOARD_ADMIN_AUTH": "none", "SWITCHBOARD_ADMIN_HOST": "127.0.0.1.nip.io"}
    (tmp_path / "named").mkdir()
    code, output = run_to_exit(list(SERVE_ARGS), tmp_path / "named", env)
    assert code == 78 and ("admin.host" in output or "admin.auth" in output), (
        f"admin.auth none with admin.host 127.0.0.1.nip.io: expected exit 78 naming admin.host or admin.auth, "
        f"got {'still running' if code is None else code}:\n{output[-2000:]}")
    daemon.assert_alive()
