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
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable

VIDEOROOM = "janus.plugin.videoroom"
HTTP_TRANSPORT = "janus.transport.http"

#: The modules every instance loads: (folder kind, library file name).
MODULES = (("plugins", "libjanus_videoroom.so"), ("transports", "libjanus_http.so"))

DEFAULT_START_TIMEOUT_S = 15.0
DEFAULT_STOP_TIMEOUT_S = 10.0
DEFAULT_REQUEST_TIMEOUT_S = 5.0
#: Janus's HTTP transport holds a long-poll GET for up to 30 s when no event is queued.
LONG_POLL_HOLD_S = 30.0
_START_ATTEMPTS = 3

# Requests to 127.0.0.1 must never go through a proxy named in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class JanusError(Exception):
    """An error answer from Janus: the core's ``error`` object or a plugin's ``error_code``."""

    def __init__(self, code: int | None, reason: str, answer: Any) -> None:
        super().__init__(f"Janus error {code}: {reason}")
        self.code = code
        self.reason = reason
        self.answer = answer


def new_transaction() -> str:
    """A random transaction id, as every Janus request carries one."""
    return secrets.token_hex(8)


def janus_binary() -> str:
    """The ``janus`` executable: ``$TEST_JANUS_BIN``, else the one on ``PATH``."""
    explicit = os.environ.get("TEST_JANUS_BIN")
    if explicit:
        return explicit
    found = shutil.which("janus")
    if not found:
        raise FileNotFoundError("janus not found on PATH (apt-get install -y janus)")
    return found


