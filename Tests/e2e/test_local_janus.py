"""`scripts/run --with-janus`'s local Janus (scripts/lib/local_janus.py): it starts Janus, writes a
seed file that registers it, the daemon started on that seed file polls it and places calls on
it, and SIGTERM stops Janus."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import CALLS_API_SECRET, REPO_ROOT, _launch, daemon_env
from test_janus_sfu import Admin, admin_port, join

SCRIPT = REPO_ROOT / "scripts" / "lib" / "local_janus.py"


def test_the_local_janus_is_registered_polled_and_used_then_stopped(tmp_path: Path):
    state = tmp_path / "janus"
    helper = subprocess.Popen([sys.executable, str(SCRIPT), str(state), "ams"], stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(helper.stdout.readline())
        janus_pid = started["pid"]
        os.kill(janus_pid, 0)  # running
        seed = json.loads((state / "sfus.json").read_text())["sfus"][0]
        assert seed["kind"] == "janus" and seed["region"] == "ams" and seed["url"] == started["http_url"]
        secret_file = Path(seed["janus"]["admin_secret_file"])
        assert secret_file.stat().st_mode & 0o777 == 0o600
        assert secret_file.read_text().strip() not in json.dumps(seed), "the seed file names the secret's file, not the secret"

        env = daemon_env()
        env["SWITCHBOARD_AUTH_API_SECRET"] = CALLS_API_SECRET
        env["SWITCHBOARD_PLACEMENT_SFU_SEED_FILE"] = started["seed_file"]
        env["SWITCHBOARD_PLACEMENT_POLL_INTERVAL_MS"] = "200"
        for daemon in _launch(tmp_path, env):
            admin = Admin(admin_port(daemon))
            view = admin.wait_sfu("janus-local", lambda v: v["fresh"] and v.get("last_poll_outcome") == "ok", "the local Janus polled")
            assert view["kind"] == "janus"

            async def joined() -> dict:
                ws, answer = await join(daemon.port, "alice", "try-it", "ams")
                await ws.close()
                return answer

            sfu = asyncio.run(joined())["sfu"]
            assert sfu["id"] == "janus-local" and sfu["url"] == started["http_url"] and sfu["token"].startswith("sb1.")
    finally:
        helper.send_signal(signal.SIGTERM)
        assert helper.wait(timeout=20) == 0
    try:
        os.kill(janus_pid, 0)
        raise AssertionError("Janus still runs after the helper stopped")
    except ProcessLookupError:
        pass
