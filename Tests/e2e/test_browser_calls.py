"""The demo app (clients/demo) and the browser library (clients/js/src) in real headless Chromium.

Each test starts its own ``switchboard serve --dev`` (``/sdk/``, ``/demo/``, ``POST /dev/token``)
on free loopback ports and one Chromium per user (``browser_harness``), each signed in with
``/demo/?user=NAME``. Media is Chromium's fake camera and microphone, peer to peer over
loopback (no SFU is registered). Every check reads the page (``browser_page.DemoPage``) and
every wait polls with a deadline.

- ringing: alice rings bob; bob's incoming screen names alice; he accepts; both pages show two
  tiles and decode the other's video; alice ends the call; both are back home and idle.
- reject: bob declines; alice is back home and her status says declined.
- missed: nobody answers (ringing timeouts of 2 s); alice: "no answer", bob: missed call.
- mesh: three pages join one meeting; each shows 3 tiles and decodes 2 remote videos.
- resume: alice's network drops mid-call (``Browser.drop_network``); bob mutes meanwhile;
  after it comes back alice's connection resumed, she sees bob muted, the call goes on.
- token refresh: 15 s tokens (``?ttl=15``), ``connection.token_expiring`` 10 s before expiry;
  past the first token's expiry the original socket is still open and the call goes on.

``SWITCHBOARD_SCREENSHOTS=1`` makes the ringing test save docs/images/demo-incoming.png and
docs/images/demo-call.png (``SWITCHBOARD_SCREENSHOTS_DIR`` to write elsewhere).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from browser_harness import REPO_ROOT, browsers, demo_daemon, poll  # noqa: F401 - fixtures
from browser_page import DemoPage

RINGING_TIMEOUTS = {"call_types_ringing_incoming_timeout_ms": 2000,
                    "call_types_ringing_auto_cancel_timeout_ms": 2000}
CLOSE_PAGE_SOCKET_JS = "window.switchboardDemo.client._connection.ws.close(4000, 'test drop');"


def screenshot(page: DemoPage, name: str) -> None:
    """Save ``name`` (docs/images/) only when ``SWITCHBOARD_SCREENSHOTS=1``: CI leaves them alone."""
    if os.environ.get("SWITCHBOARD_SCREENSHOTS") != "1":
        return
    folder = Path(os.environ.get("SWITCHBOARD_SCREENSHOTS_DIR") or REPO_ROOT / "docs" / "images")
    page.browser.screenshot(folder / name)
    assert (folder / name).stat().st_size > 0


def pages(daemon, browsers, *users: str, **params) -> list[DemoPage]:
    """One Chromium per user, each signed in (home screen, connected)."""
    return [DemoPage(browsers(user), daemon.http_base).open(user, **params) for user in users]


def ring(caller: DemoPage, callee: DemoPage) -> None:
    """``caller`` rings ``callee`` from the home screen; both see the ring."""
    caller.type("callee", callee.name)
    caller.click("ring-button")
    # The demo joins the call at once as the caller: the library's callingState is then
    # 'joined' (its session ranks over ringing) while the outgoing screen shows the ring.
    state = poll(lambda: (s := caller.state())["screen"] == "outgoing" and s["ringing"]
                 and s["ringing"]["outgoing"] and s, f"{caller.name} rings", describe=caller.describe)
    assert state["callingState"] in ("ringing-outgoing", "joining", "joined"), state
    assert caller.text("outgoing-callee") == callee.name
    callee.wait_state(screen="incoming", callingState="ringing-incoming")
    assert callee.text("incoming-caller") == caller.name, callee.describe()


def in_call_together(a: DemoPage, b: DemoPage) -> None:
    """Both joined, two tiles each (own one ``local``), each decoding the other's video."""
    for page, other in ((a, b), (b, a)):
        page.wait_state(screen="call", callingState="joined")
        tiles = page.wait_tiles(2)
        assert sorted((t["userId"], t["local"]) for t in tiles) == sorted(
            [(page.name, True), (other.name, False)]), tiles
    for page in (a, b):
        evidence = page.wait_remote_video(1)
        assert evidence["tiles"][0]["userId"] != page.name


def ring_accept_video_and_hang_up(browsers, alice_base: str, bob_base: str, screenshots: bool = False) -> None:
    """Alice's page on ``alice_base`` rings bob's on ``bob_base``; bob's incoming screen names
    alice, he accepts, both decode the other's video, alice hangs up and both are back home."""
    alice, bob = (DemoPage(browsers(user), base).open(user) for user, base in (("alice", alice_base), ("bob", bob_base)))
    ring(alice, bob)
    if screenshots:
        screenshot(bob, "demo-incoming.png")
    bob.click("accept-button")
    in_call_together(alice, bob)
    call_id = alice.text("call-id")
    assert call_id and bob.text("call-id") == call_id
    assert alice.state()["callType"] == "ringing"
    if screenshots:
        screenshot(alice, "demo-call.png")

    alice.click("hangup-button")
    for page in (alice, bob):
        state = page.wait_home("back home after alice hung up")
        assert state["callingState"] == "ended", state  # alice's hang-up ends a 1:1 call for both
        assert page.tiles() == []
    assert "ended" in bob.state()["status"], bob.describe()


def test_ring_accept_video_and_hang_up(demo_daemon, browsers) -> None:
    daemon = demo_daemon()
    ring_accept_video_and_hang_up(browsers, daemon.http_base, daemon.http_base, screenshots=True)


def test_ring_rejected_says_declined(demo_daemon, browsers) -> None:
    daemon = demo_daemon()
    alice, bob = pages(daemon, browsers, "alice", "bob")
    ring(alice, bob)
    bob.click("reject-button")
    bob.wait_home("bob declined")
    state = alice.wait_home("alice's call declined", status="declined")
    assert "bob" in state["status"], state


