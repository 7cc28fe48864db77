"""Fixtures for the real-peer end-to-end tests.

``switchboard`` starts the daemon binary (``$TEST_SWITCHBOARD_BIN``, default
``.build/debug/switchboard`` under the repo root) on an ephemeral loopback port
in a temporary working directory, waits for its ``ws://…/peerjs`` ready line,
and stops it with SIGTERM at the end, requiring exit code 0.

``loopback_ice`` confines aiortc's ICE host candidates to 127.0.0.1, so that the
WebRTC traffic between the two peers never uses a non-loopback interface.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / ".build" / "debug" / "switchboard"

READY_PATTERN = re.compile(r"ws://[0-9.]+:([0-9]+)/")
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0  # above the daemon's default shutdown.drain_timeout_ms (10 s)


@dataclass
class DaemonOutput:
    """Collects the daemon's merged stdout/stderr on a reader thread.

    The thread keeps draining the pipe for the daemon's whole life, so the
    daemon can never block on a full pipe, and ``port`` is set (and ``ready``
    signalled) as soon as a line matches ``READY_PATTERN``. ``ready`` is also
    signalled at end of output, so a daemon that dies early is noticed at once.
    """

    lines: list[str] = field(default_factory=list)
    port: int | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pump(self, stream) -> None:
        """Read ``stream`` line by line until EOF, then close it (runs on its own thread)."""
        try:
            for line in stream:
                with self.lock:
                    self.lines.append(line)
                if self.port is None:
                    match = READY_PATTERN.search(line)
                    if match:
                        self.port = int(match.group(1))
                        self.ready.set()
        finally:
            stream.close()
            self.finished.set()
            self.ready.set()

    def text(self) -> str:
        """Everything captured so far, for failure messages."""
        with self.lock:
            return "".join(self.lines)


@dataclass
class Switchboard:
    """A running daemon: its process, port and URLs."""

    process: subprocess.Popen
    port: int
    output: DaemonOutput

    @property
    def http_base(self) -> str:
        """Base URL of the HTTP routes (default path ``/``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """The PeerJS WebSocket endpoint (default path ``/`` → ``/peerjs``)."""
        return f"ws://127.0.0.1:{self.port}/peerjs"


def _daemon_binary() -> Path:
    """Resolve the daemon binary from ``$TEST_SWITCHBOARD_BIN`` or the default build path."""
    configured = os.environ.get("TEST_SWITCHBOARD_BIN")
    binary = Path(configured).resolve() if configured else DEFAULT_BIN
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(
            f"switchboard binary not found or not executable: {binary} "
            "(build it with `swift build --product switchboard`, or set TEST_SWITCHBOARD_BIN)",
            pytrace=False,
        )
    return binary


def _stop(process: subprocess.Popen, output: DaemonOutput) -> None:
    """SIGTERM the daemon by PID and require a clean exit (code 0) in bounded time."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            hung = True
        else:
            hung = False
        if hung:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT_S)
            output.finished.wait(timeout=STOP_TIMEOUT_S)
            pytest.fail(
                f"switchboard did not exit within {STOP_TIMEOUT_S:.0f} s of SIGTERM; "
                f"killed it with SIGKILL. Output:\n{output.text()}",
                pytrace=False,
            )
    output.finished.wait(timeout=STOP_TIMEOUT_S)
    assert process.returncode == 0, (
        f"switchboard exited with {process.returncode} after SIGTERM. Output:\n{output.text()}"
    )


def daemon_env(admin_auth: str | None = "none") -> dict[str, str]:
    """This process's environment without ``SWITCHBOARD_*`` variables.

    The daemon reads its configuration from ``SWITCHBOARD_*`` variables and
    refuses unknown ones, so none of the caller's may reach it (the tests' own
    ``TEST_SWITCHBOARD_BIN`` is outside that prefix on purpose).

    The tests drive the admin API on loopback without a token (``admin.auth =
    none``) unless they pass ``admin_auth=None``, which keeps the daemon's
    default: a token generated into the state directory (test_hostile.py).
    ``admin.auth`` is set only when the binary knows the key (a daemon built
    before it refuses the variable, and its admin API needs no token anyway).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    if admin_auth is not None and binary_accepts(SWITCHBOARD_ADMIN_AUTH=admin_auth):
        env["SWITCHBOARD_ADMIN_AUTH"] = admin_auth
    return env


