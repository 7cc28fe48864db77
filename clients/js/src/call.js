// @ts-check
/** A call addressed by (type, id): requests, the derived state, and its media path. */
import { Emitter } from './emitter.js';
import { SwitchboardError, ErrorCode } from './errors.js';
import { CallingState, initialCallState, applyEvent, applyResponse, applyLocal } from './call-state.js';
import { MeshMedia } from './media-mesh.js';
import { JanusMedia } from './media-janus.js';

export class Call extends Emitter {
  /** @param {import('./client.js').SwitchboardClient} client @param {string} type @param {string} id */
  constructor(client, type, id) {
    super();
    this.client = client;
    this.type = type;
    this.id = id;
    this.cid = `${type}:${id}`;
    this.state = initialCallState(type, id, client.userId);
    /** @type {MediaStream|null} */
    this.localStream = null;
    /** @type {Map<string, MediaStream>} */
    this.remoteStreams = new Map();
    this.media = null;
    this.ownsLocalStream = false;
    this.joinOptions = null;
    /** signals that arrived before the media path started */
    this._earlySignals = [];
  }

  _set(next) {
    if (next === this.state) return;
    const prev = this.state;
    this.state = next;
    this.emit('state', next);
    if (prev.callingState !== CallingState.RINGING_INCOMING && next.callingState === CallingState.RINGING_INCOMING) this.client._emitRing(this);
    this._afterChange(prev, next);
  }

  _afterChange(prev, next) {
    if (prev.ownSessionId && !next.ownSessionId) this._stopMedia();
    else if (this.media && next.ownSessionId) {
      this.media.syncParticipants(next.participants);
      const sfuKey = (s) => (s ? `${s.id}|${s.room}|${s.token}` : '');
      if (sfuKey(prev.sfu) !== sfuKey(next.sfu)) this._restartMedia(next.sfu);
    }
    if (!next.ownSessionId && prev.callingState !== next.callingState) this.client._maybeIdleDisconnect();
  }

  /** @internal a server event for this call */
  _handleEvent(frame) {
    this.emit('event', frame);
    if (frame.type === 'signal') {
      if (this.media) { if (this.media.handleSignal) this.media.handleSignal(frame.data || {}); }
      // Joined (or joining) but the media path is not up yet: keep it for when it is.
      else if ((this.state.ownSessionId || this.state.joining) && this.client._RTCPeerConnection && this._earlySignals.length < 200) this._earlySignals.push(frame.data || {});
    }
    this._set(applyEvent(this.state, frame));
  }

  /** @internal a local fact (reconnecting, session lost) */
  _local(fact) { this._set(applyLocal(this.state, fact)); }

  async _request(type, fields = {}, opts) {
    await this.client._ensureConnected();
    const data = await this.client._connection.request(type, { type: this.type, id: this.id, ...fields }, opts);
    this._set(applyResponse(this.state, type, data, fields.session_id ? {} : { all: true }));
    return data;
  }

  /** @internal re-fetches the state after an incomplete resume */
  async _resync() {
    try { await this._request('call.get'); } catch (err) { this.client._reportError(err); }
  }

  /** @param {{members?: (string|{user_id: string})[], ring?: boolean, custom?: object}} [opts] */
  getOrCreate(opts = {}) {
    const f = {};
    if (opts.members) f.members = opts.members;
    if (opts.ring !== undefined) f.ring = !!opts.ring;
    if (opts.custom !== undefined) f.custom = opts.custom;
    return this._request('call.get_or_create', f);
  }

  get() { return this._request('call.get'); }

  /**
   * Joins the call (a new participant session) and sets up the media path the server chose.
   * @param {{location?: object, create?: boolean, ring?: boolean, members?: string[], media?: {audio?: boolean, video?: boolean}|false, localStream?: MediaStream}} [opts]
   */
  async join(opts = {}) {
    if (this.state.ownSessionId) return this.state;
    this.joinOptions = opts;
    this._local({ joining: true });
    try {
      await this._acquireLocalMedia(opts);
      const f = {};
      for (const k of ['location', 'create', 'ring', 'members']) if (opts[k] !== undefined) f[k] = opts[k];
      await this._request('call.join', f);
    } catch (err) {
      this._local({ joining: false });
      if (this.ownsLocalStream) this._stopLocalStream();
      throw SwitchboardError.wrap(err, ErrorCode.MEDIA_FAILED);
    }
    if (this.localStream) {
      const has = (kind) => this.localStream.getTracks().some((t) => t.kind === kind && t.enabled !== false);
      this.updateParticipant({ audio: has('audio'), video: has('video') }).catch(() => {});
    }
    if (opts.media !== false || this.localStream) await this._startMedia(this.state.sfu);
    return this.state;
  }

