// @ts-check
/**
 * Peer-to-peer mesh (the join answered `sfu: null`): one RTCPeerConnection per other participant
 * session, signalled with `signal.send`.
 *
 * The first negotiation of a pair has no glare: exactly one side offers. The session that is
 * NEWER in the call (later `joined_at`; on equal or unknown times the greater session id) offers
 * to every session already there; an existing participant never offers when it sees someone
 * join, it waits for the newcomer's offer. Later renegotiations (track changes, ICE restarts)
 * use the "perfect negotiation" pattern; the polite side is decided deterministically: the
 * session with the smaller id is polite.
 *
 * A watchdog on the offering side restarts ICE (a new offer with `iceRestart`) when a pair is
 * still not connecting a few seconds after an offer, at most twice.
 */

/** @param {string} own @param {string} remote */
export function isPolite(own, remote) { return own < remote; }

/**
 * Whether participant `own` joined the call after `remote` (and so makes the first offer).
 * Both sides of a pair reach opposite answers: later `joined_at` wins, ties and unknown times
 * are broken by the greater session id.
 * @param {{session_id: string, joined_at?: number}} own @param {{session_id: string, joined_at?: number}} remote
 */
export function joinedAfter(own, remote) {
  const a = own && own.joined_at;
  const b = remote && remote.joined_at;
  if (typeof a === 'number' && typeof b === 'number' && a !== b) return a > b;
  return String(own.session_id) > String(remote.session_id);
}

/** How long an offering side waits for a pair to start connecting before restarting ICE. */
export const MESH_WATCHDOG_MS = 5000;
/** ICE restarts the watchdog makes per pair at most. */
export const MESH_MAX_ICE_RESTARTS = 2;
/** A peer opened by an offer from a session not (yet) among the participants is dropped after this. */
const UNSEEN_PEER_MS = 15000;
/** Watchdog rounds a pair may spend in ICE 'checking' before it counts as stuck. */
const MAX_CHECKING_WAITS = 3;

export class MeshMedia {
  /** @param {any} h hooks from Call._startMedia */
  constructor(h) {
    this.h = h;
    this.call = h.call;
    /** @type {Map<string, any>} */
    this.peers = new Map();
    this.stopped = false;
    const g = /** @type {any} */ (globalThis);
    const clock = h.clock || {};
    this._setTimeout = clock.setTimeout || ((fn, ms) => g.setTimeout(fn, ms));
    this._clearTimeout = clock.clearTimeout || ((id) => g.clearTimeout(id));
  }

  get own() { return this.call.state.ownSessionId; }

  async start() { this.syncParticipants(this.call.state.participants); }

  /** Opens a peer for every new remote session and closes the ones that left. */
  syncParticipants(participants) {
    if (this.stopped || !this.own) return;
    const remote = new Set(participants.map((p) => p.session_id).filter((s) => s !== this.own));
    for (const sid of remote) {
      const peer = this.peers.get(sid);
      if (peer) { peer.seen = true; continue; }
      this._peer(sid, { offer: this._weOffer(sid, participants), seen: true });
    }
    // A peer opened by an early offer of a session we have not seen in the list yet stays.
    for (const [sid, peer] of [...this.peers]) if (!remote.has(sid) && peer.seen) this._close(sid);
  }

  /** Whether we make the first offer to `sid`: only when we are the newer session of the pair. */
  _weOffer(sid, participants = this.call.state.participants) {
    const me = participants.find((p) => p.session_id === this.own);
    const them = participants.find((p) => p.session_id === sid);
    if (!them) return false; // not in our list yet: it joined after us and will offer
    return joinedAfter(me || { session_id: this.own }, them);
  }

