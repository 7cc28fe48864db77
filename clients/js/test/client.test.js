import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SwitchboardClient, CallingState, SwitchboardError } from '../src/switchboard.js';
import { makeClient, connectClient, okFrame, FakeWebSocket, flush, fixture, received, answerTo, fakeToken } from './helpers.js';

test('exports and CallingState values', () => {
  assert.deepEqual({ ...CallingState }, { IDLE: 'idle', RINGING_OUTGOING: 'ringing-outgoing', RINGING_INCOMING: 'ringing-incoming', JOINING: 'joining', JOINED: 'joined', RECONNECTING: 'reconnecting', ENDED: 'ended' });
  assert.equal(typeof SwitchboardClient, 'function');
  assert.throws(() => new SwitchboardClient({ url: 'ws://x' }), SwitchboardError);
});

test('ring event: the Call object for the cid, ringing-incoming; client.call returns the same object', async () => {
  const f = fixture('ringing-flow');
  const bob = received(f, 'bob');
  const { client } = makeClient();
  const ws = await connectClient(client, bob[0]);
  const rings = [];
  const raw = [];
  client.on('ring', (call) => rings.push([call, call.state.callingState]));
  client.on('event', (fr) => raw.push(fr.type));
  ws.serverSend(bob[1]);
  assert.equal(rings.length, 1);
  const [call, st] = rings[0];
  assert.equal(st, 'ringing-incoming');
  assert.equal(call, client.call('ringing', bob[1].data.call.id));
  assert.equal(call.state.ringing.from, 'alice');
  assert.deepEqual(raw, ['call.ring']);
  const states = [];
  call.on('state', (s) => states.push(s.callingState));
  const acc = call.accept();
  await flush();
  ws.answer('call.accept', answerTo(f, 'bob', 'call.accept'));
  await acc;
  const j = call.join({ media: false });
  await flush();
  ws.answer('call.join', answerTo(f, 'bob', 'call.join'));
  await j;
  assert.deepEqual(states, ['idle', 'joining', 'joined']);
  const callEvents = [];
  call.on('event', (fr) => callEvents.push(fr.type));
  for (const fr of bob.slice(4).filter((x) => x.seq)) ws.serverSend(fr);
  assert.ok(callEvents.includes('call.custom'));
  assert.ok(callEvents.includes('signal'));
  assert.equal(call.state.participants.length, 2);
  assert.equal(rings.length, 1); // no second ring
});

test('persistSocket false: no socket until the first call operation; closed when no call is active', async () => {
  const f = fixture('ringing-flow');
  const { client, clock } = makeClient({ persistSocket: false, user: { id: 'alice' } });
  assert.equal(client.connectionState, 'idle');
  assert.equal(FakeWebSocket.instances.length, 0);
  const call = client.call('ringing', 'c1');
  const p = call.getOrCreate({ members: ['bob'], ring: true });
  await flush();
  const ws = FakeWebSocket.last;
  assert.ok(ws, 'socket opened lazily');
  ws.open(); await flush();
  ws.serverSend({ ...received(f, 'alice')[0], id: 'auth' });
  await flush();
  const req = ws.lastSent('call.get_or_create');
  assert.deepEqual(req.data, { type: 'ringing', id: 'c1', members: ['bob'], ring: true });
  ws.answer('call.get_or_create', answerTo(f, 'alice', 'call.get_or_create'));
  await p;
  assert.equal(call.state.callingState, 'ringing-outgoing');
  await clock.advance(10);
  assert.equal(client.connectionState, 'connected'); // a call is active
  const r = call.reject();
  await flush();
  assert.equal(ws.lastSent('call.reject').data.reason, 'cancel'); // the caller's reject cancels
  const goc = answerTo(f, 'alice', 'call.get_or_create').data;
  ws.answer('call.reject', { type: 'response', data: { ...goc, call: { ...goc.call, ended_at: 1, ended_reason: 'cancelled' } } });
  await r;
  assert.equal(call.state.callingState, 'ended');
  await clock.advance(10);
  assert.equal(client.connectionState, 'disconnected');
});

test('token refresh race: two expiring notices → one provider call, one token.refresh', async () => {
  let calls = 0;
  let release;
  const provider = () => { calls++; return new Promise((r) => { release = r; }); };
  const { client, clock } = makeClient({ tokenProvider: provider, token: fakeToken('bob', Date.now() + 60e3) });
  const ws = await connectClient(client);
  assert.equal(calls, 0);
  ws.serverSend({ type: 'connection.token_expiring', seq: 1, data: { expires_at: 1795717800000 } });
  ws.serverSend({ type: 'connection.token_expiring', seq: 2, data: { expires_at: 1795717800000 } });
  await flush();
  assert.equal(calls, 1);
  const fresh = fakeToken('bob', clock.now() + 7200e3);
  release(fresh);
  await flush();
  ws.serverSend({ type: 'connection.token_expiring', seq: 3, data: { expires_at: 1795717800000 } });
  await flush();
  assert.equal(calls, 1);
  const refreshes = ws.sent.filter((x) => x.type === 'token.refresh');
  assert.equal(refreshes.length, 1);
  assert.equal(refreshes[0].data.token, fresh);
  ws.answer('token.refresh', answerTo(fixture('errors-and-tokens'), 'expiring', 'token.refresh'));
  // after a refresh the server re-arms the notice: a new expiry gets a new provider call
  ws.serverSend({ type: 'connection.token_expiring', seq: 4, data: { expires_at: 1795724943000 } });
  await flush();
  assert.equal(calls, 2);
});

