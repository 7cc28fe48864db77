"""The daemons of a cluster_failover.py trial (cluster_trial.py): `Node`, one `switchboard serve`
whose output a thread of its own reads, and `Fixtures`, the Tests/e2e fixtures they are started
from (PostgreSQL, HAProxy, free ports, the daemons' environment and the users' tokens); the
constants they share, and the progress log of cluster_failover.py (cluster_node_loss.py's trials
log through it too)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cluster_driver import BenchError

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "Tests" / "e2e"
HOST = "127.0.0.1"
NODES = 3
READY = re.compile(r"ws://[0-9.]+:([0-9]+)/")
LEADS = "leading the PostgreSQL database"
STANDS_BY = "standing by: another node leads"
RELAYS = "relaying to the leading node"
#: Per-address caps the daemon applies (every client arrives from HAProxy, i.e. 127.0.0.1):
#: lifted, as scripts/bench lifts them for its other loads; kept only if the binary knows them.
LIFTED_CAPS = {
    "LIMITS_CONNECTIONS_PER_IP": 1000000, "LIMITS_CONNECT_RATE_PER_IP": 100000, "LIMITS_CONNECT_BURST_PER_IP": 100000,
    "TRANSPORT_MAX_CONNECTIONS_PER_ADDRESS": 1000000, "TRANSPORT_MAX_PENDING_PER_ADDRESS": 100000,
}


def log(message: str) -> None:
    print(f"[cluster-failover] {message}", file=sys.stderr, flush=True)


class Node:
    """One ``switchboard serve`` process. A thread of its own reads its output, so each line's
    arrival time is taken as it arrives, however busy the clients' event loop is; the lines go
    to ``log_path`` with those times."""

    def __init__(self, name: str, binary: Path, port: int, admin_port: int, state_dir: Path, config: Path,
                 env: dict[str, str], log_path: Path) -> None:
        self.name, self.binary, self.port, self.admin_port = name, binary, port, admin_port
        self.state_dir, self.config, self.env, self.log_path = state_dir, config, env, log_path
        self.process: subprocess.Popen | None = None
        self.pump: threading.Thread | None = None
        self.lead_at: float | None = None
        self.ready_at: float | None = None
        self.standby_at: float | None = None
        self.generation: int | None = None
        #: Each "relaying to the leading node" line (a relaying daemon following a leader): its
        #: arrival time and the generation it names (0: no leader).
        self.relaying: list[tuple[float, int | None]] = []
        #: Its node ID (the first ``node=`` its log names: its own, in its starting line).
        self.node_id: str | None = None
        self.killed = False

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(self.binary), "serve", "--host", HOST, "--port", str(self.port), "--admin-port", str(self.admin_port),
             "--state-dir", str(self.state_dir), "--config", str(self.config)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
            cwd=self.state_dir, start_new_session=True)
        self.pump = threading.Thread(target=self._pump, name=f"switchboard-{self.name}", daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with open(self.log_path, "w", encoding="utf-8") as out:
            out.write(f"# {self.name}: pid {self.process.pid}, port {self.port}, admin port {self.admin_port}; "
                      f"[monotonic s] before each line\n")
            for raw in self.process.stdout:
                at = time.monotonic()
                line = raw.decode(errors="replace")
                out.write(f"[{at:.6f}] {line}")
                if self.lead_at is None and LEADS in line:
                    found = re.search(r"generation=(\d+)", line)
                    self.generation = int(found.group(1)) if found else None
                    self.lead_at = at
                if self.node_id is None and (found := re.search(r"\bnode=([0-9A-Za-z-]+)", line)):
                    self.node_id = found.group(1)
                if RELAYS in line:
                    found = re.search(r"generation=(\d+)", line)
                    self.relaying.append((at, int(found.group(1)) if found else None))
                if self.standby_at is None and STANDS_BY in line:
                    self.standby_at = at
                if self.ready_at is None and READY.search(line):
                    self.ready_at = at
            self.process.stdout.close()
            out.write(f"# exited with {self.process.wait()}\n")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL by PID (reaped by ``stop``)."""
        if self.running():
            os.kill(self.pid, signal.SIGKILL)
            self.killed = True

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM by PID, SIGKILL after ``timeout``; reaps it and lets its output be read to the end."""
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.pid}) ignored SIGTERM for {timeout:.0f} s: SIGKILL")
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait(timeout)
        if self.pump is not None:
            self.pump.join(timeout)


class Fixtures:
    """The Tests/e2e fixtures this run uses, imported with TEST_SWITCHBOARD_BIN set to the daemon."""

    def __init__(self, binary: Path) -> None:
        os.environ["TEST_SWITCHBOARD_BIN"] = str(binary)
        sys.path.insert(0, str(E2E))
        import conftest
        import haproxy
        import pgserver
        import webhook_harness
        from janus_config import free_tcp_ports

        reason = pgserver.missing_requirements() or haproxy.missing_requirements()
        if reason:
            raise BenchError(reason)
        self.PostgresServer = pgserver.PostgresServer
        self.HAProxy = haproxy.HAProxy
        self.free_tcp_ports = free_tcp_ports
        self.base_env = webhook_harness.base_env
        self.user_token = webhook_harness.user_token
        self.write_config = webhook_harness.write_config
        self.lifted_caps = {k: v for k, v in LIFTED_CAPS.items() if conftest.binary_accepts(**{f"SWITCHBOARD_{k}": str(v)})}
        for key in sorted(set(LIFTED_CAPS) - set(self.lifted_caps)):
            log(f"{binary} does not know SWITCHBOARD_{key}; left out")
