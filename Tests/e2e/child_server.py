"""One server process for a test, in a temporary folder of its own (standard library only).

``ChildServer`` is the part ``pgserver.PostgresServer`` and ``haproxy.HAProxy`` share: the
process it starts (signalled only by its PID), its folder ``dir`` (removed on ``close()`` unless
``keep_dir``), its output file ``log_path``, and the ``with`` block (``start()`` / ``close()``).
Beside it: ``wait_until``, a deadline-bounded poll for any condition (never a fixed sleep), and
``signal_and_reap``. The ``/proc`` helpers that tell when processes are gone (``pid_gone``,
``descendant_pids``, ``proc_state``) are in ``procinfo.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path


def wait_until(predicate, timeout: float, what: str) -> None:
    """Poll ``predicate`` (short back-off, no fixed wait) until true; TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")
        time.sleep(delay)  # back-off between polls, not a wait for the condition
        delay = min(delay * 2, 0.1)


class ChildServer:
    """What ``pgserver.PostgresServer`` and ``haproxy.HAProxy`` share: one server process this object starts
    (``process``, signalled only by its PID) in a temporary folder ``dir`` of its own, with its
    output in ``log_path`` (``LOG_NAME`` in ``dir``). Subclasses set ``stop_timeout`` and
    ``keep_dir`` and define ``start()`` and ``stop()``."""

    LOG_NAME = "server.log"
    dir: Path | None = None
    process: subprocess.Popen | None = None
    stop_timeout: float = 10.0
    keep_dir: bool = False

    def _path(self, name: str) -> Path:
        if self.dir is None:
            raise RuntimeError("not started")
        return self.dir / name

    @property
    def log_path(self) -> Path:
        return self._path(self.LOG_NAME)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> int | None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the server if it runs and remove the temporary folder (unless ``keep_dir``)."""
        self.stop()
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_text(self) -> str:
        """The server's output so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except (FileNotFoundError, RuntimeError):
            return ""

    def _signal(self, sig: int) -> int | None:
        """Send ``sig`` to the PID this object started (if it still runs) and reap it, with
        SIGKILL after ``stop_timeout``; returns the exit status."""
        return signal_and_reap(self.process, sig, self.stop_timeout)


def signal_and_reap(process: subprocess.Popen | None, sig: int, timeout: float) -> int | None:
    """Send ``sig`` to ``process`` (one the caller started, by PID) if it still runs and reap
    it, with SIGKILL after ``timeout`` s; its exit status, or ``None`` without a process."""
    if process is None:
        return None
    if process.poll() is None:
        try:
            os.kill(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)
    return process.returncode
