"""Run a private PostgreSQL server for tests (Debian's ``postgresql`` package).

``PostgresServer`` runs ``initdb`` into a temporary folder of its own and starts ``postgres`` on
it, on 127.0.0.1 at a port the kernel reported free, with its Unix socket in that folder too. It
never touches a packaged cluster (Debian's ``main`` on 5432, started or not) nor its socket
folder ``/var/run/postgresql``, so the two can run side by side.

Binaries: ``initdb``, ``postgres``, ``psql`` and ``pg_isready`` from ``$TEST_POSTGRES_BINDIR``
when set, else from the highest ``/usr/lib/postgresql/VERSION/bin`` holding all four (Debian's
layout, preferred to ``PATH``: ``/usr/bin/psql`` is a wrapper there, and a ``/usr/local/bin``
may hold links to another version), else each one found on ``PATH``.

User: PostgreSQL refuses to run as root. Run by root, ``initdb`` and ``postgres`` are started
through ``setpriv`` as the ``postgres`` system user (made by the Debian package), which execs
them in place, so ``pid`` is the postmaster's own PID; the temporary folder is chowned to that
user. Otherwise they run as the current user. The database superuser is ``user``
(``switchboard``), with ``trust`` authentication: no password anywhere.

Durability: the default settings are PostgreSQL's own (``fsync``, ``synchronous_commit`` and
``full_page_writes`` on), as crash tests need. ``durable=False`` turns the three off (and skips
initdb's syncs) for tests that only want speed and never kill the server.

Typical use::

    with PostgresServer() as pg:
        pg.psql("CREATE TABLE t (v int); INSERT INTO t VALUES (1)")
        url = pg.create_database("cluster")     # postgres://switchboard@127.0.0.1:PORT/cluster
        pg.kill()                                 # SIGKILL: a crash
        pg.start()                                # same folder and port; crash recovery
        assert pg.psql("SELECT v FROM t") == "1"

Stopping: ``stop()`` sends SIGINT (fast shutdown) to the postmaster's PID and waits, then
SIGKILL after ``stop_timeout``. ``kill()`` stops the postmaster (SIGSTOP, so that it forks no
more), notes its descendants, and SIGKILLs it and them by PID: all of the server dies at once,
as in a power cut, and nothing of the old server keeps shared memory from a new start. Leaving
the ``with`` block stops the server if it runs and removes the folder (``keep_dir=True`` keeps
it, with ``postgres.log`` inside). Nothing sleeps to wait: readiness and exits are polled with
deadlines.

``child_server.ChildServer`` holds what this class shares with ``haproxy.HAProxy`` (the process,
its folder, the ``with`` block, signalling by PID). Only the standard library is used (Python 3.11).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from child_server import ChildServer, wait_until
from janus_config import free_tcp_ports
from procinfo import descendant_pids, pid_gone, proc_state

TOOLS = ("initdb", "postgres", "psql", "pg_isready")
SERVER_USER = "postgres"
HOST = "127.0.0.1"
INSTALL_HINT = "scripts/test installs it: apt-get install -y postgresql (Debian 12: PostgreSQL 15)"
_START_ATTEMPTS = 3
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class PostgresError(RuntimeError):
    """``psql`` failed, or the server did not start."""


def find_binaries() -> dict[str, str]:
    """Map each of ``TOOLS`` to its executable (see the module's doc for the order searched)."""
    def complete(bindir: Path) -> bool:
        return all(os.access(bindir / tool, os.X_OK) for tool in TOOLS)

    def version(bindir: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", bindir.parent.name))

    explicit = os.environ.get("TEST_POSTGRES_BINDIR")
    if explicit:
        if not complete(Path(explicit)):
            raise FileNotFoundError(f"TEST_POSTGRES_BINDIR={explicit} lacks one of {', '.join(TOOLS)}")
        return {tool: str(Path(explicit) / tool) for tool in TOOLS}
    debian = sorted((d for d in Path("/usr/lib/postgresql").glob("*/bin") if complete(d)), key=version)
    if debian:
        return {tool: str(debian[-1] / tool) for tool in TOOLS}
    found = {tool: shutil.which(tool) for tool in TOOLS}
    missing = [tool for tool, path in found.items() if not path]
    if missing:
        raise FileNotFoundError(
            f"PostgreSQL not found: no /usr/lib/postgresql/*/bin with {', '.join(TOOLS)}, "
            f"and {', '.join(missing)} not on PATH; {INSTALL_HINT}"
        )
    return found  # type: ignore[return-value]


def missing_requirements() -> str | None:
    """Why a PostgresServer cannot run here (binaries, or the ``postgres`` user when root), or None."""
    try:
        find_binaries()
    except FileNotFoundError as error:
        return str(error)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root needs the '{SERVER_USER}' system user to run PostgreSQL as; {INSTALL_HINT}"
        if not shutil.which("setpriv"):
            return "running as root needs setpriv (Debian's util-linux) to run PostgreSQL as its user"
    return None


class PostgresServer(ChildServer):
    """A PostgreSQL server in a temporary folder, on a free 127.0.0.1 port (see the module's doc).

    Attributes once started: ``port``, ``pid``, ``dir`` (the temporary folder), ``data_dir``,
    ``socket_dir``, ``log_path``, ``url`` and ``dsn`` (of database ``database``).
    """

    LOG_NAME = "postgres.log"

    def __init__(
        self,
        *,
        user: str = "switchboard",
        database: str = "postgres",
        durable: bool = True,
        settings: dict[str, str | int] | None = None,
        hba: list[str] | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 20.0,
        keep_dir: bool = False,
    ) -> None:
        """
        user: the superuser initdb makes (``-U``); every connection uses it.
        database: the database ``url``, ``dsn`` and ``psql`` use by default (initdb makes ``postgres``).
        durable: False turns off fsync, synchronous_commit and full_page_writes (never for crash tests).
        settings: more ``-c name=value`` server settings, e.g. ``{"max_connections": 200}``.
        hba: more ``pg_hba.conf`` lines, e.g. ``["host all all 10.231.0.0/16 trust"]`` for clients
            in a test's network namespaces (with ``listen_addresses`` in ``settings``).
        start_timeout: bound on each start (crash recovery included); initdb gets twice as long.
        """
        if not _NAME.fullmatch(user):
            raise ValueError(f"user {user!r}: use letters, digits and _")
        self.user = user
        self.database = database
        self.durable = durable
        self.settings = dict(settings or {})
        self.hba = list(hba or [])
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.keep_dir = keep_dir
        self.bins = find_binaries()
        self.dir: Path | None = None
        self.port = 0
        self.process: subprocess.Popen | None = None
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam(SERVER_USER)
            self._owner = (account.pw_uid, account.pw_gid)
            self._prefix = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups", "--"]

    # ------------------------------------------------------------------ names

    @property
    def data_dir(self) -> Path:
        return self._path("data")

    @property
    def socket_dir(self) -> Path:
        return self._path("sock")

    @property
    def url(self) -> str:
        """``postgres://USER@127.0.0.1:PORT/DATABASE`` (no password: trust authentication)."""
        return self.database_url(self.database)

    @property
    def dsn(self) -> str:
        """The same as ``url`` in libpq's keyword form."""
        return f"host={HOST} port={self.port} user={self.user} dbname={self.database}"

    def database_url(self, name: str) -> str:
        return f"postgres://{self.user}@{HOST}:{self.port}/{name}"

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """First call: initdb, then start on a free port (new ports while another process takes
        the one chosen). Later calls (after ``stop``/``kill``): start again on the same folder and
        port. Returns once the server answers queries; PostgresError otherwise."""
        if self.running():
            raise RuntimeError("already running")
        if self.dir is None:
            try:
                self._initdb()
                failures = []
                for _ in range(_START_ATTEMPTS):
                    self.port = free_tcp_ports(1, HOST)[0]
                    problem = self._spawn_and_wait()
                    if problem is None:
                        return
                    failures.append(problem)
                    if "could not bind" not in problem:
                        break
            except BaseException:
                self.close()
                raise
            log = self.log_text()
            self.close()
            raise PostgresError("PostgreSQL did not start: " + "; ".join(failures) + "\n--- postgres.log ---\n" + log[-4000:])
        problem = self._spawn_and_wait()
        if problem is not None:
            raise PostgresError(f"PostgreSQL did not start again on port {self.port}: {problem}\n"
                                f"--- postgres.log ---\n{self.log_text()[-4000:]}")

    def _initdb(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pg-test-"))
        self.socket_dir.mkdir()
        self.log_path.touch()
        if self._prefix:
            for path in (self.dir, self.socket_dir, self.log_path):
                os.chown(path, *self._owner)
            # The user must reach the folder: $TMPDIR may lie under a folder only root can enter.
            if self._run([*self._prefix, "test", "-w", str(self.dir)]).returncode != 0:
                raise PostgresError(f"{SERVER_USER} cannot write {self.dir}: set TMPDIR to a folder it can reach")
        argv = [*self._prefix, self.bins["initdb"], "-D", str(self.data_dir), "-U", self.user, "--auth=trust",
                "--encoding=UTF8", "--no-locale", "--no-instructions"]
        if not self.durable:
            argv.append("--no-sync")
        done = self._run(argv, timeout=2 * self.start_timeout)
        if done.returncode != 0:
            raise PostgresError(f"initdb exited with {done.returncode}:\n{self.log_text()[-4000:]}")
        if self.hba:
            with open(self.data_dir / "pg_hba.conf", "a") as conf:
                conf.write("".join(line + "\n" for line in self.hba))

    def _run(self, argv: list[str], timeout: float = 10.0) -> subprocess.CompletedProcess:
        with open(self.log_path, "ab") as log:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                  cwd=self.dir, env=self._env(), timeout=timeout)

    @staticmethod
    def _env() -> dict[str, str]:
        """This process's environment without libpq's ``PG*`` variables, in the C locale (English messages)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", PGCLIENTENCODING="UTF8", PGCONNECT_TIMEOUT="5")
        return env

    def _spawn_and_wait(self) -> str | None:
        """Start ``postgres`` on ``port``; None once it answers, else what went wrong (it is then killed)."""
        settings = {"listen_addresses": HOST}
        if not self.durable:
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        settings.update(self.settings)
        argv = [*self._prefix, self.bins["postgres"], "-D", str(self.data_dir), "-p", str(self.port),
                "-k", str(self.socket_dir)]
        for name, value in settings.items():
            argv += ["-c", f"{name}={value}"]
        start = self.log_path.stat().st_size
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.dir, env=self._env(), start_new_session=True)
        problem = self._wait_ready()
        if problem is not None:
            self.kill()
            with open(self.log_path, errors="replace") as log:
                log.seek(start)
                problem += "; " + " | ".join(line.strip() for line in log if "could not" in line or "FATAL" in line)
        return problem

    def _postmaster_status(self) -> str | None:
        """The status line of ``postmaster.pid`` (``starting``, ``ready``, …) when the file is
        this process's, else None (not written yet, or left by an earlier run)."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        return lines[7].strip() if len(lines) > 7 and lines[0].strip() == str(self.process.pid) else None

    def _wait_ready(self) -> str | None:
        """Poll ``postmaster.pid`` until the postmaster reports ``ready`` (no client involved, so
        nothing hangs on a port someone else holds), then require ``pg_isready`` and the server's
        answer over TCP naming its own data folder; None when ready."""
        deadline = time.monotonic() + self.start_timeout
        delay = 0.01
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"postgres exited with {self.process.returncode}"
            if self._postmaster_status() == "ready":
                ready = subprocess.run([self.bins["pg_isready"], "-q", "-h", HOST, "-p", str(self.port),
                                        "-U", self.user, "-d", "postgres", "-t", "5"], env=self._env(), timeout=10)
                if ready.returncode != 0:
                    return f"ready, but pg_isready on port {self.port} exited with {ready.returncode}"
                try:
                    shown = self.psql("SHOW data_directory", database="postgres")
                except PostgresError as error:
                    return f"ready, but port {self.port}: {error}"
                if Path(shown).resolve() == self.data_dir.resolve():
                    return None
                return f"port {self.port} answers for another server (data_directory {shown})"
            time.sleep(delay)  # back-off between polls, not a wait for readiness
            delay = min(delay * 2, 0.1)
        return f"not ready on port {self.port} within {self.start_timeout} s"

    def stop(self) -> int | None:
        """SIGINT (fast shutdown) to the postmaster's PID; SIGKILL (``kill``) if it has not exited
        after ``stop_timeout``. Returns its exit status (0 after a clean shutdown)."""
        process = self.process
        if process is None or process.poll() is not None:
            return process.returncode if process else None
        os.kill(process.pid, signal.SIGINT)
        try:
            return process.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            return self.kill()

    def kill(self) -> int | None:
        """SIGKILL the postmaster and every process it started, by PID (a crash of the whole
        server); waits until all are gone. Returns the postmaster's exit status (-9)."""
        process = self.process
        if process is None or process.poll() is not None:
            return process.returncode if process else None
        try:
            os.kill(process.pid, signal.SIGSTOP)  # no more forks while its children are listed
            wait_until(lambda: proc_state(process.pid) in (None, "T", "t", "Z", "X"),
                       self.stop_timeout, f"postmaster {process.pid} stopping on SIGSTOP")
        except ProcessLookupError:
            pass
        children = descendant_pids(process.pid)
        for pid in [process.pid, *children]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait(timeout=self.stop_timeout)
        wait_until(lambda: all(pid_gone(pid) for pid in children), self.stop_timeout,
                   f"postgres processes {children} exiting on SIGKILL")
        return process.returncode

    # ------------------------------------------------------------------ SQL

    def psql(self, sql: str, *, database: str | None = None, timeout: float = 30.0) -> str:
        """Run ``sql`` (one or more statements, each committed on its own) with the ``psql`` CLI
        over TCP and return its output: unaligned, tuples only (``a|b`` rows, one per line),
        without command tags or the last newline. PostgresError on any error (ON_ERROR_STOP)."""
        argv = [self.bins["psql"], "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", str(self.port),
                "-U", self.user, "-d", database or self.database, "-f", "-"]
        done = subprocess.run(argv, input=sql, capture_output=True, text=True, timeout=timeout, env=self._env())
        if done.returncode != 0:
            raise PostgresError(f"psql exited with {done.returncode}: {done.stderr.strip()}\n--- SQL ---\n{sql}")
        return done.stdout.rstrip("\n")

    def create_database(self, name: str) -> str:
        """``CREATE DATABASE name`` (letters, digits and _ only); returns its URL."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"database name {name!r}: use letters, digits and _")
        self.psql(f'CREATE DATABASE "{name}"', database="postgres")
        return self.database_url(name)


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    """A private PostgreSQL server (``durable=False``: for tests that never crash it); fails,
    never skips, when PostgreSQL is not installed. Import it into a test module to use it."""
    reason = missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    with PostgresServer(durable=False) as server:
        yield server
