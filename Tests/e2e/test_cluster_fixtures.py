"""Tests of the scale-out fixtures: ``pgserver.PostgresServer`` and ``haproxy.HAProxy``.

PostgreSQL: answers over TCP on its own port as its own superuser; runs as the ``postgres``
user when the tests run as root; a table survives a clean stop and start on the same folder and
port; after a SIGKILL of the whole server, a start recovers (crash recovery) with every
committed row; no process of the server is left after either.

HAProxy: two tiny TCP backends that each answer with their own name; connections through
HAProxy reach both; once one backend is stopped, HAProxy marks it DOWN and every new connection
reaches the other; no HAProxy process is left after stop.

Nothing is skipped: a missing PostgreSQL or HAProxy fails with what installs it (scripts/test
does). No Switchboard build is needed. Nothing sleeps to wait: states are polled with deadlines.
"""

from __future__ import annotations

import os
import pwd
import signal
import socket
import socketserver
import threading
from pathlib import Path

import pytest

import haproxy
import pgserver
from haproxy import HAProxy
from child_server import wait_until
from pgserver import PostgresServer
from procinfo import descendant_pids, pid_gone

PACKAGED_PG_PORT = 5432


def require(module) -> None:
    """Fail (never skip) the test with what installs the tool when ``module`` cannot run it."""
    reason = module.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)


def process_uid(pid: int) -> int:
    """The real UID of ``pid`` (``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def assert_gone(pids: list[int], what: str) -> None:
    wait_until(lambda: all(pid_gone(pid) for pid in pids), 10.0, f"{what} {pids} gone")


# ---------------------------------------------------------------------------------- PostgreSQL


def test_postgres_answers_over_tcp_as_its_own_server() -> None:
    require(pgserver)
    with PostgresServer() as pg:
        assert pg.port not in (0, PACKAGED_PG_PORT)
        assert pg.url == f"postgres://switchboard@127.0.0.1:{pg.port}/postgres"
        assert pg.dsn == f"host=127.0.0.1 port={pg.port} user=switchboard dbname=postgres"
        assert pg.psql("SELECT 1") == "1"
        # inet_server_* are NULL over a Unix socket: this answer came over TCP to our port.
        assert pg.psql("SELECT inet_server_addr(), inet_server_port(), current_user") == \
            f"127.0.0.1|{pg.port}|switchboard"
        assert pg.psql("SHOW unix_socket_directories") == str(pg.socket_dir)
        assert pg.psql("SHOW data_directory") == str(pg.data_dir)
        assert pg.psql("SHOW server_encoding") == "UTF8"
        # Durable unless asked otherwise: crash tests rely on it.
        assert pg.psql("SHOW fsync; SHOW synchronous_commit; SHOW full_page_writes") == "on\non\non"
        expected_uid = pwd.getpwnam("postgres").pw_uid if os.geteuid() == 0 else os.getuid()
        assert process_uid(pg.pid) == expected_uid
        url = pg.create_database("sb_cluster")
        assert url == f"postgres://switchboard@127.0.0.1:{pg.port}/sb_cluster"
        assert pg.psql("SELECT current_database()", database="sb_cluster") == "sb_cluster"
        with pytest.raises(pgserver.PostgresError, match="no_such_table"):
            pg.psql("SELECT * FROM no_such_table")
        folder = pg.dir
    assert not folder.exists()


def test_postgres_not_durable_turns_off_syncs() -> None:
    require(pgserver)
    with PostgresServer(durable=False, settings={"max_connections": 50}) as pg:
        assert pg.psql("SHOW fsync; SHOW synchronous_commit; SHOW full_page_writes; SHOW max_connections") == \
            "off\noff\noff\n50"


def ports_taken_first(monkeypatch: pytest.MonkeyPatch, module) -> socket.socket:
    """Make ``module``'s first free-port pick a port another socket listens on (the race between
    choosing a port and binding it); later picks are free ones. Returns the squatting socket."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    real, picks = module.free_tcp_ports, []

    def pick(count: int, host: str = "127.0.0.1") -> list[int]:
        picks.append(count)
        return [squatter.getsockname()[1]] if len(picks) == 1 else real(count, host)

    monkeypatch.setattr(module, "free_tcp_ports", pick)
    return squatter


def test_postgres_retries_on_a_port_taken_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    require(pgserver)
    with ports_taken_first(monkeypatch, pgserver) as squatter:
        with PostgresServer(durable=False) as pg:
            assert pg.port != squatter.getsockname()[1]
            assert "could not bind" in pg.log_text()
            assert pg.psql("SELECT inet_server_port()") == str(pg.port)


