// @ts-check
/**
 * One logical call-protocol connection over successive WebSockets: auth, request/response with
 * ids and timeouts, event ordering by `seq` (duplicates dropped, gaps filled by resuming),
 * resume, reconnect with backoff and jitter, pings, and token expiry.
 */
import { Emitter } from './emitter.js';
import { Backoff } from './backoff.js';
import { SwitchboardError, ErrorCode } from './errors.js';

/** Close codes after which the connection must not be resumed by us. */
const CLOSE_REPLACED = 4002;
const CLOSE_AUTH = 4001;

/** Derives the `/v1/connect` WebSocket URL from a ws(s):// or http(s):// address. */
export function connectUrl(url) {
  const u = new URL(String(url));
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new SwitchboardError(ErrorCode.INVALID_REQUEST, `unsupported URL scheme ${u.protocol}`);
  if (!/\/v1\/connect\/?$/.test(u.pathname)) u.pathname = u.pathname.replace(/\/+$/, '') + '/v1/connect';
  return u.toString();
}

export class Connection extends Emitter {
  /**
   * @param {object} o
   * @param {string} o.url
   * @param {import('./token-manager.js').TokenManager} o.tokens
   * @param {any} o.WebSocket
   * @param {{setTimeout: Function, clearTimeout: Function, now: () => number, random: () => number}} o.clock
   * @param {any} o.log
   * @param {number} [o.requestTimeoutMs] @param {number} [o.pingIntervalMs] @param {number} [o.connectAttempts]
   * @param {{baseMs?: number, maxMs?: number}} [o.backoff]
   */
  constructor(o) {
    super();
    this.url = connectUrl(o.url);
    this.tokens = o.tokens;
    this.WebSocket = o.WebSocket;
    this.clock = o.clock;
    this.log = o.log;
    this.requestTimeoutMs = o.requestTimeoutMs ?? 10000;
    this.pingIntervalMs = o.pingIntervalMs ?? 25000;
    this.connectAttempts = o.connectAttempts ?? 5;
    this.backoff = new Backoff({ ...(o.backoff || {}), random: o.clock.random });
    /** @type {'idle'|'connecting'|'connected'|'reconnecting'|'disconnected'} */
    this.state = 'idle';
    this.ws = null;
    this.nextId = 1;
    /** @type {Map<number, {type: string, frame: any, resolve: Function, reject: Function, timer: any, sent: boolean}>} */
    this.pending = new Map();
    this.resumeToken = null;
    this.lastSeq = 0;
    this.allowJump = false;
    this.gapResumes = 0;
    this.info = null; // last connection.ok data
    this.everConnected = false;
    this.failures = 0;
    this.retryTimer = null;
    this.pingTimer = null;
    this.connectWaiters = [];
  }

