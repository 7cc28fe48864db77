// @ts-check
/**
 * Peer-to-peer mesh (the join answered `sfu: null`): one RTCPeerConnection per other participant
 * session, signalled with `signal.send`, using the "perfect negotiation" pattern. The polite
 * side is decided deterministically: the session with the smaller id is polite.
 */

/** @param {string} own @param {string} remote */
export function isPolite(own, remote) { return own < remote; }

export class MeshMedia {
  /** @param {any} h hooks from Call._startMedia */
  constructor(h) {
    this.h = h;
    this.call = h.call;
    /** @type {Map<string, any>} */
    this.peers = new Map();
    this.stopped = false;
  }

  get own() { return this.call.state.ownSessionId; }

  async start() { this.syncParticipants(this.call.state.participants); }

  /** Opens a peer for every new remote session and closes the ones that left. */
  syncParticipants(participants) {
    if (this.stopped || !this.own) return;
    const remote = new Set(participants.map((p) => p.session_id).filter((s) => s !== this.own));
    for (const sid of remote) if (!this.peers.has(sid)) this._peer(sid);
    for (const sid of [...this.peers.keys()]) if (!remote.has(sid)) this._close(sid);
  }

  _peer(sid) {
    let peer = this.peers.get(sid);
    if (peer) return peer;
    const pc = new this.h.RTCPeerConnection({ iceServers: this.h.iceServers || [] });
    peer = { pc, polite: isPolite(this.own, sid), makingOffer: false, ignoreOffer: false, pendingCandidates: [], stream: null };
    this.peers.set(sid, peer);
    const send = (kind, payload) => this.h.signal(sid, kind, payload).catch((err) => this.h.log.warn('signal.send failed', { code: err.code }));
    pc.onicecandidate = (ev) => { if (ev.candidate) send('candidate', ev.candidate.toJSON ? ev.candidate.toJSON() : ev.candidate); };
    pc.onnegotiationneeded = async () => {
      try {
        peer.makingOffer = true;
        await pc.setLocalDescription();
        send('offer', { type: pc.localDescription.type, sdp: pc.localDescription.sdp });
      } catch (err) {
        this.h.log.warn('negotiation failed', { message: String(err) });
      } finally { peer.makingOffer = false; }
    };
    pc.ontrack = (ev) => {
      let stream = ev.streams && ev.streams[0];
      if (!stream) {
        if (!peer.stream) peer.stream = new (/** @type {any} */ (globalThis).MediaStream)();
        peer.stream.addTrack(ev.track);
        stream = peer.stream;
      }
      if (peer.stream !== stream || !this.call.remoteStreams.has(sid)) { peer.stream = stream; this.h.onStream(sid, stream); }
    };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === 'failed' && pc.restartIce) pc.restartIce();
    };
    const local = this.call.localStream;
    if (local) for (const track of local.getTracks()) pc.addTrack(track, local);
    else if (!peer.polite) {
      // Nothing to send: still ask to receive, so the impolite side starts a negotiation.
      pc.addTransceiver('audio', { direction: 'recvonly' });
      pc.addTransceiver('video', { direction: 'recvonly' });
    }
    return peer;
  }

  /** A `signal` event's data: `{from_session, kind, payload}`. */
  async handleSignal(d) {
    if (this.stopped || !d.from_session || d.to_session && d.to_session !== this.own) return;
    const peer = this._peer(d.from_session);
    const pc = peer.pc;
    try {
      if (d.kind === 'offer' || d.kind === 'answer') {
        const desc = d.payload;
        const collision = desc.type === 'offer' && (peer.makingOffer || pc.signalingState !== 'stable');
        peer.ignoreOffer = !peer.polite && collision;
        if (peer.ignoreOffer) return;
        await pc.setRemoteDescription(desc);
        for (const c of peer.pendingCandidates.splice(0)) await pc.addIceCandidate(c).catch(() => {});
        if (desc.type === 'offer') {
          await pc.setLocalDescription();
          await this.h.signal(d.from_session, 'answer', { type: pc.localDescription.type, sdp: pc.localDescription.sdp });
        }
      } else if (d.kind === 'candidate') {
        if (!pc.remoteDescription) { peer.pendingCandidates.push(d.payload); return; }
        try { await pc.addIceCandidate(d.payload); } catch (err) { if (!peer.ignoreOffer) throw err; }
      }
    } catch (err) {
      this.h.log.warn('signal handling failed', { kind: d.kind, message: String(err) });
    }
  }

  _close(sid) {
    const peer = this.peers.get(sid);
    if (!peer) return;
    this.peers.delete(sid);
    try { peer.pc.close(); } catch { /* ignore */ }
    this.h.onStreamRemoved(sid);
  }

  stop() {
    this.stopped = true;
    for (const sid of [...this.peers.keys()]) this._close(sid);
  }
}
