"""The demo app (``/demo/``) seen through one ``browser_harness.Browser``: its DOM contract.

``document.body.dataset``: ``screen`` (login|home|outgoing|incoming|call), ``callingState``
(idle|ringing-outgoing|ringing-incoming|joining|joined|reconnecting|ended), ``connection``
(idle|connecting|connected|reconnecting|disconnected); ``#status``; ``#tiles .tile`` with
``data-session-id``/``data-user-id`` (classes ``local``, ``dominant``, ``audio-off``) and a
``<video>`` each; ``window.switchboardDemo = {client, call}``.

Video is checked three ways, all read from the page: each remote tile's ``<video>`` has a size
(``videoWidth``) and its ``getVideoPlaybackQuality().totalVideoFrames`` grows; its
``requestVideoFrameCallback`` fires; and ``getStats()`` of the library's RTCPeerConnections
(found under ``call.media``: mesh ``peers[].pc``, Janus ``room.handles[].pc``) reports inbound
video with ``framesDecoded`` > 0.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import urlencode

from browser_harness import DEFAULT_WAIT_S, Browser, poll

STATE_JS = """
const b = document.body.dataset;
const d = window.switchboardDemo;
const call = d && d.call;
const client = d && d.client;
return {screen: b.screen, callingState: b.callingState, connection: b.connection,
        status: (document.getElementById('status') || {}).textContent || '',
        me: d ? d.me : null, callId: call ? call.id : null, callType: call ? call.type : null,
        libCallingState: call ? call.state.callingState : null,
        participants: call ? call.state.participants.map((p) => p.user_id + '/' + p.session_id) : [],
        ownSessionId: call ? call.state.ownSessionId : null,
        ringing: call ? {outgoing: call.state.ringing.outgoing, incoming: call.state.ringing.incoming,
                         from: call.state.ringing.from} : null,
        libConnection: client ? client.connectionState : null};
"""

TILES_JS = """
return Array.from(document.querySelectorAll('#tiles .tile')).map((t) => {
  const v = t.querySelector('video');
  const q = v && v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : null;
  return {sessionId: t.dataset.sessionId, userId: t.dataset.userId,
          local: t.classList.contains('local'), dominant: t.classList.contains('dominant'),
          audioOff: t.classList.contains('audio-off'), videoOff: t.classList.contains('video-off'),
          hasStream: !!(v && v.srcObject), width: v ? v.videoWidth : 0, height: v ? v.videoHeight : 0,
          frames: q ? q.totalVideoFrames : 0, paused: v ? v.paused : null};
});
"""

#: Resolves when every remote tile's video fired requestVideoFrameCallback ``arguments[0]`` times
#: (or at the deadline ``arguments[1]`` ms); the count per session id.
FRAME_CALLBACKS_JS = """
const want = arguments[0], deadline = Date.now() + arguments[1];
const videos = Array.from(document.querySelectorAll('#tiles .tile:not(.local)'))
  .map((t) => [t.dataset.sessionId, t.querySelector('video')]).filter(([, v]) => v);
