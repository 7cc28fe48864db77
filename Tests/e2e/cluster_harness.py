"""Three daemons on one PostgreSQL database behind HAProxy, for test_cluster.py,
test_cluster_faults.py, test_cluster_clients.py and test_cluster_relay.py (ADR 0012,
docs/deploy-cluster.md).

``Cluster`` starts the daemons (``webhook_harness``) on ports chosen free, one database, a state
directory each, with ``store.postgres_lease_ms`` of ``LEASE_MS``, and ``haproxy.HAProxy`` in TCP
mode in front of them checking ``GET /readyz`` on each daemon's admin port, as the deployment
guide does. ``standby`` is ``store.postgres_standby``:

- ``idle`` (the fixture's default): a standby binds no port until it leads, and a frozen leader
  does not answer, so ``leader()`` finds the one node that printed its ready line and waits for
  the balancer to see it alone UP.
- ``relay``: every node binds its ports at once; a standby relays its clients and its admin
  requests (but ``/healthz``, ``/readyz`` and ``/metrics``) to the leader over the database and
  logs "relaying clients to the leading node while standing by", not the ready line. ``leader()``
  finds the leader by its "switchboard ready" line and its ``GET /v1/nodes``, waits for the
  balancer to see every node of ``among`` UP (the others, dead or frozen, DOWN), and gives each
  of those ``Daemon`` objects its ports (``port``, ``admin_port``) if it has not printed them.

With ``spaces`` (``netns_link.LinkedNamespace``, one per daemon) each daemon runs in its own
namespace, binds its namespace's address, reaches PostgreSQL at the host side of its pair and has
its admin API behind a token (a non-loopback admin address requires one), which the balancer's
check sends. ``client()`` and ``peer()`` connect through the balancer, or with ``node`` straight to
that node's client port, at its namespace's address with ``spaces`` (a call-protocol
``CallClient``; a PeerJS ``hostile.RawWebSocket``, its first frame unread).
"""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any, Iterator

import pytest

import haproxy
import pgserver
from haproxy import HAProxy
from hostile import RawWebSocket
from janus_config import free_tcp_ports
from netns_link import LinkedNamespace
from pgserver import PostgresServer
from webhook_harness import CallClient, Daemon, Daemons, wait_until

#: The leader's lease: a standby takes over about this long (plus a third) after the last renewal.
LEASE_MS = 2000
#: A takeover, its start and the balancer's health check, with room for a loaded machine.
TAKEOVER_S = 30.0
NODES = 3
#: The admin token of daemons in namespaces (their admin API is not on loopback).
ADMIN_TOKEN = "cluster-admin-token-0123456789abcdef"


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    """A private PostgreSQL server; fails, never skips, without PostgreSQL or HAProxy."""
    reason = pgserver.missing_requirements() or haproxy.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    with PostgresServer(durable=False) as server:
        yield server


