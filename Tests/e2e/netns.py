"""A throw-away network namespace for media tests with Janus (root only, stdlib only).

Janus gathers no ICE candidates on loopback, so WebRTC media through it needs a
non-loopback address. This module makes a namespace that has one without reaching
anything: ``lo`` up, and a veth pair whose *both* ends stay inside the namespace,
one end holding a private /30 address (no IPv6 link-local addresses either). Nothing
in the namespace is connected to the host's networks, so traffic never leaves it;
packets between two sockets on the veth address go through the namespace's ``lo``.

Creating (``Namespace.create()``)
    ``ip netns add NAME`` with a unique name (``sbmedia-PID-RANDOM``), ``lo`` up,
    ``ip link add sbveth0 type veth peer name sbveth1`` inside it, and a /30 from
    10.0.0.0/8 (else 172.16.0.0/12, 192.168.0.0/16, 198.51.100.0/24, 203.0.113.0/24)
    that overlaps no route or address of the host (``ip -j -4 route show table all``,
    ``ip -j -4 addr``), picked at random. The /30 is not strictly needed for isolation
    (the namespace has no route out), but it keeps the address from ever shadowing a
    real network if someone reads the config later.

Running code inside
    ``ns.run(argv)`` / ``ns.popen(argv)`` run a command through ``ip netns exec NAME``,
    which execs the command in place, so ``Popen(...).pid`` is the command's own PID
    (``JanusInstance(command_prefix=ns.prefix())`` keeps signalling by PID).

    ``ns.call("module:function", kwargs, timeout=...)`` runs a Python function inside:
    a child ``python netns.py _call module:function RESULT_FILE`` started with
    ``ip netns exec`` (so the whole child process, every thread it makes and every
    process it starts are in the namespace), kwargs as JSON on its stdin, and the
    function's JSON-able return value (or its exception and traceback) written to a
    result file. The child's ``TMPDIR`` is a folder removed when the call returns. ``module`` is imported from this folder (``Tests/e2e``). An
    ``AssertionError`` (or pytest's ``Failed``) inside is raised again as
    ``AssertionError`` (the test fails), anything else as ``NamespaceCallError``. The child's stdout and stderr are the
    caller's, so ``pytest -s`` shows its progress and pytest captures it otherwise.

    Why a child process and not ``setns(2)`` on a thread: setns switches only the
    calling thread, so threads made earlier (asyncio's default executor, pytest's own)
    stay outside, ``/sys`` is not remounted, and a test that forgets which thread it is
    on talks to the host's loopback. A child started by ``ip netns exec`` has no such
    mixed state, and killing it cannot leave the test process half inside.

Cleaning up (``with`` block, ``ns.close()``)
    Every process still in the namespace (``ip netns pids NAME``: only processes this
    test started, since the name is unique) is sent SIGKILL by PID, the namespace is
    removed with ``ip netns del NAME``, and both are bounded in time (polling, no fixed
    sleeps). ``ns.call`` kills its child by PID when it overruns ``timeout``.

From Python::

    with Namespace.create() as ns:          # e.g. ns.name == "sbmedia-4242-1a2b", ns.address == "10.87.3.5"
        ns.run(["ip", "-br", "addr"], check=True)
        result = ns.call("test_janus_media:run_scenario", {"address": ns.address}, timeout=120)

From a shell, to run a whole pytest session inside a namespace::

    python3 Tests/e2e/netns.py create sbmedia        # prints the address it chose
    ip netns exec sbmedia .venv/bin/python -m pytest Tests/e2e/test_media.py
    python3 Tests/e2e/netns.py delete sbmedia        # kills what is left inside, then removes it
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

VETH = "sbveth0"
VETH_PEER = "sbveth1"
NAME_PREFIX = "sbmedia"
HERE = Path(__file__).resolve().parent

#: Where a namespace's /30 is taken from, in order of preference.
ADDRESS_POOLS = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "198.51.100.0/24", "203.0.113.0/24")
)
IP_TIMEOUT_S = 10.0
KILL_TIMEOUT_S = 10.0


class NamespaceCallError(Exception):
    """An exception (other than AssertionError) raised by a function run with ``Namespace.call``."""


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def unique_name(prefix: str = NAME_PREFIX) -> str:
    """A namespace name no other test run uses: prefix, our PID and random hex."""
    return f"{prefix}-{os.getpid()}-{secrets.token_hex(2)}"


def host_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the host (the caller's namespace) has a route to or an address in."""
    networks: list[ipaddress.IPv4Network] = []
    try:
        routes = json.loads(_ip("-j", "-4", "route", "show", "table", "all") or "[]")
    except (RuntimeError, ValueError):
        routes = []
    for route in routes:
        dst = route.get("dst")
        if dst and dst != "default":
            try:
                networks.append(ipaddress.ip_network(dst, strict=False))
            except ValueError:
                pass
    try:
        links = json.loads(_ip("-j", "-4", "addr") or "[]")
    except (RuntimeError, ValueError):
        links = []
    for link in links:
        for info in link.get("addr_info", []):
            try:
                networks.append(ipaddress.ip_network(f"{info['local']}/{info.get('prefixlen', 32)}", strict=False))
            except (KeyError, ValueError):
                pass
    return [n for n in networks if n.version == 4]


