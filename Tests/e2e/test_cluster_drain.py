"""``POST /v1/drain`` on a relaying daemon drains that daemon only (docs/protocol.md 6.13,
docs/deploy-cluster.md): an operator taking one machine out of a cluster must not drain the
leader, which runs every call.

A leader and a relaying daemon (``two_nodes``), with a call-protocol client on each:

- ``POST /v1/drain`` to the relaying daemon's admin port answers 202 ``{"draining": true}``
  with the id of its audit entry; the leader's audit log (``GET /v1/audit``, asked through the
  relaying daemon) holds that entry, action ``drain``.
- The relaying daemon's ``/readyz`` answers 503 (a balancer stops sending it clients); the
  leader's still answers 200.
- A new socket to the relaying daemon is closed with 1001 ("server is draining"); its client
  already connected carries on (a ``ping`` answered).
- The leader does not drain: its client carries on, and a new client connects to it.

Every wait polls with a deadline; only processes started here are ended, by PID.
"""

from __future__ import annotations

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from call_client import CallClient, user_token
from two_nodes import two_nodes  # noqa: F401 - fixture
from webhook_harness import wait_until


def test_a_drain_sent_to_a_relaying_daemon_drains_that_daemon_and_not_the_leader(two_nodes) -> None:  # noqa: F811
    pair = two_nodes("drain")
    on_relay = CallClient(pair.relay.port, "alice")
    on_leader = CallClient(pair.leader.port, "bob")

    status, body = pair.relay.daemon.admin("POST", "/v1/drain")
    assert status == 202 and body["draining"] is True and isinstance(body["audit_id"], int), (status, body)
    status, audit = pair.relay.daemon.admin("GET", "/v1/audit")
    assert status == 200, audit
    entry = next((e for e in audit["entries"] if e["id"] == body["audit_id"]), None)
    assert entry is not None and entry["action"] == "drain", audit

    wait_until(lambda: pair.relay.daemon.admin("GET", "/readyz")[0] == 503, 10.0, "the relaying daemon not ready")
    assert pair.leader.daemon.admin("GET", "/readyz")[0] == 200, "the leader is not draining"

    with connect(f"ws://127.0.0.1:{pair.relay.port}/v1/connect", open_timeout=10, proxy=None) as ws:
        try:  # closed as soon as it opened: the send or the read sees it
            ws.send('{"type":"auth","id":"auth","token":"' + user_token("carol") + '"}')
            frame = ws.recv(10)
            raise AssertionError(f"a new socket to the draining daemon was served: {frame}")
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1001, closed
            assert closed.rcvd.reason == "server is draining", closed

    assert on_relay.request("ping")["type"] == "pong", "a socket it already relays carries on"
    assert on_leader.request("ping")["type"] == "pong"
    newcomer = CallClient(pair.leader.port, "dave")
    assert newcomer.request("ping")["type"] == "pong"
    for client in (on_relay, on_leader, newcomer):
        assert not client.closed
        client.close()
