// @ts-check
/**
 * Media through a Janus VideoRoom (the join answered `sfu.kind === 'janus'`): publish our tracks
 * as a publisher whose `display` is our Switchboard session id, subscribe to every other
 * publisher (one subscriber handle per feed), keepalive, and tear down on leave. Follows
 * `call.sfu_changed` by leaving the old Janus and joining the new room.
 */
import { JanusHttpTransport, JanusWsTransport, JanusError, RETRY_JANUS_CODES } from './janus-transport.js';
import { SwitchboardError, ErrorCode } from './errors.js';

const JOIN_RETRY_MS = 2500;

export class JanusMedia {
  /** @param {any} h hooks from Call._startMedia */
  constructor(h) { this.h = h; this.call = h.call; this.room = null; this.stopped = false; }

  async start(sfu) {
    const deadline = this.h.clock.now() + JOIN_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      if (this.stopped) return;
      try { await this._join(sfu); return; } catch (err) {
        this._teardown();
        const code = err && err.janusCode;
        if (!RETRY_JANUS_CODES.has(code) || this.h.clock.now() >= deadline) {
          throw new SwitchboardError(ErrorCode.SFU_FAILED, `joining Janus failed: ${err.message}`, { cause: err });
        }
        this.h.log.info('Janus refused the join, retrying', { code, attempt });
        await new Promise((r) => this.h.clock.setTimeout(r, 200 + 100 * attempt));
      }
    }
  }

  async switchSfu(sfu) {
    this._teardown();
    this.stopped = false;
    await this.start(sfu);
  }

  async _join(sfu) {
    const own = this.call.state.ownSessionId;
    const ws = /^wss?:/.test(sfu.url);
    const t = ws ? new JanusWsTransport({ url: sfu.url, token: sfu.token, WebSocket: this.h.WebSocket, log: this.h.log })
      : new JanusHttpTransport({ url: sfu.url, token: sfu.token, fetch: this.h.fetch, log: this.h.log });
    const room = { sfu, t, handles: new Map(), feeds: new Map(), pub: null, keepalive: null, waiters: new Map() };
    this.room = room;
    t.onEvent = (ev) => this._onEvent(room, ev);
    const created = await t.send({ janus: 'create' });
    t.sessionId = created.data.id;
    t.startPolling();
    room.keepalive = this.h.clock.setTimeout(function tick() {
      t.send({ janus: 'keepalive' }).catch(() => {});
      room.keepalive = this.h.clock.setTimeout(tick.bind(this), 25000);
    }.bind(this), 25000);
    const pubHandle = await this._attach(room, { kind: 'publisher' });
    room.pub = pubHandle;
    const joined = await this._message(room, pubHandle, {
      request: 'join', ptype: 'publisher', room: sfu.room, token: sfu.token, pin: sfu.pin, display: own,
    });
    room.privateId = joined.data.private_id;
    await this._publish(room, pubHandle);
    for (const p of joined.data.publishers || []) this._subscribe(room, p);
  }

  async _attach(room, info) {
    const res = await room.t.send({ janus: 'attach', plugin: 'janus.plugin.videoroom' });
    const handle = { id: res.data.id, ...info, pc: null };
    room.handles.set(handle.id, handle);
    return handle;
  }

  /** Sends a plugin message; resolves with the plugin event that answers it. */
  async _message(room, handle, body, jsep) {
    const msg = { janus: 'message', body };
    if (jsep) msg.jsep = jsep;
    // The answer may come on the long-poll before the POST returns: wait before sending.
    const answer = new Promise((resolve, reject) => room.waiters.set(handle.id, { resolve, reject }));
    answer.catch(() => {});
    let res;
    try { res = await room.t.send(msg, handle.id); } catch (err) { room.waiters.delete(handle.id); throw err; }
    if (res.janus === 'success') {
      room.waiters.delete(handle.id);
      const data = (res.plugindata && res.plugindata.data) || {};
      if (data.error_code) throw new JanusError(data.error_code, data.error);
      return { data, jsep: res.jsep };
    }
    return answer;
  }

  _onEvent(room, ev) {
    if (room !== this.room) return;
    if (ev.janus === 'transport_error') {
      if (!this.stopped) this.h.onError(new SwitchboardError(ErrorCode.SFU_FAILED, `Janus connection lost: ${ev.error}`));
      return;
    }
    const handle = room.handles.get(ev.sender);
    if (!handle) return;
    if (ev.janus === 'hangup' && handle.kind === 'subscriber') { this._unsubscribe(room, handle.feed); return; }
    if (ev.janus !== 'event') return;
    const data = (ev.plugindata && ev.plugindata.data) || {};
    const w = room.waiters.get(handle.id);
    if (w && (data.error_code || data.videoroom === 'joined' || data.videoroom === 'attached' || ev.jsep || data.configured || data.started)) {
      room.waiters.delete(handle.id);
      if (data.error_code) w.reject(new JanusError(data.error_code, data.error));
      else w.resolve({ data, jsep: ev.jsep });
      return;
    }
    if (handle.kind === 'publisher') {
      for (const p of data.publishers || []) this._subscribe(room, p);
      const gone = data.unpublished ?? data.leaving;
      if (gone !== undefined && gone !== 'ok') this._unsubscribe(room, gone);
    }
  }

  async _publish(room, handle) {
    const local = this.call.localStream;
    if (!local || local.getTracks().length === 0) return;
    const pc = new this.h.RTCPeerConnection({ iceServers: this.h.iceServers || [] });
    handle.pc = pc;
    for (const track of local.getTracks()) pc.addTrack(track, local);
    this._trickle(room, handle, pc);
    await pc.setLocalDescription(await pc.createOffer());
    const res = await this._message(room, handle, {
      request: 'configure',
      audio: local.getAudioTracks().length > 0,
      video: local.getVideoTracks().length > 0,
    }, { type: pc.localDescription.type, sdp: pc.localDescription.sdp });
    if (res.jsep) await pc.setRemoteDescription(res.jsep);
  }

  _trickle(room, handle, pc) {
    pc.onicecandidate = (ev) => {
      const candidate = ev.candidate ? (ev.candidate.toJSON ? ev.candidate.toJSON() : ev.candidate) : { completed: true };
      room.t.send({ janus: 'trickle', candidate }, handle.id).catch(() => {});
    };
  }

  /** @param {{id: number|string, display?: string}} publisher */
  async _subscribe(room, publisher) {
    if (room.feeds.has(publisher.id) || this.stopped) return;
    const sessionId = publisher.display || String(publisher.id);
    if (sessionId === this.call.state.ownSessionId) return;
    room.feeds.set(publisher.id, { sessionId, handle: null });
    try {
      let res;
      let handle;
      for (let attempt = 0; ; attempt++) {
        handle = await this._attach(room, { kind: 'subscriber', feed: publisher.id });
        room.feeds.get(publisher.id).handle = handle;
        try {
          res = await this._message(room, handle, {
            request: 'join', ptype: 'subscriber', room: room.sfu.room, pin: room.sfu.pin, token: room.sfu.token,
            private_id: room.privateId, streams: [{ feed: publisher.id }],
          });
          break;
        } catch (err) {
          room.t.send({ janus: 'detach' }, handle.id).catch(() => {});
          if (err.janusCode !== 428 || attempt >= 10) throw err; // 428: the feed is not up yet
          await new Promise((r) => this.h.clock.setTimeout(r, 200));
        }
      }
      const pc = new this.h.RTCPeerConnection({ iceServers: this.h.iceServers || [] });
      handle.pc = pc;
      let stream = null;
      pc.ontrack = (ev) => {
        if (!stream) stream = (ev.streams && ev.streams[0]) || new (/** @type {any} */ (globalThis).MediaStream)();
        if (!stream.getTracks().includes(ev.track)) stream.addTrack(ev.track);
        this.h.onStream(sessionId, stream);
      };
      this._trickle(room, handle, pc);
      await pc.setRemoteDescription(res.jsep);
      await pc.setLocalDescription(await pc.createAnswer());
      await this._message(room, handle, { request: 'start', room: room.sfu.room }, { type: pc.localDescription.type, sdp: pc.localDescription.sdp });
    } catch (err) {
      room.feeds.delete(publisher.id);
      this.h.onError(new SwitchboardError(ErrorCode.SFU_FAILED, `subscribing to ${sessionId} failed: ${err.message}`, { cause: err }));
    }
  }

  _unsubscribe(room, feedId) {
    const feed = room.feeds.get(feedId);
    if (!feed) return;
    room.feeds.delete(feedId);
    if (feed.handle) {
      if (feed.handle.pc) { try { feed.handle.pc.close(); } catch { /* ignore */ } }
      room.handles.delete(feed.handle.id);
      room.t.send({ janus: 'detach' }, feed.handle.id).catch(() => {});
    }
    this.h.onStreamRemoved(feed.sessionId);
  }

  /** Participants come from Switchboard; feeds from Janus. A participant gone drops its feed. */
  syncParticipants(participants) {
    const room = this.room;
    if (!room) return;
    const live = new Set(participants.map((p) => p.session_id));
    for (const [feedId, feed] of room.feeds) if (!live.has(feed.sessionId)) this._unsubscribe(room, feedId);
  }

  _teardown() {
    const room = this.room;
    this.room = null;
    if (!room) return;
    this.h.clock.clearTimeout(room.keepalive);
    for (const feedId of [...room.feeds.keys()]) this._unsubscribe(room, feedId);
    for (const h of room.handles.values()) if (h.pc) { try { h.pc.close(); } catch { /* ignore */ } }
    for (const w of room.waiters.values()) w.reject(new JanusError(0, 'left'));
    if (room.t.sessionId) room.t.send({ janus: 'destroy' }).catch(() => {}).finally(() => room.t.close());
    else room.t.close();
  }

  stop() { this.stopped = true; this._teardown(); }
}
