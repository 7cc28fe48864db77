import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SwitchboardError } from '../src/switchboard.js';
import { backoffBounds } from '../src/backoff.js';
import { connectUrl } from '../src/connection.js';
import { makeClient, connectClient, okFrame, FakeWebSocket, flush, fixture, received, answerTo, fakeToken } from './helpers.js';

test('auth frame first, then requests; connect() resolves after connection.ok', async () => {
  const { client } = makeClient();
  const states = [];
  client.on('connection', (s) => states.push(s));
  const ws = await connectClient(client);
  assert.equal(ws.url, 'ws://sb.test:9000/v1/connect');
  assert.equal(ws.sent[0].type, 'auth');
  assert.ok(ws.sent[0].token);
  assert.equal(ws.sent[0].resume_token, undefined);
  assert.equal(client.connectionState, 'connected');
  assert.deepEqual(states, ['connecting', 'connected']);
});

test('url: http(s) base and bare ws host get /v1/connect', () => {
  assert.equal(connectUrl('http://h:9000'), 'ws://h:9000/v1/connect');
  assert.equal(connectUrl('https://h/base/'), 'wss://h/base/v1/connect');
  assert.equal(connectUrl('ws://h:1/v1/connect'), 'ws://h:1/v1/connect');
  assert.equal(connectUrl('ws://h:1/'), 'ws://h:1/v1/connect');
});

test('request timeout rejects with a SwitchboardError(timeout), retryable', async () => {
  const { client, clock } = makeClient({ requestTimeoutMs: 3000 });
  await connectClient(client);
  const p = client.call('default', 'x').get();
  let err;
  p.catch((e) => { err = e; });
  await flush();
  await clock.advance(2999);
  assert.equal(err, undefined);
  await clock.advance(1);
  assert.ok(err instanceof SwitchboardError);
  assert.equal(err.code, 'timeout');
  assert.equal(err.retryable, true);
  assert.equal(err.requestType, 'call.get');
});

test('server error frames map to SwitchboardError with code and retryable', async () => {
  const f = fixture('errors-and-tokens');
  const { client } = makeClient({ user: { id: 'alice' } });
  const ws = await connectClient(client, okFrame({ user_id: 'alice' }));
  const p = client.call('default', 'nope').get();
  await flush();
  ws.answer('call.get', answerTo(f, 'alice', 'call.get'));
  await assert.rejects(p, (e) => e instanceof SwitchboardError && e.code === 'call_not_found' && e.retryable === false && /no call/.test(e.message));
  const call = client.call('ringing', 'p');
  const j = call.join({ media: false });
  await flush();
  assert.equal(call.state.callingState, 'joining');
  ws.answer('call.join', answerTo(f, 'alice', 'call.join', 1));
  await assert.rejects(j, (e) => e.code === 'not_a_member');
  assert.equal(call.state.callingState, 'idle'); // no optimistic join
  const r = client._connection.request('call.get', {});
  await flush();
  ws.answer('call.get', { type: 'error', error: { code: 'unavailable', message: 'commit failed' } });
  await assert.rejects(r, (e) => e.code === 'unavailable' && e.retryable === true);
});

test('backoff grows exponentially with jitter within bounds', async () => {
  for (const [attempt, min, max] of [[0, 250, 500], [1, 500, 1000], [2, 1000, 2000], [3, 2000, 4000], [10, 7500, 15000]]) {
    assert.deepEqual(backoffBounds(attempt), { min, max });
  }
  // drive real reconnects: random 0 → lower bound, random 1 → upper bound
  for (const [rnd, expect] of [[0, [250, 500, 1000, 2000]], [1, [500, 1000, 2000, 4000]]]) {
    const { client, clock } = makeClient({ random: () => rnd });
    const ws = await connectClient(client);
    const delays = [];
    client._connection.on('retry', ({ delay }) => delays.push(delay));
    ws.serverClose(1006);
    for (let i = 0; i < 3; i++) {
      await clock.advance(delays.at(-1));
      FakeWebSocket.last.serverClose(1006); // fails before opening
    }
    assert.deepEqual(delays, expect);
    assert.equal(client.connectionState, 'reconnecting');
    client.disconnect();
  }
});

