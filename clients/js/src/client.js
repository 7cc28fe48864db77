// @ts-check
/** SwitchboardClient: one per logged-in user; owns the connection and the Call objects. */
import { Emitter } from './emitter.js';
import { Connection } from './connection.js';
import { TokenManager } from './token-manager.js';
import { SwitchboardError, ErrorCode } from './errors.js';
import { safeLogger } from './token.js';
import { Call } from './call.js';
import { CallingState } from './call-state.js';

const g = /** @type {any} */ (globalThis);

/** The push services `device.register` takes (docs/protocol.md 6.5). */
const DEVICE_PROVIDERS = Object.freeze(['apns', 'apns_voip', 'fcm', 'webpush']);

export class SwitchboardClient extends Emitter {
  /** @param {import('./switchboard.js').SwitchboardClientOptions} options */
  constructor(options) {
    super();
    const o = options || /** @type {any} */ ({});
    if (!o.url) throw new SwitchboardError(ErrorCode.INVALID_REQUEST, 'url is required');
    if (!o.token && !o.tokenProvider) throw new SwitchboardError(ErrorCode.INVALID_REQUEST, 'token or tokenProvider is required');
    this.user = o.user || null;
    this.userId = (o.user && o.user.id) || null;
    this.persistSocket = o.persistSocket !== false;
    this._log = safeLogger(o.logger);
    this._clock = {
      setTimeout: o.setTimeout || ((fn, ms) => g.setTimeout(fn, ms)),
      clearTimeout: o.clearTimeout || ((t) => g.clearTimeout(t)),
      now: o.now || (() => Date.now()),
      random: o.random || Math.random,
    };
    this._WebSocket = o.WebSocket || g.WebSocket;
    this._RTCPeerConnection = o.RTCPeerConnection || g.RTCPeerConnection || null;
    this._getUserMedia = o.getUserMedia
      || (g.navigator && g.navigator.mediaDevices && g.navigator.mediaDevices.getUserMedia
        ? (c) => g.navigator.mediaDevices.getUserMedia(c) : null);
    this._fetch = o.fetch || (g.fetch ? (...a) => g.fetch(...a) : null);
    this._iceServers = o.iceServers || [];
    this._tokens = new TokenManager({ token: o.token, tokenProvider: o.tokenProvider, clock: this._clock, log: this._log, attempts: o.tokenAttempts });
    this._connection = new Connection({
      url: o.url, tokens: this._tokens, WebSocket: this._WebSocket, clock: this._clock, log: this._log,
      requestTimeoutMs: o.requestTimeoutMs, pingIntervalMs: o.pingIntervalMs, connectAttempts: o.connectAttempts, backoff: o.backoff,
    });
    /** @type {Map<string, Call>} */
    this._calls = new Map();
    this._connection.on('state', (s) => this._onConnectionState(s));
    this._connection.on('ok', (info) => this._onOk(info));
    this._connection.on('event', (frame) => this._onEvent(frame));
    this._connection.on('error', (err) => this._reportError(err));
    this._connection.on('resync', () => this._resyncAll());
  }

  /** @returns {'idle'|'connecting'|'connected'|'reconnecting'|'disconnected'} */
  get connectionState() { return this._connection.state; }

  /** Opens the socket; resolves after `connection.ok`. */
  async connect() {
    const info = await this._connection.connect();
    return info;
  }

  /** Closes the socket for good; our sessions are abandoned (the server drops them after its resume window). */
  disconnect() {
    for (const call of this._calls.values()) {
      call.joinOptions = null;
      call._stopMedia();
      if (call.state.ownSessionId) call._local({ sessionLost: 'disconnected' });
    }
    this._connection.disconnect();
  }

  /** Same object for the same cid. @param {string} type @param {string} id */
  call(type, id) {
    const cid = `${type}:${id}`;
    let call = this._calls.get(cid);
    if (!call) { call = new Call(this, type, id); this._calls.set(cid, call); }
    return call;
  }

  /**
   * Registers a push token of the user's app (`device.register`), so that a call ringing the user
   * while no socket of theirs is open is pushed to this device by the operator's push service
   * (docs/webhooks.md, "Offline ringing"). Send it after each connect and whenever the token
   * changes; registering the same token again refreshes it. Rejects with `invalid_request` (a bad
   * provider or token), `payload_too_large` (a token over 4096 bytes) or `too_many_devices`.
   * @param {'apns'|'apns_voip'|'fcm'|'webpush'} provider
   * @param {string|object} token the provider's token; for `webpush` a PushSubscription (or its JSON text)
   * @returns {Promise<import('./switchboard.js').Device>}
   */
  async registerDevice(provider, token) {
    const data = await this._deviceRequest('device.register', deviceFields('device.register', provider, token));
    return data.device;
  }

