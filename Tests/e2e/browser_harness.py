"""Headless Debian Chromium driven by selenium, for the real-browser tests of the demo app.

``Browser`` starts ``/usr/bin/chromedriver`` (``$TEST_CHROMEDRIVER_BIN``) driving
``/usr/bin/chromium`` (``$TEST_CHROMIUM_BIN``) with a profile (``--user-data-dir``) of its own
in a temporary folder, fake camera and microphone, no permission prompts, loopback ICE
candidates and autoplay without a gesture. ``close()`` quits the driver and then sends
SIGKILL, by PID, to every process it started that is still there: the chromedriver, its
descendants, and any process whose command line names the profile folder (Chromium's helpers,
including the crash handlers that detach from it: ``$XDG_CONFIG_HOME`` is set inside the
profile so that their ``--database`` names it); it polls until they are gone and removes the
profile.

The page helpers (``browser_page.DemoPage``) read state from the page, never sleep to wait:
every wait polls with a deadline (``poll``).

Fixtures (import them into a test module, as ``hostile.py``'s are):

- ``demo_daemon``: ``start(**config)`` runs ``switchboard serve --dev`` (``$TEST_SWITCHBOARD_BIN``)
  on free loopback ports, with ``auth.api_secret`` set (``/dev/token`` needs it), ``/sdk/`` and
  ``/demo/`` served from this checkout's ``clients/`` and ``config`` as extra
  ``SWITCHBOARD_*`` variables (``call_types.ringing.incoming_timeout_ms`` → ``2000`` …).
- ``browsers``: ``launch(name)`` → a ``Browser``; all are closed at teardown, and when the
  test failed each one's console log and state are printed (pytest shows them).

Chromium missing is a failure, not a skip: scripts/test installs ``chromium`` and
``chromium-driver`` (apt).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

CHROMIUM = os.environ.get("TEST_CHROMIUM_BIN", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TEST_CHROMEDRIVER_BIN", "/usr/bin/chromedriver")
REPO_ROOT = Path(__file__).resolve().parents[2]
SDK_DIR = REPO_ROOT / "clients" / "js" / "src"
DEMO_DIR = REPO_ROOT / "clients" / "demo"

BROWSER_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--use-fake-device-for-media-stream",
    "--use-fake-ui-for-media-stream",
    "--allow-loopback-in-peer-connection",
    "--autoplay-policy=no-user-gesture-required",
    # Nothing but the test's own traffic: no updates, sync, first-run pages or pings.
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--password-store=basic",
    "--window-size=1280,800",
)
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
DEFAULT_WAIT_S = 20.0


def require_chromium() -> None:
    """Fail (not skip) with a clear message when Chromium or its driver is missing."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        pytest.fail(
            f"browser tests need Debian's chromium and chromium-driver: {', '.join(missing)} not found "
            "(apt-get install chromium chromium-driver; scripts/test installs them; "
            "or set TEST_CHROMIUM_BIN / TEST_CHROMEDRIVER_BIN)",
            pytrace=False,
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.fail("browser tests need selenium: pip install -r Tests/e2e/requirements.txt", pytrace=False)