  _setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.emit('state', state);
  }

  /** Opens the connection; resolves after `connection.ok`. */
  connect() {
    if (this.state === 'connected') return Promise.resolve(this.info);
    const p = new Promise((resolve, reject) => this.connectWaiters.push({ resolve, reject }));
    if (this.state === 'idle' || this.state === 'disconnected') {
      this.failures = 0;
      this._setState('connecting');
      this._open();
    }
    return p;
  }

  /** Closes for good (no reconnect); pending requests fail with `not_connected`. */
  disconnect() {
    this._clearTimers();
    const ws = this.ws;
    this.ws = null;
    if (ws) { detach(ws); try { ws.close(1000, 'client disconnect'); } catch { /* ignore */ } }
    this.resumeToken = null; this.lastSeq = 0;
    this._failPending(new SwitchboardError(ErrorCode.NOT_CONNECTED, 'the client disconnected'));
    this._settleConnect(new SwitchboardError(ErrorCode.NOT_CONNECTED, 'the client disconnected'));
    this._setState('disconnected');
  }

  async _open() {
    let token;
    try {
      token = await this.tokens.get();
    } catch (err) {
      return this._terminal(SwitchboardError.wrap(err, ErrorCode.TOKEN_PROVIDER_FAILED));
    }
    if (this.state === 'disconnected' || this.state === 'idle') return;
    let ws;
    try {
      ws = new this.WebSocket(this.url);
    } catch (err) {
      return this._onClose(null, 1006, String(err));
    }
    this.ws = ws;
    this.authed = false;
    // A socket with no connection.ok within the request timeout is given up and tried again
    // after the backoff: a balancer or host that accepts and never answers (a failover under
    // way, a network cut) must not hold the client connecting for good.
    this.clock.clearTimeout(this.answerTimer);
    this.answerTimer = this.clock.setTimeout(() => {
      this.answerTimer = null;
      if (ws !== this.ws || this.authed) return;
      detach(ws);
      try { ws.close(4000, 'no answer'); } catch { /* ignore */ }
      this._onClose(ws, 4000, 'no answer');
    }, this.requestTimeoutMs);
    ws.onopen = () => {
      const auth = { type: 'auth', id: 'auth', token };
      if (this.resumeToken) { auth.resume_token = this.resumeToken; auth.last_seq = this.lastSeq; }
      this.log.debug('auth', auth);
      ws.send(JSON.stringify(auth));
    };
    ws.onmessage = (ev) => this._onMessage(ws, ev.data);
    ws.onclose = (ev) => this._onClose(ws, ev.code, ev.reason);
    ws.onerror = () => { /* a close follows */ };
  }

  _onMessage(ws, raw) {
    if (ws !== this.ws) return;
    let frame;
    try { frame = JSON.parse(typeof raw === 'string' ? raw : new TextDecoder().decode(raw)); } catch { return; }
    if (!frame || typeof frame !== 'object') return;
    this.log.debug('recv', frame);
    if (frame.type === 'connection.ok') return this._onOk(frame.data || {});
    if (!this.authed && frame.type === 'error') { this.authError = SwitchboardError.fromFrame(frame, 'auth'); return; }
    if ((frame.type === 'response' || frame.type === 'error' || frame.type === 'pong') && frame.id != null && this.pending.has(frame.id)) {
      const p = this.pending.get(frame.id);
      this.pending.delete(frame.id);
      this.clock.clearTimeout(p.timer);
      if (frame.type === 'error') p.reject(SwitchboardError.fromFrame(frame, p.type));
      else p.resolve(frame.data ?? {});
      return;
    }
    if (frame.type === 'error') {
      const err = SwitchboardError.fromFrame(frame);
      if (err.code === ErrorCode.TOKEN_EXPIRED) this.tokens.markExpired();
      this.emit('error', err);
      return;
    }
    if (typeof frame.seq === 'number') return this._onSeqEvent(frame);
    this.emit('event', frame);
  }

  _onOk(data) {
    this.clock.clearTimeout(this.answerTimer);
    this.answerTimer = null;
    const previous = this.info;
    this.authed = true;
    this.authError = null;
    this.info = data;
    const resumed = !!data.resumed;
    const replayComplete = data.replay_complete !== false;
    if (!resumed) { this.lastSeq = data.last_seq || 0; this.allowJump = false; }
    else if (!replayComplete) this.allowJump = true;
    this.resumeToken = data.resume_token || null;
    this.failures = 0;
    this.backoff.reset();
    this._setState('connected');
    this.everConnected = true;
    this._schedulePing();
    this.emit('ok', { ...data, resumed, replayComplete, hadPrevious: !!previous, needsResync: !!previous && (!resumed || !replayComplete) });
    this._settleConnect(null);
    for (const p of this.pending.values()) if (!p.sent) this._sendPending(p);
  }

  _onSeqEvent(frame) {
    if (frame.seq <= this.lastSeq) { this.log.debug('duplicate event dropped', { seq: frame.seq }); return; }
    if (frame.seq !== this.lastSeq + 1 && !this.allowJump) {
      if (this.gapResumes < 1) {
        // A gap: resume from our last_seq so the server replays what we missed.
        this.gapResumes++;
        this.log.warn('event gap, resuming', { have: this.lastSeq, got: frame.seq });
        this._dropSocket(4000, 'seq gap');
        return;
      }
      this.log.warn('event gap persists, accepting and resyncing', { have: this.lastSeq, got: frame.seq });
      this.emit('resync');
    }
    this.allowJump = false;
    this.gapResumes = 0;
    this.lastSeq = frame.seq;
    this.emit('event', frame);
  }

  /** Closes the current socket and reconnects (with resume) right away. */
  _dropSocket(code, reason) {
    const ws = this.ws;
    if (ws) { detach(ws); try { ws.close(code, reason); } catch { /* ignore */ } }
    this._onClose(ws, code, reason, true);
  }

  _onClose(ws, code, reason, immediate = false) {
    if (ws !== this.ws && ws !== null) return;
    this.ws = null;
    this.clock.clearTimeout(this.pingTimer);
    if (this.state === 'disconnected' || this.state === 'idle') return;
    const wasAuthed = this.authed;
    this.authed = false;
    const authError = this.authError;
    this.authError = null;
    this.log.info('socket closed', { code, reason });
    for (const [id, p] of this.pending) {
      if (p.sent) {
        this.pending.delete(id);
        this.clock.clearTimeout(p.timer);
        p.reject(new SwitchboardError(ErrorCode.CONNECTION_LOST, `the connection dropped before ${p.type} was answered`, { requestType: p.type }));
      }
    }
    if (code === CLOSE_REPLACED) {
      return this._terminal(new SwitchboardError(ErrorCode.CONNECTION_REPLACED, 'another socket resumed this connection', { closeCode: code }));
    }
    if (!wasAuthed && (code === CLOSE_AUTH || authError)) {
      const err = authError || new SwitchboardError(String(reason || ErrorCode.UNAUTHENTICATED), 'authentication failed', { closeCode: code });
      if ((err.code === ErrorCode.TOKEN_EXPIRED || err.code === ErrorCode.TOKEN_INVALID) && this.tokens.canRefresh() && this.failures < 2) {
        this.tokens.markExpired(); // get a fresh one from the provider, then retry
      } else if (err.code !== ErrorCode.RATE_LIMITED && err.code !== ErrorCode.UNAVAILABLE) {
        return this._terminal(err);
      }
    }
    if (code === CLOSE_AUTH && reason === ErrorCode.TOKEN_EXPIRED) this.tokens.markExpired();
    this.failures++;
    if (!this.everConnected && this.failures >= this.connectAttempts) {
      return this._terminal(new SwitchboardError(ErrorCode.NOT_CONNECTED, `could not connect (close ${code})`, { closeCode: code, retryable: true }));
    }
    this._setState(this.everConnected ? 'reconnecting' : 'connecting');
    const delay = immediate ? 0 : this.backoff.next();
    this.emit('retry', { delay, attempt: this.backoff.attempt, code });
    this.retryTimer = this.clock.setTimeout(() => { this.retryTimer = null; this._open(); }, delay);
  }

  _terminal(err) {
    this.log.warn('connection failed for good', { code: err.code });
    this._clearTimers();
    if (this.ws) { const ws = this.ws; this.ws = null; detach(ws); try { ws.close(1000); } catch { /* ignore */ } }
    this._failPending(err);
    this._setState('disconnected');
    this.emit('error', err);
    this._settleConnect(err);
  }

  _settleConnect(err) {
    const waiters = this.connectWaiters;
    this.connectWaiters = [];
    for (const w of waiters) err ? w.reject(err) : w.resolve(this.info);
  }

  _failPending(err) {
    for (const p of this.pending.values()) { this.clock.clearTimeout(p.timer); p.reject(err); }
    this.pending.clear();
  }

  _clearTimers() {
    this.clock.clearTimeout(this.retryTimer); this.retryTimer = null;
    this.clock.clearTimeout(this.answerTimer); this.answerTimer = null;
    this.clock.clearTimeout(this.pingTimer); this.pingTimer = null;
  }

  _schedulePing() {
    this.clock.clearTimeout(this.pingTimer);
    if (!this.pingIntervalMs) return;
    this.pingTimer = this.clock.setTimeout(() => {
      if (this.state !== 'connected') return;
      const ws = this.ws;
      this.request('ping', undefined, { timeoutMs: Math.min(this.requestTimeoutMs, 10000) })
        .catch((err) => { if (err.code === ErrorCode.TIMEOUT && ws === this.ws) this._dropSocket(4000, 'ping timeout'); });
      this._schedulePing();
    }, this.pingIntervalMs);
  }

  /**
   * Sends a request and resolves with the response `data` (or rejects with a SwitchboardError).
   * While the socket is (re)connecting the request waits, within its timeout.
   * @param {string} type @param {object} [data] @param {{timeoutMs?: number}} [opts]
   */
  request(type, data, opts = {}) {
    if (this.state === 'disconnected' || this.state === 'idle') {
      return Promise.reject(new SwitchboardError(ErrorCode.NOT_CONNECTED, `not connected (${type})`, { requestType: type }));
    }
    const id = this.nextId++;
    const frame = data === undefined ? { id, type } : { id, type, data };
    return new Promise((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
      const p = { type, frame, resolve, reject, sent: false, timer: null };
      p.timer = this.clock.setTimeout(() => {
        this.pending.delete(id);
        reject(new SwitchboardError(ErrorCode.TIMEOUT, `${type} got no answer within ${timeoutMs} ms`, { requestType: type }));
      }, timeoutMs);
      this.pending.set(id, p);
      if (this.state === 'connected') this._sendPending(p);
    });
  }

  _sendPending(p) {
    if (!this.ws) return;
    p.sent = true;
    this.log.debug('send', p.frame);
    try { this.ws.send(JSON.stringify(p.frame)); } catch (err) { this.log.warn('send failed', { err: String(err) }); }
  }
}

function detach(ws) { ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null; }