/** Bob connected and joined to the recorded meeting (the resume fixture's first frames). */
async function joinedAsBob(bobFrames) {
  const { client, clock } = makeClient();
  const ws = await connectClient(client, bobFrames[0]);
  const call = client.call('default', bobFrames[1].data.call.id);
  const joining = call.join({ media: false });
  await flush();
  ws.answer('call.join', bobFrames[1]);
  await joining;
  return { client, clock, ws, call };
}

test('resume: auth carries resume_token and last_seq; replay with duplicates dropped', async () => {
  const f = fixture('resume');
  const bobFrames = received(f, 'bob');
  const resumed = received(f, 'bob-resumed');
  const { client, clock, ws, call } = await joinedAsBob(bobFrames);
  const events = [];
  client.on('event', (fr) => events.push(fr.seq));
  ws.serverSend(bobFrames[2]); // participant_joined seq 1
  assert.equal(call.state.participants.length, 2);
  ws.serverClose(1006);
  assert.equal(client.connectionState, 'reconnecting');
  assert.equal(call.state.callingState, 'reconnecting');
  await clock.advance(500);
  const ws2 = FakeWebSocket.last;
  ws2.open();
  await flush();
  const auth = ws2.lastSent('auth');
  assert.equal(auth.resume_token, bobFrames[0].data.resume_token);
  assert.equal(auth.last_seq, 1);
  ws2.serverSend({ ...resumed[0], id: auth.id });
  for (const fr of resumed.slice(1)) { ws2.serverSend(fr); ws2.serverSend(fr); } // every event twice
  ws2.serverSend(bobFrames[2]); // an old one again
  assert.deepEqual(events, [1, 2, 3, 4, 5]);
  assert.equal(client.connectionState, 'connected');
  assert.equal(call.state.callingState, 'joined');
  const alice = call.state.participants.find((p) => p.user_id === 'alice');
  assert.equal(alice.audio, true);
  assert.equal(alice.video, true);
  assert.equal(call.state.dominantSpeaker, alice.session_id);
  assert.equal(ws2.sent.filter((x) => x.type === 'call.get').length, 0); // complete replay: no refetch
});

test('a gap in seq resumes to fill it; the replayed events then apply in order', async () => {
  const { client, clock } = makeClient();
  const ws = await connectClient(client);
  const seen = [];
  client.on('event', (fr) => seen.push(fr.seq));
  const ev = (seq) => ({ type: 'call.custom', seq, call_cid: 'default:m', data: { custom: { seq } } });
  ws.serverSend(ev(1));
  ws.serverSend(ev(3)); // 2 is missing
  assert.equal(client.connectionState, 'reconnecting');
  await clock.advance(0);
  const ws2 = FakeWebSocket.last;
  assert.notEqual(ws2, ws);
  ws2.open(); await flush();
  assert.equal(ws2.lastSent('auth').last_seq, 1);
  ws2.serverSend({ ...okFrame({ resumed: true, replayed: 2, last_seq: 3 }), id: 'auth' });
  ws2.serverSend(ev(2)); ws2.serverSend(ev(3)); ws2.serverSend(ev(4));
  assert.deepEqual(seen, [1, 2, 3, 4]);
});