  async _acquireLocalMedia(opts) {
    if (opts.localStream) { this.localStream = opts.localStream; this.ownsLocalStream = false; return; }
    if (opts.media === false || this.localStream) return;
    const want = opts.media || { audio: true, video: true };
    const gum = this.client._getUserMedia;
    if (!gum || (!want.audio && !want.video)) return;
    this.localStream = await gum({ audio: !!want.audio, video: !!want.video });
    this.ownsLocalStream = true;
  }

  async _startMedia(sfu) {
    const RTC = this.client._RTCPeerConnection;
    if (!RTC) return; // no WebRTC here (e.g. Node): signalling only
    const hooks = {
      call: this,
      signal: (to, kind, payload) => this.client._connection.request('signal.send', { to_session: to, kind, payload, session_id: this.state.ownSessionId }),
      onStream: (sessionId, stream) => {
        const p = this.state.participants.find((x) => x.session_id === sessionId);
        this.remoteStreams.set(sessionId, stream);
        this.emit('stream', { sessionId, userId: p ? p.user_id : null, stream });
      },
      onStreamRemoved: (sessionId) => {
        const stream = this.remoteStreams.get(sessionId);
        if (!stream) return;
        this.remoteStreams.delete(sessionId);
        this.emit('stream-removed', { sessionId, stream });
      },
      onError: (err) => this.client._reportError(err, this),
      RTCPeerConnection: RTC,
      iceServers: this.client._iceServers,
      fetch: this.client._fetch,
      WebSocket: this.client._WebSocket,
      clock: this.client._clock,
      log: this.client._log,
    };
    if (!sfu) this.media = new MeshMedia(hooks);
    else if (sfu.kind === 'janus') this.media = new JanusMedia(hooks);
    else {
      this.client._reportError(new SwitchboardError(ErrorCode.UNSUPPORTED_SFU, `SFU kind ${sfu.kind} is not supported by this client`), this);
      return;
    }
    const early = this._earlySignals.splice(0);
    try {
      await this.media.start(sfu);
      if (this.media && this.media.handleSignal) for (const d of early) this.media.handleSignal(d);
    } catch (err) {
      this.client._reportError(SwitchboardError.wrap(err, ErrorCode.MEDIA_FAILED), this);
    }
  }

  async _restartMedia(sfu) {
    if (this.media && this.media.switchSfu && sfu && sfu.kind === 'janus') {
      try { await this.media.switchSfu(sfu); } catch (err) { this.client._reportError(SwitchboardError.wrap(err, ErrorCode.SFU_FAILED), this); }
      return;
    }
    this._stopMedia(false);
    await this._startMedia(sfu);
  }

  _stopMedia(stopLocal = true) {
    if (stopLocal) this._earlySignals = [];
    const media = this.media;
    this.media = null;
    if (media) { try { media.stop(); } catch { /* ignore */ } }
    for (const sessionId of [...this.remoteStreams.keys()]) {
      const stream = this.remoteStreams.get(sessionId);
      this.remoteStreams.delete(sessionId);
      this.emit('stream-removed', { sessionId, stream });
    }
    if (stopLocal && this.ownsLocalStream) this._stopLocalStream();
  }

  _stopLocalStream() {
    if (this.localStream) for (const t of this.localStream.getTracks()) { try { t.stop(); } catch { /* ignore */ } }
    this.localStream = null;
    this.ownsLocalStream = false;
  }

  accept() { return this._request('call.accept'); }

  /** @param {'decline'|'busy'|'cancel'|'timeout'} [reason] default `cancel` for the caller, else `decline` */
  reject(reason) {
    const r = reason || (this.state.callingState === CallingState.RINGING_OUTGOING ? 'cancel' : 'decline');
    return this._request('call.reject', { reason: r });
  }

  /** Leaves with every session of this connection in the call, and stops the media. */
  async leave() {
    this._stopMedia();
    if (!this.state.ownSessionId) return this.state;
    try {
      await this._request('call.leave');
    } catch (err) {
      if (err.code === ErrorCode.NOT_A_MEMBER || err.code === ErrorCode.CALL_ENDED) this._local({ sessionLost: 'left' });
      else throw err;
    }
    return this.state;
  }

  end() { return this._request('call.end'); }

  /** @param {string[]} members */
  invite(members) { return this._request('call.invite', { members }); }

  /** @param {{audio?: boolean, video?: boolean, screenshare?: boolean, speaking?: boolean, pinned?: boolean, audioLevel?: number, audio_level?: number, sessionId?: string}} fields */
  updateParticipant(fields) {
    const f = {};
    for (const k of ['audio', 'video', 'screenshare', 'speaking', 'pinned']) if (fields[k] !== undefined) f[k] = !!fields[k];
    const level = fields.audioLevel ?? fields.audio_level;
    if (level !== undefined) f.audio_level = level;
    const sid = fields.sessionId ?? fields.session_id;
    if (sid) f.session_id = sid;
    return this._request('call.update_participant', f);
  }

  /** @param {object} custom */
  sendEvent(custom) { return this._request('call.send_event', { custom }); }
}
