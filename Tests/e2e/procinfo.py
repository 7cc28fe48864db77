"""What ``/proc`` says about a process the tests started (standard library only, Linux).

- whether it is gone: :func:`proc_state`, :func:`pid_gone`;
- its family: :func:`parent_pid`, :func:`child_pids`, :func:`descendant_pids`;
- its threads' priorities: :func:`thread_priorities`;
- the sockets it holds open: :func:`sockets`.

Every helper reads ``/proc`` once and answers at once; a process or thread that ends meanwhile
reads as gone, never as an error. Callers that wait for something poll these with a deadline.
"""

from __future__ import annotations

import os
from pathlib import Path


def _stat(path: Path) -> tuple[str, list[str]] | None:
    """A ``stat`` file of ``/proc`` (a process's or a thread's): the command name and the fields
    after it (``fields[0]`` is field 3, the state), or None when the process or thread is gone."""
    try:
        text = path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or None when gone."""
    stat = _stat(Path(f"/proc/{pid}/stat"))
    return stat[1] if stat else None


def proc_state(pid: int) -> str | None:
    """The state letter of ``pid`` (``R``, ``S``, ``T`` stopped, ``Z`` zombie, …), or None when gone."""
    fields = proc_stat(pid)
    return fields[0] if fields else None


def pid_gone(pid: int) -> bool:
    """Whether ``pid`` has exited: no ``/proc/PID`` left, or only a zombie no one reaped yet
    (a child of the postmaster is reparented to PID 1, which in a container may never reap it)."""
    return proc_state(pid) in (None, "Z", "X")


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid`` (``/proc/PID/stat`` field 4), or None when ``pid`` is gone."""
    fields = proc_stat(pid)
    return int(fields[1]) if fields else None


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, zombies included, from ``/proc``."""
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and parent_pid(int(entry.name)) == pid]


def descendant_pids(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children, their children, …), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields and fields[0] not in ("Z", "X"):
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def thread_priorities(pid: int) -> dict[int, tuple[str, int, int]]:
    """Each thread of ``pid`` by thread id: its name, nice value and scheduling policy
    (``/proc/PID/task/TID/stat`` fields 19 and 41; policy 0 is SCHED_OTHER, 5 SCHED_IDLE).
    A thread that ends while they are read is left out."""
    threads: dict[int, tuple[str, int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = _stat(task / "stat")
        if stat is None:
            continue  # the thread ended meanwhile
        name, fields = stat
        threads[int(task.name)] = (name, int(fields[16]), int(fields[38]))
    return threads


def sockets(pid: int) -> set[str]:
    """The sockets ``pid`` holds open, as ``socket:[inode]`` (the targets of ``/proc/PID/fd``);
    two processes hold the same socket when they share one of these."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:"):
            held.add(target)
    return held