test('incomplete replay or refused resume: re-fetch every call with call.get', async () => {
  const f = fixture('resume');
  const bobFrames = received(f, 'bob');
  const gap = received(f, 'bob-resume-gap');
  const { client, clock, ws, call } = await joinedAsBob(bobFrames);
  ws.serverClose(4003);
  await clock.advance(500);
  const ws2 = FakeWebSocket.last;
  ws2.open(); await flush();
  ws2.serverSend({ ...gap[0], id: 'auth' }); // resumed, replay_complete false, last_seq jumped
  await flush();
  const get = ws2.lastSent('call.get');
  assert.ok(get, 'call.get sent');
  assert.equal(get.data.id, call.id);
  ws2.answer('call.get', gap[1]);
  await flush();
  assert.equal(call.state.callingState, 'joined');
  assert.equal(call.state.dominantSpeaker, gap[1].data.call.dominant_speaker);
  // a later event with a seq after the jump is accepted
  const seen = [];
  client.on('event', (fr) => seen.push(fr.seq));
  ws2.serverSend({ type: 'call.custom', seq: 1002, call_cid: call.cid, data: {} });
  assert.deepEqual(seen, [1002]);
  // resume refused (new connection): our session is gone
  ws2.serverClose(1006);
  await clock.advance(1000);
  const ws3 = FakeWebSocket.last;
  ws3.open(); await flush();
  call.joinOptions = { media: false, rejoin: false };
  ws3.serverSend({ ...received(f, 'bob-resume-unknown')[0], id: 'auth' });
  await flush();
  assert.equal(call.state.ownSessionId, null);
  assert.equal(call.state.leftReason, 'connection_lost');
  assert.ok(ws3.lastSent('call.get'));
});

test('4002 (taken over) is terminal; auth failure without provider rejects connect()', async () => {
  const { client } = makeClient();
  const ws = await connectClient(client);
  const errors = [];
  client.on('error', (e) => errors.push(e.code));
  ws.serverClose(4002, 'replaced');
  assert.equal(client.connectionState, 'disconnected');
  assert.deepEqual(errors, ['connection_replaced']);
  const f = fixture('errors-and-tokens');
  const { client: c2 } = makeClient();
  const p = c2.connect();
  await flush();
  const w = FakeWebSocket.last;
  w.open(); await flush();
  const bad = received(f, 'badtoken')[0];
  w.serverSend({ ...bad, id: 'auth' });
  w.serverClose(4001, 'token_invalid');
  await assert.rejects(p, (e) => e.code === 'token_invalid' && e.retryable === false);
  assert.equal(c2.connectionState, 'disconnected');
});

test('ping keeps the socket alive; an unanswered ping reconnects', async () => {
  const { client, clock } = makeClient({ pingIntervalMs: 25000, requestTimeoutMs: 5000 });
  const ws = await connectClient(client);
  await clock.advance(25000);
  assert.ok(ws.lastSent('ping'));
  ws.answer('ping', { type: 'pong' });
  await clock.advance(25000);
  assert.equal(ws.sent.filter((x) => x.type === 'ping').length, 2);
  await clock.advance(5000); // second ping unanswered
  assert.equal(client.connectionState, 'reconnecting');
  assert.notEqual(FakeWebSocket.last, ws);
});

test('tokens never reach the logger', async () => {
  const lines = [];
  const logger = { debug: (...a) => lines.push(JSON.stringify(a)), info: (...a) => lines.push(JSON.stringify(a)), warn: (...a) => lines.push(JSON.stringify(a)) };
  const token = fakeToken('bob', Date.now() + 3600e3);
  const { client } = makeClient({ logger, token });
  await connectClient(client);
  assert.ok(lines.length > 0);
  const all = lines.join('\n');
  assert.ok(!all.includes(token));
  assert.ok(!all.includes('a'.repeat(64)), 'resume token redacted');
  assert.ok(all.includes('<redacted>'));
});

test('a socket that gets no connection.ok within the request timeout is given up and tried again', async () => {
  const { client, clock } = makeClient({ requestTimeoutMs: 3000 });
  const connected = client.connect();
  await flush();
  const silent = FakeWebSocket.last;
  silent.open(); // accepted, auth sent, never answered (a balancer with nothing behind it yet)
  await clock.advance(2999);
  assert.equal(silent.closed, null);
  assert.equal(FakeWebSocket.instances.length, 1);
  await clock.advance(1);
  assert.deepEqual(silent.closed, { code: 4000, reason: 'no answer' });
  assert.equal(client.connectionState, 'connecting');
  await clock.advance(10000); // the backoff, then the next socket
  const next = FakeWebSocket.last;
  assert.notEqual(next, silent);
  next.open();
  next.serverSend(okFrame());
  await connected;
  assert.equal(client.connectionState, 'connected');
  await clock.advance(60000); // the answered socket's timer is gone: nothing closes it
  assert.equal(next.closed, null);
});
