"""WebSocket conformance: the Autobahn TestSuite cases, run by the ``kosoku`` runner against
the daemon's test-only echo protocol (``testing.echo_path``).

Sections 1–7 (framing, pings/pongs, reserved bits, opcodes, fragmentation, UTF-8, close
handling) and 10 (auto-fragmentation) must pass with 0 failures, except the two cases
libwebsockets 4.1 answers differently by design (see ``KNOWN_DEVIATIONS``). The summary goes
to ``test-results/autobahn-summary.md``; docs/conformance/autobahn.md keeps the last one
committed.
"""

from __future__ import annotations

import asyncio
import collections
import os
from pathlib import Path

import kosoku
import pytest

from conftest import REPO_ROOT, _launch, daemon_env

SECTIONS = ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*"]

#: Cases excluded from the run, with the reason. libwebsockets 4.1.6 keeps one pending pong:
#: a PING that arrives while the pong for an earlier one is unsent is dropped (ops-ws.c,
#: "DROP PING since one pending"), so a burst of 10 pings gets fewer than 10 pongs. RFC 6455
#: 5.5.3 lets an endpoint answer only the most recent of several pings; lws answers the first.
KNOWN_DEVIATIONS = {
    "2.10": "10 pings in a burst: libwebsockets 4.1 answers the first, drops the rest while its pong is pending",
    "2.11": "10 pings sent frame by frame: same libwebsockets 4.1 behaviour as 2.10 when a ping arrives before the pong of the last one went out (timing-dependent)",
}

RESULTS = REPO_ROOT / "test-results"


@pytest.fixture
def echo_daemon(tmp_path: Path):
    env = daemon_env()
    env["SWITCHBOARD_TESTING_ECHO_PATH"] = "/echo"
    yield from _launch(tmp_path, env)


def run_cases(url: str, cases: list[str], exclude: list[str], timeout: float) -> list:
    """Every case's result; kosoku raises FailureError when any fails, holding the results."""
    try:
        return asyncio.run(
            asyncio.wait_for(kosoku.run_fuzzingclient(url, cases=cases, exclude_cases=exclude or None, concurrency=4), timeout=timeout)
        )
    except kosoku.FailureError as failure:
        return list(failure.results)


def summarize(results: list, excluded: dict[str, str]) -> str:
    """A markdown summary: counts per section and every case that did not pass."""
    by_section: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for result in results:
        section = result.case_id.split(".")[0]
        by_section[section]["passed" if result.passed else "failed"] += 1
    lines = ["# Autobahn TestSuite (kosoku) against testing.echo_path", "", "| Section | Passed | Failed |", "|---|---|---|"]
    for section in sorted(by_section, key=int):
        counts = by_section[section]
        lines.append(f"| {section} | {counts['passed']} | {counts['failed']} |")
    total = sum(1 for r in results if r.passed)
    lines += ["", f"{total} of {len(results)} cases passed.", ""]
    failed = [r for r in results if not r.passed]
    if failed:
        lines.append("Failed:")
        lines += [f"- {r.case_id}: behavior={r.behavior} close={r.behavior_close}: {r.result}" for r in failed]
    lines.append("Excluded (known libwebsockets 4.1 deviations):")
    lines += [f"- {case}: {why}" for case, why in excluded.items()]
    return "\n".join(lines) + "\n"


def test_autobahn_sections_1_to_7_and_10_pass(echo_daemon) -> None:
    url = f"ws://127.0.0.1:{echo_daemon.port}/echo"
    results = run_cases(url, SECTIONS, list(KNOWN_DEVIATIONS), timeout=300)
    summary = summarize(results, KNOWN_DEVIATIONS)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "autobahn-summary.md").write_text(summary)
    print(summary)
    assert len(results) >= 240, f"expected the whole selection to run, got {len(results)} cases"
    failed = [f"{r.case_id} ({r.behavior}/{r.behavior_close}: {r.result})" for r in results if not r.passed]
    assert not failed, "Autobahn cases failed:\n" + "\n".join(failed)


def test_the_known_deviations_still_deviate(echo_daemon) -> None:
    """If a libwebsockets upgrade fixes the ping handling, this fails and the exclusions go."""
    url = f"ws://127.0.0.1:{echo_daemon.port}/echo"
    results = run_cases(url, list(KNOWN_DEVIATIONS), [], timeout=60)
    assert [r.case_id for r in results] == list(KNOWN_DEVIATIONS)
    # Every case still closes cleanly. 2.10 (a burst) still loses pings; 2.11 (pings frame by
    # frame, a few ms apart) depends on whether lws has sent its pong before the next ping
    # arrives, and passes or fails with the machine's timing, so only its close is checked.
    assert all(str(r.behavior_close).endswith("OK") for r in results), [str(r) for r in results]
    burst = next(r for r in results if r.case_id == "2.10")
    assert not burst.passed, str(burst)


def test_the_echo_path_is_off_by_default(tmp_path: Path) -> None:
    """Without testing.echo_path the path does not upgrade (404), so no daemon echoes by accident."""
    gen = _launch(tmp_path, daemon_env())
    daemon = next(gen)
    try:
        import urllib.error
        import urllib.request

        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/echo", timeout=10)
        assert refused.value.code == 404
    finally:
        with pytest.raises(StopIteration):
            next(gen)
