"""Run a private HAProxy (Debian's ``haproxy`` package) as a plain TCP load balancer for tests.

``HAProxy(backends)`` writes a config of its own into a temporary folder and starts
``haproxy -f CONFIG -db`` (foreground, no master process) as a child, so ``pid`` is HAProxy's own
PID. It listens on 127.0.0.1 at a port the kernel reported free (``address``) and spreads
connections in ``mode tcp`` over ``backends`` (``"host:port"`` strings, or a mapping of server
name to ``"host:port"``; a list names them ``s1``, ``s2``, …), with ``balance roundrobin``
(or ``leastconn``). Nothing is HTTP-aware and no session is sticky: WebSockets pass as plain TCP.

What the config sets:

- Health checks: ``option tcp-check`` (a TCP connect) every ``check_inter_ms`` (100 ms), a server
  goes DOWN after ``fall`` (2) failed checks and UP again after ``rise`` (2) good ones, so a dead
  backend leaves the rotation within about ``fall * check_inter_ms``. With ``ready_ports`` (a
  port per server name) the check is ``GET /readyz`` on that port instead, 200 wanted: a frozen
  server, whose kernel still accepts connections, fails it at ``timeout check`` (1 s).
  ``ready_token`` sends ``Authorization: Bearer TOKEN`` with it, as docs/deploy-cluster.md does.
- ``option redispatch`` with ``retries 2``: a connection refused by a server not yet marked DOWN
  is tried on another one.
- Timeouts for long-lived WebSockets: ``timeout client``/``server``/``tunnel`` ``1h``
  (``tunnel_timeout``), ``timeout connect`` 2 s.
- A stats socket (``admin.sock`` in the folder, ``level admin``): ``command()`` sends it one
  line, ``backend_states()`` reads ``show stat``. No port is used for it.
- No ``chroot``, ``user``/``group`` or ``daemon``: it runs as whoever starts it, root included.

Readiness is polled (no fixed sleep): the stats socket must report this process's PID and the
frontend as OPEN. If another process took the chosen port in between, HAProxy exits on
"cannot bind" and the start is retried on a new port.

Typical use::

    with HAProxy({"a": "127.0.0.1:9001", "b": "127.0.0.1:9002"}) as lb:
        connect(lb.host, lb.port)
        lb.wait_for_state("b", "DOWN", timeout=5)    # after node b died

``stop()`` sends SIGTERM (immediate stop) to that PID and waits, SIGKILL after ``stop_timeout``;
``kill()`` sends SIGKILL. Leaving the ``with`` block stops it and removes the folder
(``keep_dir=True`` keeps it, with ``haproxy.cfg`` and ``haproxy.log``).

The process, folder, ``with`` block and signalling by PID are ``child_server.ChildServer``'s, shared
with ``PostgresServer``. Only the standard library is used (Python 3.11).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

from janus_config import free_tcp_ports
from child_server import ChildServer, wait_until

HOST = "127.0.0.1"
FRONTEND = "switchboard_in"
BACKEND = "switchboard"
INSTALL_HINT = "scripts/test installs it: apt-get install -y haproxy"
_START_ATTEMPTS = 3


def haproxy_binary() -> str:
    """``$TEST_HAPROXY_BIN``, else ``haproxy`` on ``PATH``, else Debian's ``/usr/sbin/haproxy``."""
    for candidate in (os.environ.get("TEST_HAPROXY_BIN"), shutil.which("haproxy"), "/usr/sbin/haproxy"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(f"haproxy not found (TEST_HAPROXY_BIN, PATH, /usr/sbin); {INSTALL_HINT}")


def missing_requirements() -> str | None:
    """Why an HAProxy cannot run here, or None."""
    try:
        haproxy_binary()
    except FileNotFoundError as error:
        return str(error)
    return None


class HAProxy(ChildServer):
    """A TCP load balancer in front of ``backends`` (see the module's doc).

    Attributes once started: ``host``, ``port``, ``address`` (``host:port``), ``pid``, ``dir``,
    ``config_path``, ``socket_path``, ``log_path``, ``servers`` (name → ``host:port``).
    """

    LOG_NAME = "haproxy.log"

    def __init__(
        self,
        backends: Sequence[str] | Mapping[str, str],
        *,
        balance: str = "roundrobin",
        check_inter_ms: int = 100,
        fall: int = 2,
        rise: int = 2,
        tunnel_timeout: str = "1h",
        ready_ports: Mapping[str, int] | None = None,
        ready_token: str | None = None,
        start_timeout: float = 15.0,
        stop_timeout: float = 10.0,
        keep_dir: bool = False,
    ) -> None:
        if balance not in ("roundrobin", "leastconn"):
            raise ValueError(f"balance {balance!r}: roundrobin or leastconn")
        if isinstance(backends, Mapping):
            self.servers = dict(backends)
        else:
            self.servers = {f"s{n}": address for n, address in enumerate(backends, 1)}
        if not self.servers:
            raise ValueError("no backends")
        for name, address in self.servers.items():
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or not re.fullmatch(r"[^\s:]+:\d+", address):
                raise ValueError(f"backend {name!r} = {address!r}: want a plain name and host:port")
        self.balance = balance
        self.check_inter_ms = check_inter_ms
        self.fall = fall
        self.rise = rise
        self.tunnel_timeout = tunnel_timeout
        self.ready_ports = dict(ready_ports or {})
        self.ready_token = ready_token
        if self.ready_ports and set(self.ready_ports) != set(self.servers):
            raise ValueError(f"ready_ports names {sorted(self.ready_ports)}, the servers are {sorted(self.servers)}")
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.keep_dir = keep_dir
        self.binary = haproxy_binary()
        self.host = HOST
        self.port = 0
        self.dir: Path | None = None
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self._path("haproxy.cfg")

    @property
    def socket_path(self) -> Path:
        return self._path("admin.sock")

    # ------------------------------------------------------------------ lifecycle

    def config(self) -> str:
        """The configuration for the current ``port`` (see the module's doc)."""
        check = f"check inter {self.check_inter_ms}ms fastinter {self.check_inter_ms}ms " \
                f"downinter {self.check_inter_ms}ms fall {self.fall} rise {self.rise}"
        servers = "".join(
            f"    server {name} {address}" + (f" port {self.ready_ports[name]}" if self.ready_ports else "") + "\n"
            for name, address in self.servers.items())
        checking = "option tcp-check"
        if self.ready_ports:
            auth = f' hdr Authorization "Bearer {self.ready_token}"' if self.ready_token else ""
            checking = f"option httpchk\n    http-check send meth GET uri /readyz{auth}\n    http-check expect status 200"
        return f"""# Written by Tests/e2e/haproxy.py: plain TCP balancing for tests.
global
    stats socket {self.socket_path} mode 600 level admin
    stats timeout 10s

defaults
    mode tcp
    retries 2
    option redispatch
    timeout connect 2s
    timeout check 1s
    timeout client {self.tunnel_timeout}
    timeout server {self.tunnel_timeout}
    timeout tunnel {self.tunnel_timeout}
    timeout client-fin 5s

frontend {FRONTEND}
    bind {self.host}:{self.port}
    default_backend {BACKEND}

backend {BACKEND}
    balance {self.balance}
    {checking}
    default-server {check}
{servers}"""

    def start(self) -> None:
        """Write the config, start HAProxy on a free port and wait until it serves (bounded)."""
        if self.process is not None:
            raise RuntimeError("already started")
        self.dir = Path(tempfile.mkdtemp(prefix="haproxy-test-"))
        failures = []
        try:
            for _ in range(_START_ATTEMPTS):
                self.port = free_tcp_ports(1, self.host)[0]
                self.config_path.write_text(self.config())
                with open(self.log_path, "ab") as log:
                    self.process = subprocess.Popen(
                        [self.binary, "-f", str(self.config_path), "-db"], stdin=subprocess.DEVNULL,
                        stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True,
                    )
                problem = self._wait_ready()
                if problem is None:
                    return
                failures.append(problem)
                self.kill()
                if "cannot bind" not in self.log_text():
                    break
        except BaseException:
            self.close()
            raise
        log = self.log_text()
        self.close()
        raise RuntimeError("HAProxy did not start: " + "; ".join(failures) + "\n--- haproxy.log ---\n" + log[-4000:])

    def _wait_ready(self) -> str | None:
        """Poll the stats socket until it reports this PID and the frontend OPEN; None when ready."""
        deadline = time.monotonic() + self.start_timeout
        delay = 0.005
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"haproxy exited with {self.process.returncode}"
            try:
                info = self.command("show info")
                if re.search(rf"^Pid: {self.process.pid}$", info, re.M) and \
                        any(row["svname"] == "FRONTEND" and row["status"] == "OPEN" for row in self.stats()):
                    return None
            except OSError:
                pass
            time.sleep(delay)  # back-off between polls, not a wait for readiness
            delay = min(delay * 2, 0.1)
        return f"not serving on {self.address} within {self.start_timeout} s"

    def stop(self) -> int | None:
        """SIGTERM (HAProxy's immediate stop) by PID and wait; returns the exit status (-15: 2.6
        run with ``-db`` ends by the signal itself)."""
        return self._signal(signal.SIGTERM)

    def kill(self) -> int | None:
        """SIGKILL by PID and reap; returns the exit status (-9)."""
        return self._signal(signal.SIGKILL)

    # ------------------------------------------------------------------ runtime state

    def command(self, line: str, timeout: float = 5.0) -> str:
        """Send one command to the stats socket (e.g. ``show info``) and return the answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(self.socket_path))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def stats(self) -> list[dict[str, str]]:
        """``show stat`` as rows keyed by its CSV header (``pxname``, ``svname``, ``status``, …)."""
        lines = self.command("show stat").lstrip("# ").splitlines()
        return list(csv.DictReader(line for line in lines if line.strip()))

    def backend_states(self) -> dict[str, str]:
        """Each server's status as HAProxy reports it: ``UP``, ``DOWN``, or on the way between
        after some checks (``UP 1/2``: one failed check; ``DOWN 1/2``: one good one), ``MAINT``…"""
        return {row["svname"]: row["status"] for row in self.stats()
                if row["pxname"] == BACKEND and row["svname"] != "BACKEND"}

    def wait_for_state(self, server: str, state: str, timeout: float = 10.0) -> None:
        """Poll ``backend_states()`` until ``server`` is in ``state``; TimeoutError after ``timeout`` s."""
        if server not in self.servers:
            raise KeyError(f"no server {server!r} (have {', '.join(self.servers)})")
        states: dict[str, str] = {}

        def reached() -> bool:
            states.clear()
            states.update(self.backend_states())
            return states.get(server) == state

        try:
            wait_until(reached, timeout, f"server {server} {state}")
        except TimeoutError:
            raise TimeoutError(f"server {server} not {state} within {timeout} s: {states}") from None
