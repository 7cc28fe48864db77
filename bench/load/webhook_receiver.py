#!/usr/bin/env python3
"""A fast Standard Webhooks receiver for `scripts/bench calls --webhooks off,on` (issue #16).

Subcommands:
  serve    Listen on 127.0.0.1 (port 0 unless --port), print `listening port=N`, answer every
           request with 204 at once, keep each request's arrival time (wall clock, ns), body and
           webhook-* headers; verify signatures inline with the `standardwebhooks` package (all,
           every Nth, or none: --verify). On SIGTERM or SIGINT: parse the bodies, write --out
           (one JSON object) and exit.
  drain    Poll the daemon's GET /metrics (admin port, bearer token from --token-env) until no
           webhook delivery is pending nor in flight (bounded by --timeout); print one JSON
           object: how long that took, what was left, attempts by result, deliveries by
           outcome, the daemon's own delivery histogram.
  watch    Every 0.5 s until SIGTERM (or 10 s without an answer), read the daemon's webhook queue depth and attempts in
           flight from GET /metrics; then write them to --out (JSON).
  analyze  Join the receiver's file, the load's calls file (calls_load.py --calls-out) and the
           drain object into the load's JSON line (--load-line): throughput, delivery delay
           (arrival − created_at), received against expected, signature checks, receiver CPU.
           Prints the merged JSON line.

The server is one asyncio event loop (uvloop when installed) with a hand-written HTTP/1.1
parser: keep-alive, Content-Length bodies (what async-http-client sends), no chunked bodies.
The arrival time is taken when the request's last byte has been read, before the answer is
written. Nothing but the answer and one append happens per request unless signatures are
verified inline; the JSON bodies are parsed after the run.

Expected messages (analyze): for every call of the load whose first join was scheduled in the
measurement window and whose joins and leaves were all answered (calls_load.py --calls-out):
call.created, call.session_started, one call.participant_joined per join, one
call.participant_left per leave, and call.session_ended when as many left as joined. Calls with a
failed or unanswered request are counted apart (their events cannot be predicted). Independently,
every call's `seq` must run 1, 2, … without a gap (every endpoint takes every event here).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import math
import os
import signal
import statistics
import sys
import time
import urllib.request

RESPONSE = b"HTTP/1.1 204 No Content\r\nserver: bench-webhook-receiver\r\n\r\n"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
HEADERS_WANTED = (b"webhook-id", b"webhook-timestamp", b"webhook-signature")


# ---------------------------------------------------------------- serve

class Receiver:
    """Every request received, and the signature checks made so far."""

    def __init__(self, secret: str | None, verify_every: int) -> None:
        self.arrivals: list[int] = []
        self.bodies: list[bytes] = []
        self.headers: list[tuple] = []
        self.connections = 0
        self.bad_requests = 0
        self.verify_every = verify_every
        self.verified = 0
        self.bad_signatures: list[str] = []
        self.verify_ns = 0
        self.verifier = None
        self.verifier_name = "none"
        self.cpu: list[tuple[int, int]] = []
        if secret and verify_every > 0:
            from standardwebhooks import Webhook  # pip install standardwebhooks
            self.verifier = Webhook(secret)
            self.verifier_name = "standardwebhooks"

    def take(self, arrival_ns: int, body: bytes, headers: dict) -> None:
        """One complete request (already answered)."""
        index = len(self.arrivals)
        self.arrivals.append(arrival_ns)
        self.bodies.append(body)
        self.headers.append((headers.get(b"webhook-id"), headers.get(b"webhook-timestamp"),
                             headers.get(b"webhook-signature")))
        if self.verifier is not None and index % self.verify_every == 0:
            start = time.perf_counter_ns()
            try:
                self.verifier.verify(body, {k.decode(): v.decode() for k, v in headers.items()}, json_parse=False)
            except Exception as error:  # WebhookVerificationError, or a malformed header
                self.bad_signatures.append(f"{headers.get(b'webhook-id')!r}: {error}")
            self.verify_ns += time.perf_counter_ns() - start
            self.verified += 1


class HookProtocol(asyncio.Protocol):
    """One keep-alive connection: requests parsed from a byte buffer, 204 written for each."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.buffer = b""
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.receiver.connections += 1

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        buffer = self.buffer + data if self.buffer else data
        start = 0
        while True:
            head_end = buffer.find(b"\r\n\r\n", start)
            if head_end < 0:
                break
            length = 0
            headers = {}
            lines = buffer[start:head_end].split(b"\r\n")
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name in HEADERS_WANTED:
                    headers[name] = value.strip()
                elif name == b"transfer-encoding":
                    self.receiver.bad_requests += 1
                    self.transport.write(BAD_REQUEST)
                    self.transport.close()
                    return
            body_end = head_end + 4 + length
            if len(buffer) < body_end:
                break
            self.transport.write(RESPONSE)
            if lines[0].startswith(b"POST "):
                self.receiver.take(now, buffer[head_end + 4:body_end], headers)
            start = body_end
        self.buffer = buffer[start:]