def poll(predicate: Callable[[], Any], what: str, timeout: float = DEFAULT_WAIT_S, every: float = 0.05,
         describe: Callable[[], Any] | None = None) -> Any:
    """Call ``predicate`` until it returns something truthy; fail after ``timeout`` seconds with
    ``what``, the last value and ``describe()`` (e.g. the page's state)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            extra = ""
            if describe is not None:
                with contextlib.suppress(Exception):
                    extra = f"\nstate: {describe()}"
            raise AssertionError(f"{what}: not within {timeout} s (last: {value!r}){extra}")
        time.sleep(every)  # polling cadence, not a wait for an outcome


# ---------------------------------------------------------------------- processes, by PID


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, state letter) of every process, from /proc."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        table[int(entry)] = (int(fields[1]), fields[0])
    return table


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (children, grandchildren…)."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def processes_naming(text: str) -> set[int]:
    """PIDs whose command line contains ``text`` (the unique profile folder of one browser)."""
    found = set()
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.add(int(entry))
            except OSError:
                pass
    return found


def alive(pids: set[int]) -> set[int]:
    """The ones of ``pids`` still running (zombies count as gone)."""
    table = _proc_table()
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


def kill_all(pids: set[int], timeout: float = STOP_TIMEOUT_S) -> set[int]:
    """SIGKILL each of ``pids`` still alive, by PID, and poll until none is; the ones signalled."""
    signalled = set()
    for pid in alive(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            signalled.add(pid)
    if signalled:
        poll(lambda: not alive(pids), f"processes {sorted(pids)} gone after SIGKILL", timeout, every=0.02)
    return signalled


# ---------------------------------------------------------------------- one browser


class Browser:
    """One headless Chromium with its own profile, driven by its own chromedriver.

    To run it in a network namespace, run the selenium client there too (``Namespace.call``):
    the driver and the browser are its children, and the driver's port is on that loopback."""

    def __init__(self, name: str, *, extra_flags: Sequence[str] = ()) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        require_chromium()
        self.name = name
        self.profile = tempfile.mkdtemp(prefix=f"sb-browser-{name}-")
        self.logs: list[dict] = []
        self.pids: set[int] = set()
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*BROWSER_FLAGS, *extra_flags, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # Chromium's crash handlers detach (their parent becomes init) and name their database,
        # under $XDG_CONFIG_HOME: inside the profile, so that they are found by its path too.
        env = dict(os.environ, XDG_CONFIG_HOME=str(Path(self.profile) / "config"))
        service = Service(CHROMEDRIVER, env=env, log_output=str(Path(self.profile) / "chromedriver.log"))
        self.driver = None
        try:
            self.driver = webdriver.Chrome(options=options, service=service)
        except BaseException:
            if getattr(service, "process", None) is not None:
                self.pids.add(service.process.pid)
            self.close()
            raise
        self.driver_pid = service.process.pid
        self.pids.add(self.driver_pid)
        self.driver.set_script_timeout(DEFAULT_WAIT_S)
        self.driver.set_page_load_timeout(START_TIMEOUT_S)
        self._remember_pids()

    def _remember_pids(self) -> None:
        if getattr(self, "driver_pid", None):
            self.pids |= descendants(self.driver_pid)
        self.pids |= processes_naming(self.profile)

    # -- script evaluation ------------------------------------------------------------

    def js(self, script: str, *args: Any) -> Any:
        """``execute_script``: the body of a function (use ``return``)."""
        return self.driver.execute_script(script, *args)

    def js_async(self, script: str, *args: Any) -> Any:
        """An async expression's value: ``script`` is the body of an async function."""
        wrapped = ("const done = arguments[arguments.length - 1];"
                   f"(async () => {{ {script} }})().then((v) => done({{ok: v}}), (e) => done({{error: String(e && e.stack || e)}}));")
        result = self.driver.execute_async_script(wrapped, *args)
        if "error" in result:
            raise AssertionError(f"{self.name}: script failed: {result['error']}")
        return result.get("ok")

    def cdp(self, command: str, params: dict | None = None) -> Any:
        return self.driver.execute_cdp_cmd(command, params or {})

    # -- network ------------------------------------------------------------------------

    def set_offline(self, offline: bool) -> None:
        """DevTools network emulation, offline or back online. Measured with Chromium 156: offline
        makes every NEW connection fail (``net::ERR_INTERNET_DISCONNECTED``, WebSockets too) but
        leaves an open WebSocket working both ways; ``drop_network`` also cuts those."""
        self.cdp("Network.enable")
        self.cdp("Network.emulateNetworkConditions", {
            "offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})

    def tcp_connections(self, port: int) -> list[tuple[str, int]]:
        """(local address, local port) of this browser's established TCP connections to ``port``
        (``ss -tnp``, matched to this browser's PIDs)."""
        import re
        import subprocess

        self._remember_pids()
        done = subprocess.run(["ss", "-tnpH", "state", "established", f"( dport = :{port} )"],
                              capture_output=True, text=True, timeout=10)
        found = []
        for line in done.stdout.splitlines():
            owners = {int(p) for p in re.findall(r"pid=([0-9]+)", line)}
            fields = line.split()
            if owners & self.pids and len(fields) >= 4:
                address, _, local_port = fields[2].rpartition(":")
                found.append((address, int(local_port)))
        return found

    def drop_network(self, port: int, page_socket_js: str | None = None) -> str:
        """Cut this browser off: DevTools offline (no reconnect gets through) and every TCP
        connection it holds to ``port`` aborted by the kernel (``ss -K``: the browser's side is
        destroyed, the server gets a reset), as when a network goes away. Without the rights for
        ``ss -K`` (not root), ``page_socket_js`` (a script closing the page's socket) is run instead.
        Returns how it was done."""
        import subprocess

        self.set_offline(True)
        connections = self.tcp_connections(port)
        for _, local_port in connections:
            subprocess.run(["ss", "-K", "-tn", "state", "established",
                            f"( sport = :{local_port} and dport = :{port} )"],
                           capture_output=True, text=True, timeout=10)
        if connections and not any(lp in {c[1] for c in self.tcp_connections(port)} for _, lp in connections):
            return f"DevTools offline + ss -K of {len(connections)} TCP connection(s) to port {port}"
        assert page_socket_js, f"{self.name}: could not abort its connections to port {port} ({connections})"
        self.js(page_socket_js)
        return "DevTools offline + the page's WebSocket closed from the page (ss -K not possible)"

    def restore_network(self) -> None:
        self.set_offline(False)

    # -- diagnostics -----------------------------------------------------------------------

    def console(self) -> list[dict]:
        """Every console entry so far (the driver hands each out once; kept here)."""
        if self.driver is not None:
            with contextlib.suppress(Exception):
                self.logs.extend(self.driver.get_log("browser"))
        return self.logs

    def console_text(self, last: int = 80) -> str:
        return "\n".join(f"  [{e.get('level')}] {e.get('message')}" for e in self.console()[-last:])

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        assert self.driver.save_screenshot(str(path)), f"{self.name}: screenshot to {path} failed"

    # -- teardown ------------------------------------------------------------------------------

    def close(self) -> None:
        """Quit the driver, then SIGKILL by PID whatever it started that is left; remove the profile."""
        with contextlib.suppress(Exception):
            self._remember_pids()
        if self.driver is not None:
            self.console()
            with contextlib.suppress(Exception):
                self.driver.quit()
            self.driver = None
        with contextlib.suppress(Exception):
            self.pids |= processes_naming(self.profile)
        kill_all(self.pids)
        shutil.rmtree(self.profile, ignore_errors=True)


# ---------------------------------------------------------------------- fixtures


#: ``auth.api_secret`` of the demo daemon (``/dev/token`` signs with it).
DEMO_API_SECRET = "browser-e2e-secret-0123456789abcdef0123"


def demo_daemon_env(**config: Any) -> dict[str, str]:
    """``daemon_env()`` plus the demo's keys; ``config`` maps dotted keys written with ``_``
    for dots (``call_types_ringing_incoming_timeout_ms=2000``) to values."""
    from conftest import daemon_env

    env = daemon_env()
    env.update({
        "SWITCHBOARD_AUTH_API_SECRET": DEMO_API_SECRET,
        "SWITCHBOARD_HTTP_SDK_DIR": str(SDK_DIR),
        "SWITCHBOARD_HTTP_DEMO_DIR": str(DEMO_DIR),
        # The browsers are closed first; a short drain keeps the daemon's SIGTERM exit quick.
        "SWITCHBOARD_SHUTDOWN_DRAIN_TIMEOUT_MS": "2000",
    })
    for key, value in config.items():
        env["SWITCHBOARD_" + key.upper()] = str(value).lower() if isinstance(value, bool) else str(value)
    return env


@pytest.fixture
def demo_daemon(tmp_path: Path):
    """``start(**config)`` → a running ``switchboard serve --dev`` (conftest's ``Switchboard``)."""
    from conftest import SERVE_ARGS, _launch

    with contextlib.ExitStack() as stack:
        count = [0]

        def start(**config: Any):
            count[0] += 1
            work = tmp_path / f"daemon-{count[0]}"
            work.mkdir()
            launch = contextlib.contextmanager(_launch)
            return stack.enter_context(launch(work, demo_daemon_env(**config), args=(*SERVE_ARGS, "--dev")))
        yield start


@pytest.fixture
def browsers(request: pytest.FixtureRequest):
    """``launch(name)`` → a ``Browser``; every one is closed (processes killed by PID) at teardown.
    When the test failed, each browser's console log is printed."""
    require_chromium()
    failed_before = request.session.testsfailed
    started: list[Browser] = []

    def launch(name: str, **kwargs: Any) -> Browser:
        browser = Browser(name, **kwargs)
        started.append(browser)
        return browser

    try:
        yield launch
    finally:
        failed = request.session.testsfailed > failed_before
        for browser in started:
            if failed:
                print(f"\n--- {browser.name}: console ---\n{browser.console_text()}")
            browser.close()
        leftovers = alive(set().union(*(b.pids for b in started))) if started else set()
        assert not leftovers, f"browser processes left running: {sorted(leftovers)}"
