"""Printing the crowd benchmark: a summary per run (stderr) and the markdown report.

Targets (issue #11): relay msgs/s with the crowd >= 0.9 of without, worst relayed message
< 50 ms, no second above 30 % of a core in the daemon while the crowd idles, CPU per ping round
linear in sockets (flat per socket).
"""

from __future__ import annotations

import json
import os
import platform

TARGET_RATIO, TARGET_WORST_MS, TARGET_PEAK_PCT = 0.9, 50.0, 30.0


def ms(us) -> str:
    return "n/a" if us is None else f"{us / 1000:,.1f}"


def num(value, fmt: str = "{:,.0f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def met(ok: bool | None) -> str:
    return "" if ok is None else " (met)" if ok else " (**missed**)"


def print_summary(record: dict) -> None:
    """A few lines for the log while the run goes on."""
    if record["mode"] == "scale":
        print(f"scale: ping interval {record['interval_ms']} ms, {record['intervals']} intervals per size; "
              f"idle {record['idle']['cpu_s_per_round']} CPU s/interval; sizes as printed above")
        return
    c = record["connect"]
    print(f"crowd: {c.get('open')} of {record['sockets_requested']} sockets in {c['connect_s']} s "
          f"(failed {c.get('failed', 0)}), ping interval {record['interval_ms']} ms")
    for name in ("quiet", "baseline", "crowd_quiet", "crowd_load", "close"):
        f = record[name]
        print(f"  {name:<12} {num(f['msgs_per_s'])} msgs/s, p99 {ms(f['p99_us'])} ms, worst {ms(f['worst_us'])} ms, "
              f"daemon CPU {f['cpu_mean_pct']} % (busiest 1 s {f['cpu_peak_1s_pct']} %)")
    print(f"  ratio        {record['msgs_ratio']}; pings/socket/interval {record['pings_per_socket_per_interval']}; "
          f"close {record['close_timing']}")


def us_per_msg(load: dict, idle: dict) -> float | None:
    """Daemon CPU µs per relayed message in a load phase, less what it used with the probe only."""
    if load["cpu_mean_pct"] is None or idle["cpu_mean_pct"] is None or not load["msgs_per_s"]:
        return None
    net = load["cpu_mean_pct"] - idle["cpu_mean_pct"]
    return net / 100 * 1e6 / load["msgs_per_s"] if net > 0 and load["msgs_per_s"] >= 100 else None


def ratio(a, b) -> str:
    return "" if a is None or not b else f"{a / b:.2f}"


def crowd_markdown(r: dict) -> list[str]:
    """The crowd run's tables."""
    c, base, quiet, cq, cl, close = (r["connect"], r["baseline"], r["quiet"], r["crowd_quiet"],
                                     r["crowd_load"], r["close"])
    n = f"{c.get('open', 0):,}"
    sources = r["sources"][0] + (f"–{r['sources'][-1].rsplit('.', 1)[1]}" if len(r["sources"]) > 1 else "")
    worst_ok = cl["worst_us"] / 1000 < TARGET_WORST_MS if cl["worst_us"] is not None else None
    ratio_ok = r["msgs_ratio"] >= TARGET_RATIO if r["msgs_ratio"] is not None else None
    peak_ok = cq["cpu_peak_1s_pct"] <= TARGET_PEAK_PCT if cq["cpu_peak_1s_pct"] is not None else None
    lines = [
        f"**Crowd**: {n} of {r['sockets_requested']:,} idle PeerJS sockets (HEARTBEAT every {r['heartbeat_s']:g} s; "
        f"{r['crowd_procs']} processes on {sources}; opened at {r['connect_rate']:,.0f}/s in {c['connect_s']} s, "
        f"{c.get('failed', 0)} failed), ping interval {r['interval_ms']:,} ms, each crowd phase {r['hold_s']} s; "
        f"relay {r['pairs']} pairs, window {r['window']} (closed loop) or a {r['probe_rate']:g} msgs/s probe.",
        "",
        f"| measure | no crowd | {n} idle sockets | ratio or target |",
        "|---|---|---|---|",
        f"| relay msgs/s (closed loop) | {num(base['msgs_per_s'])} | {num(cl['msgs_per_s'])} | "
        f"{num(r['msgs_ratio'], '{:.2f}')}, target ≥ {TARGET_RATIO}{met(ratio_ok)} |",
        f"| relay p99 ms | {ms(base['p99_us'])} | {ms(cl['p99_us'])} | |",
        f"| relay worst message ms | {ms(base['worst_us'])} | {ms(cl['worst_us'])} | target < {TARGET_WORST_MS:g}{met(worst_ok)} |",
        f"| relay slowest second, msgs | {num(base['slowest_second_msgs'])} | {num(cl['slowest_second_msgs'])} | |",
        f"| daemon CPU % under the closed loop | {num(base['cpu_mean_pct'], '{:.0f}')} | {num(cl['cpu_mean_pct'], '{:.0f}')} | |",
        f"| daemon CPU µs per relayed message, net of the probe phase's CPU | {num(us_per_msg(base, quiet), '{:.1f}')} | "
        f"{num(us_per_msg(cl, cq), '{:.1f}')} | {ratio(us_per_msg(cl, cq), us_per_msg(base, quiet))} |",
        f"| daemon CPU % with the probe only, mean | {num(quiet['cpu_mean_pct'], '{:.1f}')} | {num(cq['cpu_mean_pct'], '{:.1f}')} | |",
        f"| daemon CPU % with the probe only, busiest 1 s | {num(quiet['cpu_peak_1s_pct'], '{:.1f}')} | "
        f"{num(cq['cpu_peak_1s_pct'], '{:.1f}')} | target ≤ {TARGET_PEAK_PCT:g}{met(peak_ok)} |",
        f"| probe worst message ms | {ms(quiet['worst_us'])} | {ms(cq['worst_us'])} | |",
        f"| machine busy % (2 = both cores), closed loop | {num(base['machine_busy_pct'])} | {num(cl['machine_busy_pct'])} | |",
        f"| pings per crowd socket per interval | | {num(r['pings_per_socket_per_interval'], '{:.2f}')} | |",
        f"| sockets dropped by the daemon: crowd, relay | | {r['crowd'].get('dropped', 0)}, {r.get('relay_dropped')} | |",
        f"| crowd client processes' CPU %, all together | | {num(r.get('crowd_clients_cpu_pct'), '{:.1f}')} | |",
        f"| daemon RSS MiB | {num(r['rss_kib']['before'] / 1024, '{:.0f}')} | {num(r['rss_kib']['crowd'] / 1024, '{:.0f}')} | |",
        "",
        f"| close all {n} at once, closed loop running | worst ms | p99 ms | msgs/s | sent in s | daemon let go in s |",
        "|---|---|---|---|---|---|",
        f"| close | {ms(close['worst_us'])} | {ms(close['p99_us'])} | {num(close['msgs_per_s'])} | "
        f"{r['close_timing']['sent_s']} | {num(r['close_timing']['released_s'], '{:.2f}')} |",
        "",
        "| per ping interval | span s | daemon CPU mean % | busiest 1 s % | relay msgs/s | p99 ms | worst ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, label in (("crowd_quiet", "crowd, probe"), ("crowd_load", "crowd, closed loop")):
        for row in r["profile"][name]:
            lines.append(f"| {label} | {row['from_s']}–{row['to_s']} | {num(row['cpu_mean_pct'], '{:.1f}')} | "
                         f"{num(row['cpu_peak_1s_pct'], '{:.1f}')} | {num(row['msgs_per_s'])} | {ms(row['p99_us'])} | "
                         f"{ms(row['worst_us'])} |")
    return lines


def scale_markdown(r: dict) -> list[str]:
    """The scale run's table and its flatness."""
    idle = r["idle"]
    lines = [
        f"**CPU per ping interval** (crowds that send nothing, so the daemon must ping them and each pongs; "
        f"ping interval {r['interval_ms']:,} ms, {r['intervals']} whole intervals per size; idle daemon: "
        f"{idle['cpu_s_per_round']} CPU s per interval, subtracted in 'net')",
        "",
        "| sockets | CPU s per interval | net CPU s per interval | µs per socket per interval | daemon CPU mean % | "
        "busiest 1 s % | pings per socket per interval | dropped |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in r["rows"]:
        lines.append(f"| {row['sockets']:,} | {num(row['cpu_s_per_round'], '{:.3f}')} | "
                     f"{num(row['net_cpu_s_per_round'], '{:.3f}')} | {num(row['us_per_socket_round'], '{:.1f}')} | "
                     f"{num(row['cpu_mean_pct'], '{:.1f}')} | {num(row['cpu_peak_1s_pct'], '{:.1f}')} | "
                     f"{num(row['pings_per_socket_round'], '{:.2f}')} | {row['dropped']} |")
    lines += ["", doubling(r["rows"])]
    if any((row["cpu_mean_pct"] or 0) >= 90 for row in r["rows"]):
        lines.append("Rows at ≥ 90 % mean CPU are saturated: a round took longer than the interval, so fewer "
                     "pings went out (see pings per socket per interval) and their cost is a lower bound.")
    return lines


def doubling(rows: list[dict]) -> str:
    """Per-socket cost at the largest unsaturated size ÷ at the largest size at most half of it."""
    live = [row for row in rows if row["us_per_socket_round"] and (row["cpu_mean_pct"] or 0) < 90]
    if not live:
        return "Doubling test: no unsaturated size."
    top = live[-1]
    half = [row for row in live if row["sockets"] <= top["sockets"] / 2]
    if not half:
        return "Doubling test: no size at most half the largest."
    low = half[-1]
    return (f"Doubling test: µs per socket at {top['sockets']:,} ÷ at {low['sockets']:,} sockets = "
            f"{top['us_per_socket_round'] / low['us_per_socket_round']:.2f} (≈ 1 when CPU per interval is linear "
            f"in sockets, ≈ {top['sockets'] / low['sockets']:.1f} when it is O(n²); sizes whose net CPU is "
            f"under ~0.1 s per interval are within the 10 ms resolution of /proc).")


def report(path: str, command: str, binary: str) -> None:
    """The markdown report of every record in `path`."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    for record in records:
        lines = crowd_markdown(record) if record["mode"] == "crowd" else scale_markdown(record)
        print("\n".join(lines) + "\n")
    if command:
        print(f"Command: `{command}`  ")
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo", encoding="utf-8")
                  if line.startswith("model name")), "unknown")
    print(f"Binary: {binary or 'n/a'}  \nMachine: nproc {os.cpu_count()}; CPU {model}; "
          f"kernel {platform.release()}; load average {os.getloadavg()[0]:.2f} at the end")
