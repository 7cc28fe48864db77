"""switchboard-phone, built on SwitchboardKit: two processes ring each other through a daemon.

The README's two-terminal example, run for real: bob's phone waits with ``answer``, alice's
rings him with ``call``; both print the call's progress and exit 0 when it ends. Also the
reject path, and ``meet`` printing participants as they change.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, mint_token

PHONE = Path(os.environ.get("TEST_SWITCHBOARD_PHONE_BIN", REPO_ROOT / ".build" / "debug" / "switchboard-phone"))
TIMEOUT_S = 20.0


#: Every phone a test started; the autouse fixture ends the ones still running, by PID.
_started: list["Phone"] = []


@pytest.fixture(autouse=True)
def _end_phones():
    yield
    while _started:
        phone = _started.pop()
        if phone.process.poll() is None:
            phone.process.kill()
            phone.process.wait(timeout=TIMEOUT_S)


class Phone:
    """One switchboard-phone process, its output read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        if not PHONE.is_file():
            pytest.fail(f"{PHONE} is missing: swift build --product switchboard-phone", pytrace=False)
        self.process = subprocess.Popen(
            [str(PHONE), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        )
        _started.append(self)
        self.lines: list[str] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()

    def wait_for(self, text: str) -> None:
        """Waits until a line containing ``text`` was printed (bounded)."""
        deadline = time.monotonic() + TIMEOUT_S
        with self.changed:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                assert left > 0, f"no line with {text!r}: {self.lines}"
                self.changed.wait(left)

    def finish(self) -> list[str]:
        """Waits for the process to exit 0 and returns what it printed."""
        try:
            code = self.process.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"switchboard-phone did not finish: {self.lines}")
        time.sleep(0)  # let the reader take the last lines
        with self.changed:
            assert code == 0, f"exit {code}: {self.lines}"
            return list(self.lines)


def phone(daemon, user: str, *args: str) -> Phone:
    return Phone(*args, "--url", f"ws://127.0.0.1:{daemon.port}/v1/connect", "--token", mint_token(user))


def test_two_phones_ring_answer_talk_and_hang_up(switchboard_calls) -> None:
    bob = phone(switchboard_calls, "bob", "answer", "--once")
    bob.wait_for("waiting for calls as bob")
    alice = phone(switchboard_calls, "alice", "call", "bob", "--id", "e2e1", "--hangup-after", "0.3")

    alice_lines = alice.finish()
    bob_lines = bob.finish()
    assert alice_lines[0] == "ringing bob in ringing:e2e1"
    assert "bob accepted" in alice_lines
    assert "in call ringing:e2e1" in alice_lines
    assert "participants: alice, bob" in alice_lines
    assert alice_lines.index("bob accepted") < alice_lines.index("in call ringing:e2e1") < alice_lines.index("hanging up")
    assert "call ended (ended_by_user)" in alice_lines
    assert "incoming call ringing:e2e1 from alice" in bob_lines
    assert "in call ringing:e2e1" in bob_lines
    assert "participants: alice, bob" in bob_lines
    assert "call ended (ended_by_user)" in bob_lines


def test_a_phone_that_rejects_busy(switchboard_calls) -> None:
    bob = phone(switchboard_calls, "bob", "answer", "--once", "--reject", "busy")
    bob.wait_for("waiting for calls as bob")
    alice = phone(switchboard_calls, "alice", "call", "bob", "--id", "e2e2")
    alice_lines = alice.finish()
    bob_lines = bob.finish()
    assert "bob rejected (busy)" in alice_lines
    assert "call ended (all_rejected)" in alice_lines
    assert "in call ringing:e2e2" not in alice_lines
    assert "rejected (busy)" in bob_lines


def test_meet_prints_participants_as_they_change(switchboard_calls) -> None:
    ann = phone(switchboard_calls, "ann", "meet", "standup", "--leave-after", "3")
    ann.wait_for("participants: ann")
    ben = phone(switchboard_calls, "ben", "meet", "standup", "--leave-after", "0.3")
    ann.wait_for("participants: ann, ben")
    ben_lines = ben.finish()
    assert ben_lines[0].startswith("joined default:standup as session ")
    assert "participants: ann, ben" in ben_lines
    ann.wait_for("participants: ann")  # ben left
    ann_lines = ann.finish()
    assert ann_lines.count("participants: ann") == 2
    assert ann_lines[-1] == "left"