async def serve(opts) -> Receiver:
    """Listen, print the port, sample own CPU every 0.5 s, return at SIGTERM/SIGINT."""
    secret = os.environ.get(opts.secret_env) if opts.secret_env else None
    receiver = Receiver(secret, {"all": 1, "none": 0}[opts.verify] if opts.verify in ("all", "none") else int(opts.verify))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: HookProtocol(receiver), "127.0.0.1", opts.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"listening port={port} verify={opts.verify} verifier={receiver.verifier_name}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    while not stop.is_set():
        receiver.cpu.append((time.time_ns(), time.process_time_ns()))
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except asyncio.TimeoutError:
            pass
    receiver.cpu.append((time.time_ns(), time.process_time_ns()))
    server.close()
    return receiver


def write_records(receiver: Receiver, path: str) -> None:
    """Parse every body and write one JSON object: per request [arrival_ns, created_at ms,
    type, call_cid, seq, webhook-id, webhook-timestamp], and the receiver's own figures."""
    records, unparsed = [], 0
    for arrival, body, (wid, wts, _sig) in zip(receiver.arrivals, receiver.bodies, receiver.headers, strict=True):
        try:
            message = json.loads(body)
            data = message.get("data") or {}
            records.append([arrival, message.get("created_at"), message.get("type"), data.get("call_cid"),
                            data.get("seq"), wid.decode() if wid else None, int(wts) if wts else None])
        except (ValueError, AttributeError):
            unparsed += 1
    out = {"records": records, "unparsed": unparsed, "connections": receiver.connections,
           "bad_requests": receiver.bad_requests, "verifier": receiver.verifier_name,
           "verify_every": receiver.verify_every, "verified": receiver.verified,
           "bad_signatures": len(receiver.bad_signatures), "bad_signature_examples": receiver.bad_signatures[:5],
           "verify_us_mean": round(receiver.verify_ns / receiver.verified / 1000, 1) if receiver.verified else None,
           "cpu": receiver.cpu}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, separators=(",", ":"))


# ---------------------------------------------------------------- drain