const counts = Object.fromEntries(videos.map(([sid]) => [sid, 0]));
await Promise.all(videos.map(([sid, v]) => new Promise((resolve) => {
  if (!v.requestVideoFrameCallback) return resolve();
  const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
  const tick = () => { counts[sid]++; if (counts[sid] >= want) { clearTimeout(timer); resolve(); } else v.requestVideoFrameCallback(tick); };
  v.requestVideoFrameCallback(tick);
})));
return counts;
"""

#: getStats of every RTCPeerConnection the library holds for the current call: inbound video.
INBOUND_VIDEO_JS = """
const call = window.switchboardDemo && window.switchboardDemo.call;
const pcs = new Set(), seen = new Set();
const walk = (o, depth) => {
  if (!o || typeof o !== 'object' || seen.has(o) || depth > 5) return;
  seen.add(o);
  if (o instanceof RTCPeerConnection) { pcs.add(o); return; }
  if (o instanceof MediaStream || o instanceof Node || o instanceof WebSocket) return;
  if (o instanceof Map || o instanceof Set) { for (const v of o.values()) walk(v, depth + 1); return; }
  for (const k of Object.keys(o)) if (k !== 'client' && k !== 'h') walk(o[k], depth + 1);
};
walk(call && call.media, 0);
const out = [], states = [];
for (const pc of pcs) {
  states.push(`${pc.connectionState}/ice ${pc.iceConnectionState}/gathering ${pc.iceGatheringState}/${pc.signalingState}`);
  const stats = await pc.getStats();
  stats.forEach((r) => {
    if (r.type === 'inbound-rtp' && r.kind === 'video')
      out.push({framesDecoded: r.framesDecoded || 0, width: r.frameWidth || 0, codec: r.codecId || '',
                connectionState: pc.connectionState});
  });
}
return {peerConnections: pcs.size, states, inbound: out};
"""


class DemoPage:
    """The demo app of ``daemon`` (conftest's ``Switchboard``) in ``browser``."""

    def __init__(self, browser: Browser, daemon_base: str) -> None:
        self.browser = browser
        self.base = daemon_base.rstrip("/")
        self.name = browser.name

    # -- navigation and input ---------------------------------------------------------

    def open(self, user: str | None = None, **params: Any) -> "DemoPage":
        """Load ``/demo/`` (``?user=`` signs in at once) and wait for the app to start."""
        query = {**({"user": user} if user else {}), **{k: str(v) for k, v in params.items()}}
        url = f"{self.base}/demo/" + (f"?{urlencode(query)}" if query else "")
        self.browser.driver.get(url)
        self.wait("the demo app started", "return !!window.switchboardDemo")
        if user:
            self.wait_state(screen="home", connection="connected", what=f"{user} signed in")
        return self

    def click(self, element_id: str) -> None:
        from selenium.webdriver.common.by import By

        self.browser.driver.find_element(By.ID, element_id).click()

    def type(self, element_id: str, text: str) -> None:
        from selenium.webdriver.common.by import By

        field = self.browser.driver.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(text)

    def text(self, element_id: str) -> str:
        return self.browser.js("const e = document.getElementById(arguments[0]); return e ? e.textContent : null;",
                               element_id)

    # -- state ----------------------------------------------------------------------------

    def state(self) -> dict:
        return self.browser.js(STATE_JS)

    def describe(self) -> str:
        state = self.state()
        state["tiles"] = self.tiles()
        return f"{self.name}: {json.dumps(state)}"

    def wait(self, what: str, script: str, *args: Any, timeout: float = DEFAULT_WAIT_S) -> Any:
        """Poll a script (a function body returning a value) until it is truthy."""
        return poll(lambda: self.browser.js(script, *args), f"{self.name}: {what}", timeout,
                    describe=self.describe)

    def wait_state(self, *, what: str | None = None, timeout: float = DEFAULT_WAIT_S, **expected: Any) -> dict:
        """Wait until the body's data attributes (``screen``, ``callingState``, ``connection``)
        have the given values (a tuple: one of them) and/or ``status`` contains the given text;
        the state then."""
        def matches() -> dict | None:
            state = self.state()
            for key, value in expected.items():
                if key == "status":
                    if value not in state["status"]:
                        return None
                elif isinstance(value, tuple):
                    if state.get(key) not in value:
                        return None
                elif state.get(key) != value:
                    return None
            return state
        return poll(matches, f"{self.name}: {what or expected}", timeout, describe=self.describe)

    def wait_home(self, what: str, timeout: float = DEFAULT_WAIT_S, **expected: Any) -> dict:
        """Back on the home screen after a call, still connected: callingState ``ended`` (the
        call is over; the demo keeps showing it) or ``idle`` (we left or were never in it)."""
        return self.wait_state(screen="home", callingState=("idle", "ended"), connection="connected",
                               what=what, timeout=timeout, **expected)

    def tiles(self) -> list[dict]:
        return self.browser.js(TILES_JS)

    def wait_tiles(self, count: int, timeout: float = DEFAULT_WAIT_S) -> list[dict]:
        return poll(lambda: t if len(t := self.tiles()) == count else None,
                    f"{self.name}: {count} tiles", timeout, describe=self.describe)

    # -- video ----------------------------------------------------------------------------------

    def wait_remote_video(self, remote: int, frames: int = 10, timeout: float = DEFAULT_WAIT_S) -> dict:
        """Wait until ``remote`` remote tiles play video (a size, and ``frames`` more frames than
        when first seen playing), their ``requestVideoFrameCallback`` fires 3 times, and
        ``getStats`` shows ``remote`` inbound videos with frames decoded. Returns the evidence."""
        first: dict[str, int] = {}

        def playing() -> list[dict] | None:
            tiles = [t for t in self.tiles() if not t["local"]]
            good = []
            for tile in tiles:
                if tile["width"] > 0 and tile["frames"] > 0:
                    first.setdefault(tile["sessionId"], tile["frames"])
                    if tile["frames"] - first[tile["sessionId"]] >= frames:
                        good.append(tile)
            return good if len(tiles) == remote and len(good) == remote else None

        tiles = poll(playing, f"{self.name}: {remote} remote videos playing {frames} frames", timeout,
                     describe=lambda: f"{self.describe()}\npeer connections: {self.inbound_video()}")
        callbacks = self.browser.js_async(FRAME_CALLBACKS_JS, 3, int(timeout * 1000))
        assert len(callbacks) == remote and all(n >= 3 for n in callbacks.values()), (
            f"{self.name}: requestVideoFrameCallback counts {callbacks}")
        stats = poll(lambda: (s := self.inbound_video())["inbound"] and
                     sum(1 for r in s["inbound"] if r["framesDecoded"] > 0) >= remote and s,
                     f"{self.name}: getStats framesDecoded > 0 on {remote} inbound videos", timeout,
                     describe=lambda: self.inbound_video())
        return {"tiles": tiles, "frame_callbacks": callbacks, "stats": stats}

    def inbound_video(self) -> dict:
        return self.browser.js_async(INBOUND_VIDEO_JS)

    # -- the library's socket -------------------------------------------------------------------

    def socket_state(self) -> int | None:
        """readyState of the library's current WebSocket (None when it has none)."""
        return self.browser.js("const c = window.switchboardDemo.client;"
                               "const ws = c && c._connection && c._connection.ws; return ws ? ws.readyState : null;")


def dev_token(daemon_base: str, user: str, ttl_seconds: int = 3600) -> dict:
    """``POST /dev/token`` from the test process (loopback)."""
    request = urllib.request.Request(
        f"{daemon_base}/dev/token", method="POST", headers={"Content-Type": "application/json"},
        data=json.dumps({"user_id": user, "ttl_seconds": ttl_seconds}).encode())
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        assert response.status == 201, response.status
        return json.loads(response.read())