  /**
   * @param {string} sid
   * @param {{offer?: boolean, seen?: boolean}} [opts] `offer`: we make the first offer
   */
  _peer(sid, opts = {}) {
    let peer = this.peers.get(sid);
    if (peer) return peer;
    const pc = new this.h.RTCPeerConnection({ iceServers: this.h.iceServers || [] });
    peer = {
      sid, pc, polite: isPolite(this.own, sid), offerer: !!opts.offer, seen: !!opts.seen,
      established: false, negotiationSkipped: false, makingOffer: false, ignoreOffer: false,
      pendingCandidates: [], stream: null, restarts: 0, checkingWaits: 0, watchdog: null, unseenTimer: null,
      chain: Promise.resolve(), closed: false,
    };
    this.peers.set(sid, peer);
    pc.onicecandidate = (ev) => {
      if (ev.candidate) this._send(peer, 'candidate', ev.candidate.toJSON ? ev.candidate.toJSON() : ev.candidate);
    };
    pc.onnegotiationneeded = () => {
      // The first offer/answer is made explicitly by the newer side; until it is done, the
      // events that adding our tracks queue are not ours to act on.
      if (!peer.established) { peer.negotiationSkipped = true; return; }
      this._offer(peer).catch(() => {});
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
      if (pc.connectionState === 'failed' && peer.established && pc.restartIce) pc.restartIce();
    };
    // Our tracks go in before any offer or remote offer, so each side's SDP has its m-lines
    // (on the answering side the remote offer's m-lines pick up these transceivers).
    const local = this.call.localStream;
    const tracks = local ? local.getTracks() : [];
    for (const track of tracks) pc.addTrack(track, local);
    if (peer.offerer) {
      // Nothing of a kind to send: still ask to receive it.
      for (const kind of ['audio', 'video']) {
        if (!tracks.some((t) => t.kind === kind)) pc.addTransceiver(kind, { direction: 'recvonly' });
      }
      this._offer(peer).catch(() => {});
    }
    if (!peer.seen) {
      peer.unseenTimer = this._setTimeout(() => {
        peer.unseenTimer = null;
        if (!peer.seen && this.peers.get(sid) === peer) this._close(sid);
      }, UNSEEN_PEER_MS);
    }
    return peer;
  }

  _send(peer, kind, payload) {
    if (peer.closed || this.stopped) return Promise.resolve();
    return this.h.signal(peer.sid, kind, payload).catch((err) => this.h.log.warn('signal.send failed', { code: err && err.code, kind }));
  }

  /**
   * Makes and sends an offer: the first one (newer side), a renegotiation, or an ICE restart.
   * @param {any} peer @param {{iceRestart?: boolean}} [opts]
   */
  async _offer(peer, opts = {}) {
    const pc = peer.pc;
    if (peer.closed || this.stopped) return;
    if (!peer.established && !opts.iceRestart && (pc.signalingState !== 'stable' || pc.remoteDescription)) return; // already negotiating
    try {
      peer.makingOffer = true;
      if (opts.iceRestart) {
        if (pc.signalingState === 'have-remote-offer') return; // answering now: that answer will do
        const offer = await pc.createOffer({ iceRestart: true });
        if (peer.closed) return;
        await pc.setLocalDescription(offer);
      } else {
        await pc.setLocalDescription();
      }
      if (peer.closed) return;
      this._send(peer, 'offer', { type: pc.localDescription.type, sdp: pc.localDescription.sdp });
      if (peer.offerer && !this._connected(peer)) this._armWatchdog(peer);
    } catch (err) {
      this.h.log.warn('negotiation failed', { message: String(err) });
    } finally { peer.makingOffer = false; }
  }

  _connected(peer) {
    const pc = peer.pc;
    return pc.connectionState === 'connected' || pc.iceConnectionState === 'connected' || pc.iceConnectionState === 'completed';
  }

  _armWatchdog(peer) {
    if (peer.watchdog != null) this._clearTimeout(peer.watchdog);
    peer.watchdog = this._setTimeout(() => { peer.watchdog = null; this._watchdog(peer); }, MESH_WATCHDOG_MS);
  }