  /**
   * Removes a push token of the user's app (`device.unregister`), e.g. when the user signs out.
   * Rejects with `not_found` when the user has no such device.
   * @param {'apns'|'apns_voip'|'fcm'|'webpush'} provider @param {string|object} token as registered
   * @returns {Promise<void>}
   */
  async unregisterDevice(provider, token) {
    await this._deviceRequest('device.unregister', deviceFields('device.unregister', provider, token));
  }

  /**
   * The user's registered push devices, oldest first (`device.list`).
   * @returns {Promise<import('./switchboard.js').Device[]>}
   */
  async listDevices() {
    const data = await this._deviceRequest('device.list');
    return data.devices || [];
  }

  /** @internal a `device.*` request: waits for the connection like call requests do */
  async _deviceRequest(type, data) {
    try {
      await this._ensureConnected();
      return await this._connection.request(type, data);
    } finally {
      this._maybeIdleDisconnect();
    }
  }

  /** @internal */
  async _ensureConnected() {
    if (this._connection.state === 'connected' || this._connection.state === 'reconnecting') return;
    await this._connection.connect();
  }

  /** @internal with persistSocket false, closes the socket when no call is active */
  _maybeIdleDisconnect() {
    if (this.persistSocket || this._connection.state === 'idle' || this._connection.state === 'disconnected') return;
    for (const call of this._calls.values()) {
      const s = call.state.callingState;
      if (s !== CallingState.IDLE && s !== CallingState.ENDED) return;
    }
    this._clock.setTimeout(() => {
      for (const call of this._calls.values()) {
        const s = call.state.callingState;
        if (s !== CallingState.IDLE && s !== CallingState.ENDED) return;
      }
      if (this._connection.pending.size === 0) this._connection.disconnect();
    }, 0);
  }

  _onConnectionState(state) {
    const reconnecting = state === 'reconnecting';
    for (const call of this._calls.values()) {
      if (call.state.ownSessionId && call.state.reconnecting !== reconnecting) call._local({ reconnecting });
    }
    this.emit('connection', state);
  }

  _onOk(info) {
    if (info.user_id && !this.userId) {
      this.userId = info.user_id;
      for (const call of this._calls.values()) call.state = { ...call.state, userId: info.user_id };
    }
    const sessions = new Set(info.sessions || []);
    for (const call of this._calls.values()) {
      const sid = call.state.ownSessionId;
      if (sid && !sessions.has(sid)) {
        call._local({ sessionLost: 'connection_lost' });
        if (call.joinOptions && call.joinOptions.rejoin !== false && !call.state.ended) {
          call.join(call.joinOptions).catch((err) => this._reportError(err, call));
        }
      } else if (call.state.reconnecting) call._local({ reconnecting: false });
    }
    if (info.needsResync) this._resyncAll();
  }

  _resyncAll() {
    for (const call of this._calls.values()) if (call.state.call) call._resync();
  }

  _onEvent(frame) {
    this.emit('event', frame);
    if (frame.type === 'connection.token_expiring') {
      const expiresAt = frame.data && frame.data.expires_at;
      this._tokens.forExpiry(expiresAt).then((token) => {
        if (token) return this._connection.request('token.refresh', { token });
        return undefined;
      }).catch((err) => this._reportError(SwitchboardError.wrap(err, ErrorCode.TOKEN_PROVIDER_FAILED)));
      return;
    }
    const cid = frame.call_cid || (frame.data && frame.data.call_cid) || (frame.data && frame.data.call && frame.data.call.cid);
    if (!cid) return;
    const sep = cid.indexOf(':');
    if (sep < 0) return;
    const call = this.call(cid.slice(0, sep), cid.slice(sep + 1));
    call._handleEvent(frame);
  }

  /** @internal */
  _emitRing(call) { this.emit('ring', call); }

  /** @internal */
  _reportError(err, call) {
    const e = SwitchboardError.wrap(err);
    this._log.warn('error', { code: e.code, message: e.message });
    if (call) call.emit('error', e);
    this.emit('error', e);
  }
}

/** Checks a device's provider and token before anything is sent; a bad one is `invalid_request`. */
function deviceFields(type, provider, token) {
  if (!DEVICE_PROVIDERS.includes(provider)) {
    throw new SwitchboardError(ErrorCode.INVALID_REQUEST, `provider must be one of ${DEVICE_PROVIDERS.join(', ')}`, { requestType: type });
  }
  const text = provider === 'webpush' && token !== null && typeof token === 'object' ? JSON.stringify(token) : token;
  if (typeof text !== 'string' || text === '') {
    throw new SwitchboardError(ErrorCode.INVALID_REQUEST, 'token must be a non-empty string', { requestType: type });
  }
  return { provider, token: text };
}
