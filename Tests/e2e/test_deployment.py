"""The release build and the deployment files, as CI can check them without a Docker engine.

`scripts/test` builds `dist/switchboard` by replaying the Dockerfile's build stage
(`scripts/docker-build-stage`, which runs `scripts/build-release`: static Swift runtime) before
running pytest, and passes its path in TEST_RELEASE_BIN.
"""

from __future__ import annotations

import fnmatch
import json
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


# The manifest's target kinds and the folder each reads without `path:` (SwiftPM's defaults).
_TARGET_DEFAULT_FOLDERS = {
    "target": "Sources", "executableTarget": "Sources", "systemLibrary": "Sources", "macro": "Sources",
    "testTarget": "Tests", "plugin": "Plugins",
}


_SWIFT_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')  # one line, escapes and `\(` interpolations included


def _swift_code(source: str) -> str:
    """Swift source with its comments blanked (string literals kept), so a comment's parenthesis,
    quote or `.target(` cannot disturb the parse."""
    out: list[str] = []
    i = 0
    while i < len(source):
        string = _SWIFT_STRING.match(source, i)
        if string:
            out.append(string.group())
            i = string.end()
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = len(source) if end < 0 else end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            i = len(source) if end < 0 else end + 2
            out.append(" ")
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def _call_arguments(code: str, start: int) -> dict[str, str]:
    """The labelled arguments (`label: value`, the value's text as written) of the call whose `(`
    is at `start`; nested calls, arrays and strings stay inside their argument."""
    arguments: dict[str, str] = {}
    depth, begin, i = 0, start + 1, start
    while i < len(code):
        string = _SWIFT_STRING.match(code, i)
        if string:
            i = string.end()
            continue
        char = code[i]
        depth += (char in "([{") - (char in ")]}")
        if (char == "," and depth == 1) or depth == 0:
            label, colon, value = code[begin:i].partition(":")
            if colon and re.fullmatch(r"\s*\w+\s*", label):
                arguments[label.strip()] = value.strip()
            begin = i + 1
            if depth == 0:
                return arguments
        i += 1
    raise AssertionError(f"Package.swift: unbalanced call at offset {start}")


def _manifest_target_paths(manifest: str) -> dict[str, str]:
    """Every target Package.swift declares, by name, with the folder it reads: its `path:`, or
    Sources/<name> (Tests/<name> for a test target). An interpolated path (`"Fuzz/\\(dir)"`) stands
    for its fixed folder (`Fuzz`), and a computed name (`name: target.product`) is shown as written."""
    code = _swift_code(manifest)
    targets: dict[str, str] = {}
    for call in re.finditer(r"\.(" + "|".join(_TARGET_DEFAULT_FOLDERS) + r")\s*\(", code):
        arguments = _call_arguments(code, call.end() - 1)
        assert "name" in arguments, f"Package.swift: a .{call.group(1)} without name: {code[call.start():call.start() + 200]}"
        literal_name = re.fullmatch(r'"([^"\\]+)"', arguments["name"])
        name = literal_name.group(1) if literal_name else arguments["name"]
        if "path" in arguments:
            literal = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', arguments["path"])
            assert literal, f"Package.swift: target {name}'s path is not a string literal: {arguments['path']}"
            path = literal.group(1).split("\\(")[0]  # an interpolation's fixed prefix
            path = path.rpartition("/")[0] if "\\(" in literal.group(1) else path
        else:
            assert literal_name, f"Package.swift: target {name} has a computed name and no path:"
            path = f"{_TARGET_DEFAULT_FOLDERS[call.group(1)]}/{name}"
        path = os.path.normpath(path)
        assert path and not path.startswith(("/", "..")) and path != ".", f"Package.swift: target {name}'s path {path!r}"
        targets[name] = path
    return targets


def _build_stage_copy_sources(dockerfile: str) -> list[str]:
    """What the Dockerfile's first stage (its first FROM to the next) copies from the build context:
    every source of its COPY and ADD instructions, continued lines joined, flags skipped, in the shell
    and the JSON form; a `COPY --from` copies from another stage or image and is left out."""
    instructions: list[str] = []
    pending = ""
    for line in dockerfile.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):  # comments go, even inside a continued line
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        instructions.append(pending + line)
        pending = ""
    sources: list[str] = []
    seen_from = 0
    for instruction in instructions:
        keyword, _, rest = instruction.strip().partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            seen_from += 1
            if seen_from == 2:
                break
            continue
        if seen_from != 1 or keyword not in ("COPY", "ADD"):
            continue
        words = rest.split()
        flags = [word for word in words if word.startswith("--")]
        if any(flag.startswith("--from") for flag in flags):
            continue
        rest = " ".join(word for word in words if not word.startswith("--"))
        arguments = json.loads(rest) if rest.startswith("[") else rest.split()
        assert len(arguments) >= 2, f"Dockerfile: {instruction.strip()!r} has no source and destination"
        sources += [os.path.normpath(source) for source in arguments[:-1]]
    assert seen_from >= 1, "Dockerfile: no FROM"
    return sources


def _is_copied(path: str, sources: list[str]) -> bool:
    """Whether `path` (relative to the context's root) is one of `sources` or inside one; a source
    may be `.` or a glob (`Fuzz/*`)."""
    parts = Path(path).parts
    ancestors = [str(Path(*parts[:n])) for n in range(1, len(parts) + 1)]
    return any(source == "." or any(fnmatch.fnmatchcase(ancestor, source) for ancestor in ancestors) for source in sources)


def test_the_dockerfile_copies_every_directory_the_manifest_declares_targets_in() -> None:
    """`swift build` in the build stage resolves the whole package, so every target's folder must be
    copied (a new `bench/tunnel` target without its COPY line broke the release build once)."""
    targets = _manifest_target_paths((ROOT / "Package.swift").read_text())
    # Not vacuous: the parse finds a target for every module folder under Sources/ and Tests/,
    # some with an explicit path:, and each folder it names is in the repository.
    module_folders = {
        f"{top}/{folder.name}" for top in ("Sources", "Tests") for folder in (ROOT / top).iterdir()
        if folder.is_dir() and any(f.suffix in (".swift", ".c", ".h", ".modulemap") for f in folder.rglob("*"))
    }
    assert len(module_folders) >= 20, f"the module folders under Sources/ and Tests/: {sorted(module_folders)}"
    unparsed = module_folders - set(targets.values())
    assert not unparsed, f"no target parsed from Package.swift for {sorted(unparsed)} (parsed: {targets})"
    explicit = {name: path for name, path in targets.items() if not path.startswith(("Sources/", "Tests/"))}
    assert len(explicit) >= 3, f"too few targets with a path: outside Sources/ and Tests/ parsed: {targets}"
    assert all((ROOT / path).is_dir() for path in targets.values()), f"target paths not in the repository: {targets}"

    copied = _build_stage_copy_sources((ROOT / "Dockerfile").read_text())
    assert _is_copied("Package.swift", copied), f"the build stage does not copy Package.swift (copied: {copied})"
    missing = {name: path for name, path in sorted(targets.items()) if not _is_copied(path, copied)}
    assert not missing, f"the Dockerfile's build stage copies no folder holding the targets {missing} (copied: {copied})"


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