def test_ring_unanswered_is_missed(demo_daemon, browsers) -> None:
    daemon = demo_daemon(**RINGING_TIMEOUTS)
    alice, bob = pages(daemon, browsers, "alice", "bob")
    rang_at = time.monotonic()
    ring(alice, bob)
    alice_state = alice.wait_home("alice's ring timed out", timeout=15)
    bob_state = bob.wait_home("bob's ring timed out", timeout=15)
    assert time.monotonic() - rang_at < 12
    assert "no answer" in alice_state["status"], alice_state
    assert "missed" in bob_state["status"] and "alice" in bob_state["status"], bob_state


def test_mesh_meeting_of_three(demo_daemon, browsers) -> None:
    daemon = demo_daemon()
    trio = pages(daemon, browsers, "alice", "bob", "carol")
    for page in trio:
        page.type("meeting-id", "standup")
        page.click("join-meeting-button")
    for page in trio:
        page.wait_state(screen="call", callingState="joined")
        tiles = page.wait_tiles(3)
        assert sorted(t["userId"] for t in tiles) == ["alice", "bob", "carol"], tiles
        assert [t["userId"] for t in tiles if t["local"]] == [page.name], tiles
        assert page.text("call-id") == "standup"
        assert page.browser.js("return window.switchboardDemo.call.state.sfu") is None
    for page in trio:
        evidence = page.wait_remote_video(2, timeout=30)
        assert sorted(t["userId"] for t in evidence["tiles"]) == sorted(p.name for p in trio if p is not page)
        assert evidence["stats"]["peerConnections"] == 2, evidence["stats"]
    trio[0].click("hangup-button")
    trio[0].wait_home("alice left the meeting")
    for page in trio[1:]:
        page.wait_tiles(2)


def participant(page: DemoPage, user: str) -> dict:
    return page.browser.js(
        "return window.switchboardDemo.call.state.participants.find((p) => p.user_id === arguments[0]) || null;", user)


def test_resume_after_network_drop(demo_daemon, browsers) -> None:
    daemon = demo_daemon()
    alice, bob = pages(daemon, browsers, "alice", "bob", speaking=0)
    ring(alice, bob)
    bob.click("accept-button")
    in_call_together(alice, bob)
    connection_id = alice.browser.js("return window.switchboardDemo.client._connection.info.connection_id;")
    assert participant(alice, "bob")["audio"] is True

    how = alice.browser.drop_network(daemon.port, CLOSE_PAGE_SOCKET_JS)
    print(f"\n[browser resume] network drop: {how}")
    alice.wait_state(connection="reconnecting", callingState="reconnecting", what="alice noticed the drop")
    bob.click("mute-button")
    poll(lambda: participant(bob, "bob")["audio"] is False, "bob's own state says muted",
         describe=bob.describe)
    bob.wait("bob's tile shows him muted", "return document.querySelector('#tiles .tile.local.audio-off')")
    assert alice.state()["connection"] == "reconnecting"
    assert participant(alice, "bob")["audio"] is True, "alice saw the mute while offline"

    alice.browser.restore_network()
    alice.wait_state(connection="connected", callingState="joined", what="alice reconnected", timeout=30)
    info = alice.browser.js("return window.switchboardDemo.client._connection.info;")
    assert info["resumed"] is True and info["connection_id"] == connection_id, info
    assert info["replay_complete"] is True and info["replayed"] >= 1, info
    poll(lambda: participant(alice, "bob")["audio"] is False, "alice sees bob muted after the resume",
         describe=alice.describe)
    alice.wait("bob's tile muted on alice's page",
               "return document.querySelector('#tiles .tile[data-user-id=\"bob\"].audio-off')")
    for page in (alice, bob):
        state = page.wait_state(screen="call", callingState="joined")
        assert len(state["participants"]) == 2, state
        page.wait_remote_video(1)


def test_token_refresh_keeps_the_call(demo_daemon, browsers) -> None:
    # 15 s tokens and token_expiring 10 s ahead: the refresh comes ~5 s in, the first token
    # expires at 15 s (the server closes a socket whose token expired at once, with 4001).
    daemon = demo_daemon(connect_token_expiring_ms=10000)
    alice, bob = pages(daemon, browsers, "alice", "bob", ttl=15)
    first_expiry_ms = alice.browser.js("return window.switchboardDemo.client._connection.info.expires_at;")
    alice.browser.js("""
        const c = window.switchboardDemo.client;
        window.__firstSocket = c._connection.ws;
        window.__events = [];
        c.on('event', (f) => window.__events.push(f.type));""")
    for page in (alice, bob):
        page.type("meeting-id", "refresh")
        page.click("join-meeting-button")
    in_call_together(alice, bob)
    alice.wait("connection.token_expiring arrived",
               "return window.__events.includes('connection.token_expiring')", timeout=15)

    def past_first_expiry() -> bool:
        state = alice.state()
        assert state["connection"] == "connected" and state["callingState"] == "joined", state
        assert alice.browser.js("return window.switchboardDemo.client._connection.ws === window.__firstSocket;"), (
            "alice's socket was replaced: the token was not refreshed in time")
        return time.time() * 1000 > first_expiry_ms + 1500

    poll(past_first_expiry, "past the first token's expiry", timeout=25, every=0.25)
    assert alice.browser.js("return window.switchboardDemo.client._tokens.providerCalls;") >= 1
    ready_state = alice.browser.js("return window.__firstSocket.readyState;")
    assert ready_state == 1, f"alice's first socket is not open any more (readyState {ready_state})"
    alice.click("mute-button")
    poll(lambda: participant(bob, "alice")["audio"] is False, "bob sees alice's mute, sent after the expiry",
         describe=bob.describe)