def local_addresses() -> list[str]:
    """The IPv4 addresses of the caller's namespace (``ip -j -4 addr``)."""
    links = json.loads(_ip("-j", "-4", "addr") or "[]")
    return [info["local"] for link in links for info in link.get("addr_info", []) if "local" in info]


def pick_cidr(taken: Sequence[ipaddress.IPv4Network] | None = None, rng: random.Random | None = None) -> str:
    """A random ``A.B.C.D/30`` (first host address of the block) overlapping none of ``taken``
    (default: ``host_networks()``), from the first of ``ADDRESS_POOLS`` that has one."""
    taken = list(host_networks() if taken is None else taken)
    rng = rng or random.SystemRandom()
    for pool in ADDRESS_POOLS:
        blocks = pool.num_addresses // 4
        if any(pool.subnet_of(t) for t in taken if t.version == 4):
            continue
        for _ in range(256):
            block = ipaddress.ip_network(f"{pool.network_address + 4 * rng.randrange(blocks)}/30")
            if not any(block.overlaps(t) for t in taken):
                return f"{block.network_address + 1}/30"
    raise RuntimeError("no private /30 free of the host's routes")


class Namespace:
    """A named network namespace made by ``create`` and removed by ``close`` (or the ``with`` block).

    ``name``: the namespace; ``address``: the veth end's address (no prefix length);
    ``cidr``: the same with its prefix, e.g. ``10.87.3.5/30``.
    """

    def __init__(self, name: str, address: str | None = None, cidr: str | None = None) -> None:
        self.name = name
        self.address = address
        self.cidr = cidr

    @classmethod
    def create(cls, name: str | None = None, cidr: str | None = None) -> "Namespace":
        """Create namespace ``name`` (default ``unique_name()``) with ``lo`` up and a veth pair
        inside it, ``VETH`` holding ``cidr`` (default ``pick_cidr()``, a free private /30).

        ``cidr`` must be a private, non-loopback IPv4 address with a prefix length."""
        cidr = cidr or pick_cidr()
        interface = ipaddress.ip_interface(cidr)
        if interface.version != 4 or not interface.ip.is_private or interface.ip.is_loopback:
            raise ValueError(f"{cidr}: use a private, non-loopback IPv4 address")
        name = name or unique_name()
        _ip("netns", "add", name)
        namespace = cls(name, str(interface.ip), str(interface))
        try:
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "link", "add", VETH, "type", "veth", "peer", "name", VETH_PEER)
            for link in (VETH, VETH_PEER):
                # No IPv6 link-local address: the namespace's only non-loopback address is ours.
                _ip("-n", name, "link", "set", "dev", link, "addrgenmode", "none")
            _ip("-n", name, "addr", "add", str(interface), "dev", VETH)
            _ip("-n", name, "link", "set", VETH, "up")
            _ip("-n", name, "link", "set", VETH_PEER, "up")
        except BaseException:
            namespace.close()
            raise
        return namespace

    # ------------------------------------------------------------------ running things inside

    def prefix(self) -> list[str]:
        """The argv prefix that runs a command inside this namespace (exec'd in place)."""
        return ["ip", "netns", "exec", self.name]

    def run(self, argv: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
        """``subprocess.run`` inside the namespace (``timeout`` defaults to 60 s)."""
        kwargs.setdefault("timeout", 60)
        return subprocess.run([*self.prefix(), *argv], **kwargs)

    def popen(self, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        """``subprocess.Popen`` inside the namespace; ``.pid`` is the command's own PID."""
        return subprocess.Popen([*self.prefix(), *argv], **kwargs)

    def call(
        self,
        target: str,
        kwargs: dict[str, Any] | None = None,
        *,
        timeout: float,
        python: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Any:
        """Run ``module:function(**kwargs)`` in a child Python inside the namespace; return its value.

        ``kwargs`` and the return value must be JSON-able. The child is this interpreter
        (``python`` to choose another) running this file, with this folder first on
        ``sys.path``. Bounded by ``timeout`` seconds: past it the child is killed by PID
        (and so is anything it left in the namespace) and ``TimeoutError`` is raised."""
        with tempfile.TemporaryDirectory(prefix="netns-call-") as scratch:
            result_path = Path(scratch) / "result.json"
            argv = [*self.prefix(), python or sys.executable, str(Path(__file__).resolve()),
                    "_call", target, str(result_path)]
            # The child's temporary files (e.g. Janus config folders) go under ``scratch``, so
            # they are removed even when the child is killed before it could clean up.
            child_env = dict(os.environ if env is None else env)
            child_env["TMPDIR"] = str(Path(scratch) / "tmp")
            (Path(scratch) / "tmp").mkdir()
            child = subprocess.Popen(argv, stdin=subprocess.PIPE, env=child_env, cwd=HERE)
            try:
                child.stdin.write(json.dumps(kwargs or {}).encode())
                child.stdin.close()
                try:
                    child.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    raise TimeoutError(f"{target} did not finish within {timeout} s in namespace {self.name}") from None
            finally:
                if child.poll() is None:
                    os.kill(child.pid, signal.SIGKILL)  # ip netns exec exec'd: this is the Python child
                    child.wait(timeout=KILL_TIMEOUT_S)
                    self.kill_processes()
            try:
                outcome = json.loads(result_path.read_text())
            except (OSError, ValueError):
                raise NamespaceCallError(
                    f"{target} in namespace {self.name} exited with {child.returncode} and no result"
                ) from None
        if outcome.get("ok"):
            return outcome.get("value")
        message = f"{outcome.get('type')}: {outcome.get('message')}\n--- in namespace {self.name} ---\n{outcome.get('traceback')}"
        if outcome.get("type") in ("AssertionError", "Failed"):  # Failed: pytest.fail / pytest.raises
            raise AssertionError(message)
        raise NamespaceCallError(message)

    # ------------------------------------------------------------------ cleaning up

    def pids(self) -> list[int]:
        """PIDs of the processes whose network namespace is this one (``ip netns pids``)."""
        done = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True,
                              timeout=IP_TIMEOUT_S)
        return [int(p) for p in done.stdout.split() if p.isdigit() and int(p) != os.getpid()]

    def kill_processes(self, timeout: float = KILL_TIMEOUT_S) -> list[int]:
        """SIGKILL, by PID, every process left in the namespace, and poll until none is left.

        Only processes this test started can be inside (the namespace's name is unique).
        Returns the PIDs signalled."""
        signalled: list[int] = []
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            left = self.pids()
            if not left:
                return signalled
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes {left} still in namespace {self.name} after {timeout} s")
            for pid in left:
                if pid not in signalled:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    signalled.append(pid)
            time.sleep(delay)  # back-off between polls of `ip netns pids`, not a wait for a condition
            delay = min(delay * 2, 0.1)

    def close(self) -> None:
        """Kill what is left inside (by PID), then remove the namespace (no error when gone)."""
        try:
            self.kill_processes()
        finally:
            delete(self.name)

    def delete(self) -> None:
        """Same as ``close``."""
        self.close()

    def __enter__(self) -> "Namespace":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def exists(name: str) -> bool:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    return any(line.split()[0] == name for line in done.stdout.splitlines() if line.strip())


def delete(name: str) -> None:
    """Remove namespace ``name`` (its veth pair goes with it); no error when it is gone.

    Processes still inside keep the namespace alive: use ``Namespace(name).close()`` to kill them first."""
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=IP_TIMEOUT_S)


def _call_main(target: str, result_path: str) -> int:
    """The child side of ``Namespace.call``: run ``module:function`` with kwargs from stdin."""
    sys.path.insert(0, str(HERE))
    try:
        kwargs = json.loads(sys.stdin.read() or "{}")
        module_name, _, function_name = target.partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
        outcome = {"ok": True, "value": function(**kwargs)}
        text = json.dumps(outcome)
    except BaseException as error:  # noqa: BLE001 - everything goes back to the caller
        text = json.dumps({"ok": False, "type": type(error).__name__, "message": str(error),
                           "traceback": traceback.format_exc()})
    Path(result_path).write_text(text)
    return 0


def missing_requirements() -> str | None:
    """Why a namespace media test cannot run here (not root, no ``ip``, no ``janus``), or None."""
    if os.geteuid() != 0:
        return "needs root: the test creates a network namespace (ip netns add)"
    for tool in ("ip", "janus"):
        if not (shutil.which(tool) or (tool == "janus" and os.environ.get("TEST_JANUS_BIN"))):
            return f"{tool} not found on PATH"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Make or remove a media-test network namespace.")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create", help="create NAME with lo up and a veth end holding CIDR")
    create.add_argument("name", nargs="?", help="default: a unique sbmedia-… name")
    create.add_argument("cidr", nargs="?", help="default: a free private /30")
    remove = sub.add_parser("delete", help="kill what is left in NAME, then remove it")
    remove.add_argument("name")
    call = sub.add_parser("_call", help=argparse.SUPPRESS)
    call.add_argument("target")
    call.add_argument("result_path")
    args = parser.parse_args(argv)
    if args.command == "create":
        ns = Namespace.create(args.name, args.cidr)
        print(f"namespace {ns.name}: lo up, {VETH} {ns.cidr}; run commands with: ip netns exec {ns.name} ...")
    elif args.command == "delete":
        Namespace(args.name).close()
    else:
        return _call_main(args.target, args.result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
