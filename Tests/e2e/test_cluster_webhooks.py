"""A webhook another node committed to the shared PostgreSQL outbox reaches the leader's endpoint.

With ``store.kind = "postgres"`` every daemon's call hub writes its webhook messages to the shared
store, and one dispatcher, the leading daemon's, sends them (ADR 0012, docs/webhooks.md "Several
daemons"). Besides the notice on the bus, the leader reads the store's pending deliveries every
``store.postgres_lease_ms`` (``WebhookDispatcher.refreshFromStore``), so a message whose notice
was lost is still sent.

One daemon leads a private PostgreSQL database (lease 1000 ms) with one endpoint on the test's
receiver. The test then does what another node's commit does, and nothing more: it inserts one
``call.ended`` message and its pending delivery into ``webhook_message`` and ``webhook_delivery``
with ``psql``, sending no notice. The receiver must get that message exactly once, with its id
as ``webhook-id``, the inserted body, and a signature that verifies (``standardwebhooks``, in
``webhook_receiver``); the row must then read ``delivered`` after one attempt, and no second
attempt may come within a further lease and a margin.

Nothing sleeps to wait: every wait polls with a deadline. Only processes started here are ended,
by PID.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from pgserver import PostgresServer, postgres  # noqa: F401 - fixture
from webhook_harness import (  # noqa: F401 - fixtures
    assert_nothing_more, config, daemons, new_secret, now_ms, receiver, wait_until,
)

LEASE_MS = 1000
#: Bound on each positive wait: the read comes within a lease, an attempt within milliseconds.
DELIVERY_WAIT_S = 10.0
#: Beyond one more lease, how long a second attempt of a delivered message is looked for.
MARGIN_S = 2.0




def delivery_row(pg: PostgresServer, database: str, message_id: str) -> tuple[str, ...] | None:
    """``(status, attempts, last_status)`` of the message's delivery to ``main``, or None."""
    out = pg.psql(f"SELECT status, attempts, last_status FROM webhook_delivery "
                  f"WHERE message_id = '{message_id}' AND endpoint = 'main'", database=database)
    return tuple(out.split("|")) if out else None


def test_leader_delivers_a_message_another_node_committed_to_postgresql(postgres, daemons, receiver) -> None:
    database = "cluster_webhooks"
    url = postgres.create_database(database)
    secret = new_secret()
    daemon = daemons.start(config(receiver, {"main": secret}),
                           STORE_KIND="postgres", STORE_POSTGRES_URL=url, STORE_POSTGRES_LEASE_MS=LEASE_MS)
    wait_until(lambda: daemon.admin("GET", "/readyz")[0] == 200, DELIVERY_WAIT_S, "the daemon ready on PostgreSQL")
    assert daemon.endpoints()["main"]["pending"] == 0

    # What another node's call hub commits for a call it ran: a message and one delivery per endpoint.
    message_id = f"msg_{uuid.uuid4()}"
    created_ms = now_ms()
    data = {
        "call": {"cid": "ringing:elsewhere", "created_at": created_ms - 5000, "created_by": "alice", "id": "elsewhere",
                 "session": 1, "type": "ringing"},
        "call_cid": "ringing:elsewhere", "reason": "ended_by_user", "seq": 1,
    }
    at = f"to_timestamp({created_ms} / 1000.0)"
    assert not [a for a in receiver.snapshot() if a.webhook_id == message_id]
    before = len(receiver.snapshot())
    postgres.psql(
        "BEGIN;\n"
        f"INSERT INTO webhook_message (id, type, created_at, lane, seq, data) VALUES "
        f"('{message_id}', 'call.ended', {at}, 'ringing:elsewhere', 1, '{json.dumps(data)}');\n"
        "INSERT INTO webhook_delivery (message_id, endpoint, type, lane, seq, created_at, status, attempts, next_attempt_at,"
        " last_attempt_at, last_status, last_error) VALUES "
        f"('{message_id}', 'main', 'call.ended', 'ringing:elsewhere', 1, {at}, 'pending', 0, NULL, NULL, NULL, NULL);\n"
        "COMMIT;", database=database)
    inserted = time.monotonic()
    assert delivery_row(postgres, database, message_id) == ("pending", "0", "")

    # The leader finds it at its next read of the store and sends it, signed with the endpoint's secret.
    got = receiver.wait_for(lambda r: [a for a in r.snapshot() if a.webhook_id == message_id], DELIVERY_WAIT_S,
                            f"{message_id} sent by the leader")
    took = got[0].at_mono - inserted
    assert len(got) == 1, got
    attempt = got[0]
    assert attempt.endpoint == "main" and attempt.succeeded, attempt
    assert attempt.type == "call.ended" and attempt.data == data, attempt.json
    assert attempt.json == {"created_at": created_ms, "data": data, "type": "call.ended"}, attempt.body
    assert attempt.verified == {"secret0": True}, attempt.verified
    assert receiver.failures == []

    # ...and records the outcome in the shared store.
    wait_until(lambda: delivery_row(postgres, database, message_id) == ("delivered", "1", "204"), DELIVERY_WAIT_S,
               f"{message_id} recorded delivered once")
    assert daemon.endpoints()["main"]["pending"] == 0

    # Delivered once: the reads at the following leases do not send it again.
    assert_nothing_more(receiver, before + 1, LEASE_MS / 1000 + MARGIN_S)
    assert [a.webhook_id for a in receiver.snapshot()[before:]] == [message_id]
    assert delivery_row(postgres, database, message_id) == ("delivered", "1", "204")
    assert receiver.failures == []
    print(f"sent {took:.2f} s after the insert (lease {LEASE_MS} ms)")
