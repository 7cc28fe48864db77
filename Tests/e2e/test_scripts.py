"""The set-up scripts' own logic, run through bash: what scripts/run prints as the client URL."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def serve_port(*args: str, env: dict[str, str] | None = None, config: str = "config/switchboard.json") -> str:
    quoted = " ".join(f"'{a}'" for a in (config, *args))
    result = subprocess.run(
        ["bash", "-c", f"source scripts/lib/common.sh && serve_port {quoted}"],
        cwd=REPO, env={"PATH": "/usr/bin:/bin", **(env or {})}, capture_output=True, text=True, timeout=10, check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ((), {}, "9000"),  # config/switchboard.json's port
        (("--port", "7000"), {}, "7000"),
        (("--log-level", "debug", "--port=7100"), {}, "7100"),
        (("--port", "7000", "--port", "7300"), {}, "7300"),  # the last one wins, as in the parser
        ((), {"SWITCHBOARD_SERVER_PORT": "7200"}, "7200"),
        (("--port", "7400"), {"SWITCHBOARD_SERVER_PORT": "7200"}, "7400"),  # the flag beats the variable
    ],
)
def test_scripts_run_prints_the_port_the_daemon_will_use(args: tuple[str, ...], env: dict[str, str], expected: str) -> None:
    assert serve_port(*args, env=env) == expected


def test_without_a_config_file_the_default_port_is_printed() -> None:
    assert serve_port(config="/nonexistent/switchboard.json") == "9000"


def run_bounded(budget: int, command: str) -> subprocess.CompletedProcess:
    """scripts/test's step runner on ``command`` (a bash command line) with ``budget`` seconds."""
    return subprocess.run(
        ["bash", "-c", f"source scripts/lib/common.sh && source scripts/lib/bounded.sh && run_bounded {budget} step {command}"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )


def test_a_step_that_ends_within_its_budget_keeps_its_output_and_status() -> None:
    result = run_bounded(30, "bash -c 'echo out; echo err >&2; exit 3'")
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_a_step_that_hangs_is_ended_at_its_budget_with_its_stacks_and_leaves_nothing_behind() -> None:
    # The step: a shell whose child sleeps far past the budget and says which process it is.
    result = run_bounded(1, "bash -c 'sleep 300 & echo child=$!; wait'")
    assert result.returncode == 124, result
    child = int(result.stdout.split("child=")[1].split()[0])
    assert "step: still running after 1s" in result.stderr, result.stderr
    assert f"---- process {child}: sleep 300" in result.stderr, result.stderr
    assert "step: FAILED: did not end within 1s" in result.stderr, result.stderr
    assert _ends(child), "the step's own child was ended too"


def _ends(pid: int, within: float = 10.0) -> bool:
    """Whether ``pid`` is gone (or a zombie its new parent has yet to reap) within ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return True
        if stat[stat.rindex(")") + 2] == "Z":
            return True
        time.sleep(0.01)
    return False
