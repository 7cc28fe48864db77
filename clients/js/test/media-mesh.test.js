import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPolite } from '../src/media-mesh.js';
import { makeClient, connectClient, flush, fixture, received, answerTo } from './helpers.js';
import { FakePC, fakeStream } from './fake-media.js';

test('polite side is decided deterministically by session id', () => {
  assert.equal(isPolite('a', 'b'), true);
  assert.equal(isPolite('b', 'a'), false);
});

test('mesh: offer to a newcomer, queued candidates, answer, remote stream, cleanup on leave', async () => {
  FakePC.all = [];
  const f = fixture('ringing-flow');
  const bob = received(f, 'bob');
  const local = fakeStream();
  let gumArgs;
  const { client } = makeClient({ RTCPeerConnection: FakePC, getUserMedia: async (c) => { gumArgs = c; return local; } });
  const ws = await connectClient(client, bob[0]);
  const call = client.call('ringing', bob[1].data.call.id);
  const j = call.join({ media: { audio: true, video: true } });
  await flush();
  assert.deepEqual(gumArgs, { audio: true, video: true });
  ws.answer('call.join', answerTo(f, 'bob', 'call.join'));
  await j;
  assert.equal(call.localStream, local);
  assert.deepEqual(ws.lastSent('call.update_participant').data, { type: 'ringing', id: call.id, audio: true, video: true });
  assert.equal(FakePC.all.length, 0); // alone in the call
  const joined = bob.find((x) => x.type === 'call.participant_joined');
  const aliceSid = joined.data.participant.session_id;
  ws.serverSend({ ...joined, seq: 1 });
  await flush();
  assert.equal(FakePC.all.length, 1);
  const pc = FakePC.all[0];
  assert.equal(pc.tracks.length, 2);
  const offer = ws.sent.find((x) => x.type === 'signal.send' && x.data.kind === 'offer');
  assert.equal(offer.data.to_session, aliceSid);
  assert.equal(offer.data.session_id, call.state.ownSessionId);
  assert.equal(offer.data.payload.type, 'offer');
  const sig = (seq, kind, payload) => ({ type: 'signal', seq, call_cid: call.cid, data: { call_cid: call.cid, from_session: aliceSid, from_user: 'alice', to_session: call.state.ownSessionId, kind, payload } });
  ws.serverSend(sig(2, 'candidate', { candidate: 'c1', sdpMid: '0' }));
  await flush();
  assert.equal(pc.candidates.length, 0); // no remote description yet: queued
  ws.serverSend(sig(3, 'answer', { type: 'answer', sdp: 'v=0 answer' }));
  await flush();
  assert.equal(pc.remoteDescription.type, 'answer');
  assert.deepEqual(pc.candidates, [{ candidate: 'c1', sdpMid: '0' }]);
  const streams = [];
  call.on('stream', (e) => streams.push(e));
  const removed = [];
  call.on('stream-removed', (e) => removed.push(e.sessionId));
  const remote = fakeStream();
  pc.fireTrack(remote);
  assert.deepEqual(streams.map((e) => [e.sessionId, e.userId, e.stream]), [[aliceSid, 'alice', remote]]);
  assert.equal(call.remoteStreams.get(aliceSid), remote);
  ws.serverSend({ type: 'call.participant_left', seq: 4, call_cid: call.cid, data: { call_cid: call.cid, participant: { session_id: aliceSid, user_id: 'alice', reason: 'left' } } });
  assert.equal(pc.closed, true);
  assert.deepEqual(removed, [aliceSid]);
  assert.equal(call.remoteStreams.size, 0);
  const l = call.leave();
  await flush();
  ws.answer('call.leave', answerTo(f, 'bob', 'call.leave'));
  await l;
  assert.equal(call.state.callingState, 'idle');
  assert.equal(call.localStream, null);
  assert.equal(local.getTracks().every((t) => t.stopped), true);
});

test('mesh: the polite side answers a colliding offer; the impolite side ignores it', async () => {
  FakePC.all = [];
  const { client } = makeClient({ RTCPeerConnection: FakePC, getUserMedia: async () => fakeStream(['audio']) });
  const ws = await connectClient(client);
  const call = client.call('default', 'm');
  const j = call.join({ media: { audio: true } });
  await flush();
  const me = 'm-session';
  const P = (sid, user) => ({ session_id: sid, user_id: user, audio: false, video: false, screenshare: false, pinned: false, speaking: false, dominant_speaker: false });
  ws.answer('call.join', { type: 'response', data: { session_id: me, role: 'participant', sfu: null, call: { cid: 'default:m', id: 'm', type: 'default', created_by: 'x', ended_at: null, sfu: null }, members: [], participants: [P(me, 'bob'), P('a-session', 'amy'), P('z-session', 'zed')] } });
  await j;
  await flush();
  assert.equal(FakePC.all.length, 2);
  const sig = (seq, from, kind, payload) => ({ type: 'signal', seq, call_cid: 'default:m', data: { from_session: from, to_session: me, kind, payload } });
  // both PCs made an offer; now both remotes offer too (glare)
  ws.serverSend(sig(1, 'a-session', 'offer', { type: 'offer', sdp: 'x' })); // we are impolite vs 'a…'
  ws.serverSend(sig(2, 'z-session', 'offer', { type: 'offer', sdp: 'y' })); // we are polite vs 'z…'
  await flush();
  const answers = ws.sent.filter((x) => x.type === 'signal.send' && x.data.kind === 'answer').map((x) => x.data.to_session);
  assert.deepEqual(answers, ['z-session']);
});
