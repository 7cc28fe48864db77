"""What a private test Janus is made of: its modules, ports and config files.

The pieces ``janus_harness.JanusInstance`` builds an instance from: the ``janus``
executable (``$TEST_JANUS_BIN`` or ``PATH``) and its version; the VideoRoom plugin
and the HTTP transport found with ``dpkg -L janus`` (the only modules an instance
loads, through symlinks in private folders); TCP ports the kernel reports free for
the client and admin APIs; a UDP block for ``media.rtp_port_range`` that no other
instance of this process uses; and ``.jcfg`` files in Janus's libconfig syntax.

Every name here is also importable from ``janus_harness``.

Only the standard library is used (Python 3.11).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

VIDEOROOM = "janus.plugin.videoroom"
HTTP_TRANSPORT = "janus.transport.http"

#: The modules every instance loads: (folder kind, library file name).
MODULES = (("plugins", "libjanus_videoroom.so"), ("transports", "libjanus_http.so"))


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
