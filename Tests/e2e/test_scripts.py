"""The set-up scripts' own logic, run through bash: what scripts/run prints as the client URL."""

from __future__ import annotations

import subprocess
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
