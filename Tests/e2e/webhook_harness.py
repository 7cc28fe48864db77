"""The daemon and the call-protocol clients of the webhook end-to-end tests.

- :func:`write_config` writes a JSON config file (``--config``) with the ``webhooks.*`` keys;
  a file because ``webhooks.events`` entries hold commas, which an array-valued environment
  variable would split. Other keys go in the environment, as in ``conftest.daemon_env``.
- :func:`config` is those keys for endpoints on the test's receiver, one secret each.
- :class:`Daemon` runs ``switchboard serve --host 127.0.0.1 --port 0 --admin-port 0
  --state-dir DIR --config FILE`` (free ports, the test's own state directory), reads the
  ready line for both ports, and can be SIGKILLed by PID and started again on the same state
  directory and configuration. The ``daemons`` fixture stops every daemon a test started
  (SIGTERM, exit code 0 required).
- :class:`CallClient` (from ``call_client``) is one ``/v1/connect`` socket.

Nothing here sleeps to wait for something: every wait polls a condition with a deadline.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from call_client import WAIT_S, CallClient, user_token  # noqa: F401 - re-exported for the tests
from conftest import CALLS_API_SECRET, READY_PATTERN, _daemon_binary, daemon_env
from webhook_receiver import WebhookReceiver

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


def new_secret() -> str:
    """A fresh endpoint secret: ``whsec_`` and the base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(os.urandom(32)).decode()


def wait_until(condition: Callable[[], Any], timeout: float = WAIT_S, what: str = "", interval: float = 0.05) -> Any:
    """Polls ``condition()`` until it is truthy and returns it; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what or condition} (last: {last!r})")
        time.sleep(interval)


def write_config(path: Path, webhooks: dict[str, Any], **sections: dict[str, Any]) -> Path:
    """Writes ``{"webhooks": webhooks, **sections}`` to ``path``, whole at once (renamed into
    place): a daemon started just before, without waiting, may be reading the file."""
    written = path.with_name(path.name + ".new")
    written.write_text(json.dumps({"webhooks": webhooks, **sections}, indent=2))
    os.replace(written, path)
    return path


def config(receiver: WebhookReceiver, secrets: dict[str, str], **extra: Any) -> dict[str, Any]:
    """``webhooks.*`` for endpoints named after ``secrets``' keys, each on the receiver (which
    then requires each endpoint's requests to verify with its secret)."""
    return {
        "endpoints": [f"{name}={receiver.endpoint(name, secret)}" for name, secret in secrets.items()],
        "secrets": [f"{name}={secret}" for name, secret in secrets.items()],
        **extra,
    }


#: How far the daemon's clock and the test's may disagree, in milliseconds.
CLOCK_SLACK_MS = 2000


def now_ms() -> int:
    """The wall clock in milliseconds, as the daemon writes times."""
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------
# The daemon


