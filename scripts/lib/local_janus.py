#!/usr/bin/env python3
"""One local Janus (Debian's package) for `scripts/run --with-janus`: a new user's first SFU call.

Starts Janus from a config folder it writes under STATE (VideoRoom plugin and HTTP transport only,
token auth on, a random admin secret kept in STATE/admin_secret mode 0600, free ports on
127.0.0.1), writes STATE/sfus.json, a seed file (`placement.sfu_seed_file`) that registers it as
SFU `janus-local` of kind janus in REGION, prints one JSON line {"pid","http_url","admin_url",
"seed_file"} and stays in the foreground until SIGTERM/SIGINT, then stops Janus.

It reuses Tests/e2e/janus_harness.py, the same code the tests start Janus with.

    python3 scripts/lib/local_janus.py STATE REGION
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))

from janus_harness import JanusInstance  # noqa: E402


def seed(janus: JanusInstance, secret_file: Path, region: str) -> dict:
    """The seed file's content: Janus's HTTP API for clients, its admin API for Switchboard."""
    return {"sfus": [{
        "id": "janus-local", "kind": "janus", "url": janus.http_url, "region": region, "capacity": 50,
        "janus": {"admin_url": janus.admin_url, "admin_secret_file": str(secret_file)},
    }]}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    state, region = Path(argv[1]).resolve(), argv[2]
    state.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with JanusInstance(server_name="switchboard-local") as janus:
        secret_file = state / "admin_secret"
        fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(janus.admin_secret + "\n")
        seed_file = state / "sfus.json"
        seed_file.write_text(json.dumps(seed(janus, secret_file, region), indent=2) + "\n")
        print(json.dumps({"pid": janus.pid, "http_url": janus.http_url, "admin_url": janus.admin_url,
                          "seed_file": str(seed_file)}), flush=True)
        while not stop.wait(0.5):
            if not janus.running():
                print("janus exited", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
