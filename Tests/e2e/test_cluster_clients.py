"""The Swift client library through a failover: two switchboard-phone processes (SwitchboardKit)
in a call through HAProxy in front of three daemons on one PostgreSQL database
(``cluster_harness``). The leader is SIGKILLed mid-call: both phones show ``reconnecting…``,
reconnect through the balancer to the daemon that took over, are back in the same call, and the
caller's hang-up (timed from the start of the call) ends it for both, each exiting 0.
"""

from __future__ import annotations

import time

from cluster_harness import TAKEOVER_S, cluster_of, postgres  # noqa: F401 - fixtures
from test_phone import Phone, _end_phones  # noqa: F401 - autouse fixture
from webhook_harness import daemons, user_token, wait_until  # noqa: F401 - fixture

#: The caller hangs up this long after the call started: after the takeover and the resume.
HANGUP_AFTER_S = 15


def lines_with(phone: Phone, text: str) -> list[int]:
    with phone.changed:
        return [i for i, line in enumerate(phone.lines) if text in line]


def test_two_phones_ride_through_the_leaders_death_and_hang_up_on_the_new_leader(cluster_of) -> None:
    cluster = cluster_of("phones")
    name = cluster.leader()
    leader = cluster.nodes[name]
    url = f"ws://127.0.0.1:{cluster.lb.port}/v1/connect"
    bob = Phone("answer", "--once", "--url", url, "--token", user_token("bob"))
    bob.wait_for("waiting for calls as bob")
    alice = Phone("call", "bob", "--id", "failover", "--hangup-after", str(HANGUP_AFTER_S), "--url", url, "--token", user_token("alice"))
    for phone in (alice, bob):
        phone.wait_for("in call ringing:failover")
    killed = time.monotonic()
    leader.kill()

    cluster.leader([n for n in cluster.nodes if cluster.nodes[n] is not leader])
    for phone in (alice, bob):
        # Back in the same call after reconnecting: a second "in call" line after "reconnecting…".
        wait_until(lambda: len(lines_with(phone, "in call ringing:failover")) == 2, TAKEOVER_S, f"{phone.lines}")
        assert lines_with(phone, "reconnecting…")[0] < lines_with(phone, "in call ringing:failover")[1], phone.lines
    assert time.monotonic() - killed < HANGUP_AFTER_S, "resumed before the hang-up"

    alice_lines, bob_lines = alice.finish(), bob.finish()
    assert "hanging up" in alice_lines
    assert "call ended (ended_by_user)" in alice_lines and "call ended (ended_by_user)" in bob_lines, (alice_lines, bob_lines)