def scrape(url: str, token: str) -> dict[str, float]:
    """The daemon's webhook metrics: series name with labels → value."""
    request = urllib.request.Request(url + "/metrics", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        text = answer.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("switchboard_webhook_"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def drain(opts) -> dict:
    """Wait until the daemon has nothing pending nor in flight; report what its metrics say."""
    token = os.environ.get(opts.token_env, "")
    start = time.monotonic()
    metrics = {}
    while True:
        try:
            metrics = scrape(opts.admin_url.rstrip("/"), token)
        except OSError as error:
            return {"webhook_drain_error": str(error)}
        idle = (metrics.get("switchboard_webhook_queue_depth", 0) == 0
                and metrics.get("switchboard_webhook_in_flight", 0) == 0)
        if idle or time.monotonic() - start > opts.timeout:
            break
        time.sleep(0.1)

    def labelled(prefix: str, label: str) -> dict:
        found = {}
        for name, value in metrics.items():
            if name.startswith(prefix + "{"):
                labels = dict(part.split("=", 1) for part in name[len(prefix) + 1:-1].split(","))
                key = labels.get(label, "?").strip('"')
                found[key] = found.get(key, 0) + int(value)
        return found

    return {"webhook_drain_s": round(time.monotonic() - start, 2),
            "webhook_pending_left": int(metrics.get("switchboard_webhook_queue_depth", -1)),
            "webhook_in_flight_left": int(metrics.get("switchboard_webhook_in_flight", -1)),
            "webhook_attempts": labelled("switchboard_webhook_attempts_total", "result"),
            "webhook_deliveries": labelled("switchboard_webhook_deliveries_total", "outcome"),
            "webhook_daemon_delivery_count": int(metrics.get("switchboard_webhook_delivery_seconds_count", 0)),
            "webhook_daemon_delivery_mean_ms": round(1000 * metrics.get("switchboard_webhook_delivery_seconds_sum", 0)
                                                     / max(1, metrics.get("switchboard_webhook_delivery_seconds_count", 0)), 2)}


def watch(opts) -> None:
    """Sample the daemon's webhook queue depth and attempts in flight until SIGTERM."""
    token = os.environ.get(opts.token_env, "")
    samples, stop = [], []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    last_answer = time.monotonic()
    while not stop and time.monotonic() - last_answer < 10:  # ends by itself 10 s after the daemon
        try:
            metrics = scrape(opts.admin_url.rstrip("/"), token)
            samples.append([time.time_ns(), int(metrics.get("switchboard_webhook_queue_depth", -1)),
                            int(metrics.get("switchboard_webhook_in_flight", -1))])
            last_answer = time.monotonic()
        except OSError:
            pass
        time.sleep(0.5)
    with open(opts.out, "w", encoding="utf-8") as f:
        json.dump(samples, f)


# ---------------------------------------------------------------- analyze

def percentile(ordered: list, fraction: float):
    """Nearest-rank percentile of an ascending list; None when empty."""
    if not ordered:
        return None
    return ordered[min(len(ordered), max(1, math.ceil(fraction * len(ordered)))) - 1]


def delays(values_ms: list[float]) -> dict:
    """p50, p99, max (ms) and count."""
    ordered = sorted(values_ms)
    return {"p50": percentile(ordered, 0.5), "p99": percentile(ordered, 0.99),
            "max": ordered[-1] if ordered else None, "n": len(ordered)}


def expected_types(joins: int, leaves: int) -> collections.Counter:
    """The messages one load call must produce (every request answered OK)."""
    expected = collections.Counter()
    if joins > 0:
        expected.update({"call.created": 1, "call.session_started": 1, "call.participant_joined": joins,
                         "call.participant_left": leaves})
        if leaves == joins:
            expected["call.session_ended"] += 1
    return expected


def queue_figures(samples: list, open_ns: int, close_ns: int) -> dict:
    """The daemon's queue depth at the window's start and end and its maximum, and how full
    the in-flight limit was, from watch's samples inside the window."""
    inside = [s for s in samples if open_ns <= s[0] <= close_ns]
    if not inside:
        return {}
    return {"webhook_queue_at_open": inside[0][1], "webhook_queue_at_close": inside[-1][1],
            "webhook_queue_max": max(s[1] for s in inside),
            "webhook_in_flight_mean": round(statistics.mean(s[2] for s in inside), 1),
            "webhook_in_flight_max": max(s[2] for s in inside)}


def analyze(received: dict, calls: dict, drained: dict, series_s: float) -> dict:
    """The webhook figures of one run (keys wh_*, webhook_*)."""
    open_ns, close_ns = calls["window_wall_ns"]
    window_s = (close_ns - open_ns) / 1e9
    open_ms, close_ms = open_ns / 1e6, close_ns / 1e6
    records = received["records"]
    ids = collections.Counter(r[5] for r in records)
    duplicates = sum(n - 1 for n in ids.values() if n > 1)
    first = {}
    for r in records:  # the first arrival of each message
        first.setdefault(r[5], r)
    unique = list(first.values())

    # Delay of every message whose state change falls in the window.
    in_window = [r for r in unique if r[1] is not None and open_ms <= r[1] < close_ms]
    delay = delays([r[0] / 1e6 - r[1] for r in in_window])
    middle_ms = (open_ms + close_ms) / 2
    halves = [delays([r[0] / 1e6 - r[1] for r in in_window if (r[1] < middle_ms) == first_half])
              for first_half in (True, False)]
    series = []
    step_ms = series_s * 1000
    if step_ms > 0:
        buckets = max(1, round((close_ms - open_ms) / step_ms))  # the last one takes the window's odd end
        for index in range(buckets):
            low = open_ms + index * step_ms
            high = close_ms if index == buckets - 1 else low + step_ms
            part = delays([r[0] / 1e6 - r[1] for r in in_window if low <= r[1] < high])
            series.append({"end_s": round((high - open_ms) / 1000, 1), "n": part["n"],
                           "p50_ms": part["p50"] and round(part["p50"], 2), "p99_ms": part["p99"] and round(part["p99"], 2),
                           "max_ms": part["max"] and round(part["max"], 2)})
    arrivals_in_window = sum(1 for r in records if open_ns <= r[0] < close_ns)

    # Received against expected, per call of the window.
    by_call: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    seqs: dict[str, list[int]] = collections.defaultdict(list)
    for r in unique:
        if r[3] is not None:
            by_call[r[3]][r[2]] += 1
            if r[4] is not None:
                seqs[r[3]].append(r[4])
    expected_total = missing = unexpected = certain = uncertain = 0
    missing_by_type: collections.Counter = collections.Counter()
    missing_examples = []
    for call_id, (in_win, joins_sent, joins_ok, leaves_sent, leaves_ok) in calls["calls"].items():
        if not in_win:
            continue
        if joins_sent != joins_ok or leaves_sent != leaves_ok:
            uncertain += 1
            continue
        certain += 1
        want = expected_types(joins_ok, leaves_ok)
        got = by_call.get(f"{calls['call_type']}:{call_id}", collections.Counter())
        expected_total += sum(want.values())
        for kind, n in want.items():
            short = max(0, n - got.get(kind, 0))
            if short:
                missing += short
                missing_by_type[kind] += short
                if len(missing_examples) < 5:
                    missing_examples.append(f"{call_id} {kind} x{short} (got {dict(got)})")
        unexpected += sum(max(0, n - want.get(kind, 0)) for kind, n in got.items())
    gaps = not_from_1 = out_of_order = 0
    for cid, values in seqs.items():
        ordered = sorted(values)
        if ordered[0] != 1:
            not_from_1 += 1
        gaps += (ordered[-1] - ordered[0] + 1) - len(set(ordered))
    arrival_seq: dict[str, int] = {}
    for r in sorted(unique, key=lambda r: r[0]):
        if r[3] is None or r[4] is None:
            continue
        if r[4] < arrival_seq.get(r[3], 0):
            out_of_order += 1
        arrival_seq[r[3]] = max(arrival_seq.get(r[3], 0), r[4])

    # The receiver's CPU over the window.
    cpu = [(t, c) for t, c in received["cpu"] if open_ns <= t <= close_ns]
    receiver_cpu_pct = receiver_us = None
    if len(cpu) >= 2 and cpu[-1][0] > cpu[0][0]:
        used_ns = cpu[-1][1] - cpu[0][1]
        receiver_cpu_pct = round(100 * used_ns / (cpu[-1][0] - cpu[0][0]), 1)
        taken = sum(1 for r in records if cpu[0][0] <= r[0] < cpu[-1][0])
        receiver_us = round(used_ns / 1000 / max(1, taken), 1)

    def ms(value):
        return None if value is None else round(value, 2)

    out = {
        "webhooks": "on",
        "wh_received": len(records), "wh_unique": len(unique), "wh_duplicates": duplicates,
        "wh_created_in_window": len(in_window),
        "wh_created_per_s": round(len(in_window) / window_s, 1),
        "wh_received_per_s": round(arrivals_in_window / window_s, 1),
        "wh_delay_p50_ms": ms(delay["p50"]), "wh_delay_p99_ms": ms(delay["p99"]), "wh_delay_max_ms": ms(delay["max"]),
        "wh_delay_p99_first_half_ms": ms(halves[0]["p99"]), "wh_delay_p99_second_half_ms": ms(halves[1]["p99"]),
        "wh_delay_series": series,
        "wh_calls_checked": certain, "wh_calls_uncertain": uncertain,
        "wh_expected": expected_total, "wh_missing": missing, "wh_missing_by_type": dict(missing_by_type),
        "wh_missing_examples": missing_examples, "wh_unexpected": unexpected,
        "wh_seq_gaps": gaps, "wh_seq_not_from_1": not_from_1, "wh_out_of_order": out_of_order,
        "wh_verifier": received["verifier"], "wh_verify_every": received["verify_every"],
        "wh_verified": received["verified"], "wh_bad_signatures": received["bad_signatures"],
        "wh_bad_signature_examples": received["bad_signature_examples"], "wh_verify_us_mean": received["verify_us_mean"],
        "wh_unparsed": received["unparsed"], "wh_bad_requests": received["bad_requests"],
        "wh_connections": received["connections"],
        "wh_receiver_cpu_pct": receiver_cpu_pct, "wh_receiver_cpu_us_per_request": receiver_us,
        "wh_timestamp_skew_s_max": max((abs(r[6] - r[0] / 1e9) for r in unique if r[6] is not None), default=None),
    }
    out.update(drained)
    attempts = drained.get("webhook_attempts") or {}
    out["wh_attempts_not_2xx"] = sum(n for result, n in attempts.items() if result != "2xx") if attempts else None
    return out


# ---------------------------------------------------------------- main

def parse_args(argv: list[str]):
    """Subcommand and options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="receive webhooks until SIGTERM")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--out", required=True, help="file written at exit (JSON)")
    s.add_argument("--secret-env", default="BENCH_WEBHOOK_SECRET",
                   help="environment variable holding the endpoint's whsec_ secret (default BENCH_WEBHOOK_SECRET)")
    s.add_argument("--verify", default="all", help="all, none, or N: verify every Nth request inline (default all)")
    w = sub.add_parser("watch", help="sample the daemon's webhook queue until SIGTERM")
    w.add_argument("--admin-url", required=True)
    w.add_argument("--token-env", default="SWITCHBOARD_ADMIN_TOKEN")
    w.add_argument("--out", required=True)
    d = sub.add_parser("drain", help="wait until the daemon has no webhook pending")
    d.add_argument("--admin-url", required=True)
    d.add_argument("--token-env", default="SWITCHBOARD_ADMIN_TOKEN")
    d.add_argument("--timeout", type=float, default=60)
    a = sub.add_parser("analyze", help="merge the webhook figures into the load's JSON line")
    a.add_argument("--received", required=True, help="serve's --out file")
    a.add_argument("--calls", required=True, help="calls_load.py run --calls-out file")
    a.add_argument("--drain", help="drain's JSON object, in a file")
    a.add_argument("--watch", help="watch's samples, in a file")
    a.add_argument("--load-line", required=True, help="a file whose last line is the load's JSON line")
    a.add_argument("--series-seconds", type=float, default=2, help="delay p50/p99/max per interval (default 2 s; 0: none)")
    opts = p.parse_args(argv)
    if opts.command == "serve" and opts.verify not in ("all", "none") and not opts.verify.isdigit():
        p.error("--verify: all, none or a positive integer")
    return opts


def main(argv: list[str]) -> int:
    """Run the subcommand."""
    opts = parse_args(argv)
    if opts.command == "serve":
        try:
            import uvloop
            uvloop.install()
        except ImportError:
            pass
        receiver = asyncio.run(serve(opts))
        write_records(receiver, opts.out)
        return 0
    if opts.command == "drain":
        print(json.dumps(drain(opts), separators=(",", ":")))
        return 0
    if opts.command == "watch":
        watch(opts)
        return 0
    with open(opts.received, encoding="utf-8") as f:
        received = json.load(f)
    with open(opts.calls, encoding="utf-8") as f:
        calls = json.load(f)
    drained = {}
    if opts.drain:
        with open(opts.drain, encoding="utf-8") as f:
            text = f.read().strip()
            drained = json.loads(text) if text else {}
    with open(opts.load_line, encoding="utf-8") as f:
        record = json.loads(f.read().strip().splitlines()[-1])
    record.update(analyze(received, calls, drained, opts.series_seconds))
    if opts.watch and os.path.exists(opts.watch):
        with open(opts.watch, encoding="utf-8") as f:
            record.update(queue_figures(json.load(f), *calls["window_wall_ns"]))
    if record.get("other_pct") is not None and record.get("wh_receiver_cpu_pct") is not None:
        record["other_pct"] = round(record["other_pct"] - record["wh_receiver_cpu_pct"], 1)
    print(f"webhooks: {record['wh_received_per_s']:,.0f}/s received in the window ({record['wh_created_per_s']:,.0f}/s "
          f"created); delay p50 {record['wh_delay_p50_ms']} ms, p99 {record['wh_delay_p99_ms']} ms, max "
          f"{record['wh_delay_max_ms']} ms; missing {record['wh_missing']}/{record['wh_expected']}; bad signatures "
          f"{record['wh_bad_signatures']}/{record['wh_verified']}; drain {record.get('webhook_drain_s')} s", file=sys.stderr)
    print(json.dumps(record, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
