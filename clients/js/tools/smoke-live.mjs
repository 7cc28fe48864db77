// Drives the library against a running daemon (signalling only, no media).
// Usage: SWITCHBOARD_AUTH_API_SECRET=… node --experimental-websocket tools/smoke-live.mjs PORT /path/to/switchboard
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { SwitchboardClient } from '../src/switchboard.js';

const [port, bin] = process.argv.slice(2);
const mint = (user, ttl = '1h') => execFileSync(bin, ['token', '--user', user, '--ttl', ttl], { encoding: 'utf8' }).trim().split('\n').pop();
const url = `http://127.0.0.1:${port}`;
const wait = (pred, ms = 3000) => new Promise((resolve, reject) => {
  const t0 = Date.now();
  const tick = () => (pred() ? resolve() : Date.now() - t0 > ms ? reject(new Error('timeout')) : setTimeout(tick, 10));
  tick();
});

const alice = new SwitchboardClient({ url, user: { id: 'alice' }, token: mint('alice') });
let providerCalls = 0;
const bob = new SwitchboardClient({ url, user: { id: 'bob' }, tokenProvider: async () => { providerCalls++; return mint('bob', providerCalls === 1 ? '30s' : '1h'); } });
await alice.connect();
await bob.connect();
let rung = null;
bob.on('ring', (call) => { rung = call; });
const id = `s${Date.now().toString(36)}`;
const ac = alice.call('ringing', id);
await ac.getOrCreate({ members: ['bob'], ring: true });
assert.equal(ac.state.callingState, 'ringing-outgoing');
await wait(() => rung);
assert.equal(rung.state.callingState, 'ringing-incoming');
await wait(() => providerCalls === 2); // bob's 30 s token: token_expiring at once → one refresh
await rung.accept();
await rung.join({ media: false });
assert.equal(rung.state.callingState, 'joined');
await ac.join({ media: false });
await wait(() => rung.state.participants.length === 2);
await ac.updateParticipant({ audio: true, speaking: true, audioLevel: 0.6 });
await wait(() => rung.state.dominantSpeaker === ac.state.ownSessionId);
assert.equal(rung.state.participants[0].user_id, 'alice');
// drop bob's socket: the client resumes and replays what it missed
bob._connection.ws.close(4000, 'test drop');
bob._connection._onClose(bob._connection.ws, 1006, 'test drop');
await ac.updateParticipant({ video: true });
await wait(() => bob.connectionState === 'connected' && rung.state.participants.find((p) => p.user_id === 'alice').video === true, 5000);
assert.equal(bob._connection.info.resumed, true);
assert.equal(rung.state.callingState, 'joined');
await ac.end();
await wait(() => rung.state.callingState === 'ended');
assert.equal(rung.state.endedReason, 'ended_by_user');
assert.equal(providerCalls, 2);
alice.disconnect(); bob.disconnect();
console.log('smoke ok');
