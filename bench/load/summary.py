"""Merging the load processes' results and printing them."""

from __future__ import annotations

import collections

from procstat import ServerSample


def percentiles(counts: collections.Counter, points=(50, 99, 99.9)) -> dict:
    """Percentiles (µs) of a value -> count histogram."""
    total = sum(counts.values())
    out = {p: None for p in points}
    if not total:
        return out
    cumulative, pending = 0, sorted(points)
    for value in sorted(counts):
        cumulative += counts[value]
        while pending and cumulative >= total * pending[0] / 100:
            out[pending.pop(0)] = value
    return out


def server_delta(before: ServerSample | None, after: ServerSample | None, messages: int) -> dict:
    """Server CPU per message, CPU share (% of one core, all threads and the busiest), RSS."""
    if before is None or after is None:
        return {"server_cpu_us_per_msg": None, "server_cpu_pct": None, "server_rss_kib": None,
                "server_top_thread_pct": None, "server_threads": None}
    cpu = after.cpu_us - before.cpu_us
    wall_us = (after.t_ns - before.t_ns) / 1000
    busiest = max((us - before.threads.get(tid, 0) for tid, us in after.threads.items()),
                  default=0)
    return {
        "server_top_thread_pct": round(100 * busiest / wall_us, 1) if wall_us else None,
        "server_threads": len(after.threads),
        "server_cpu_us_per_msg": round(cpu / messages, 2) if messages else None,
        "server_cpu_pct": round(100 * cpu / wall_us, 1) if wall_us else None,
        "server_rss_kib": after.rss_kib,
    }


def verdict(record: dict) -> str:
    """What limited the run.

    server   one server thread used >= 90 % of a core (a single-threaded
             server, or the slowest stage of a pipeline, is saturated), or the
             whole server used >= 90 % of every CPU;
    machine  all CPUs were >= 90 % busy: server, clients, softirq (loopback
             TCP) and other tenants competed, nobody got a core to itself;
    client   a client process was >= 90 % busy;
    neither  spare CPU everywhere: the closed loop is latency-bound (raise --window).
    """
    server = record.get("server_cpu_pct") or 0.0
    top_thread = record.get("server_top_thread_pct") or 0.0
    cpus = len(record.get("cpu_busy_pct") or {}) or 1
    if top_thread >= 90 or server >= 90 * cpus:
        return "server"
    if (record.get("machine_busy_pct") or 0.0) >= 90 * cpus:
        return "machine"
    if max(record["client_cpu_pct"], default=0.0) >= 90:
        return "client"
    return "neither"


def summarize_load(opts, results: list, before, after, machine: dict) -> dict:
    """Merge the workers' results into one record."""
    counts: collections.Counter = collections.Counter()
    for r in results:
        counts.update({int(k): v for k, v in r["latency_counts"].items()})
    messages = sum(r["messages"] for r in results)
    rate = sum(r["messages"] / (r["wall_ns"] / 1e9) for r in results if r["wall_ns"])
    client_pcts = [round(100 * (r["user_ns"] + r["sys_ns"]) / r["wall_ns"], 1)
                   for r in results if r["wall_ns"]]
    client_sys = sum(r["sys_ns"] for r in results)
    client_all = sum(r["user_ns"] + r["sys_ns"] for r in results) or 1
    pct = percentiles(counts)
    record = {
        "mode": opts.mode, "label": opts.label, "url": opts.url, "procs": opts.procs,
        "connections": opts.count if opts.mode == "echo" else 2 * opts.count,
        "window": opts.window, "min_bytes": opts.min_bytes, "max_bytes": opts.max_bytes,
        "seconds": opts.seconds, "warmup": opts.warmup,
        "latency": "round-trip" if opts.mode == "echo" else "one-way",
        "messages": messages, "msgs_per_s": round(rate),
        "p50_us": pct[50], "p99_us": pct[99], "p999_us": pct[99.9],
        "bad": sum(r["bad"] for r in results), "lost": sum(r["lost"] for r in results),
        "client_cpu_pct": client_pcts,
        "client_sys_share_pct": round(100 * client_sys / client_all, 1),
        "client_cpu_us_per_msg": round(client_all / 1000 / messages, 2) if messages else None,
    }
    record.update(server_delta(before, after, messages))
    record.update(machine)
    record["other_pct"] = other_load(record)
    record["bound"] = verdict(record)
    return record