test('token expired on a live socket: provider called once, reconnect resumes with the new token', async () => {
  const f = fixture('token-expiry');
  const short = received(f, 'short');
  let calls = 0;
  const { client, clock } = makeClient({ tokenProvider: async () => { calls++; return fakeToken('frank', clock.now() + 3600e3); }, token: fakeToken('frank', Date.now() + 60e3), user: { id: 'frank' } });
  const ws = await connectClient(client, short[0]);
  ws.serverSend(short[1]); // token_expiring
  await flush();
  assert.equal(calls, 1);
  ws.answer('token.refresh', { type: 'error', error: { code: 'unavailable', message: 'x' } });
  ws.serverSend(short[2]); // token_expired error, then 4001
  ws.serverClose(4001, 'token_expired');
  assert.equal(client.connectionState, 'reconnecting');
  await clock.advance(500);
  assert.equal(calls, 2); // the expired token is not reused
  const ws2 = FakeWebSocket.last;
  ws2.open(); await flush();
  const auth = ws2.lastSent('auth');
  assert.equal(auth.resume_token, short[0].data.resume_token);
  assert.equal(auth.last_seq, 1);
  assert.equal(auth.token.split('.').length, 3);
});

test('token provider keeps failing: retried with backoff, then a terminal error', async () => {
  let calls = 0;
  const errors = [];
  const { client, clock } = makeClient({ tokenProvider: async () => { calls++; throw new Error('backend down'); }, tokenAttempts: 3 });
  client.on('error', (e) => errors.push(e));
  const p = client.connect();
  p.catch(() => {});
  await flush();
  assert.equal(calls, 1);
  await clock.advance(249);
  assert.equal(calls, 1);
  await clock.advance(1); // first retry: ceiling 500 ms, random 0.5 → 375 ms
  await clock.advance(200);
  assert.equal(calls, 2);
  await clock.advance(1000);
  assert.equal(calls, 3);
  await assert.rejects(p, (e) => e.code === 'token_provider_failed' && e.retryable === false);
  assert.equal(client.connectionState, 'disconnected');
  assert.equal(errors.at(-1).code, 'token_provider_failed');
  assert.equal(FakeWebSocket.instances.length, 0);
});

test('missing token: tokenProvider is used for the first connect', async () => {
  let calls = 0;
  const { client } = makeClient({ tokenProvider: async () => { calls++; return fakeToken('bob', Date.now() + 3600e3); } });
  const ws = await connectClient(client);
  assert.equal(calls, 1);
  assert.ok(ws.sent[0].token);
});

test('kicked: participant_left for our own session leaves the call state', async () => {
  const f = fixture('resume');
  const bob = received(f, 'bob');
  const { client } = makeClient();
  const ws = await connectClient(client, bob[0]);
  const call = client.call('default', bob[1].data.call.id);
  const j = call.join({ media: false });
  await flush();
  ws.answer('call.join', bob[1]);
  await j;
  ws.serverSend({ type: 'call.participant_left', seq: 1, call_cid: call.cid, data: { call_cid: call.cid, participant: { session_id: call.state.ownSessionId, user_id: 'bob', reason: 'kicked' } } });
  assert.equal(call.state.callingState, 'idle');
  assert.equal(call.state.leftReason, 'kicked');
});

test('disconnect() abandons sessions without auto-rejoin on a later connect', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const call = client.call('default', 'm');
  const j = call.join({ media: false });
  await flush();
  ws.answer('call.join', { type: 'response', data: { session_id: 's1', role: 'initiator', sfu: null, call: { cid: 'default:m', id: 'm', type: 'default', created_by: 'bob', ended_at: null, sfu: null }, members: [], participants: [{ session_id: 's1', user_id: 'bob' }] } });
  await j;
  client.disconnect();
  assert.equal(client.connectionState, 'disconnected');
  assert.equal(call.state.callingState, 'idle');
  assert.equal(call.state.leftReason, 'disconnected');
  const ws2 = await connectClient(client);
  assert.equal(ws2.lastSent('auth').resume_token, undefined);
  await flush();
  assert.equal(ws2.sent.filter((x) => x.type === 'call.join').length, 0);
});
