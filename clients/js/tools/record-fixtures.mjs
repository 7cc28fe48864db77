// Records real protocol frames from a running daemon into test/fixtures/*.json.
// Usage: SWITCHBOARD_AUTH_API_SECRET=… node --experimental-websocket tools/record-fixtures.mjs PORT /path/to/switchboard
// Tokens in auth/token.refresh frames are replaced with "<redacted>" before saving.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const [port, bin] = process.argv.slice(2);
const URL_ = `ws://127.0.0.1:${port}/v1/connect`;
const outDir = new URL('../test/fixtures/', import.meta.url);
const mint = (user, ttl = '1h') => execFileSync(bin, ['token', '--user', user, '--ttl', ttl], { encoding: 'utf8' }).trim().split('\n').pop();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function redact(frame) {
  const f = structuredClone(frame);
  if (typeof f.token === 'string') f.token = '<redacted>';
  if (f.data && typeof f.data.token === 'string' && f.type !== 'response') f.data.token = '<redacted>';
  return f;
}

class Rec {
  constructor() { this.log = []; }
  async open(name, token, extra = {}) {
    const ws = new WebSocket(URL_);
    const c = { name, ws, frames: [], waiters: [], nextId: 1, closed: null };
    ws.onmessage = (ev) => {
      const frame = JSON.parse(ev.data);
      this.log.push({ conn: name, dir: 'recv', frame });
      c.frames.push(frame);
      for (const w of [...c.waiters]) if (w.pred(frame)) { c.waiters.splice(c.waiters.indexOf(w), 1); w.resolve(frame); }
    };
    ws.onclose = (ev) => { c.closed = { code: ev.code, reason: ev.reason }; this.log.push({ conn: name, dir: 'close', code: ev.code, reason: ev.reason }); };
    await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
    c.wait = (pred, ms = 3000) => {
      const hit = c.frames.find((f) => pred(f) && !f.__used);
      if (hit) { hit.__used = true; return Promise.resolve(hit); }
      return new Promise((resolve, reject) => {
        const w = { pred, resolve: (f) => { f.__used = true; resolve(f); } };
        c.waiters.push(w);
        setTimeout(() => reject(new Error(`${name}: timeout waiting`)), ms);
      });
    };
    c.send = (frame) => { this.log.push({ conn: name, dir: 'send', frame: redact(frame) }); ws.send(JSON.stringify(frame)); };
    c.req = (type, data) => { const id = c.nextId++; c.send(data === undefined ? { id, type } : { id, type, data }); return c.wait((f) => f.id === id && f.type !== 'connection.ok'); };
    c.ev = (type) => c.wait((f) => f.type === type && f.seq !== undefined);
    c.close = () => ws.close(1000);
    if (token !== null) {
      c.send({ type: 'auth', id: 'a1', token, ...extra });
      c.ok = await c.wait((f) => f.type === 'connection.ok' || f.type === 'error');
    }
    return c;
  }
  save(name) {
    const clean = JSON.parse(JSON.stringify(this.log, (k, v) => (k === '__used' ? undefined : v)));
    writeFileSync(new URL(`${name}.json`, outDir), JSON.stringify(clean, null, 1) + '\n');
    console.log('saved', name, clean.length, 'entries');
  }
}

const run = Date.now().toString(36);
async function ringingFlow() {
  const r = new Rec();
  const a = await r.open('alice', mint('alice'));
  const b = await r.open('bob', mint('bob'));
  const id = `c${run}`;
  await a.req('call.get_or_create', { type: 'ringing', id, members: ['bob'], ring: true, custom: { title: 'Standup' } });
  await b.ev('call.ring');
  await b.req('call.accept', { type: 'ringing', id });
  await a.ev('call.accepted');
  await b.req('call.join', { type: 'ringing', id });
  await a.req('call.join', { type: 'ringing', id });
  await b.ev('call.participant_joined');
  await a.req('call.update_participant', { type: 'ringing', id, audio: true, speaking: true, audio_level: 0.5 });
  await b.ev('call.participant_updated');
  await b.req('call.update_participant', { type: 'ringing', id, video: true });
  await a.ev('call.participant_updated');
  await b.req('call.update_participant', { type: 'ringing', id, screenshare: true });
  await a.ev('call.participant_updated');
  await a.req('call.update_participant', { type: 'ringing', id, pinned: true });
  await b.ev('call.participant_updated');
  await a.req('call.update_participant', { type: 'ringing', id, speaking: false, audio_level: 0 });
  await b.req('call.update_participant', { type: 'ringing', id, speaking: true, audio_level: 0.8 });
  await a.ev('call.dominant_speaker_changed');
  await a.req('call.send_event', { type: 'ringing', id, custom: { reaction: 'wave' } });
  await b.ev('call.custom');
  const bs = b.frames.find((f) => f.type === 'response' && f.data && f.data.session_id).data.session_id;
  await a.req('signal.send', { to_session: bs, kind: 'offer', payload: { type: 'offer', sdp: 'v=0\r\n' } });
  await b.ev('signal');
  await a.req('call.invite', { type: 'ringing', id, members: ['carol'] });
  await b.ev('call.members_added');
  await a.req('call.get', { type: 'ringing', id });
  await b.req('call.leave', { type: 'ringing', id });
  await a.ev('call.participant_left');
  await a.req('call.end', { type: 'ringing', id });
  await a.ev('call.ended');
  await sleep(100);
  a.close(); b.close(); await sleep(100);
  r.save('ringing-flow');
}

