"""Media end to end with the two peers on different daemons of one service: a leader and a
relaying standby on one PostgreSQL database (``store.postgres_standby`` relay, ADR 0012;
``two_nodes``), each test run in both modes of ``store.postgres_calls``:

- ``leader``: the relaying daemon serves no call itself: it relays every client socket and HTTP
  request to the leader over the database, so these are the single-daemon scenarios run again,
  unchanged, with one peer's traffic going through that relay;
- ``spread``: the relaying daemon keeps its call-protocol sockets and runs the calls its clients
  create; the call is alice's, on the relaying daemon, and bob's requests on the leader are
  forwarded to it (PeerJS and HTTP are still relayed).

- aiortc, call protocol (``test_webrtc_call.scenario``): alice connects ``/v1/connect`` on the
  relaying daemon, bob on the leader; they join one call (bob's join lists both, alice gets
  ``call.participant_joined``), signal offer, answer and candidates with ``signal.send`` (each
  stamped with the sender's session and user, payload unchanged, ``seq`` increasing), open an
  RTCDataChannel over loopback and chat one message each way; bob leaves and alice is told.
- aiortc, PeerJS (``test_webrtc_datachannel.offer_answer_chat``): peer A fetches its id
  (``GET /peerjs/id``) and opens its socket on the relaying daemon, peer B on the leader; A's
  OFFER and CANDIDATEs and B's ANSWER and CANDIDATEs cross the two daemons as envelopes ``type,
  src, dst, payload`` with the sender's id as ``src`` and the payload unchanged; the DataChannel
  opens and they chat.
- Headless Chromium, the demo app (``test_browser_calls.ring_accept_video_and_hang_up``): both
  daemons run as ``serve --dev`` does; alice's page (``/demo/``, ``/sdk/``, ``POST /dev/token``
  and her socket) is on the relaying daemon, bob's on the leader. Alice rings bob; bob's incoming
  screen names alice; he accepts; both pages show two tiles and decode the other's video
  (``getStats`` framesDecoded, frame callbacks); alice ends the call and both are back home.

Each test also shows that the traffic did cross: the relaying daemon's
``switchboard_cluster_relayed_total{direction="to_leader"}`` and the leader's
``{direction="from_leader"}`` grew (not for the call protocol in spread mode, which relays
nothing), in spread mode the leader's ``switchboard_call_requests_forwarded_total{direction="out"}``
and the relaying daemon's ``{direction="in"}`` grew (the call-protocol and browser tests), no
relayed batch failed, the relaying daemon never printed the leader's ready line, and the leader
still leads generation 1 at the end.

Nothing sleeps to wait: every wait polls with a deadline. Only processes started here (the
daemons, PostgreSQL, Chromium) are ended, by PID.
"""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from typing import Iterator

import pytest

import test_webrtc_call
import test_webrtc_datachannel
from browser_harness import browsers  # noqa: F401 - fixture
from test_browser_calls import ring_accept_video_and_hang_up
from two_nodes import TwoNodes, two_nodes  # noqa: F401 - fixture

RELAYED = "switchboard_cluster_relayed_total"
FAILURES = "switchboard_cluster_relay_failures_total"
FORWARDED = "switchboard_call_requests_forwarded_total"
#: ``store.postgres_calls``: the leader runs every call, or each daemon runs its clients' calls.
MODES = ["leader", "spread"]


@contextmanager
def crossing(pair: TwoNodes, relayed: bool = True, forwarded: bool = False) -> Iterator[None]:
    """Around a scenario: afterwards, traffic was relayed both ways (``relayed``) and, with
    calls on every daemon, call requests were forwarded from the leader's client to the call
    the relaying daemon runs (``forwarded``); no relayed batch failed, and the leader still
    leads (generation 1) with the relaying daemon standing by."""
    sent = pair.relay.metric(RELAYED, 'direction="to_leader"')
    answered = pair.leader.metric(RELAYED, 'direction="from_leader"')
    out, into = pair.leader.metric(FORWARDED, 'direction="out"'), pair.relay.metric(FORWARDED, 'direction="in"')
    yield
    if relayed:
        assert pair.relay.metric(RELAYED, 'direction="to_leader"') > sent, f"nothing relayed to the leader{pair.logs()}"
        assert pair.leader.metric(RELAYED, 'direction="from_leader"') > answered, f"nothing sent back{pair.logs()}"
    if forwarded:
        assert pair.leader.metric(FORWARDED, 'direction="out"') > out, f"no request forwarded by the leader{pair.logs()}"
        assert pair.relay.metric(FORWARDED, 'direction="in"') > into, f"no request run for another daemon{pair.logs()}"
    assert pair.relay.metric(FAILURES) == 0 and pair.leader.metric(FAILURES) == 0, pair.logs()
    view = pair.leader.daemon.admin_ok("GET", "/v1/nodes")
    roles = {n["id"]: n["role"] for n in view["nodes"]}
    assert view["generation"] == 1 and roles[view["leader"]] == "leader", view
    assert sorted(roles.values()) == ["leader", "standby"], view
    assert "switchboard ready" not in pair.relay.output(), pair.logs()


@pytest.mark.usefixtures("loopback_ice")
@pytest.mark.parametrize("calls", MODES)
def test_call_protocol_peers_on_the_relay_and_the_leader_open_a_datachannel(two_nodes, calls: str) -> None:  # noqa: F811
    pair = two_nodes(f"callprotocol_{calls}", store_postgres_calls=calls)
    # Spread: alice's call runs on the relaying daemon, where her socket is; bob's requests on
    # the leader are forwarded to it.
    with crossing(pair, relayed=calls == "leader", forwarded=calls == "spread"):
        scenario = test_webrtc_call.scenario(pair.relay, pair.leader)
        asyncio.run(asyncio.wait_for(scenario, test_webrtc_call.TEST_TIMEOUT_S))


@pytest.mark.usefixtures("loopback_ice")
@pytest.mark.parametrize("calls", MODES)
def test_peerjs_peers_on_the_relay_and_the_leader_open_a_datachannel(two_nodes, calls: str) -> None:  # noqa: F811
    pair = two_nodes(f"peerjs_{calls}", store_postgres_calls=calls)
    with crossing(pair):
        test_webrtc_datachannel.run_bounded(lambda: test_webrtc_datachannel.offer_answer_chat(pair.relay, pair.leader))


@pytest.mark.parametrize("calls", MODES)
def test_browser_ring_from_the_relay_to_the_leader_video_and_hang_up(two_nodes, browsers, calls: str) -> None:  # noqa: F811
    pair = two_nodes(f"browsers_{calls}", demo=True, store_postgres_calls=calls)
    with crossing(pair, forwarded=calls == "spread"):
        ring_accept_video_and_hang_up(browsers, pair.relay.http_base, pair.leader.http_base)
