"""docs/metrics.md against the code: every metric the sources register, with its type and label,
is in the table, and the table names nothing the code does not register."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TYPES = {"Counter": "counter", "Gauge": "gauge", "Timer": "histogram"}

# `Counter(label: "switchboard_x", dimensions: [("key", …` and the per-label counters'
# `LabelledCounters("switchboard_x", by: "key", …)`.
DIRECT = re.compile(r'\b(Counter|Gauge|Timer)\(\s*label:\s*"(switchboard_\w+)"(?:,\s*dimensions:\s*\[([^\]]*)\])?')
# Each `("key", value)` pair of a `dimensions:` list.
DIMENSION = re.compile(r'\(\s*"(\w+)"\s*,')
CACHED = re.compile(r'\bLabelledCounters\(\s*"(switchboard_\w+)",\s*by:\s*"(\w+)"')


def metrics_in_code() -> dict[str, tuple[str, set[str]]]:
    found: dict[str, tuple[str, set[str]]] = {}

    def add(name: str, kind: str, label: str | None) -> None:
        known_kind, labels = found.setdefault(name, (kind, set()))
        assert known_kind == kind, f"{name} is registered as both {known_kind} and {kind}"
        if label:
            labels.add(label)

    for source in (ROOT / "Sources").rglob("*.swift"):
        text = source.read_text()
        for kind, name, dimensions in DIRECT.findall(text):
            labels = DIMENSION.findall(dimensions) or [None]
            for label in labels:
                add(name, TYPES[kind], label)
        for name, label in CACHED.findall(text):
            add(name, "counter", label)
    return found


def metrics_in_docs() -> dict[str, tuple[str, set[str]]]:
    rows: dict[str, tuple[str, set[str]]] = {}
    for line in (ROOT / "docs" / "metrics.md").read_text().splitlines():
        match = re.match(r"\|\s*`(switchboard_\w+)`\s*\|\s*(\w+)\s*\|([^|]*)\|", line)
        if match:
            name, kind, labels = match.groups()
            assert name not in rows, f"{name} is in the table twice"
            rows[name] = (kind, set(re.findall(r"`(\w+)`:", labels)))
    return rows


def test_the_metrics_table_matches_the_code() -> None:
    code, docs = metrics_in_code(), metrics_in_docs()
    assert len(code) >= 25, f"the scan found only {sorted(code)}: has the registration code changed shape?"
    assert sorted(set(code) - set(docs)) == [], "registered but not in docs/metrics.md"
    assert sorted(set(docs) - set(code)) == [], "in docs/metrics.md but not registered"
    wrong = {name: (docs[name], code[name]) for name in code if docs[name] != code[name]}
    assert wrong == {}, "type or label differs (docs, code)"
