"""PeerJS-shaped benchmark messages carrying a send timestamp."""

from __future__ import annotations

import json
import re

TS_PATTERN = re.compile(rb'"ts":(\d+)')
HEARTBEAT = b'{"type":"HEARTBEAT"}'


def sdp_filler(length: int) -> str:
    """SDP-looking text, already JSON-escaped, `length` characters (one less if it would end mid-escape)."""
    lines = [
        "v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", "s=-", "t=0 0",
        "a=group:BUNDLE 0 1", "a=msid-semantic: WMS stream",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 103 104 9 0 8 106 105 13 110 112 113 126",
        "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0", "a=ice-ufrag:Zq3v",
        "a=ice-pwd:5ZcAxNbr6kz1hVW4LmZ9Nq8X", "a=ice-options:trickle",
        "a=fingerprint:sha-256 7B:8B:F0:65:5F:78:E2:51:3B:AC:6F:F3:3F:46:1B:35",
        "a=setup:actpass", "a=mid:0", "a=sendrecv", "a=rtcp-mux",
        "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1",
    ]
    text = "\\r\\n".join(lines) + "\\r\\n"
    return (text * (length // len(text) + 1))[:length].rstrip("\\")


class Template:
    """A message pre-rendered around its timestamp: render(ts) is one format."""

    def __init__(self, kind: str, dst: str, connection_id: str, size: int):
        skeleton = json.dumps({
            "type": kind,
            "dst": dst,
            "payload": {
                "sdp": {"type": kind.lower(), "sdp": "@SDP@"},
                "type": "media",
                "connectionId": connection_id,
                "metadata": {"ts": "@TS@"},
            },
        }, separators=(",", ":"))
        base = len(skeleton) - len("@SDP@") - len('"@TS@"') + 19
        skeleton = skeleton.replace("@SDP@", sdp_filler(max(0, size - base)))
        prefix, suffix = skeleton.split('"@TS@"')
        self.prefix = prefix.encode()
        self.suffix = suffix.encode()

    def render(self, ts: int) -> bytes:
        """The message bytes carrying send time `ts` (monotonic ns)."""
        return b"%b%d%b" % (self.prefix, ts, self.suffix)


def extract_ts(payload: memoryview) -> int | None:
    """The timestamp a message carries; looks at its tail first."""
    match = TS_PATTERN.search(bytes(payload[-64:]))
    if match is None:
        match = TS_PATTERN.search(bytes(payload))
    return int(match.group(1)) if match else None