def janus_version(binary: str | None = None) -> str:
    """The version line of ``janus --help``, e.g. ``1102 (1.1.2)``."""
    out = subprocess.run(
        [binary or janus_binary(), "--help"], capture_output=True, text=True, timeout=10
    ).stdout
    for line in out.splitlines():
        if line.startswith("Janus version:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def find_modules() -> dict[str, Path]:
    """Map each library name in ``MODULES`` to its file, as listed by ``dpkg -L janus``.

    Falls back to the usual multiarch folder when dpkg does not know the package
    (e.g. a Janus built from source and named by ``TEST_JANUS_BIN``).
    """
    wanted = {name: kind for kind, name in MODULES}
    found: dict[str, Path] = {}
    try:
        listing = subprocess.run(
            ["dpkg", "-L", "janus"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        listing = []
    for line in listing:
        path = Path(line.strip())
        kind = wanted.get(path.name)
        if kind and path.parent.name == kind:
            found[path.name] = path
    for name, kind in wanted.items():
        if name not in found:
            for candidate in Path("/usr/lib").glob(f"*/janus/{kind}/{name}"):
                found[name] = candidate
                break
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise FileNotFoundError(f"Janus modules not found: {', '.join(missing)}")
    return {name: path.resolve() for name, path in found.items()}


def free_tcp_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports the kernel reports free on ``host`` right now.

    All sockets are held open until every port is chosen, so the ports differ.
    Another process may still take one before Janus binds it; the instance
    notices (it never becomes ready) and retries with new ports.
    """
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


_rtp_lock = threading.Lock()
_rtp_in_use: set[int] = set()


def _udp_port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def allocate_rtp_range(size: int = 100, host: str = "0.0.0.0") -> tuple[int, int]:
    """A UDP port range for ``media.rtp_port_range`` that no other instance of this process uses.

    Blocks of ``size`` ports between 20000 and 59999 are picked at random (so two test
    processes rarely pick the same one) and checked for a free first and last port.
    """
    with _rtp_lock:
        bases = [b for b in range(20000, 60000 - size, size) if b not in _rtp_in_use]
        random.shuffle(bases)
        for base in bases:
            if _udp_port_free(host, base) and _udp_port_free(host, base + size - 1):
                _rtp_in_use.add(base)
                return base, base + size - 1
    raise RuntimeError("no free RTP port range")


def _release_rtp_range(port_range: tuple[int, int] | None) -> None:
    if port_range:
        with _rtp_lock:
            _rtp_in_use.discard(port_range[0])


def _jcfg_value(value: Any) -> str:
    """One value in Janus's libconfig syntax (``.jcfg``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_jcfg_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def render_jcfg(sections: dict[str, dict[str, Any]]) -> str:
    """A ``.jcfg`` file from ``{section: {key: value}}``; keys whose value is None are left out."""
    lines = ["# Written by Tests/e2e/janus_harness.py for one test instance."]
    for section, items in sections.items():
        lines.append(f"{section}: {{")
        for key, value in items.items():
            if value is not None:
                lines.append(f"\t{key} = {_jcfg_value(value)}")
        lines.append("}")
    return "\n".join(lines) + "\n"


def http_json(
    method: str,
    url: str,
    body: dict | None = None,
    timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
) -> tuple[int, str]:
    """One HTTP request; returns (status, body text), also for 4xx/5xx answers."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def raise_for_error(answer: dict) -> dict:
    """Return ``answer`` unless it is an error: the core's ``{"janus":"error","error":{...}}``
    or a plugin's ``error_code`` inside ``plugindata.data`` (client API) or ``response``
    (admin ``message_plugin``)."""
    if answer.get("janus") == "error":
        error = answer.get("error", {})
        raise JanusError(error.get("code"), error.get("reason", ""), answer)
    inner = answer.get("response")
    if inner is None:
        inner = answer.get("plugindata", {}).get("data")
    if isinstance(inner, dict) and "error_code" in inner:
        raise JanusError(inner["error_code"], inner.get("error", ""), answer)
    return answer


class JanusInstance:
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
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            try:
                os.kill(process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=self.stop_timeout)
        return process.returncode

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

    # ------------------------------------------------------------------ admin API

    def admin_raw(self, request: dict, path: str = "", timeout: float = DEFAULT_REQUEST_TIMEOUT_S) -> tuple[int, str]:
        """POST ``request`` as is to the admin API (``path`` e.g. ``/SESSION`` or ``/SESSION/HANDLE``)."""
        return http_json("POST", self.admin_url + path, request, timeout=timeout)

    def admin(
        self,
        request: dict,
        *,
        path: str = "",
        secret: str | None | bool = True,
        timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
    ) -> dict:
        """POST an admin request and return Janus's JSON answer (errors included, not raised).

        ``transaction`` is added when missing; ``admin_secret`` is the instance's own
        unless ``secret`` is a string (sent instead) or False (no secret sent).
        """
        body = dict(request)
        body.setdefault("transaction", new_transaction())
        if secret is True:
            body.setdefault("admin_secret", self.admin_secret)
        elif isinstance(secret, str):
            body["admin_secret"] = secret
        status, text = self.admin_raw(body, path=path, timeout=timeout)
        try:
            return json.loads(text)
        except ValueError:
            raise JanusError(None, f"HTTP {status}, not JSON: {text[:200]!r}", text) from None

    def add_token(self, token: str, plugins: list[str] | None = None) -> dict:
        request: dict[str, Any] = {"janus": "add_token", "token": token}
        if plugins is not None:
            request["plugins"] = plugins
        return raise_for_error(self.admin(request))

    def remove_token(self, token: str) -> dict:
        return raise_for_error(self.admin({"janus": "remove_token", "token": token}))

    def list_tokens(self) -> list[dict]:
        return raise_for_error(self.admin({"janus": "list_tokens"}))["data"]["tokens"]

    def list_sessions(self) -> list[int]:
        return raise_for_error(self.admin({"janus": "list_sessions"}))["sessions"]

    def list_handles(self, session_id: int) -> list[int]:
        return raise_for_error(self.admin({"janus": "list_handles"}, path=f"/{session_id}"))["handles"]

    def message_plugin(self, plugin: str, request: dict) -> dict:
        """Admin ``message_plugin``: returns Janus's whole answer (``response`` holds the plugin's)."""
        return self.admin({"janus": "message_plugin", "plugin": plugin, "request": request})

    def videoroom(self, request: dict) -> dict:
        """A VideoRoom request through admin ``message_plugin``; returns the plugin's
        ``response`` object, raising ``JanusError`` for a core or plugin error."""
        return raise_for_error(self.message_plugin(VIDEOROOM, request))["response"]

    # ------------------------------------------------------------------ client API

    def client_raw(self, body: dict, path: str = "", timeout: float = DEFAULT_REQUEST_TIMEOUT_S) -> tuple[int, str]:
        """POST ``body`` as is to the client API (``path`` e.g. ``/SESSION``)."""
        return http_json("POST", self.http_url + path, body, timeout=timeout)

    def client(self, body: dict, path: str = "", token: str | None = None) -> dict:
        """POST a client request (``transaction`` added, ``token`` set when given); returns the JSON answer."""
        request = dict(body)
        request.setdefault("transaction", new_transaction())
        if token is not None:
            request["token"] = token
        status, text = self.client_raw(request, path=path)
        try:
            return json.loads(text)
        except ValueError:
            raise JanusError(None, f"HTTP {status}, not JSON: {text[:200]!r}", text) from None

    def create_session(self, token: str | None) -> dict:
        """Client ``create`` with ``token`` (None: no token at all); the raw answer."""
        return self.client({"janus": "create"}, token=token)

    def open_session(self, token: str | None) -> "ClientSession":
        """Create a client session with ``token``, raising ``JanusError`` when refused."""
        answer = raise_for_error(self.create_session(token))
        return ClientSession(self, answer["data"]["id"], token)


class ClientSession:
    """One Janus client session over the HTTP transport (requests plus the long-poll GET)."""

    def __init__(self, janus: JanusInstance, session_id: int, token: str | None) -> None:
        self.janus = janus
        self.session_id = session_id
        self.token = token
        self._pending: list[dict] = []

    @property
    def url(self) -> str:
        return f"{self.janus.http_url}/{self.session_id}"

    def request(self, body: dict, handle_id: int | None = None) -> dict:
        """POST to the session (or to one of its handles); the raw JSON answer.
        A ``transaction`` in ``body`` is kept, else a random one is added."""
        path = f"/{self.session_id}" + (f"/{handle_id}" if handle_id is not None else "")
        return self.janus.client(body, path=path, token=self.token)

    def attach(self, plugin: str = VIDEOROOM) -> int:
        """Attach to ``plugin``; returns the handle id (raises ``JanusError`` when refused)."""
        return raise_for_error(self.request({"janus": "attach", "plugin": plugin}))["data"]["id"]

    def message(self, handle_id: int, body: dict, jsep: dict | None = None, transaction: str | None = None) -> dict:
        """Send a plugin message; the synchronous answer (``ack`` for asynchronous requests,
        ``success`` with ``plugindata`` for synchronous ones, or ``error``)."""
        request: dict[str, Any] = {"janus": "message", "body": body}
        if transaction is not None:
            request["transaction"] = transaction
        if jsep is not None:
            request["jsep"] = jsep
        return self.request(request, handle_id=handle_id)

    def keepalive(self) -> dict:
        return self.request({"janus": "keepalive"})

    def destroy(self) -> dict:
        return self.request({"janus": "destroy"})

    def poll_raw(self, maxev: int = 1, timeout: float = LONG_POLL_HOLD_S + 5) -> tuple[int, str]:
        """One long-poll GET (``?token=…&maxev=…``): (status, body). Janus answers at once when
        an event is queued, else holds the request up to 30 s and answers ``keepalive``."""
        query = {"maxev": str(maxev), "rid": str(int(time.time() * 1000))}
        if self.token is not None:
            query["token"] = self.token
        return http_json("GET", f"{self.url}?{urllib.parse.urlencode(query)}", timeout=timeout)

    def poll(self, timeout: float = LONG_POLL_HOLD_S + 5) -> list[dict]:
        """One long-poll GET; the events it returned (a list, keepalives left out)."""
        status, text = self.poll_raw(maxev=10, timeout=timeout)
        if status != 200:
            raise JanusError(status, f"long poll refused with HTTP {status}: {text[:200]!r}", text)
        answer = json.loads(text)
        events = answer if isinstance(answer, list) else [answer]
        return [e for e in events if e.get("janus") != "keepalive"]

    def wait_event(self, predicate: Callable[[dict], bool], timeout: float = 10.0) -> dict:
        """Long-poll until an event matching ``predicate`` arrives (bounded by ``timeout``).

        Events that do not match are kept and offered to later calls."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._pending):
                if predicate(event):
                    return self._pending.pop(i)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching event within {timeout} s; seen: {self._pending!r}")
            try:
                self._pending.extend(self.poll(timeout=remaining))
            except (TimeoutError, urllib.error.URLError) as error:
                if isinstance(error, urllib.error.URLError) and not isinstance(error.reason, TimeoutError):
                    raise
                raise TimeoutError(f"no matching event within {timeout} s; seen: {self._pending!r}") from None

    def wait_plugin_event(self, handle_id: int, timeout: float = 10.0) -> dict:
        """The next ``event`` from ``handle_id`` (its ``plugindata.data`` holds the plugin's answer)."""
        return self.wait_event(lambda e: e.get("janus") == "event" and e.get("sender") == handle_id, timeout)
