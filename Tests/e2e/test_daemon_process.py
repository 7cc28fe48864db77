"""The daemon as an operator runs it: signals, exit codes, configuration errors, TLS.

Each test starts the real binary as a child process on 127.0.0.1 with a kernel-chosen port and
ends only that process, by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import ssl
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import websockets

from conftest import READY_PATTERN, _daemon_binary

START_TIMEOUT_S = 30.0


class Daemon:
    """A daemon child process whose merged output is pumped on a thread."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None):
        self.lines: list[str] = []
        self.port: int | None = None
        self.ready = threading.Event()
        self.process = subprocess.Popen(
            [str(_daemon_binary()), *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            match = READY_PATTERN.search(line) or re.search(r"wss://[0-9.]+:([0-9]+)/", line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self.ready.set()
        self.ready.set()

    def wait_ready(self) -> int:
        assert self.ready.wait(START_TIMEOUT_S), "no ready line"
        assert self.port is not None, "daemon exited before ready:\n" + "".join(self.lines)
        return self.port

    def output(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _clean_env() -> dict[str, str]:
    """The test's environment without SWITCHBOARD_* variables, which the daemon validates."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}


def test_sigterm_closes_peers_with_1001_and_exits_zero(tmp_path: Path) -> None:
    daemon = Daemon(["serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0"], tmp_path, _clean_env())
    try:
        port = daemon.wait_ready()

        async def scenario() -> int:
            async with websockets.connect(f"ws://127.0.0.1:{port}/peerjs?key=peerjs&id=a&token=t") as ws:
                assert json.loads(await ws.recv()) == {"type": "OPEN"}
                os.kill(daemon.process.pid, signal.SIGTERM)
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await asyncio.wait_for(ws.recv(), 10)
                return closed.value.rcvd.code

        assert asyncio.run(scenario()) == 1001
        assert daemon.process.wait(timeout=15) == 0, daemon.output()
    finally:
        daemon.stop()


def test_a_second_signal_during_shutdown_exits_at_once(tmp_path: Path) -> None:
    """A peer that never reads keeps the drain busy (its close frame cannot be sent); the
    second signal must end the process at once, without waiting for the 60 s drain timeout."""
    env = {
        **_clean_env(),
        "SWITCHBOARD_SHUTDOWN_DRAIN_TIMEOUT_MS": "60000",
        "SWITCHBOARD_TRANSPORT_OUTBOX_BYTES": "1073741824",
    }
    daemon = Daemon(["serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0"], tmp_path, env)
    try:
        port = daemon.wait_ready()
        stuck = _raw_peer(port, "stuck")

        async def flood() -> None:
            url = f"ws://127.0.0.1:{port}/peerjs?key=peerjs&id=sender&token=t"
            async with websockets.connect(url, max_size=None) as sender:
                assert json.loads(await sender.recv()) == {"type": "OPEN"}
                blob = "x" * 60000
                for index in range(400):  # ~24 MB: more than the kernel buffers hold
                    await sender.send(json.dumps({"type": "CANDIDATE", "dst": "stuck", "payload": [index, blob]}))

        asyncio.run(flood())
        os.kill(daemon.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while "draining" not in daemon.output() and time.monotonic() < deadline:
            daemon.ready.wait(0.05)
        assert "draining" in daemon.output(), daemon.output()
        assert daemon.process.poll() is None, "the drain should still be waiting for the stuck peer"
        started = time.monotonic()
        os.kill(daemon.process.pid, signal.SIGINT)
        code = daemon.process.wait(timeout=10)
        assert time.monotonic() - started < 10
        assert code != 0, "the forced exit must not report success"
        stuck.close()
    finally:
        daemon.stop()


def _raw_peer(port: int, peer_id: str):
    """A PeerJS socket opened by hand that never reads after the upgrade."""
    import socket

    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.sendall(
        f"GET /peerjs?key=peerjs&id={peer_id}&token=t HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    assert b" 101 " in raw.recv(256)
    return raw


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"server": {"prot": 1}}, "server.prot"),
        ({"server": {"port": "abc"}}, "server.port"),
        ({"peerjs": {"expire_timeout": 0}}, "peerjs.expire_timeout"),
        ({"log": {"level": "loud"}}, "log.level"),
    ],
)
def test_a_bad_config_file_fails_naming_the_key(tmp_path: Path, config: dict, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    for command in ("check-config", "serve"):
        result = subprocess.run(
            [str(_daemon_binary()), command, "--config", str(path)],
            env=_clean_env(), capture_output=True, text=True, timeout=30,
        )
        assert result.returncode == 78, result
        assert needle in result.stderr, result.stderr


def test_an_unknown_environment_variable_fails_naming_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(_daemon_binary()), "check-config"],
        env={**_clean_env(), "SWITCHBOARD_PEERJS_EXPIRE": "5"},
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 78
    assert "SWITCHBOARD_PEERJS_EXPIRE" in result.stderr


def test_the_shipped_config_checks_out() -> None:
    config = Path(__file__).resolve().parents[2] / "config" / "switchboard.json"
    result = subprocess.run(
        [str(_daemon_binary()), "check-config", "--config", str(config)],
        env=_clean_env(), capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "configuration OK" in result.stdout


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


def test_tls_serves_wss_and_https_with_the_configured_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    daemon = Daemon(
        ["serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--sslcert", str(cert), "--sslkey", str(key)],
        tmp_path, _clean_env(),
    )
    try:
        port = daemon.wait_ready()
        assert f"wss://127.0.0.1:{port}/peerjs" in daemon.output()
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/peerjs/id", context=context, timeout=10) as response:
            assert response.status == 200
            assert len(response.read().decode()) == 36

        async def relay() -> dict:
            url = f"wss://127.0.0.1:{port}/peerjs?key=peerjs&token=t&id="
            async with websockets.connect(url + "a", ssl=context) as a, websockets.connect(url + "b", ssl=context) as b:
                assert json.loads(await a.recv()) == {"type": "OPEN"}
                assert json.loads(await b.recv()) == {"type": "OPEN"}
                await a.send(json.dumps({"type": "OFFER", "dst": "b", "payload": {"over": "tls"}}))
                return json.loads(await asyncio.wait_for(b.recv(), 10))

        assert asyncio.run(relay()) == {"type": "OFFER", "src": "a", "dst": "b", "payload": {"over": "tls"}}
        os.kill(daemon.process.pid, signal.SIGTERM)
        assert daemon.process.wait(timeout=15) == 0
    finally:
        daemon.stop()


def test_sighup_reloads_the_log_level_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "switchboard.json"
    config.write_text(json.dumps({"log": {"level": "info"}}))
    daemon = Daemon(
        ["serve", "--config", str(config), "--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--state-dir", str(tmp_path / "state")],
        tmp_path, _clean_env(),
    )
    try:
        daemon.wait_ready()
        admin = re.search(r"admin=http://127\.0\.0\.1:(\d+)", daemon.output())
        assert admin, daemon.output()
        # No admin token configured: the daemon generated one into its state directory (0600)
        # and logged the file's path, never the value.
        token_file = tmp_path / "state" / "admin.token"
        assert str(token_file) in daemon.output(), daemon.output()
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert token not in daemon.output()
        url = urllib.request.Request(
            f"http://127.0.0.1:{admin.group(1)}/v1/log-level", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(url, timeout=10) as response:
            assert json.loads(response.read()) == {"level": "info"}
        config.write_text(json.dumps({"log": {"level": "debug"}}))
        os.kill(daemon.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "configuration reloaded" not in daemon.output() and time.monotonic() < deadline:
            daemon.ready.wait(0.05)
        assert "configuration reloaded" in daemon.output(), daemon.output()
        with urllib.request.urlopen(url, timeout=10) as response:
            assert json.loads(response.read()) == {"level": "debug"}
        config.write_text("{not json")
        os.kill(daemon.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "reload failed" not in daemon.output() and time.monotonic() < deadline:
            daemon.ready.wait(0.05)
        assert "reload failed" in daemon.output(), daemon.output()
        assert daemon.process.poll() is None, "a bad reload must not stop the daemon"
        os.kill(daemon.process.pid, signal.SIGTERM)
        assert daemon.process.wait(timeout=15) == 0
    finally:
        daemon.stop()


def test_a_token_from_the_cli_opens_a_signed_peerjs_id(tmp_path: Path) -> None:
    env = {**_clean_env(), "SWITCHBOARD_AUTH_API_SECRET": "x" * 40, "SWITCHBOARD_PEERJS_AUTH": "jwt"}
    minted = subprocess.run(
        [str(_daemon_binary()), "token", "--user", "carol", "--ttl", "10m"], env=env, capture_output=True, text=True, timeout=30,
    )
    assert minted.returncode == 0, minted.stderr
    token = minted.stdout.strip()
    assert token.count(".") == 2
    daemon = Daemon(["serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0"], tmp_path, env)
    try:
        port = daemon.wait_ready()

        async def handshake(peer_id: str) -> dict:
            url = f"ws://127.0.0.1:{port}/peerjs?key=peerjs&id={peer_id}&token={token}"
            async with websockets.connect(url) as ws:
                return json.loads(await asyncio.wait_for(ws.recv(), 10))

        assert asyncio.run(handshake("carol")) == {"type": "OPEN"}
        assert asyncio.run(handshake("dave")) == {"type": "ERROR", "payload": {"msg": "Invalid token"}}
        os.kill(daemon.process.pid, signal.SIGTERM)
        assert daemon.process.wait(timeout=15) == 0
    finally:
        daemon.stop()


def test_an_absurd_ttl_is_a_clear_error_not_a_crash() -> None:
    env = {**_clean_env(), "SWITCHBOARD_AUTH_API_SECRET": "x" * 40}
    for ttl in ["999999999999999d", "9223372036854775807h", "31d", "0", "-5m"]:
        result = subprocess.run(
            [str(_daemon_binary()), "token", "--user", "a", "--ttl", ttl], env=env, capture_output=True, text=True, timeout=30,
        )
        assert result.returncode not in (0, -4, -5, -6, 132, 133, 134), (ttl, result.returncode, result.stderr)  # no trap
        assert "ttl" in result.stderr.lower(), (ttl, result.stderr)


def test_the_token_command_needs_an_api_secret() -> None:
    result = subprocess.run(
        [str(_daemon_binary()), "token", "--user", "a"], env=_clean_env(), capture_output=True, text=True, timeout=30,
    )
    assert result.returncode != 0
    assert "auth.api_secret" in result.stderr