class Cluster:
    """Three daemons on one database and HAProxy in front of them."""

    def __init__(self, daemons: Daemons, url: str, tmp_path: Path, ring_ms: int,
                 spaces: list[LinkedNamespace] | None = None, standby: str = "idle", **env: Any) -> None:
        ports = free_tcp_ports(2 * NODES)
        self.spaces = spaces
        self.standby = standby
        #: Each node's (client, admin) port, known before it binds them.
        self.ports = {f"n{i}": (ports[2 * i], ports[2 * i + 1]) for i in range(NODES)}
        self.nodes: dict[str, Daemon] = {}
        hosts = [space.address for space in spaces] if spaces else ["127.0.0.1"] * NODES
        if spaces:
            env.update(ADMIN_AUTH="token", ADMIN_TOKEN=ADMIN_TOKEN)
        for i in range(NODES):
            placed: dict[str, Any] = {}
            node_url = url
            if spaces:
                placed = {"host": hosts[i], "prefix": spaces[i].prefix(), "ADMIN_HOST": hosts[i]}
                node_url = url.replace("@127.0.0.1:", f"@{spaces[i].host_ip}:")
            self.nodes[f"n{i}"] = daemons.start(
                {}, state_dir=tmp_path / f"n{i}", ports=(ports[2 * i], ports[2 * i + 1]), wait=False,
                STORE_KIND="postgres", STORE_POSTGRES_URL=node_url, STORE_POSTGRES_LEASE_MS=LEASE_MS, STORE_POSTGRES_STANDBY=standby,
                CALL_TYPES_RINGING_INCOMING_TIMEOUT_MS=ring_ms, CALL_TYPES_RINGING_AUTO_CANCEL_TIMEOUT_MS=ring_ms, **placed, **env)
        # The balancer checks each node's /readyz (admin port), as docs/deploy-cluster.md does; a
        # test that turns a generated admin token on checks TCP connects instead.
        generated = env.get("ADMIN_AUTH") == "token" and not spaces
        ready_ports = None if generated else {f"n{i}": ports[2 * i + 1] for i in range(NODES)}
        self.lb = HAProxy({f"n{i}": f"{hosts[i]}:{ports[2 * i]}" for i in range(NODES)}, ready_ports=ready_ports,
                          ready_token=ADMIN_TOKEN if spaces else None)
        self.lb.start()

    def leader(self, among: list[str] | None = None) -> str:
        """The one node (of ``among``) that leads, once it does. With idle standbys the others
        must not serve; with relaying ones every node of ``among`` must be UP for the balancer."""
        names = among or list(self.nodes)
        if self.standby == "relay":
            return self._relaying_leader(names)
        serving = wait_until(lambda: [n for n in names if self.nodes[n].ready], TAKEOVER_S, "a node leading")
        assert len(serving) == 1, (serving, {n: self.nodes[n].output() for n in names})
        # The balancer sends clients to it alone: every other node is down for its check.
        wanted = {n: "UP" if n == serving[0] else "DOWN" for n in self.nodes}
        wait_until(lambda: self.lb.backend_states() == wanted, TAKEOVER_S, f"the balancer seeing {wanted}, not {self.lb.backend_states()}")
        return serving[0]

    def _relaying_leader(self, names: list[str]) -> str:
        leading = wait_until(lambda: [n for n in names if self.leads(n)], TAKEOVER_S, "a node leading")
        assert len(leading) == 1, (leading, {n: self.nodes[n].output() for n in names})
        daemon = self.nodes[leading[0]]
        view = daemon.admin_ok("GET", "/v1/nodes")
        assert roles(daemon).get(daemon.pid) == "leader", view
        wanted = {n: "UP" if n in names else "DOWN" for n in self.nodes}
        try:
            wait_until(lambda: self.lb.backend_states() == wanted, TAKEOVER_S, f"the balancer seeing {wanted}")
        except AssertionError as failure:
            raise AssertionError(f"{failure}: {self.lb.backend_states()}\n" + "\n".join(
                f"--- {n} (/readyz {self._readyz(n)}):\n{self.nodes[n].output()}" for n in self.nodes)) from None
        for n in names:  # they serve: a relaying standby's log names no URL, its ports are the ones given
            if self.nodes[n].port is None:
                self.nodes[n].port, self.nodes[n].admin_port = self.ports[n]
        return leading[0]

    def _readyz(self, name: str) -> str:
        connection = http.client.HTTPConnection(self.nodes[name].host, self.ports[name][1], timeout=5)
        try:
            connection.request("GET", "/readyz", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"} if self.spaces else {})
            response = connection.getresponse()
            return f"{response.status} {response.read().decode(errors='replace')}"
        except OSError as error:
            return repr(error)
        finally:
            connection.close()

    def leads(self, name: str) -> bool:
        """Whether the node runs and printed the leader's ready line (with relaying standbys
        ``Daemon.ready`` is no sign of leading: ``leader()`` gives every serving node its ports)."""
        daemon = self.nodes[name]
        return daemon.process.poll() is None and any("switchboard ready" in line for line in list(daemon.lines))

    def port(self, node: str | None = None) -> int:
        """The balancer's port, or ``node``'s own client port."""
        return self.lb.port if node is None else self.ports[node][0]

    def host(self, node: str | None = None) -> str:
        """The balancer's address, or ``node``'s (its namespace's, with ``spaces``)."""
        return self.lb.host if node is None else self.nodes[node].host

    def client(self, user: str, resume: str | None = None, node: str | None = None) -> CallClient:
        """A call-protocol client through the balancer, or straight to ``node``."""
        return CallClient(self.port(node), user, resume, host=self.host(node))

    def peer(self, peer_id: str, node: str | None = None, token: str | None = None) -> RawWebSocket:
        """A PeerJS socket of ``peer_id`` (token ``t-<id>`` unless given) through the balancer, or
        straight to ``node``; its first frame (``OPEN``, ``ID-TAKEN``…) is left to read."""
        host = self.host(node)
        return RawWebSocket(self.port(node), f"/peerjs?key=peerjs&id={peer_id}&token={token or 't-' + peer_id}",
                            host=host, source="127.0.0.1" if host.startswith("127.") else "0.0.0.0")

    def close(self) -> None:
        self.lb.stop()


@pytest.fixture
def cluster_of(postgres: PostgresServer, daemons: Daemons, tmp_path: Path) -> Iterator[Any]:
    made: list[Cluster] = []

    def make(database: str, ring_ms: int = 60000, spaces: list[LinkedNamespace] | None = None, standby: str = "idle",
             **env: Any) -> Cluster:
        made.append(Cluster(daemons, postgres.create_database(database), tmp_path, ring_ms, spaces, standby, **env))
        return made[-1]

    try:
        yield make
    finally:
        for cluster in made:
            cluster.close()


def ring(client: CallClient, call_id: str) -> dict[str, Any]:
    return client.ok("call.get_or_create", {"type": "ringing", "id": call_id, "members": ["bob"], "ring": True})


def events(daemon: Daemon, call_id: str) -> list[str]:
    """The call's event log, by type, as the serving daemon's admin API shows it."""
    return [e["type"] for e in daemon.admin_ok("GET", f"/v1/calls/ringing/{call_id}")["events"]]


def roles(daemon: Daemon) -> dict[int, str]:
    """``GET /v1/nodes``: each node's role by the PID its description names."""
    view = daemon.admin_ok("GET", "/v1/nodes")
    return {int(n["description"].split(" pid ")[1].split(",")[0]): n["role"] for n in view["nodes"]}


def metrics_text(daemon: Daemon) -> str:
    connection = http.client.HTTPConnection(daemon.host, daemon.admin_port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        return connection.getresponse().read().decode()
    finally:
        connection.close()