def other_load(record: dict) -> float | None:
    """CPU % (of one core) used by neither server, clients nor softirq: other tenants."""
    if record.get("machine_busy_pct") is None or record.get("server_cpu_pct") is None:
        return None
    rest = (record["machine_busy_pct"] - record["server_cpu_pct"]
            - sum(record["client_cpu_pct"]) - record["softirq_pct"])
    return round(rest, 1)


def print_load(record: dict) -> None:
    """The human-readable summary of a load run."""
    print(f"{record['label']}: {record['mode']} {record['connections']} connections, "
          f"window {record['window']}, {record['procs']} client processes, {record['seconds']} s")
    print(f"  throughput  {record['msgs_per_s']} msgs/s ({record['messages']} messages)")
    print(f"  latency     {record['latency']} p50 {record['p50_us']} µs, p99 {record['p99_us']} µs,"
          f" p99.9 {record['p999_us']} µs")
    print(f"  server      {record['server_cpu_us_per_msg']} CPU µs/msg, "
          f"{record['server_cpu_pct']} % of a core ({record['server_threads']} threads, busiest "
          f"{record['server_top_thread_pct']} %), RSS {record['server_rss_kib']} KiB")
    print(f"  clients     CPU % per process {record['client_cpu_pct']} "
          f"({record['client_cpu_us_per_msg']} CPU µs/msg, {record['client_sys_share_pct']} % in kernel)")
    print(f"  machine     busy % per CPU {record['cpu_busy_pct']}, softirq {record['softirq_pct']} %, "
          f"steal {record['steal_pct']} %, other tenants ~{record['other_pct']} %")
    print(f"  bound       {record['bound']}")
    if record["bad"] or record["lost"]:
        print(f"  WARNING     {record['bad']} messages without timestamp, {record['lost']} lost")


def summarize_idle(opts, results: list, samples: dict) -> dict:
    """Merge the idle workers' counters with the server's RSS readings."""
    counters: collections.Counter = collections.Counter()
    for r in results:
        counters.update(r)
    opened = counters["still_open"]
    before, after, held = samples["before"], samples["connected"], samples["held"]
    record = {
        "mode": "idle", "label": opts.label, "url": opts.url, "target": opts.target,
        "procs": opts.procs, "sockets_requested": opts.count, "sockets_open": opened,
        "hold_s": opts.hold, "heartbeat_s": opts.heartbeat,
        "refused": counters["refused"], "failed": counters["failed"],
        "closed_by_server": counters["closed_by_server"],
        "frames_received": counters["frames_received"], "heartbeats": counters["heartbeats"],
        "notes": {k: v for k, v in counters.items() if ":" in k},
        "rss_before_kib": before.rss_kib if before else None,
        "rss_connected_kib": after.rss_kib if after else None,
        "rss_held_kib": held.rss_kib if held else None,
    }
    record.update(idle_costs(before, after, held, opened))
    return record


def idle_costs(before, after, held, opened: int) -> dict:
    """RSS per socket and the server's CPU share while holding idle sockets."""
    if not (before and after and held and opened):
        return {"rss_per_socket_kib": None, "idle_server_cpu_pct": None}
    wall_us = (held.t_ns - after.t_ns) / 1000
    return {
        "rss_per_socket_kib": round((held.rss_kib - before.rss_kib) / opened, 2),
        "rss_per_socket_connected_kib": round((after.rss_kib - before.rss_kib) / opened, 2),
        "idle_server_cpu_pct": round(100 * (held.cpu_us - after.cpu_us) / wall_us, 2),
    }


def print_idle(record: dict) -> None:
    """The human-readable summary of an idle run."""
    print(f"{record['label']}: idle {record['sockets_open']}/{record['sockets_requested']} sockets "
          f"open ({record['target']}), held {record['hold_s']} s")
    print(f"  server RSS  before {record['rss_before_kib']} KiB, connected "
          f"{record['rss_connected_kib']} KiB, after hold {record['rss_held_kib']} KiB")
    print(f"  per socket  {record['rss_per_socket_kib']} KiB; idle server CPU "
          f"{record['idle_server_cpu_pct']} % of a core")
    if record["refused"] or record["failed"] or record["closed_by_server"]:
        print(f"  WARNING     refused {record['refused']}, failed {record['failed']}, "
              f"closed by server {record['closed_by_server']}: {record['notes']}")
