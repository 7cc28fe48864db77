"""Flow control across the bus (ADR 0012): a relaying daemon counts a socket's messages against
the socket's inbound limit (``transport.inbound_bytes``) until the leader's hubs have handled
them, not merely until the bus took them. So a client that sends faster than the leader works
is paused at its own socket (TCP pushes back), and the leader's queue does not grow without
bound.

A leader and a relaying daemon (``two_nodes``), both with ``transport.inbound_bytes`` 4,096 (about
40 small frames) and a lease (``LEASE_MS``, 300 s) far longer than everything the test may wait
for while the leader is stopped, so the relaying daemon cannot take the lead meanwhile however
slow the machine. (With a 10 s lease, the leader's lease could lapse under 7 s after the
SIGSTOP, its last renewal up to a third of a lease before it, while the waits then allowed it to
stay stopped 12 s and more on a loaded machine: the relaying daemon took the lead, closed the
client's socket (1012), and the continued leader, deposed, exited 75.)

- A call-protocol client on the relaying daemon sends 400 ``ping`` frames while the leader is
  stopped (SIGSTOP). The relaying daemon passes some on (its
  ``switchboard_cluster_relayed_total{direction="to_leader"}`` rises) and then stops reading the
  socket: watched for at least ``PAUSE_S`` (2 s) and until the count has not moved for
  ``SETTLED_S`` (1 s), it has relayed fewer than 100 (44 here: 4,096 bytes at ~94 each, a frame
  and its bookkeeping). Before, it counted a message handled once the bus took it, and went on
  relaying to a leader that could not take them (past 200 within that time). Waiting for the
  count to settle, not only for a fixed time, means a relaying daemon that does not pause has
  relayed what it read before the watch ends, however slowly a loaded machine lets it read.
- The leader continued (SIGCONT): every ``pong`` arrives, in the order sent, and the relaying
  daemon has relayed them all.

The bounded observation (the count staying low while the leader is stopped) is what shows the
pause; every other wait polls with a generous deadline, and the wait for the pongs ends at once,
with both daemons' logs, if the client's socket closes. The leader is continued in a
``finally``. Only processes started here are signalled, by PID.
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
#: The leader's lease: a standby takes the lead no sooner than two thirds of it after the SIGSTOP
#: (the last renewal up to a third before), far beyond the waits below.
LEASE_MS = 300_000
#: Positive waits (a first answer, the first pings relayed): generous for a loaded machine.
WAIT_S = 60.0
#: The pause is watched at least this long, and until the count has not moved for ``SETTLED_S``.
PAUSE_S = 2.0
SETTLED_S = 1.0
#: A count still moving after this long (yet under 100) fails the watch: it never settled.
PAUSE_LIMIT_S = 60.0
#: All the pongs after the leader is continued (well under a second unloaded).
PONGS_S = 120.0


def watch_pause(relayed) -> float:
    """Samples ``relayed()`` until at least ``PAUSE_S`` has passed and it has not moved for
    ``SETTLED_S``, asserting each sample under 100; returns the settled count."""
    start = time.monotonic()
    last = relayed()
    changed = time.monotonic()
    while True:
        assert last < 100, f"{last:.0f} of {PINGS} pings relayed to a stopped leader: the socket was not paused"
        now = time.monotonic()
        if now - start >= PAUSE_S and now - changed >= SETTLED_S:
            return last
        assert now - start < PAUSE_LIMIT_S, f"the relayed count never settled in {PAUSE_LIMIT_S:.0f} s (at {last:.0f})"
        time.sleep(0.02)  # the polling interval, as wait_until's: not a wait for an event
        sample = relayed()
        if sample != last:
            last, changed = sample, time.monotonic()


def test_a_client_that_outpaces_a_stopped_leader_is_paused_at_its_relaying_daemons_socket(two_nodes) -> None:  # noqa: F811
    pair = two_nodes("flow", transport_inbound_bytes=4096, store_postgres_lease_ms=LEASE_MS)
    client = CallClient(pair.relay.port, "alice")
    # The relaying daemon learned from the leader's first answer (connection.ok) that it reports
    # handled messages; a ping answered shows the path works.
    assert client.request("ping", timeout=WAIT_S)["type"] == "pong"
    before = pair.relay.metric(*RELAYED)

    os.kill(pair.leader.daemon.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        for i in range(PINGS):
            client.ws.send(json.dumps({"id": f"p-{i}", "type": "ping"}))
        wait_until(lambda: pair.relay.metric(*RELAYED) - before >= 10, WAIT_S, "the relaying daemon passing pings on")
        # The pause: the relaying daemon passes on no more than the socket's limit lets it.
        try:
            watch_pause(lambda: pair.relay.metric(*RELAYED) - before)
        except AssertionError as failure:
            raise AssertionError(f"{failure}{pair.logs()}") from None
        assert client.answered() == [], "nothing answered while the leader is stopped"
    finally:
        os.kill(pair.leader.daemon.pid, signal.SIGCONT)
    stopped_for = time.monotonic() - stopped
    assert stopped_for < LEASE_MS / 1000 * 2 / 3, f"the leader was stopped {stopped_for:.0f} s: its lease may have lapsed"

    sent = [f"p-{i}" for i in range(PINGS)]
    try:
        wait_until(lambda: len(client.answered()) == PINGS or client.closed, PONGS_S, f"all {PINGS} pongs")
    except AssertionError as failure:
        raise AssertionError(f"{failure}: have {len(client.answered())}{pair.logs()}") from None
    assert not client.closed, f"the client's socket closed with {len(client.answered())} of {PINGS} pongs{pair.logs()}"
    assert client.answered() == sent, "every pong, in the order sent"
    assert pair.relay.metric(*RELAYED) - before >= PINGS
    client.close()
