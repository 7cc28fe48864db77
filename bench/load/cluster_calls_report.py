"""The markdown report of cluster_calls.py (`report RESULTS`): from the last JSON line of its results
file, for each store.postgres_calls mode it ran, the medians of each configuration, the ratio 3
nodes ÷ 1 node and a table per run; with both modes, a comparison of the two. Results written
before `--postgres-calls` existed (no mode, the relaying daemons' CPU as one figure, the leader's
commits alone) are read as the leader mode."""

from __future__ import annotations

import json
import statistics

MODES = ("leader", "spread")


def config_labels(mode: str) -> dict[str, str]:
    """Each configuration's label in ``mode`` (store.postgres_calls)."""
    three = ("3 nodes (1 leads, 2 relay)" if mode == "leader"
             else "3 nodes, spread (1 leads; each runs its own sockets' calls)")
    return {"1": "1 node", "3": three}


def cpu_split(record: dict) -> str:
    """CPU % of each daemon over the window: n0 (leads) / n1 / n2, or n0 / relays for older results."""
    cpu = record["cpu_pct"]
    if record["config"] == "1":
        return f"{cpu['leader']:.0f} / – / –"
    if "n1" in cpu:
        return f"{cpu['leader']:.0f} / {cpu['n1']:.0f} / {cpu['n2']:.0f}"
    return f"{cpu['leader']:.0f} / {cpu['relays']:.0f} (both)"


def med(values):
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fmt(value, scale=1.0, digits=0):
    return "–" if value is None else f"{value / scale:,.{digits}f}"


def pick(recs, kind, config, key):
    return [x[key] for x in recs if x["kind"] == kind and x["config"] == config]


def report(path: str, command: str | None) -> str:
    with open(path, encoding="utf-8") as f:
        lines_in = [json.loads(line) for line in f if line.strip()]
    if not lines_in:
        return "no calls-cluster run recorded"
    r = lines_in[-1]
    modes = r.get("postgres_calls", "leader").split(",")
    out = []
    for mode in modes:
        out += mode_section(r, [x for x in r["records"] if x.get("postgres_calls", "leader") == mode], mode, len(modes) > 1)
        out.append("")
    if len(modes) > 1:
        out += comparison(r, modes)
    if command:
        out += ["", f"Command: `{command}`; daemon: `{r['binary']}`"]
    return "\n".join(out).strip()


def comparison(r: dict, modes: list[str]) -> list[str]:
    """Both modes side by side: 3 nodes ÷ 1 node in each (medians, and per run), and each mode's
    3-node figures ÷ the first mode's."""
    recs, runs = r["records"], r["runs"]

    def value(mode, number, kind, config, key):
        return next((x[key] for x in recs if x.get("postgres_calls", "leader") == mode and x["run"] == number
                     and x["kind"] == kind and x["config"] == config), None)

    def ratio(a, b):
        return f"{b / a:.2f}" if a and b is not None else "–"

    out = [f"**The modes compared** (same runs; joins/s answered at {r['overload_rate']:,.0f}/s offered, join p50 / p99 "
           f"ms at {r['moderate_rate']:,.0f}/s; medians, per run in brackets)", "",
           "| mode | 1 node: joins/s | 3 nodes: joins/s | 3 nodes ÷ 1 node | 1 node: p50 / p99 ms | 3 nodes: p50 / p99 ms |",
           "|---|---|---|---|---|---|"]
    for mode in modes:
        one = [value(mode, n, "overload", "1", "joins_per_s") for n in range(1, runs + 1)]
        three = [value(mode, n, "overload", "3", "joins_per_s") for n in range(1, runs + 1)]
        lat = {cfg: [(value(mode, n, "moderate", cfg, "join_p50_us"), value(mode, n, "moderate", cfg, "join_p99_us"))
                     for n in range(1, runs + 1)] for cfg in ("1", "3")}
        cells = [f"{fmt(med(one))} ({' / '.join(fmt(v) for v in one)})", f"{fmt(med(three))} ({' / '.join(fmt(v) for v in three)})",
                 f"**{ratio(med(one), med(three))}** ({' / '.join(ratio(a, b) for a, b in zip(one, three))})"]
        for cfg in ("1", "3"):
            cells.append(f"{fmt(med([a for a, _ in lat[cfg]]), 1000, 2)} / {fmt(med([b for _, b in lat[cfg]]), 1000, 2)}")
        out.append(f"| {mode} | " + " | ".join(cells) + " |")
    first = modes[0]
    for mode in modes[1:]:
        keys = (("joins/s at overload", "overload", "joins_per_s"), ("p50 at moderate", "moderate", "join_p50_us"),
                ("p99 at moderate", "moderate", "join_p99_us"), ("CPU µs per join at overload", "overload", "cpu_us_per_join"))
        base, this = ([x for x in recs if x.get("postgres_calls", "leader") == m] for m in (first, mode))
        parts = [f"{label} {ratio(med(pick(base, kind, '3', key)), med(pick(this, kind, '3', key)))}" for label, kind, key in keys]
        out += ["", f"3 nodes, {mode} ÷ {first} (medians): " + "; ".join(parts) + "."]
    return out


