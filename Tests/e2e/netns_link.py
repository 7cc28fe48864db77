"""A network namespace joined to this host by a veth pair, so that a test can cut a process's
network and restore it (root only, stdlib only; built on ``netns``).

``netns.Namespace`` keeps both veth ends inside (media tests need an address, not a link);
``LinkedNamespace.create(tag)`` moves one end out instead: the host side holds ``host_ip`` and
the inside ``address``, a free private /30 (``netns.pick_cidr``). What runs inside (through
``prefix()``, exec'd in place so PIDs are the commands' own) reaches the host at ``host_ip``;
the host reaches it at ``address``. ``cut()`` takes the host side down, so packets between the
namespace and everything else are dropped (nothing is refused, as when a cable is pulled);
``restore()`` brings it up. ``close()`` kills what is left inside by PID and removes the
namespace, and the pair with it.
"""

from __future__ import annotations

import ipaddress
import os
import shutil

from netns import Namespace, _ip, pick_cidr, unique_name


def missing_requirements() -> str | None:
    """Why namespaces cannot be made here (not root, no ``ip``), or None."""
    if os.geteuid() != 0:
        return "needs root: the test creates network namespaces (ip netns add)"
    if not shutil.which("ip"):
        return "ip not found on PATH (Debian's iproute2; scripts/test installs it)"
    return None


class LinkedNamespace(Namespace):
    def __init__(self, name: str, address: str, cidr: str, host_ip: str, outside: str) -> None:
        super().__init__(name, address, cidr)
        self.host_ip = host_ip
        self.outside = outside
        #: The pair's /30, for a server's access rules.
        self.network = str(ipaddress.ip_interface(f"{host_ip}/30").network)

    @classmethod
    def create(cls, tag: str) -> "LinkedNamespace":  # type: ignore[override]
        interface = ipaddress.ip_interface(pick_cidr())
        host_ip, inside_ip = interface.ip, interface.ip + 1
        name = unique_name(f"sblink{tag}")
        outside, inside = f"sbh{os.getpid() % 100000}{tag}", f"sbi{os.getpid() % 100000}{tag}"
        if len(outside) > 15:
            raise ValueError(f"tag {tag!r} makes interface names longer than 15 characters")
        _ip("netns", "add", name)
        namespace = cls(name, str(inside_ip), f"{inside_ip}/30", str(host_ip), outside)
        try:
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", name)
            _ip("addr", "add", f"{host_ip}/30", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("-n", name, "addr", "add", f"{inside_ip}/30", "dev", inside)
            _ip("-n", name, "link", "set", inside, "up")
        except BaseException:
            namespace.close()
            raise
        return namespace

    def cut(self) -> None:
        _ip("link", "set", self.outside, "down")

    def restore(self) -> None:
        _ip("link", "set", self.outside, "up")

    def close(self) -> None:
        try:
            super().close()
        finally:
            # Gone with the namespace; removed here in case the namespace was never made.
            try:
                _ip("link", "del", self.outside)
            except RuntimeError:
                pass