class Daemon:
    """One ``switchboard serve`` process on a given state directory and config file."""

    def __init__(self, state_dir: Path, config: Path, env: dict[str, str], cwd: Path,
                 ports: tuple[int, int] | None = None, wait: bool = True, host: str = "127.0.0.1",
                 prefix: list[str] | None = None) -> None:
        """Starts ``switchboard serve`` on ``host`` and ``ports`` (client, admin; default: any
        free ones), its command behind ``prefix`` (``ip netns exec NAME``, say), and, with
        ``wait``, waits for its ready line (a standby prints it once it leads). The admin API
        is reached on ``host`` too (``SWITCHBOARD_ADMIN_HOST``), with ``SWITCHBOARD_ADMIN_TOKEN``
        as its bearer token when the environment has one."""
        self.state_dir, self.config, self.env, self.cwd, self.host = state_dir, config, env, cwd, host
        self.admin_token = env.get("SWITCHBOARD_ADMIN_TOKEN")
        self.lines: list[str] = []
        self.port: int | None = None
        self.admin_port: int | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        client, admin = ports or (0, 0)
        self.process = subprocess.Popen(
            [*(prefix or []), str(_daemon_binary()), "serve", "--host", host, "--port", str(client), "--admin-port", str(admin),
             "--state-dir", str(state_dir), "--config", str(config)],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace", bufsize=1,
        )
        self._reader = threading.Thread(target=self._pump, name="switchboard-output", daemon=True)
        self._reader.start()
        if wait:
            self.wait_ready(START_TIMEOUT_S)

    @property
    def ready(self) -> bool:
        """Whether it printed its ready line (it serves)."""
        return self.port is not None and self.admin_port is not None

    def wait_ready(self, timeout: float) -> None:
        """Waits up to ``timeout`` for the ready line; fails the test (ending the process) without it."""
        self._ready.wait(timeout)
        if not self.ready:
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT_S)
            pytest.fail(f"switchboard printed no ready line (exit {self.process.returncode}):\n{self.output()}", pytrace=False)

    def _pump(self) -> None:
        import re

        admin = re.compile(r"admin=http://[0-9.]+:([0-9]+)")
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._lock:
                self.lines.append(line)
            if self.port is None:
                match, admin_match = READY_PATTERN.search(line), admin.search(line)
                if match and admin_match:
                    self.port, self.admin_port = int(match.group(1)), int(admin_match.group(1))
                    self._ready.set()
        self._ready.set()

    def output(self) -> str:
        with self._lock:
            return "".join(self.lines[-300:])

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL by PID, and reap it."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(STOP_TIMEOUT_S)

    def stop(self) -> None:
        """SIGTERM by PID; exit code 0 required (a process already SIGKILLed is left as it is)."""
        if self.process.returncode is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            code = self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT_S)
            pytest.fail(f"switchboard did not exit within {STOP_TIMEOUT_S:.0f} s of SIGTERM:\n{self.output()}", pytrace=False)
        self._reader.join(STOP_TIMEOUT_S)
        assert code == 0, f"switchboard exited with {code} after SIGTERM:\n{self.output()}"

    # -- admin API

    def admin(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One admin API request (JSON body when given); returns the status and the parsed JSON
        body (``None`` for an empty one). A non-JSON body fails the test."""
        connection = http.client.HTTPConnection(self.host, self.admin_port, timeout=WAIT_S)
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {"Content-Type": "application/json"} if payload is not None else {}
            if self.admin_token:
                headers["Authorization"] = f"Bearer {self.admin_token}"
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            content_type = response.getheader("Content-Type", "")
        finally:
            connection.close()
        if not raw:
            return response.status, None
        assert content_type.startswith("application/json"), f"{method} {path}: {response.status} {content_type} {raw[:300]!r}"
        return response.status, json.loads(raw)

    def admin_ok(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.admin(method, path, body)
        assert 200 <= status < 300, f"{method} {path} -> {status} {data}"
        return data

    def deliveries(self, **query: str) -> list[dict[str, Any]]:
        """Every delivery ``GET /v1/webhooks/deliveries`` lists with these filters (all pages)."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = dict(query, limit="200")
            if cursor:
                params["cursor"] = cursor
            qs = "&".join(f"{k}={v}" for k, v in params.items())
            page = self.admin_ok("GET", f"/v1/webhooks/deliveries?{qs}")
            found += page["deliveries"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def endpoints(self) -> dict[str, dict[str, Any]]:
        return {e["name"]: e for e in self.admin_ok("GET", "/v1/webhooks/endpoints")["endpoints"]}

    def connections(self) -> list[dict[str, Any]]:
        return self.admin_ok("GET", "/v1/connections")["connections"]

    def client(self, user: str, resume: str | None = None) -> CallClient:
        return CallClient(self.port, user, resume)


def base_env(**overrides: Any) -> dict[str, str]:
    """The daemon's environment: ``conftest.daemon_env()`` (admin auth off), the API secret,
    a short drain, rate limits out of the way, and ``overrides`` (keys without ``SWITCHBOARD_``)."""
    env = daemon_env()
    env.update({
        "SWITCHBOARD_AUTH_API_SECRET": CALLS_API_SECRET,
        "SWITCHBOARD_SHUTDOWN_DRAIN_TIMEOUT_MS": "2000",
        "SWITCHBOARD_CALLS_RING_BURST": "1000",
        "SWITCHBOARD_CALLS_RING_RATE_PER_MINUTE": "1000",
        "SWITCHBOARD_LIMITS_MESSAGES_PER_SECOND": "1000",
        "SWITCHBOARD_LIMITS_MESSAGE_BURST": "1000",
    })
    env.update({f"SWITCHBOARD_{k}": str(v) for k, v in overrides.items()})
    return env


class Daemons:
    """Starts daemons for one test and stops them all at its end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[Daemon] = []

    def start(self, webhooks: dict[str, Any], *, state_dir: Path | None = None, config: Path | None = None,
              ports: tuple[int, int] | None = None, wait: bool = True, host: str = "127.0.0.1",
              prefix: list[str] | None = None, **env_overrides: Any) -> Daemon:
        """A daemon on ``state_dir`` (default ``tmp_path/data``) with ``webhooks`` written to a
        config file (or the given ``config``) and ``env_overrides``."""
        state_dir = state_dir or self.tmp_path / "data"
        state_dir.mkdir(parents=True, exist_ok=True)
        if config is None:
            config = write_config(self.tmp_path / "switchboard.json", webhooks)
        daemon = Daemon(state_dir, config, base_env(**env_overrides), self.tmp_path, ports=ports, wait=wait, host=host, prefix=prefix)
        self.started.append(daemon)
        return daemon

    def restart(self, daemon: Daemon) -> Daemon:
        """Another daemon on the same state directory, config file and environment."""
        again = Daemon(daemon.state_dir, daemon.config, daemon.env, daemon.cwd)
        self.started.append(again)
        return again

    def stop_all(self) -> None:
        failures: list[BaseException] = []
        for daemon in reversed(self.started):
            try:
                daemon.stop()
            except BaseException as failure:  # noqa: BLE001 - pytest.fail raises a BaseException
                failures.append(failure)
        if failures:
            raise failures[0]


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Daemons]:
    started = Daemons(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    """A :class:`WebhookReceiver` for the test; closed at its end."""
    with WebhookReceiver() as running:
        yield running


def assert_nothing_more(receiver: WebhookReceiver, count: int, seconds: float, endpoint: str | None = None) -> None:
    """A negative check: over an observation window of ``seconds`` the receiver gets no request
    beyond the ``count`` it has (to ``endpoint``, when given). Used only where something must
    *not* happen; nothing positive is ever awaited this way."""
    try:
        receiver.wait_for(lambda r: len(r.snapshot(endpoint)) > count, seconds, "a request that must not come")
    except AssertionError:
        return
    raise AssertionError(f"the receiver got requests it must not get: {receiver.snapshot(endpoint)[count:]}")
