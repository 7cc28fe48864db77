"""Three real browsers meet through a real Janus that Switchboard placed the call on.

Janus gathers no ICE candidate on loopback (see janus_harness.py), so the whole scenario runs in
a network namespace this test creates (``netns.Namespace``): ``Namespace.call`` starts a child
Python with ``ip netns exec``, and everything it starts is inside too: one Janus 1.1.2 whose
``interface`` and ``ice_enforce_list`` are the namespace's veth address, ``switchboard serve
--dev`` (``$TEST_SWITCHBOARD_BIN``) with that Janus registered through the admin API as SFU
``janus-fra`` (polled every 200 ms), and three headless Chromiums (chromedriver and its
browser are the child's descendants). Leaving the namespace's ``with`` block kills by PID
whatever is left inside and deletes it, also after a failure.

alice, bob and carol open ``/demo/?user=NAME`` and join meeting ``sfu-standup``; each page
must report ``call.state.sfu.kind == 'janus'`` (the registered SFU), show 3 tiles, and decode
2 remote videos (tile size and frames, ``requestVideoFrameCallback``, ``getStats``
``framesDecoded``) that come through Janus (the library's peer connections are its Janus
handles, with Janus's address in their remote descriptions). Needs root, Janus and Chromium.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

import netns
from browser_harness import require_chromium

SCENARIO_TIMEOUT_S = 120.0
SFU_ID = "janus-fra"
MEETING = "sfu-standup"
USERS = ("alice", "bob", "carol")
ADMIN_PATTERN = re.compile(r"admin=http://127\.0\.0\.1:([0-9]+)")

#: The remote descriptions of the library's Janus peer connections (``call.media.room.handles``).
JANUS_PCS_JS = """
const room = window.switchboardDemo.call.media && window.switchboardDemo.call.media.room;
if (!room) return null;
return Array.from(room.handles.values()).filter((h) => h.pc).map((h) => ({
  kind: h.kind, connectionState: h.pc.connectionState,
  remoteSdp: h.pc.remoteDescription ? h.pc.remoteDescription.sdp : ''}));
"""


def test_meeting_of_three_browsers_through_janus() -> None:
    reason = netns.missing_requirements()
    if reason:
        pytest.fail(reason, pytrace=False)
    require_chromium()
    with netns.Namespace.create() as ns:
        name = ns.name
        result = ns.call("test_browser_janus:run_scenario", {"address": ns.address}, timeout=SCENARIO_TIMEOUT_S)
    assert not netns.exists(name), f"namespace {name} left behind"
    print(f"\n[browser janus] namespace {name} ({result['address']}): {result['summary']}")


def _log(message: str) -> None:
    print(f"[browser janus {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_scenario(address: str) -> dict:
    """Inside the namespace holding ``address``: Janus, the daemon, three browsers."""
    from browser_harness import Browser, demo_daemon_env, poll
    from browser_page import DemoPage
    from conftest import SERVE_ARGS, _launch
    from janus_harness import JanusInstance
    from test_switchboard_media import Admin

    local = netns.local_addresses()
    assert sorted(local) == sorted(["127.0.0.1", address]), f"not inside the media namespace: {local}"
    janus = JanusInstance(interface=address, ice_enforce_list=address)
    env = demo_daemon_env(placement_poll_interval_ms=200, placement_poll_timeout_ms=250,
                          placement_stale_after_ms=5000)
    env["JANUS_FRA_SECRET"] = janus.admin_secret
    browsers: list[Browser] = []
    daemon = None
    with contextlib.ExitStack() as stack:
        stack.enter_context(janus)
        work = Path(tempfile.mkdtemp(prefix="sb-browser-janus-"))
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        daemon = stack.enter_context(contextlib.contextmanager(_launch)(work, env, args=(*SERVE_ARGS, "--dev")))
        try:
            admin = Admin(int(poll(lambda: (m := ADMIN_PATTERN.search(daemon.output.text())) and m.group(1),
                                   "the daemon's admin URL")))
            admin.register(SFU_ID, janus, "fra", "JANUS_FRA_SECRET")
            poll(lambda: admin.sfu(SFU_ID)["fresh"], f"{SFU_ID} fresh")
            _log(f"daemon pid {daemon.process.pid} port {daemon.port}; Janus pid {janus.pid} {janus.http_url}")
            pages = []
            for user in USERS:
                browser = Browser(user)
                browsers.append(browser)
                pages.append(DemoPage(browser, daemon.http_base).open(user, speaking=0))
            started = time.monotonic()
            for page in pages:
                page.type("meeting-id", MEETING)
                page.click("join-meeting-button")
            summary = {}
            for page in pages:
                page.wait_state(screen="call", callingState="joined")
                sfu = page.browser.js("return window.switchboardDemo.call.state.sfu;")
                assert sfu and sfu["kind"] == "janus" and sfu["id"] == SFU_ID and sfu["url"] == janus.http_url, sfu
                tiles = page.wait_tiles(3)
                assert sorted(t["userId"] for t in tiles) == sorted(USERS), tiles
            for page in pages:
                evidence = page.wait_remote_video(2, timeout=40)
                remote = sorted(t["userId"] for t in evidence["tiles"])
                assert remote == sorted(u for u in USERS if u != page.name), evidence
                handles = page.browser.js(JANUS_PCS_JS)
                assert handles and all(f"c=IN IP4 {address}" in h["remoteSdp"] for h in handles), handles
                assert sum(1 for h in handles if h["kind"] == "subscriber") == 2, [h["kind"] for h in handles]
                summary[page.name] = {
                    "remote": remote, "peer_connections": evidence["stats"]["peerConnections"],
                    "frames_decoded": [r["framesDecoded"] for r in evidence["stats"]["inbound"]]}
            summary["join_to_all_video_s"] = round(time.monotonic() - started, 1)
            status, view = admin.call("GET", f"/v1/calls/default/{MEETING}?events=0")
            assert status == 200 and view["sfu"]["id"] == SFU_ID, (status, view)
            return {"address": address, "summary": summary}
        except BaseException:
            for browser in browsers:
                _log(f"--- {browser.name}: console ---\n{browser.console_text()}")
            _log(f"--- Janus log tail ---\n{janus.log_text()[-2000:] if janus.log_path else ''}")
            _log(f"--- daemon output tail ---\n{daemon.output.text()[-4000:]}")
            raise
        finally:
            for browser in browsers:
                browser.close()
