"""The release build and the deployment files, as CI can check them without a Docker engine.

`scripts/test` builds `dist/switchboard` by replaying the Dockerfile's build stage
(`scripts/docker-build-stage`, which runs `scripts/build-release`: static Swift runtime) before
running pytest, and passes its path in TEST_RELEASE_BIN.
"""

from __future__ import annotations

import os
import re
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


def test_migrate_refuses_a_state_directory_a_running_daemon_holds(switchboard, tmp_path: Path) -> None:
    """Opening the store folds the batch log (ADR 0010): a migrate beside a live daemon would fold
    the segment the daemon is appending to, so it is refused, naming the daemon."""
    result = subprocess.run(
        [str(_release_binary()), "migrate", "--state-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=30,
        env=_env(),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "is in use by another switchboard" in result.stderr and f"pid {switchboard.process.pid}" in result.stderr, result.stderr


def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    unit = (ROOT / "config" / "switchboard.service").read_text()
    unit = unit.replace("/usr/local/bin/switchboard", str(_release_binary()))
    path = tmp_path / "switchboard.service"
    path.write_text(unit)
    result = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (result.stdout + result.stderr).splitlines() if "switchboard.service" in line]
    assert result.returncode == 0 and not problems, result.stdout + result.stderr


def _syscalls(name: str, seen: set[str] | None = None) -> set[str]:
    """A system call, or every call of a systemd group (`@name`, nested groups expanded), as
    `systemd-analyze syscall-filter` lists them."""
    if not name.startswith("@"):
        return {name}
    seen = set() if seen is None else seen
    if name in seen:
        return set()
    seen.add(name)
    listing = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True, text=True, timeout=60, check=True).stdout
    calls: set[str] = set()
    for line in listing.splitlines()[1:]:
        entry = line.strip()
        if entry and not entry.startswith("#"):
            calls |= _syscalls(entry, seen)
    return calls


def test_the_systemd_units_syscall_filter_allows_the_calls_the_daemon_makes() -> None:
    """The unit's SystemCallFilter lines, applied in order as systemd does (the first an allow
    list, `~` removing, later lines adding back), allow the scheduling calls of the webhook worker and clean-up;
    any other refused call fails with EPERM rather than killing the daemon with SIGSYS."""
    unit = (ROOT / "config" / "switchboard.service").read_text()
    allowed: set[str] = set()
    for line in unit.splitlines():
        if not line.startswith("SystemCallFilter="):
            continue
        value = line.split("=", 1)[1].strip()
        deny = value.startswith("~")
        names = set().union(*(_syscalls(name) for name in value.lstrip("~").split()))
        allowed = allowed - names if deny else allowed | names
    assert "read" in allowed and "reboot" not in allowed, "the filter is an allow list of @system-service"
    needed = {"setpriority", "getpriority", "sched_setscheduler", "sched_getscheduler", "gettid"}
    assert needed <= allowed, f"refused by the unit: {sorted(needed - allowed)}"
    assert "SystemCallErrorNumber=EPERM" in unit.splitlines()


def test_the_dockerfile_copies_every_directory_the_manifest_declares_targets_in() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    build_stage = dockerfile.split("\nFROM ")[1]  # from the first FROM to the next
    copied = [line.split()[1].rstrip("/") for line in build_stage.splitlines() if line.startswith("COPY ") and "--from" not in line]
    manifest = (ROOT / "Package.swift").read_text()
    # `path: "Fuzz/\(target.directory)"` names its fixed prefix.
    paths = {p.split("\\(")[0].rstrip("/") for p in re.findall(r'path:\s*"([^"]+)"', manifest)} | {"Sources", "Tests"}
    assert paths, "no target paths found in Package.swift"
    missing = [p for p in sorted(paths) if not any(p == c or p.startswith(c + "/") for c in copied)]
    assert not missing, f"the Dockerfile's build stage does not copy {missing} (copied: {copied})"


def test_the_dockerfile_builds_with_the_release_script_and_checks_health() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "RUN scripts/build-release" in dockerfile
    assert "USER switchboard" in dockerfile
    assert 'VOLUME ["/var/lib/switchboard"]' in dockerfile
    assert re.search(r"HEALTHCHECK .*\n.*:8081/healthz", dockerfile), "the health check must hit the admin /healthz"


def test_the_containers_admin_recipe_works_published_with_a_token(tmp_path: Path) -> None:
    """README's Docker recipe for operators: admin.host 0.0.0.0 plus a token; requests with an IP
    Host get in with the token and are refused without it."""
    import json
    import urllib.error
    import urllib.request

    token = "operator-token-0123456789"
    env = {**_env(), "SWITCHBOARD_ADMIN_HOST": "0.0.0.0", "SWITCHBOARD_ADMIN_TOKEN": token}
    process = subprocess.Popen(
        [str(_release_binary()), "serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--state-dir", str(tmp_path / "state")],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        admin_port = None
        lines = []
        for line in process.stdout:  # the ready line comes within a second or two; EOF if it dies
            lines.append(line)
            match = re.search(r"admin=http://0\.0\.0\.0:(\d+)", line)
            if match:
                admin_port = int(match.group(1))
                break
        assert admin_port, "no ready line with admin=http://0.0.0.0:<port>:\n" + "".join(lines)
        url = f"http://127.0.0.1:{admin_port}/v1/stats"
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}), timeout=10) as answer:
            assert answer.status == 200
            assert json.loads(answer.read())["draining"] is False
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 401
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
