"""docs/deploy-cluster.md's examples stay true: its daemon config passes ``switchboard
check-config`` (with its files made here) and its HAProxy config passes ``haproxy -c``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import haproxy
from conftest import _daemon_binary, daemon_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy-cluster.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


def test_the_daemon_config_is_one_check_config_accepts(tmp_path: Path) -> None:
    [config] = [b for b in blocks("json") if '"postgres"' in b]
    for name in ("admin.token", "api.secret"):
        (tmp_path / name).write_text("x" * 40 + "\n")
    text = config.replace("/etc/switchboard/", f"{tmp_path}/")
    (tmp_path / "switchboard.json").write_text(text)
    env = {**daemon_env(admin_auth=None), "SWITCHBOARD_STORE_DIRECTORY": str(tmp_path / "data")}
    result = subprocess.run([str(_daemon_binary()), "check-config", "--config", str(tmp_path / "switchboard.json")],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "postgres://switchboard@db.internal" in result.stdout + result.stderr, result.stdout + result.stderr


def test_the_haproxy_config_is_one_haproxy_accepts(tmp_path: Path) -> None:
    reason = haproxy.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    [config] = blocks("haproxy")
    # The example's addresses are other machines': checked for syntax, bound nowhere.
    (tmp_path / "haproxy.cfg").write_text(config)
    result = subprocess.run([haproxy.haproxy_binary(), "-c", "-f", str(tmp_path / "haproxy.cfg")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "http-check send meth GET uri /readyz" in config and config.count(" port 8081") == 3
