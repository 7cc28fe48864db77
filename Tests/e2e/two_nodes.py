"""Two daemons on one PostgreSQL database acting as one service: a leader and a relaying standby
(``store.postgres_standby`` relay, ADR 0012), for test_cluster_media.py.

The ``two_nodes`` fixture is ``start(database, demo=False, **config)`` → :class:`TwoNodes`. It runs
a private PostgreSQL server (``pgserver.PostgresServer``, failing, never skipping, without it)
and starts daemons with ``webhook_harness.Daemons`` as ``cluster_harness.Cluster`` does
(``STORE_KIND=postgres``, ``STORE_POSTGRES_URL``, ``STORE_POSTGRES_LEASE_MS``,
``STORE_POSTGRES_STANDBY=relay``, a state directory each, client and admin ports chosen free by
``janus_config.free_tcp_ports`` and passed in). The first daemon is started alone and waited for
until it prints the leader's ready line (``ws://…``); the second is started then, and waited
for until it logs "relaying to the leading node" naming the leader's node id (the ``leader`` of
the leader's ``GET /v1/nodes``), has printed no ready line, and its own ``GET /readyz`` answers
200. So which one leads is known, not raced.

Both daemons get the same options:

- by default those of conftest's ``switchboard_calls``: ``auth.api_secret`` is
  ``conftest.CALLS_API_SECRET`` (``conftest.mint_token`` signs with it), through
  ``webhook_harness.base_env`` (admin auth off, a short drain, rate limits out of the way);
- with ``demo=True`` those of ``browser_harness.demo_daemon`` (``serve --dev``): the demo's API
  secret, ``/sdk/`` and ``/demo/`` from this checkout, ``http.demo`` and ``auth.dev_tokens`` on
  (what ``--dev`` sets);
- ``config``: extra keys, dotted names written with ``_`` (``call_types_ringing_incoming_timeout_ms``); they
  override the store keys above too (``store_postgres_lease_ms``).

A :class:`Node` has what the single-daemon tests use of conftest's ``Switchboard`` (``port``,
``http_base``, ``ws_url``). At teardown the daemons are stopped (SIGTERM by PID, exit code 0
required), the relaying one first, then the database server.

Nothing sleeps to wait: every wait polls with a deadline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import pgserver
from browser_harness import DEMO_API_SECRET, DEMO_DIR, SDK_DIR
from janus_config import free_tcp_ports
from pgserver import PostgresServer
from webhook_harness import Daemon, Daemons, wait_until

#: The leader's lease, as in cluster_harness.
LEASE_MS = 2000
#: How long a daemon may take to lead, or to follow the leader.
START_S = 30.0
RELAYING = "relaying to the leading node"


@dataclass
class Node:
    """One daemon of the pair, with conftest ``Switchboard``'s URLs."""

    name: str
    daemon: Daemon

    @property
    def port(self) -> int:
        assert self.daemon.port is not None
        return self.daemon.port

    @property
    def admin_port(self) -> int:
        assert self.daemon.admin_port is not None
        return self.daemon.admin_port

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/peerjs"

    def output(self) -> str:
        return self.daemon.output()

    def metric(self, name: str, labels: str = "") -> float:
        """A sample of its own ``/metrics`` (``labels``: a regex matched inside the braces); 0 when absent."""
        import http.client

        connection = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=10)
        try:
            connection.request("GET", "/metrics")
            text = connection.getresponse().read().decode()
        finally:
            connection.close()
        pattern = "^" + re.escape(name) + (r"\{[^}]*" + labels + r"[^}]*\}" if labels else r"(?:\{[^}]*\})?") + r" ([0-9.e+]+)$"
        return sum(float(m.group(1)) for m in re.finditer(pattern, text, re.M))


@dataclass
class TwoNodes:
    leader: Node
    relay: Node

    def logs(self) -> str:
        """Both daemons' output, for failure messages."""
        return "".join(f"\n--- {n.name} (pid {n.daemon.pid}) ---\n{n.output()}" for n in (self.leader, self.relay))


def demo_config(**config: Any) -> dict[str, Any]:
    """``browser_harness.demo_daemon_env``'s keys and ``serve --dev``'s, for ``Daemons.start``."""
    return {"AUTH_API_SECRET": DEMO_API_SECRET, "HTTP_SDK_DIR": str(SDK_DIR), "HTTP_DEMO_DIR": str(DEMO_DIR),
            "HTTP_DEMO": "true", "AUTH_DEV_TOKENS": "true", "SHUTDOWN_DRAIN_TIMEOUT_MS": "2000", **config}


def follows(daemon: Daemon, leader_id: str) -> bool:
    """Whether ``daemon`` logged that it relays to ``leader_id``."""
    return any(RELAYING in line and f"leader={leader_id}" in line for line in list(daemon.lines))


def _ready(daemon: Daemon) -> bool:
    try:
        return daemon.admin("GET", "/readyz")[0] == 200
    except OSError:
        return False


def start_pair(daemons: Daemons, url: str, tmp_path: Path, demo: bool = False, **config: Any) -> TwoNodes:
    """A leader, then a daemon relaying to it, on the database at ``url`` (see the module's doc)."""
    options = {key.upper(): str(value).lower() if isinstance(value, bool) else value for key, value in config.items()}
    options = demo_config(**options) if demo else options
    store = {"STORE_KIND": "postgres", "STORE_POSTGRES_URL": url, "STORE_POSTGRES_LEASE_MS": LEASE_MS,
             "STORE_POSTGRES_STANDBY": "relay"}
    ports = free_tcp_ports(4)
    started = []
    for i, name in enumerate(("leader", "relay")):
        started.append(daemons.start({}, state_dir=tmp_path / name, ports=(ports[2 * i], ports[2 * i + 1]),
                                     wait=(name == "leader"), **{**store, **options}))
    leader, relay = started
    assert "switchboard ready" in leader.output() and leader.port == ports[0], leader.output()
    leader_id = leader.admin_ok("GET", "/v1/nodes")["leader"]
    assert isinstance(leader_id, str) and leader_id, leader_id

    pair = TwoNodes(Node("leader", leader), Node("relay", relay))
    wait_until(lambda: follows(relay, leader_id) or relay.process.poll() is not None, START_S,
               f"the second daemon relaying to {leader_id}")
    assert relay.process.poll() is None and follows(relay, leader_id), pair.logs()
    assert not relay.ready and "switchboard ready" not in relay.output(), f"the relaying daemon printed the ready line{pair.logs()}"
    relay.port, relay.admin_port = ports[2], ports[3]
    wait_until(lambda: _ready(relay), START_S, "the relaying daemon's /readyz answering 200")
    return pair


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[Callable[..., TwoNodes]]:
    """``start(database, demo=False, **config)`` → a :class:`TwoNodes` on a database of that name."""
    reason = pgserver.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    daemons = Daemons(tmp_path)
    with PostgresServer(durable=False) as server:
        def start(database: str, demo: bool = False, **config: Any) -> TwoNodes:
            return start_pair(daemons, server.create_database(database), tmp_path / database, demo, **config)

        try:
            yield start
        finally:
            daemons.stop_all()