  /** The offering side's check a while after an offer: restarts ICE on a pair that is stuck. */
  _watchdog(peer) {
    if (peer.closed || this.stopped || this.peers.get(peer.sid) !== peer) return;
    const pc = peer.pc;
    if (this._connected(peer)) return;
    const ice = pc.iceConnectionState;
    const progressing = (ice === 'checking') && pc.connectionState !== 'new';
    if (progressing && peer.checkingWaits < MAX_CHECKING_WAITS) {
      peer.checkingWaits += 1;
      this._armWatchdog(peer);
      return;
    }
    if (peer.restarts >= MESH_MAX_ICE_RESTARTS) {
      this.h.log.warn('mesh peer not connecting', { session: peer.sid, ice, connection: pc.connectionState });
      return;
    }
    peer.restarts += 1;
    peer.checkingWaits = 0;
    this.h.log.warn('mesh peer stuck, restarting ICE', { session: peer.sid, attempt: peer.restarts, ice, connection: pc.connectionState, gathering: pc.iceGatheringState });
    this._offer(peer, { iceRestart: true }).catch(() => {});
  }

  /**
   * A `signal` event's data: `{from_session, kind, payload}`. Signals of one peer are handled
   * one at a time, in order.
   */
  handleSignal(d) {
    if (this.stopped || !d || !d.from_session || d.to_session && d.to_session !== this.own) return Promise.resolve();
    let peer = this.peers.get(d.from_session);
    if (!peer) {
      // Only an offer opens a peer (a newcomer we may not have seen join yet); anything else
      // from a session we have no peer for is stale.
      if (d.kind !== 'offer') return Promise.resolve();
      const known = this.call.state.participants.some((p) => p.session_id === d.from_session);
      peer = this._peer(d.from_session, { offer: false, seen: known });
    }
    const p = peer;
    p.chain = p.chain.then(() => this._handle(p, d));
    return p.chain;
  }

  async _handle(peer, d) {
    if (peer.closed || this.stopped) return;
    const pc = peer.pc;
    try {
      if (d.kind === 'offer' || d.kind === 'answer') {
        const desc = d.payload;
        if (desc.type === 'answer' && pc.signalingState !== 'have-local-offer') return; // stale
        const collision = desc.type === 'offer' && (peer.makingOffer || pc.signalingState !== 'stable');
        peer.ignoreOffer = !peer.polite && collision;
        if (peer.ignoreOffer) return;
        await pc.setRemoteDescription(desc); // a polite side's own offer is rolled back here
        if (peer.closed) return;
        for (const c of peer.pendingCandidates.splice(0)) await pc.addIceCandidate(c).catch(() => {});
        if (desc.type === 'offer') {
          await pc.setLocalDescription();
          if (peer.closed) return;
          this._send(peer, 'answer', { type: pc.localDescription.type, sdp: pc.localDescription.sdp });
        }
        if (!peer.established) { peer.established = true; this._afterFirstNegotiation(peer); }
      } else if (d.kind === 'candidate') {
        if (!pc.remoteDescription) { peer.pendingCandidates.push(d.payload); return; }
        try { await pc.addIceCandidate(d.payload); } catch (err) { if (!peer.ignoreOffer) throw err; }
      }
    } catch (err) {
      this.h.log.warn('signal handling failed', { kind: d.kind, message: String(err) });
    }
  }

  /**
   * After the first offer/answer: a renegotiation we held back is made now if a track of ours
   * is still not sent (e.g. the offer had no m-line for our camera).
   */
  _afterFirstNegotiation(peer) {
    if (!peer.negotiationSkipped) return;
    peer.negotiationSkipped = false;
    const pc = peer.pc;
    if (pc.signalingState !== 'stable' || typeof pc.getTransceivers !== 'function') return;
    const unsent = pc.getTransceivers().some((t) => !t.stopped && t.sender && t.sender.track
      && !(t.currentDirection === 'sendrecv' || t.currentDirection === 'sendonly'));
    if (unsent) this._offer(peer).catch(() => {});
  }

  _close(sid) {
    const peer = this.peers.get(sid);
    if (!peer) return;
    this.peers.delete(sid);
    peer.closed = true;
    if (peer.watchdog != null) { this._clearTimeout(peer.watchdog); peer.watchdog = null; }
    if (peer.unseenTimer != null) { this._clearTimeout(peer.unseenTimer); peer.unseenTimer = null; }
    try { peer.pc.close(); } catch { /* ignore */ }
    this.h.onStreamRemoved(sid);
  }

  stop() {
    this.stopped = true;
    for (const sid of [...this.peers.keys()]) this._close(sid);
  }
}