_ACCEPTED: dict[tuple[str, tuple[tuple[str, str], ...]], bool] = {}


def binary_accepts(**variables: str) -> bool:
    """Whether ``switchboard check-config`` accepts these ``SWITCHBOARD_*`` variables (exit 0).

    Asked once per binary and set of variables for the whole session, in a
    scratch directory, so that tests can use configuration keys the binary
    under test may predate.
    """
    binary = _daemon_binary()
    key = (str(binary), tuple(sorted(variables.items())))
    if key not in _ACCEPTED:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
        env.update(variables)
        with tempfile.TemporaryDirectory(prefix="sb-check-config-") as scratch:
            try:
                done = subprocess.run(
                    [str(binary), "check-config"], cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                    capture_output=True, timeout=STOP_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                _ACCEPTED[key] = False
            else:
                _ACCEPTED[key] = done.returncode == 0
    return _ACCEPTED[key]


SERVE_ARGS = ("serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0")


def _launch(
    tmp_path: Path,
    env: dict[str, str],
    *,
    args: tuple[str, ...] | list[str] = SERVE_ARGS,
    preexec_fn=None,
):
    """Start ``switchboard serve --host 127.0.0.1 --port 0 --admin-port 0`` (or ``args``) in
    ``tmp_path`` (so the state directory is ``tmp_path/data`` unless ``--state-dir`` says
    otherwise), with ``preexec_fn`` run in the child before exec when given; yield a
    :class:`Switchboard`, then stop it with SIGTERM and require exit code 0."""
    binary = _daemon_binary()
    process = subprocess.Popen(
        [str(binary), *args],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        preexec_fn=preexec_fn,
    )
    output = DaemonOutput()
    reader = threading.Thread(
        target=output.pump, args=(process.stdout,), name="switchboard-output", daemon=True
    )
    reader.start()
    output.ready.wait(timeout=READY_TIMEOUT_S)
    if output.port is None:
        exit_code = process.poll()
        if exit_code is None:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)
            state = f"printed no ready line within {READY_TIMEOUT_S:.0f} s (killed it)"
        else:
            state = f"exited with {exit_code} before printing a ready line"
        output.finished.wait(timeout=STOP_TIMEOUT_S)
        pytest.fail(f"switchboard {state}. Output:\n{output.text()}", pytrace=False)
    try:
        yield Switchboard(process=process, port=output.port, output=output)
    finally:
        _stop(process, output)


@pytest.fixture
def switchboard(tmp_path: Path):
    """The daemon on the default configuration."""
    yield from _launch(tmp_path, daemon_env())


#: The API secret of the ``switchboard_calls`` daemon (signs user tokens).
CALLS_API_SECRET = "e2e-secret-0123456789abcdef0123456789"


@pytest.fixture
def switchboard_calls(tmp_path: Path):
    """The daemon with user tokens enabled (``auth.api_secret``), for the call protocol."""
    env = daemon_env()
    env["SWITCHBOARD_AUTH_API_SECRET"] = CALLS_API_SECRET
    yield from _launch(tmp_path, env)


def mint_token(user: str, ttl: str = "1h") -> str:
    """A user token from ``switchboard token``, signed with :data:`CALLS_API_SECRET`."""
    env = daemon_env()
    env["SWITCHBOARD_AUTH_API_SECRET"] = CALLS_API_SECRET
    done = subprocess.run(
        [str(_daemon_binary()), "token", "--user", user, "--ttl", ttl],
        env=env, capture_output=True, text=True, timeout=STOP_TIMEOUT_S, check=True,
    )
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture
def loopback_ice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make aioice gather host candidates on 127.0.0.1 only.

    aioice deliberately skips 127.0.0.1 and offers every other interface
    address; these tests must keep all traffic on loopback, so the address
    list is replaced for the duration of the test.
    """
    import aioice.ice

    monkeypatch.setattr(
        aioice.ice, "get_host_addresses", lambda use_ipv4, use_ipv6: ["127.0.0.1"]
    )