def mode_section(r: dict, recs: list[dict], mode: str, several: bool) -> list[str]:
    """One mode's tables."""
    configs = config_labels(mode)

    columns = [  # (header, kind, key, scale, digits)
        (f"join p50 ms at {r['moderate_rate']:,.0f}/s", "moderate", "join_p50_us", 1000, 2),
        (f"**join p99 ms** at {r['moderate_rate']:,.0f}/s", "moderate", "join_p99_us", 1000, 2),
        (f"**joins/s achieved** at {r['overload_rate']:,.0f}/s offered", "overload", "joins_per_s", 1, 0),
        (f"CPU µs per join at {r['moderate_rate']:,.0f}/s (daemons + PostgreSQL)", "moderate", "cpu_us_per_join", 1, 0),
        (f"CPU µs per join at {r['overload_rate']:,.0f}/s", "overload", "cpu_us_per_join", 1, 0),
    ]
    runs = r["runs"]
    where = ("every call runs on the leader, the two others relay their sockets to it" if mode == "leader" else
             "every daemon runs the calls its own sockets create, requests for another daemon's call are forwarded "
             "to it over the bus")
    out = [f"**Joins: a 3-node cluster against one node, `store.postgres_calls` {mode}** ({where}; both on one private "
           f"PostgreSQL, fsync off, a fresh database and daemons per configuration per rate per run; "
           f"`store.postgres_lease_ms` {r['lease_ms']:,}; {r['users']} connections, in the 3-node cluster connection i "
           f"on node i mod 3, so a call's two connections are on different nodes; `call.join` offered open-loop for "
           f"{r['seconds']:g} s after {r['warmup']:g} s, calls of 2, each connection leaving its previous call first; "
           f"medians of {runs} run{'s' * (runs != 1)}; nproc {r['nproc']}: PostgreSQL, the daemons and the load client share "
           f"those CPUs)", "",
           "| configuration | " + " | ".join(c[0] for c in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    medians = {cfg: [med(pick(recs, kind, cfg, key)) for _, kind, key, _, _ in columns] for cfg in configs}
    for cfg, label in configs.items():
        out.append(f"| {label} | " + " | ".join(fmt(v, s, d) for v, (_, _, _, s, d) in zip(medians[cfg], columns)) + " |")
    ratios = [f"{b / a:.2f}" if a and b is not None else "–" for a, b in zip(medians["1"], medians["3"])]
    out.append("| **3 nodes ÷ 1 node** | " + " | ".join(f"**{x}**" for x in ratios) + " |")

    order = ("modes and configurations in the order given in odd runs (1 node first), reversed in even ones" if several
             else "1 node first in odd runs, 3 nodes first in even ones")
    out += ["", f"Per run (order within a run: {order}; CPU % of one core "
            "over the window, read every 0.5 s: each daemon (n0 leads) / PostgreSQL / load client, and the whole "
            "machine; commits and forwarded requests summed over the daemons, over the whole load):", "",
            f"| run | configuration | p50 / p99 ms at {r['moderate_rate']:,.0f}/s | errors, unanswered | "
            f"joins/s at {r['overload_rate']:,.0f}/s (OK / offered in window) | errors, unanswered | "
            f"CPU % at {r['overload_rate']:,.0f}/s: n0 / n1 / n2 / PostgreSQL / client; machine | "
            f"call commits at {r['overload_rate']:,.0f}/s: joins per commit, mean ms | requests forwarded to another "
            f"node at {r['overload_rate']:,.0f}/s | relays saw no leader (moderate, overload) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for number in range(1, runs + 1):
        for cfg, label in configs.items():
            m = next((x for x in recs if x["run"] == number and x["kind"] == "moderate" and x["config"] == cfg), None)
            o = next((x for x in recs if x["run"] == number and x["kind"] == "overload" and x["config"] == cfg), None)
            if not m or not o:
                continue
            out.append(f"| {number} | {label} | {fmt(m['join_p50_us'], 1000, 2)} / {fmt(m['join_p99_us'], 1000, 2)} | "
                       f"{m['errors']}, {m['unanswered']} | {fmt(o['joins_per_s'])} ({o['joins_ok']:,} / {o['joins_offered']:,}) | "
                       f"{o['errors']}, {o['unanswered']} | {cpu_split(o)} / {o['cpu_pct']['postgres']:.0f} / "
                       f"{o['client_cpu_pct']:.0f}; {o['machine_busy_pct']:.0f} | {fmt(o.get('joins_per_commit'), 1, 1)}, "
                       f"{fmt(o.get('commit_mean_ms'), 1, 1)} | {fmt(o.get('forwarded_out'))} | "
                       f"{m.get('relay_lapses', 0)}, {o.get('relay_lapses', 0)} |")
    per_run = []
    for number in range(1, runs + 1):
        one, three = (next((x["joins_per_s"] for x in recs if x["run"] == number and x["kind"] == "overload"
                            and x["config"] == cfg), None) for cfg in ("1", "3"))
        per_run.append(f"{three / one:.2f}" if one and three is not None else "–")
    codes = {}
    for x in recs:
        for code, n in (x.get("error_codes") or {}).items():
            codes[code] = codes.get(code, 0) + n
    out += ["", f"Achieved joins/s, 3 nodes ÷ 1 node, per run: {', '.join(per_run) or '–'}. Error codes over all "
            f"segments: {codes or 'none'}. Commits: `switchboard_sqlite_commit_seconds{{table=\"calls\"}}` and "
            f"`switchboard_call_joins_total`, forwarded: `switchboard_call_requests_forwarded_total{{direction=\"out\"}}`, "
            f"each summed over the daemons' /metrics over the whole load (warm-up and drain included). Relays saw no "
            f"leader: times a relaying node logged \"relaying to the leading node\" with leader=none (the leader's lease "
            f"seen lapsed); it then closes every socket it relays (1012), and the load does not reconnect them."]
    return out
