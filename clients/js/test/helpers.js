// Test helpers: a fake clock, a scripted fake WebSocket, and fixture access.
import { readFileSync } from 'node:fs';
import { SwitchboardClient } from '../src/switchboard.js';

export function fixture(name) {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), 'utf8'));
}
/** Frames one connection of a fixture received. */
export function received(entries, conn) {
  return entries.filter((e) => e.conn === conn && e.dir === 'recv').map((e) => e.frame);
}
/** The recorded answer to the `n`-th request of `type` sent by `conn`. */
export function answerTo(entries, conn, type, n = 0) {
  const sent = entries.filter((e) => e.conn === conn && e.dir === 'send' && e.frame.type === type)[n];
  if (!sent) throw new Error(`no ${type} sent by ${conn}`);
  return entries.find((e) => e.conn === conn && e.dir === 'recv' && e.frame.id === sent.frame.id && e.frame.type !== 'connection.ok').frame;
}

export class FakeClock {
  constructor(start = 1795717740000) {
    this.t = start; this.timers = []; this.seq = 0;
    this.setTimeout = (fn, ms) => { const id = ++this.seq; this.timers.push({ id, at: this.t + (ms || 0), fn }); return id; };
    this.clearTimeout = (id) => { this.timers = this.timers.filter((x) => x.id !== id); };
    this.now = () => this.t;
  }
  /** Advances virtual time, firing due timers in order (with microtasks flushed between). */
  async advance(ms) {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
      await flush();
    }
    this.t = end;
    await flush();
  }
}

export async function flush() { for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r)); }

export class FakeWebSocket {
  static instances = [];
  static reset() { FakeWebSocket.instances = []; }
  static get last() { return FakeWebSocket.instances[FakeWebSocket.instances.length - 1]; }
  constructor(url, protocol) {
    this.url = url; this.protocol = protocol; this.sent = []; this.closed = null;
    FakeWebSocket.instances.push(this);
  }
  send(data) { this.sent.push(JSON.parse(data)); }
  close(code = 1000, reason = '') { this.closed = { code, reason }; }
  open() { this.onopen && this.onopen({}); }
  serverSend(frame) { this.onmessage && this.onmessage({ data: JSON.stringify(frame) }); }
  serverClose(code, reason = '') { this.closed = { code, reason }; this.onclose && this.onclose({ code, reason }); }
  lastSent(type) { return [...this.sent].reverse().find((f) => f.type === type); }
  /** Answers the last request of `type` with a recorded answer (its id replaced). */
  answer(type, recorded) { const req = this.lastSent(type); this.serverSend({ ...recorded, id: req.id }); }
}

/** A JWT-shaped token (unsigned; the client never verifies) with `exp` in seconds. */
export function fakeToken(user, expMs) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ user_id: user, exp: Math.floor(expMs / 1000) })}.c2ln`;
}

export function okFrame(over = {}) {
  return { type: 'connection.ok', id: 'auth', data: { connection_id: 'c-1', expires_at: 1795721340000, last_seq: 0, replay_complete: true, replayed: 0, resume_token: 'a'.repeat(64), resumed: false, sessions: [], user_id: 'bob', ...over } };
}

export function makeClient(opts = {}) {
  FakeWebSocket.reset();
  const clock = new FakeClock();
  const userId = (opts.user && opts.user.id) || 'bob';
  const client = new SwitchboardClient({
    url: 'ws://sb.test:9000/v1/connect', user: { id: userId },
    token: opts.tokenProvider && !opts.token ? undefined : (opts.token || fakeToken(userId, clock.now() + 3600e3)),
    WebSocket: FakeWebSocket, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, now: clock.now,
    random: () => 0.5, RTCPeerConnection: null, getUserMedia: null, pingIntervalMs: 0,
    ...opts,
  });
  return { client, clock };
}

/** Connects a client through a fake socket answered with `ok` (a connection.ok frame). */
export async function connectClient(client, ok = okFrame()) {
  const p = client.connect();
  await flush();
  const ws = FakeWebSocket.last;
  ws.open();
  await flush();
  ws.serverSend({ ...ok, id: ws.lastSent('auth').id });
  await p;
  return ws;
}
