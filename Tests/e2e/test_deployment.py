"""The release build and the deployment files, as CI can check them without a Docker engine.

`scripts/test` builds `dist/switchboard` with `scripts/build-release` (static Swift runtime)
before running pytest and passes its path in TEST_RELEASE_BIN.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _release_binary() -> Path:
    path = os.environ.get("TEST_RELEASE_BIN")
    if not path:
        pytest.fail("TEST_RELEASE_BIN is not set: run through scripts/test, which builds dist/switchboard", pytrace=False)
    binary = Path(path).resolve()
    assert binary.is_file() and os.access(binary, os.X_OK), f"{binary} is not an executable"
    return binary


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}


def test_the_release_binary_reports_its_version() -> None:
    result = subprocess.run([str(_release_binary()), "version"], capture_output=True, text=True, timeout=30, env=_env())
    assert result.returncode == 0
    assert re.fullmatch(r"switchboard \d+\.\d+\.\d+\n", result.stdout), result.stdout


def test_the_release_binary_accepts_the_shipped_config() -> None:
    result = subprocess.run(
        [str(_release_binary()), "check-config", "--config", str(ROOT / "config" / "switchboard.json")],
        capture_output=True, text=True, timeout=30, env=_env(),
    )
    assert result.returncode == 0, result.stderr
    assert "client 0.0.0.0:9000, admin 127.0.0.1:8081" in result.stdout


def test_the_release_binary_links_no_swift_runtime_libraries() -> None:
    result = subprocess.run(["ldd", str(_release_binary())], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "libswiftCore" not in result.stdout and "libFoundation" not in result.stdout, result.stdout
    assert "libwebsockets.so" in result.stdout


def test_migrate_creates_the_database_in_the_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = subprocess.run(
        [str(_release_binary()), "migrate", "--state-dir", str(state)], capture_output=True, text=True, timeout=30, env=_env(),
    )
    assert result.returncode == 0, result.stderr
    assert "applied v1_audit_log, v2_audit_log_action_index" in result.stdout
    assert (state / "switchboard.sqlite").is_file()
    again = subprocess.run(
        [str(_release_binary()), "migrate", "--state-dir", str(state)], capture_output=True, text=True, timeout=30, env=_env(),
    )
    assert "up to date" in again.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    unit = (ROOT / "config" / "switchboard.service").read_text()
    unit = unit.replace("/usr/local/bin/switchboard", str(_release_binary()))
    path = tmp_path / "switchboard.service"
    path.write_text(unit)
    result = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (result.stdout + result.stderr).splitlines() if "switchboard.service" in line]
    assert result.returncode == 0 and not problems, result.stdout + result.stderr


def test_the_dockerfile_builds_with_the_release_script_and_checks_health() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "RUN scripts/build-release" in dockerfile
    assert "USER switchboard" in dockerfile
    assert 'VOLUME ["/var/lib/switchboard"]' in dockerfile
    assert re.search(r"HEALTHCHECK .*\n.*:8081/healthz", dockerfile), "the health check must hit the admin /healthz"