async function rejectFlows() {
  const r = new Rec();
  const a = await r.open('alice', mint('alice'));
  const b = await r.open('bob', mint('bob'));
  const b2 = await r.open('bob2', mint('bob'));
  const id = `r${run}`;
  await a.req('call.get_or_create', { type: 'ringing', id, members: ['bob'], ring: true });
  await b.ev('call.ring'); await b2.ev('call.ring');
  await b.req('call.reject', { type: 'ringing', id, reason: 'decline' });
  await a.ev('call.rejected'); await b2.ev('call.rejected');
  await a.ev('call.ended');
  await sleep(100);
  const id2 = `x${run}`;
  await a.req('call.get_or_create', { type: 'ringing', id: id2, members: ['bob'], ring: true });
  await b.ev('call.ring'); await b2.ev('call.ring');
  await a.req('call.reject', { type: 'ringing', id: id2, reason: 'cancel' });
  await b.ev('call.ring_stopped'); await a.ev('call.ended');
  await sleep(100);
  const id3 = `e${run}`;
  await a.req('call.get_or_create', { type: 'ringing', id: id3, members: ['bob'], ring: true });
  await b.ev('call.ring'); await b2.ev('call.ring');
  await b.req('call.join', { type: 'ringing', id: id3 });
  await b2.ev('call.ring_stopped'); await a.ev('call.accepted');
  await a.req('call.join', { type: 'ringing', id: id3 });
  await a.req('call.leave', { type: 'ringing', id: id3 });
  await b.ev('call.ended');
  await sleep(100);
  a.close(); b.close(); b2.close(); await sleep(100);
  r.save('reject-cancel-elsewhere');
}

async function resumeFlow() {
  const r = new Rec();
  const a = await r.open('alice', mint('alice'));
  const b = await r.open('bob', mint('bob'));
  const id = `m${run}`;
  await b.req('call.join', { type: 'default', id, create: true });
  await a.req('call.join', { type: 'default', id });
  await b.ev('call.participant_joined');
  const resumeToken = b.ok.data.resume_token;
  const lastSeq = b.frames.filter((f) => f.seq).reduce((m, f) => Math.max(m, f.seq), 0);
  b.close(); await sleep(200);
  await a.req('call.update_participant', { type: 'default', id, audio: true });
  await a.req('call.update_participant', { type: 'default', id, video: true, speaking: true, audio_level: 0.3 });
  await a.req('call.send_event', { type: 'default', id, custom: { n: 1 } });
  await sleep(100);
  const b2 = await r.open('bob-resumed', mint('bob'), { resume_token: resumeToken, last_seq: lastSeq });
  await sleep(200);
  b2.close(); await sleep(200);
  const b3 = await r.open('bob-resume-gap', mint('bob'), { resume_token: resumeToken, last_seq: lastSeq + 1000 });
  await sleep(200);
  await b3.req('call.get', { type: 'default', id });
  const b4 = await r.open('bob-resume-unknown', mint('bob'), { resume_token: 'f'.repeat(64), last_seq: 3 });
  await sleep(100);
  await a.req('call.end', { type: 'default', id }).catch(() => {});
  await sleep(100);
  for (const c of [a, b3, b4]) c.close();
  await sleep(100);
  r.save('resume');
}

async function errorsFlow() {
  const r = new Rec();
  const a = await r.open('alice', mint('alice'));
  await a.req('call.get', { type: 'default', id: `nope${run}` });
  await a.req('call.join', { type: 'default', id: `nope${run}` });
  await a.req('call.frobnicate', {});
  const id = `p${run}`;
  const b = await r.open('bob', mint('bob'));
  await b.req('call.get_or_create', { type: 'ringing', id, members: ['carol'] });
  await a.req('call.join', { type: 'ringing', id });
  await b.req('call.accept', { type: 'ringing', id });
  await a.req('call.end', { type: 'ringing', id });
  await a.req('ping');
  const bad = await r.open('badtoken', 'eyJhbGciOiJIUzI1NiJ9.e30.xxxx');
  await sleep(200);
  const exp = await r.open('expiring', mint('dave', '30s'));
  await exp.ev('connection.token_expiring');
  await exp.req('token.refresh', { token: mint('dave', '2h') });
  await exp.req('token.refresh', { token: mint('erin', '2h') });
  await sleep(100);
  for (const c of [a, b, exp]) c.close();
  await sleep(100);
  r.save('errors-and-tokens');
}

async function expiryFlow() {
  const r = new Rec();
  const c = await r.open('short', mint('frank', '2s'));
  await c.ev('connection.token_expiring');
  await c.wait((f) => f.type === 'error', 10000);
  await sleep(300);
  const old = mint('frank', '1s');
  await sleep(7500);
  await r.open('expired', old);
  await sleep(300);
  r.save('token-expiry');
}

const only = process.argv[4];
if (!only || only === 'main') {
  await ringingFlow();
  await rejectFlows();
  await resumeFlow();
  await errorsFlow();
}
if (!only || only === 'expiry') await expiryFlow();
process.exit(0);