def test_postgres_table_survives_stop_and_start() -> None:
    require(pgserver)
    with PostgresServer() as pg:
        pg.psql("CREATE TABLE kept (id int PRIMARY KEY, note text); INSERT INTO kept VALUES (1, 'before stop')")
        port, pid = pg.port, pg.pid
        children = descendant_pids(pid)
        assert children, "a running postmaster has background processes"
        assert pg.stop() == 0, pg.log_text()[-2000:]
        assert_gone([pid, *children], "postgres processes after stop()")
        assert "database system is shut down" in pg.log_text()
        pg.start()
        assert (pg.port, pg.data_dir.exists()) == (port, True)
        assert pg.pid != pid
        assert pg.psql("SELECT id, note FROM kept") == "1|before stop"
        pg.psql("INSERT INTO kept VALUES (2, 'after start')")
        assert pg.psql("SELECT count(*) FROM kept") == "2"


def test_postgres_kill_then_start_recovers_committed_rows() -> None:
    require(pgserver)
    with PostgresServer() as pg:
        pg.psql("CREATE TABLE acked (id int PRIMARY KEY)")
        for batch in range(5):  # separate commits, the last one right before the kill
            pg.psql(f"INSERT INTO acked SELECT g FROM generate_series({batch * 20 + 1}, {batch * 20 + 20}) g")
        port, pid = pg.port, pg.pid
        children = descendant_pids(pid)
        assert pg.kill() == -9
        assert_gone([pid, *children], "postgres processes after kill()")
        pg.start()
        assert pg.port == port
        log = pg.log_text()
        assert "automatic recovery in progress" in log, log[-2000:]
        assert pg.psql("SELECT count(*), min(id), max(id) FROM acked") == "100|1|100"
        new_pid = pg.pid
        assert pg.stop() == 0
        assert_gone([new_pid], "postmaster after stop()")


# ---------------------------------------------------------------------------------- HAProxy


class NameServer(socketserver.TCPServer):
    """A TCP backend on a free 127.0.0.1 port that sends its name and closes each connection."""

    allow_reuse_address = True

    def __init__(self, name: str) -> None:
        self.name = name

        class Handler(socketserver.BaseRequestHandler):
            def handle(handler) -> None:
                handler.request.sendall(name.encode() + b"\n")

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                       name=f"backend-{name}", daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        """Stop serving and close the listening socket: new connections are refused."""
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


def fetch_name(lb: HAProxy) -> str:
    """Connect through the balancer and read the answering backend's name."""
    with socket.create_connection((lb.host, lb.port), timeout=5) as sock:
        data = b""
        while chunk := sock.recv(64):
            data += chunk
    return data.decode().strip()


@pytest.mark.parametrize("balance", ["roundrobin", "leastconn"])
def test_haproxy_spreads_connections_and_drops_a_dead_backend(balance: str) -> None:
    require(haproxy)
    alpha, beta = NameServer("alpha"), NameServer("beta")
    try:
        with HAProxy({"alpha": alpha.address, "beta": beta.address}, balance=balance) as lb:
            assert "chroot" not in lb.config() and "user " not in lb.config()
            assert lb.port not in (alpha.server_address[1], beta.server_address[1])
            lb.wait_for_state("alpha", "UP", timeout=10)
            lb.wait_for_state("beta", "UP", timeout=10)
            names = [fetch_name(lb) for _ in range(6)]
            assert set(names) == {"alpha", "beta"}, names
            if balance == "roundrobin":
                assert names.count("alpha") == names.count("beta") == 3, names

            beta.close()
            lb.wait_for_state("beta", "DOWN", timeout=10)
            assert lb.backend_states() == {"alpha": "UP", "beta": "DOWN"}
            assert [fetch_name(lb) for _ in range(6)] == ["alpha"] * 6

            pid = lb.pid
            # HAProxy 2.6 in the foreground (-db) ends on SIGTERM by the signal itself.
            assert lb.stop() in (0, -signal.SIGTERM), lb.log_text()
            assert_gone([pid], "haproxy after stop()")
            with pytest.raises(OSError):
                socket.create_connection((lb.host, lb.port), timeout=2).close()
            folder = lb.dir
        assert not folder.exists()
    finally:
        alpha.close()
        if beta.thread.is_alive():
            beta.close()


def test_haproxy_retries_on_a_port_taken_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    require(haproxy)
    alpha = NameServer("alpha")
    try:
        with ports_taken_first(monkeypatch, haproxy) as squatter:
            with HAProxy([alpha.address]) as lb:
                assert lb.port != squatter.getsockname()[1]
                assert "cannot bind" in lb.log_text()
                assert lb.backend_states() == {"s1": "UP"}
                assert fetch_name(lb) == "alpha"
    finally:
        alpha.close()
