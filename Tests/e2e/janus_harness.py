"""Run a private Janus (Debian's ``janus`` package) for tests, and talk to it.

``JanusInstance`` writes a config directory of its own in a temporary folder,
starts ``janus --configs-folder DIR`` as a child process, and waits until the
instance answers an admin ``info`` request with the instance's own random
admin secret (polling, bounded by ``start_timeout``). It never uses a fixed
port: the client API and the admin API each get a port the kernel reported
free just before the start, so it cannot collide with a packaged
``janus.service`` (8088 / 8188 / 7088) or with another instance. If Janus does
not come up on the chosen ports (another process took one in between), the
start is retried with new ports a few times.

What the instance loads: its ``plugins_folder`` / ``transports_folder`` /
``events_folder`` / ``loggers_folder`` are private folders holding only
symlinks to the VideoRoom plugin and the HTTP transport found with
``dpkg -L janus``; event handlers and loggers folders are empty. Token auth
is on (``general.token_auth = true``): every client request needs a token
added with the admin ``add_token`` request. There is no STUN or TURN server,
the RTP port range is distinct per instance, and the VideoRoom plugin starts
with no rooms and numeric room ids.

Typical use::

    with JanusInstance() as janus:
        janus.add_token("tok-a", plugins=[VIDEOROOM])
        janus.videoroom({"request": "create", "room": 4242, "publishers": 4,
                         "secret": "s3cret", "permanent": False,
                         "allowed": ["tok-a"]})
        session = janus.open_session("tok-a")
        handle = session.attach(VIDEOROOM)
        session.message(handle, {"request": "join", "ptype": "publisher",
                                 "room": 4242, "token": "tok-a"})
        event = session.wait_event(lambda e: e.get("janus") == "event")

Stopping: ``stop()`` sends SIGTERM to the instance's PID and waits (SIGKILL
after ``stop_timeout``); ``kill()`` sends SIGKILL to that PID and reaps it.
Leaving the ``with`` block stops the instance if it still runs and removes the
temporary folder (``keep_dir=True`` keeps it, with ``janus.log`` inside).
Only the process this object started is ever signalled, and only by its PID.

Media and network namespaces
----------------------------
Janus skips loopback interfaces when it gathers ICE candidates, so no media
flows through an instance bound to 127.0.0.1 only: signalling and the admin
API work on loopback, WebRTC does not. A media test runs everything (the test
process, Janus, the daemon under test and the media peers) inside a network
namespace the test creates, with ``lo`` up and a veth pair whose one end has a
private address (see the optional ``netns.py`` beside this file), for
example::

    python3 Tests/e2e/netns.py create sbmedia 10.231.0.1/24
    ip netns exec sbmedia .venv/bin/python -m pytest Tests/e2e/test_media.py
    python3 Tests/e2e/netns.py delete sbmedia

and inside it builds the instance with that address::

    JanusInstance(interface="10.231.0.1", ice_enforce_list="10.231.0.1")

which sets ``general.interface`` and ``nat.ice_enforce_list`` so that Janus
offers only that address as a host candidate, while the HTTP APIs stay on
127.0.0.1 of the namespace. Never point anything at a private address outside
a namespace.

Only the standard library is used (Python 3.11).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable

from child_server import signal_and_reap

# The config and HTTP helpers live in janus_config.py and janus_api.py; they are
# re-exported here so that ``from janus_harness import …`` keeps working for every name.
from janus_api import (  # noqa: F401
    DEFAULT_REQUEST_TIMEOUT_S,
    LONG_POLL_HOLD_S,
    ClientSession,
    JanusAPI,
    JanusError,
    http_json,
    new_transaction,
    raise_for_error,
)
from janus_config import (  # noqa: F401
    HTTP_TRANSPORT,
    MODULES,
    VIDEOROOM,
    _release_rtp_range,
    allocate_rtp_range,
    find_modules,
    free_tcp_ports,
    janus_binary,
    janus_version,
    render_jcfg,
)

DEFAULT_START_TIMEOUT_S = 15.0
DEFAULT_STOP_TIMEOUT_S = 10.0
_START_ATTEMPTS = 3


class JanusInstance(JanusAPI):
    """A Janus process with a private config folder, free ports and token auth.

    Attributes after ``start()`` (or entering the ``with`` block): ``http_url``
    (client API, ``http://IP:PORT/janus``), ``admin_url`` (``http://IP:PORT/admin``),
    ``admin_secret``, ``pid``, ``config_dir``, ``log_path``, ``rtp_port_range``.
    """

    def __init__(
        self,
        *,
        ip: str = "127.0.0.1",
        interface: str | None = None,
        ice_enforce_list: str | None = None,
        rtp_port_range: tuple[int, int] | None = None,
        session_timeout: int = 60,
        debug_level: int = 3,
        admin_key: str | None = None,
        string_ids: bool = False,
        token_auth: bool = True,
        server_name: str | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT_S,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT_S,
        command_prefix: Iterable[str] = (),
        keep_dir: bool = False,
    ) -> None:
        """
        ip: address both HTTP servers bind to (client API and admin API).
        interface: ``general.interface`` (the address Janus puts in its SDP), or None.
        ice_enforce_list: ``nat.ice_enforce_list`` (interfaces/addresses ICE may use), or None.
        rtp_port_range: (min, max) for ``media.rtp_port_range``; None allocates a distinct block.
        debug_level: ``general.debug_level`` (0-7; 3 = warnings and errors, 4 = info).
        admin_key: VideoRoom ``admin_key`` (then ``create`` needs it), or None for none.
        string_ids: VideoRoom ``string_ids`` (room ids as strings instead of numbers).
        server_name: ``general.server_name``; None gives a random one. Readiness requires
            admin ``info`` to report this name, which proves the port is this instance's.
        command_prefix: argv put before ``janus`` (e.g. ``["ip", "netns", "exec", NAME]``;
            the prefix must exec Janus in place so that ``pid`` stays Janus's PID).
        """
        self.ip = ip
        self.interface = interface
        self.ice_enforce_list = ice_enforce_list
        self._explicit_rtp_range = rtp_port_range
        self.rtp_port_range: tuple[int, int] | None = None
        self.session_timeout = session_timeout
        self.debug_level = debug_level
        self.admin_key = admin_key
        self.string_ids = string_ids
        self.token_auth = token_auth
        self.server_name = server_name or f"switchboard-test-{secrets.token_hex(4)}"
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.command_prefix = list(command_prefix)
        self.keep_dir = keep_dir
        self.admin_secret = secrets.token_urlsafe(24)
        self.binary = janus_binary()
        self.tmpdir: Path | None = None
        self.config_dir: Path | None = None
        self.log_path: Path | None = None
        self.http_port = 0
        self.admin_port = 0
        self.process: subprocess.Popen | None = None
        self._log_file = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "JanusInstance":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @property
    def http_url(self) -> str:
        return f"http://{self.ip}:{self.http_port}/janus"

    @property
    def admin_url(self) -> str:
        return f"http://{self.ip}:{self.admin_port}/admin"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Write the config, start Janus and wait until both APIs answer."""
        if self.process is not None:
            raise RuntimeError("already started")
        self.tmpdir = Path(tempfile.mkdtemp(prefix="janus-test-"))
        self.config_dir = self.tmpdir / "conf"
        self.log_path = self.tmpdir / "janus.log"
        failures = []
        try:
            self._make_module_folders()
            self.rtp_port_range = self._explicit_rtp_range or allocate_rtp_range()
            for _ in range(_START_ATTEMPTS):
                self.http_port, self.admin_port = free_tcp_ports(2, self.ip)
                self._write_configs()
                self._spawn()
                problem = self._wait_ready()
                if problem is None:
                    return
                failures.append(problem)
                self._terminate(signal.SIGKILL)
        except BaseException:
            self.close()
            raise
        log = self.log_text()
        self.close()
        raise RuntimeError(
            "Janus did not become ready: " + "; ".join(failures) + "\n--- janus.log ---\n" + log[-4000:]
        )

    def _make_module_folders(self) -> None:
        assert self.tmpdir is not None
        modules = find_modules()
        for kind in ("plugins", "transports", "events", "loggers"):
            (self.tmpdir / kind).mkdir()
        for kind, name in MODULES:
            (self.tmpdir / kind / name).symlink_to(modules[name])
        self.config_dir.mkdir()

    def _write_configs(self) -> None:
        assert self.tmpdir is not None and self.config_dir is not None
        general = {
            "configs_folder": str(self.config_dir),
            "plugins_folder": str(self.tmpdir / "plugins"),
            "transports_folder": str(self.tmpdir / "transports"),
            "events_folder": str(self.tmpdir / "events"),
            "loggers_folder": str(self.tmpdir / "loggers"),
            "debug_level": self.debug_level,
            "debug_colors": False,
            "admin_secret": self.admin_secret,
            "token_auth": self.token_auth,
            "session_timeout": self.session_timeout,
            "server_name": self.server_name,
            "interface": self.interface,
            "protected_folders": ["/bin", "/boot", "/dev", "/etc", "/lib", "/proc", "/sbin", "/sys", "/usr", "/var"],
        }
        low, high = self.rtp_port_range
        sections = {
            "general": general,
            "media": {"rtp_port_range": f"{low}-{high}"},
            "nat": {"nice_debug": False, "ice_enforce_list": self.ice_enforce_list},
            "plugins": {},
            "transports": {},
            "loggers": {},
            "events": {"broadcast": False},
        }
        (self.config_dir / "janus.jcfg").write_text(render_jcfg(sections))
        http = {
            "general": {
                "json": "indented",
                "base_path": "/janus",
                "http": True,
                "ip": self.ip,
                "port": self.http_port,
                "https": False,
            },
            "admin": {
                "admin_base_path": "/admin",
                "admin_http": True,
                "admin_ip": self.ip,
                "admin_port": self.admin_port,
                "admin_https": False,
            },
            "cors": {},
        }
        (self.config_dir / "janus.transport.http.jcfg").write_text(render_jcfg(http))
        videoroom = {"general": {"admin_key": self.admin_key, "string_ids": self.string_ids, "events": False}}
        (self.config_dir / "janus.plugin.videoroom.jcfg").write_text(render_jcfg(videoroom))

    def _spawn(self) -> None:
        assert self.log_path is not None
        if self._log_file:
            self._log_file.close()
        self._log_file = open(self.log_path, "ab")
        argv = self.command_prefix + [
            self.binary,
            "--configs-folder", str(self.config_dir),
            "--config", str(self.config_dir / "janus.jcfg"),
            "--disable-colors",
        ]
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=self.tmpdir,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the test, not Janus
        )

    def _wait_ready(self) -> str | None:
        """Poll admin ``info`` and the client API until both answer; None when ready."""
        deadline = time.monotonic() + self.start_timeout
        admin_ok = False
        delay = 0.01
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"janus exited with {self.process.returncode}"
            try:
                if not admin_ok:
                    answer = self.admin({"janus": "info"}, timeout=1.0)
                    # info is answered even without the admin secret, so the name is what
                    # shows that this port is ours.
                    admin_ok = answer.get("janus") == "server_info" and answer.get("server-name") == self.server_name
                if admin_ok:
                    # The client API answers ping without a token, even with token auth on.
                    status, body = http_json(
                        "POST", self.http_url, {"janus": "ping", "transaction": new_transaction()}, timeout=1.0
                    )
                    if status == 200 and json.loads(body).get("janus") == "pong":
                        return None
            except (OSError, ValueError):
                pass
            # Not a fixed wait for readiness: a short back-off between polls.
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        return f"no answer on admin port {self.admin_port} / client port {self.http_port} within {self.start_timeout} s"

    def _terminate(self, sig: int) -> int | None:
        """Send ``sig`` to the PID this object started (if it still runs) and reap it."""
        return signal_and_reap(self.process, sig, self.stop_timeout)

    def stop(self) -> int | None:
        """SIGTERM by PID, wait up to ``stop_timeout`` (then SIGKILL); returns the exit status."""
        return self._terminate(signal.SIGTERM)

    def kill(self) -> int | None:
        """SIGKILL by PID and reap; returns the exit status (-9)."""
        return self._terminate(signal.SIGKILL)

    def close(self) -> None:
        """Stop Janus if it runs, release its RTP range and remove the temp folder."""
        self.stop()
        if self._log_file:
            self._log_file.close()
            self._log_file = None
        if not self._explicit_rtp_range:
            _release_rtp_range(self.rtp_port_range)
        if self.tmpdir and not self.keep_dir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log_text(self) -> str:
        """Janus's output so far (stdout and stderr)."""
        try:
            return self.log_path.read_text(errors="replace") if self.log_path else ""
        except FileNotFoundError:
            return ""
