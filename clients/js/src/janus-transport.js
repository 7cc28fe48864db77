// @ts-check
/**
 * Janus API transports. `send(msg)` resolves with Janus's direct answer (`success`, `ack`) or
 * rejects on `error`; everything else (`event`, `webrtcup`, `hangup`, …) goes to `onEvent`.
 * HTTP: POST per request plus a long-poll GET; WebSocket: subprotocol `janus-protocol`.
 */
let txCounter = 0;
export function transaction() { return `sb${Date.now().toString(36)}${(txCounter++).toString(36)}${Math.random().toString(36).slice(2, 8)}`; }

export class JanusError extends Error {
  constructor(code, reason) { super(`Janus error ${code}: ${reason}`); this.janusCode = code; }
}

/** Refusals that may come only because Switchboard has not granted our token yet. */
export const RETRY_JANUS_CODES = new Set([403, 426, 433, 428]);

export class JanusHttpTransport {
  /** @param {{url: string, token: string, fetch: Function, log: any}} o */
  constructor(o) { Object.assign(this, o); this.sessionId = null; this.closed = false; this.onEvent = () => {}; }

  _path(handleId) {
    let p = this.url.replace(/\/+$/, '');
    if (this.sessionId) p += `/${this.sessionId}`;
    if (handleId) p += `/${handleId}`;
    return p;
  }

  async send(msg, handleId) {
    const body = { ...msg, transaction: transaction(), token: this.token };
    const res = await this.fetch(this._path(handleId), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status === 403) throw new JanusError(403, 'unauthorized');
    const json = await res.json();
    if (json.janus === 'error') throw new JanusError(json.error && json.error.code, json.error && json.error.reason);
    return json;
  }

  /** Starts the long-poll once the session exists. */
  startPolling() {
    const loop = async () => {
      while (!this.closed) {
        try {
          const u = `${this._path()}?rid=${Date.now()}&maxev=10&token=${encodeURIComponent(this.token)}`;
          const res = await this.fetch(u, { method: 'GET' });
          if (res.status !== 200) throw new JanusError(res.status, 'long-poll refused');
          const json = await res.json();
          for (const ev of Array.isArray(json) ? json : [json]) if (ev && ev.janus !== 'keepalive') this.onEvent(ev);
        } catch (err) {
          if (this.closed) return;
          this.onEvent({ janus: 'transport_error', error: String(err && err.message || err) });
          return;
        }
      }
    };
    loop();
  }

  close() { this.closed = true; }
}

export class JanusWsTransport {
  /** @param {{url: string, token: string, WebSocket: any, log: any}} o */
  constructor(o) { Object.assign(this, o); this.sessionId = null; this.closed = false; this.onEvent = () => {}; this.waiting = new Map(); }

  async open() {
    this.ws = new this.WebSocket(this.url, 'janus-protocol');
    await new Promise((resolve, reject) => { this.ws.onopen = resolve; this.ws.onerror = () => reject(new JanusError(0, 'websocket failed')); });
    this.ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      const w = msg.transaction && this.waiting.get(msg.transaction);
      if (w && (msg.janus === 'success' || msg.janus === 'ack' || msg.janus === 'error')) {
        this.waiting.delete(msg.transaction);
        if (msg.janus === 'error') w.reject(new JanusError(msg.error && msg.error.code, msg.error && msg.error.reason));
        else w.resolve(msg);
      } else this.onEvent(msg);
    };
    this.ws.onclose = () => { if (!this.closed) this.onEvent({ janus: 'transport_error', error: 'websocket closed' }); };
  }

  async send(msg, handleId) {
    if (!this.ws) await this.open();
    const tx = transaction();
    const body = { ...msg, transaction: tx, token: this.token };
    if (this.sessionId) body.session_id = this.sessionId;
    if (handleId) body.handle_id = handleId;
    return new Promise((resolve, reject) => { this.waiting.set(tx, { resolve, reject }); this.ws.send(JSON.stringify(body)); });
  }

  startPolling() {}

  close() { this.closed = true; try { this.ws && this.ws.close(); } catch { /* ignore */ } }
}
