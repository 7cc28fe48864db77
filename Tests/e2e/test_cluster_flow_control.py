"""Flow control across the bus (ADR 0012): a relaying daemon counts a socket's messages against
the socket's inbound limit (``transport.inbound_bytes``) until the leader's hubs have handled
them, not merely until the bus took them. So a client that sends faster than the leader works
is paused at its own socket (TCP pushes back), and the leader's queue does not grow without
bound.

A leader and a relaying daemon (``two_nodes``), both with ``transport.inbound_bytes`` 4,096 (about
40 small frames) and a 10 s lease, so the relaying daemon does not take the lead while the leader
is stopped:

- A call-protocol client on the relaying daemon sends 400 ``ping`` frames while the leader is
  stopped (SIGSTOP). The relaying daemon passes some on (its
  ``switchboard_cluster_relayed_total{direction="to_leader"}`` rises) and then stops reading the
  socket: for 2 s it has relayed fewer than 100 (44 here: 4,096 bytes at ~94 each, a frame and
  its bookkeeping). Before, it counted a message handled once the bus took it, and went on
  relaying to a leader that could not take them (past 200 within that time).
- The leader continued (SIGCONT): every ``pong`` arrives, in the order sent, and the relaying
  daemon has relayed them all.

The one bounded observation (the count staying low for 2 s while the leader is stopped) is what
shows the pause; every other wait polls with a deadline. The leader is continued in a ``finally``.
Only processes started here are signalled, by PID.
"""

from __future__ import annotations

import json
import os
import signal
import time

from call_client import CallClient
from two_nodes import two_nodes  # noqa: F401 - fixture
from webhook_harness import wait_until

PINGS = 400
RELAYED = ("switchboard_cluster_relayed_total", 'direction="to_leader"')


def test_a_client_that_outpaces_a_stopped_leader_is_paused_at_its_relaying_daemons_socket(two_nodes) -> None:  # noqa: F811
    pair = two_nodes("flow", transport_inbound_bytes=4096, store_postgres_lease_ms=10000)
    client = CallClient(pair.relay.port, "alice")
    # The relaying daemon learned from the leader's first answer (connection.ok) that it reports
    # handled messages; a ping answered shows the path works.
    assert client.request("ping")["type"] == "pong"
    before = pair.relay.metric(*RELAYED)

    os.kill(pair.leader.daemon.pid, signal.SIGSTOP)
    try:
        for i in range(PINGS):
            client.ws.send(json.dumps({"id": f"p-{i}", "type": "ping"}))
        wait_until(lambda: pair.relay.metric(*RELAYED) - before >= 10, 10.0, "the relaying daemon passing pings on")
        # The pause: for 2 s the relaying daemon passes on no more than the socket's limit lets it.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            relayed = pair.relay.metric(*RELAYED) - before
            assert relayed < 100, f"{relayed:.0f} of {PINGS} pings relayed to a stopped leader: the socket was not paused{pair.logs()}"
        assert client.answered() == [], "nothing answered while the leader is stopped"
    finally:
        os.kill(pair.leader.daemon.pid, signal.SIGCONT)

    sent = [f"p-{i}" for i in range(PINGS)]
    wait_until(lambda: len(client.answered()) == PINGS, 30.0, f"all {PINGS} pongs (have {len(client.answered())})")
    assert client.answered() == sent, "every pong, in the order sent"
    assert pair.relay.metric(*RELAYED) - before >= PINGS
    assert not client.closed
    client.close()
