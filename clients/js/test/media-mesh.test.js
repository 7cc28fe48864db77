import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPolite, joinedAfter, MESH_WATCHDOG_MS, MESH_MAX_ICE_RESTARTS } from '../src/media-mesh.js';
import { makeClient, connectClient, flush, fixture, received, answerTo } from './helpers.js';
import { FakePC, fakeStream } from './fake-media.js';

/** FakePC that records the order of its calls and has ICE states the tests can set. */
class RecPC extends FakePC {
  constructor(config) {
    super(config);
    this.ops = []; this.offerOpts = [];
    this.iceConnectionState = 'new'; this.connectionState = 'new'; this.iceGatheringState = 'new';
  }
  addTrack(track, stream) { this.ops.push(`addTrack:${track.kind}`); super.addTrack(track, stream); }
  addTransceiver(kind, init) { this.ops.push(`addTransceiver:${kind}:${init.direction}`); super.addTransceiver(kind, init); }
  async createOffer(opts) { this.offerOpts.push(opts || null); this.ops.push(`createOffer${opts && opts.iceRestart ? ':iceRestart' : ''}`); return super.createOffer(opts); }
  async setLocalDescription(d) { await super.setLocalDescription(d); this.ops.push(`setLocal:${this.localDescription.type}`); }
  async setRemoteDescription(d) { await super.setRemoteDescription(d); this.ops.push(`setRemote:${d.type}`); }
  async addIceCandidate(c) { this.ops.push(`candidate:${c.candidate}`); return super.addIceCandidate(c); }
  /** Test hook: the pair connects. */
  connect() { this.iceConnectionState = 'connected'; this.connectionState = 'connected'; this.onconnectionstatechange && this.onconnectionstatechange(); }
}

const P = (sid, user, joinedAt) => ({ session_id: sid, user_id: user, joined_at: joinedAt, audio: false, video: false, screenshare: false, pinned: false, speaking: false, dominant_speaker: false });
const CALL = { cid: 'default:m', id: 'm', type: 'default', created_by: 'x', ended_at: null, sfu: null };
const sent = (ws, kind) => ws.sent.filter((x) => x.type === 'signal.send' && x.data.kind === kind);
const sig = (seq, from, to, kind, payload) => ({ type: 'signal', seq, call_cid: 'default:m', data: { call_cid: 'default:m', from_session: from, to_session: to, kind, payload } });

/** Joins the meeting 'default:m' as session `me` with the given participants list. */
async function joinMeeting({ me, participants, stream = fakeStream(), PC = RecPC }) {
  RecPC.all = FakePC.all = [];
  const { client, clock } = makeClient({ RTCPeerConnection: PC, getUserMedia: async () => stream });
  const ws = await connectClient(client);
  const call = client.call('default', 'm');
  const j = call.join({ media: { audio: true, video: true } });
  await flush();
  ws.answer('call.join', { type: 'response', data: { session_id: me, role: 'participant', sfu: null, call: CALL, members: [], participants } });
  await j;
  await flush();
  return { client, clock, ws, call };
}

test('polite side is decided deterministically by session id', () => {
  assert.equal(isPolite('a', 'b'), true);
  assert.equal(isPolite('b', 'a'), false);
});

test('the session that joined later makes the first offer; ties go to the greater session id', () => {
  assert.equal(joinedAfter({ session_id: 'a', joined_at: 2 }, { session_id: 'b', joined_at: 1 }), true);
  assert.equal(joinedAfter({ session_id: 'b', joined_at: 1 }, { session_id: 'a', joined_at: 2 }), false);
  assert.equal(joinedAfter({ session_id: 'b', joined_at: 5 }, { session_id: 'a', joined_at: 5 }), true);
  assert.equal(joinedAfter({ session_id: 'a', joined_at: 5 }, { session_id: 'b', joined_at: 5 }), false);
  assert.equal(joinedAfter({ session_id: 'b' }, { session_id: 'a', joined_at: 5 }), true); // unknown time: ids
  assert.equal(joinedAfter({ session_id: 'a', joined_at: 9 }, { session_id: 'b' }), false);
});

test('mesh (recorded ringing flow): the existing participant does not offer on participant_joined; it answers the newcomer, applying early candidates after the offer', async () => {
  RecPC.all = FakePC.all = [];
  const f = fixture('ringing-flow');
  const bob = received(f, 'bob');
  const local = fakeStream();
  let gumArgs;
  const { client, clock } = makeClient({ RTCPeerConnection: RecPC, getUserMedia: async (c) => { gumArgs = c; return local; } });
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
  const own = call.state.ownSessionId;
  assert.ok(own > aliceSid, 'our session id is the greater one: only joined_at makes alice the offerer');
  ws.serverSend({ ...joined, seq: 1 });
  await flush();
  await clock.advance(3 * MESH_WATCHDOG_MS);
  assert.equal(FakePC.all.length, 1);
  const pc = FakePC.all[0];
  // our tracks are on the connection before the remote offer, and no offer of ours went out
  assert.deepEqual(pc.ops, ['addTrack:audio', 'addTrack:video']);
  assert.equal(sent(ws, 'offer').length, 0);
  const s = (seq, kind, payload) => ({ type: 'signal', seq, call_cid: call.cid, data: { call_cid: call.cid, from_session: aliceSid, from_user: 'alice', to_session: own, kind, payload } });
  ws.serverSend(s(2, 'candidate', { candidate: 'c0', sdpMid: '0' })); // before the offer: queued
  await flush();
  assert.equal(pc.candidates.length, 0);
  ws.serverSend(s(3, 'offer', { type: 'offer', sdp: 'v=0 alice offer' }));
  ws.serverSend(s(4, 'candidate', { candidate: 'c1', sdpMid: '0' }));
  await flush();
  assert.deepEqual(pc.ops, ['addTrack:audio', 'addTrack:video', 'setRemote:offer', 'candidate:c0', 'setLocal:answer', 'candidate:c1']);
  const answers = sent(ws, 'answer');
  assert.equal(answers.length, 1);
  assert.equal(answers[0].data.to_session, aliceSid);
  assert.equal(answers[0].data.session_id, own);
  assert.equal(answers[0].data.payload.type, 'answer');
  assert.equal(sent(ws, 'offer').length, 0);
  await clock.advance(3 * MESH_WATCHDOG_MS); // the answering side has no watchdog
  assert.equal(sent(ws, 'offer').length, 0);
  const streams = [];
  call.on('stream', (e) => streams.push(e));
  const removed = [];
  call.on('stream-removed', (e) => removed.push(e.sessionId));
  const remote = fakeStream();
  pc.fireTrack(remote);
  assert.deepEqual(streams.map((e) => [e.sessionId, e.userId, e.stream]), [[aliceSid, 'alice', remote]]);
  assert.equal(call.remoteStreams.get(aliceSid), remote);
  ws.serverSend({ type: 'call.participant_left', seq: 5, call_cid: call.cid, data: { call_cid: call.cid, participant: { session_id: aliceSid, user_id: 'alice', reason: 'left' } } });
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

test('mesh: the newer session offers to everyone already in the call (tracks first), and queues candidates until the answer', async () => {
  const me = 'b-me';
  // joined_at decides, not the ids: 'a-old' and 'z-old' both joined before us.
  const { ws, call, clock } = await joinMeeting({ me, participants: [P('a-old', 'amy', 100), P('z-old', 'zed', 200), P(me, 'bob', 300)] });
  assert.equal(FakePC.all.length, 2);
  const offers = sent(ws, 'offer');
  assert.deepEqual(offers.map((x) => x.data.to_session).sort(), ['a-old', 'z-old']);
  for (const x of offers) { assert.equal(x.data.session_id, me); assert.equal(x.data.payload.type, 'offer'); }
  for (const pc of FakePC.all) assert.deepEqual(pc.ops, ['addTrack:audio', 'addTrack:video', 'setLocal:offer']);
  const pcA = call.media.peers.get('a-old').pc;
  ws.serverSend(sig(1, 'a-old', me, 'candidate', { candidate: 'early', sdpMid: '0' }));
  await flush();
  assert.equal(pcA.candidates.length, 0); // no remote description yet
  ws.serverSend(sig(2, 'a-old', me, 'answer', { type: 'answer', sdp: 'v=0 answer' }));
  await flush();
  assert.deepEqual(pcA.ops.slice(3), ['setRemote:answer', 'candidate:early']);
  assert.equal(pcA.signalingState, 'stable');
  // a late negotiationneeded (from adding the tracks) does not make a second offer
  await clock.advance(1);
  assert.equal(sent(ws, 'offer').length, 2);
});

test('mesh: an existing participant never offers on participant_joined, whatever the session ids', async () => {
  const me = 'z-me'; // the greater id: an id rule alone would make us offer
  const { ws, call, clock } = await joinMeeting({ me, participants: [P(me, 'zed', 100)] });
  assert.equal(FakePC.all.length, 0);
  ws.serverSend({ type: 'call.participant_joined', seq: 1, call_cid: 'default:m', data: { call_cid: 'default:m', participant: P('a-new', 'amy', 500) } });
  await flush();
  assert.equal(FakePC.all.length, 1);
  const pc = FakePC.all[0];
  assert.deepEqual(pc.ops, ['addTrack:audio', 'addTrack:video']);
  await clock.advance(3 * MESH_WATCHDOG_MS);
  assert.equal(sent(ws, 'offer').length, 0);
  ws.serverSend(sig(2, 'a-new', me, 'offer', { type: 'offer', sdp: 'v=0 offer' }));
  await flush();
  assert.deepEqual(sent(ws, 'answer').map((x) => x.data.to_session), ['a-new']);
  assert.equal(sent(ws, 'offer').length, 0);
  assert.equal(call.media.peers.get('a-new').established, true);
});

test('mesh: an offer from a newcomer we have not seen join yet opens its peer, which a state update does not close', async () => {
  const me = 'm-me';
  const { ws, call } = await joinMeeting({ me, participants: [P(me, 'bob', 100)] });
  ws.serverSend(sig(1, 'n-new', me, 'offer', { type: 'offer', sdp: 'v=0 offer' }));
  ws.serverSend({ type: 'call.participant_updated', seq: 2, call_cid: 'default:m', data: { call_cid: 'default:m', participant: { ...P(me, 'bob', 100), audio: true } } });
  await flush();
  assert.equal(FakePC.all.length, 1);
  assert.equal(FakePC.all[0].closed, false);
  assert.deepEqual(sent(ws, 'answer').map((x) => x.data.to_session), ['n-new']);
  ws.serverSend({ type: 'call.participant_joined', seq: 3, call_cid: 'default:m', data: { call_cid: 'default:m', participant: P('n-new', 'nia', 200) } });
  await flush();
  assert.equal(FakePC.all.length, 1); // the same peer
  assert.equal(sent(ws, 'offer').length, 0);
  ws.serverSend({ type: 'call.participant_left', seq: 4, call_cid: 'default:m', data: { call_cid: 'default:m', participant: { session_id: 'n-new', user_id: 'nia', reason: 'left' } } });
  assert.equal(FakePC.all[0].closed, true);
  assert.equal(call.media.peers.size, 0);
  // a stale candidate from the session that left opens nothing
  ws.serverSend(sig(5, 'n-new', me, 'candidate', { candidate: 'late' }));
  await flush();
  assert.equal(FakePC.all.length, 1);
});

test('mesh: the watchdog restarts ICE once when the pair is stuck, and stops once it connects', async () => {
  const me = 'b-me';
  const { ws, call, clock } = await joinMeeting({ me, participants: [P('a-old', 'amy', 100), P(me, 'bob', 200)] });
  const pc = FakePC.all[0];
  ws.serverSend(sig(1, 'a-old', me, 'answer', { type: 'answer', sdp: 'v=0 answer' }));
  await flush();
  pc.iceGatheringState = 'gathering'; // stuck: no candidates, states stay 'new'
  await clock.advance(MESH_WATCHDOG_MS - 10);
  assert.equal(sent(ws, 'offer').length, 1);
  await clock.advance(10);
  const offers = sent(ws, 'offer');
  assert.equal(offers.length, 2);
  assert.equal(offers[1].data.to_session, 'a-old');
  assert.deepEqual(pc.offerOpts, [{ iceRestart: true }]);
  assert.equal(call.media.peers.get('a-old').restarts, 1);
  ws.serverSend(sig(2, 'a-old', me, 'answer', { type: 'answer', sdp: 'v=0 answer 2' }));
  await flush();
  pc.connect();
  await clock.advance(4 * MESH_WATCHDOG_MS);
  assert.equal(sent(ws, 'offer').length, 2); // connected: no more restarts
});

test('mesh: the watchdog gives up after its restarts, and leaves a pair that is connecting alone', async () => {
  const me = 'b-me';
  const { ws, clock } = await joinMeeting({ me, participants: [P('a-old', 'amy', 100), P('c-old', 'cy', 150), P(me, 'bob', 200)] });
  const [pcA, pcC] = FakePC.all;
  pcC.iceConnectionState = 'checking'; pcC.connectionState = 'connecting';
  const to = (sid) => sent(ws, 'offer').filter((x) => x.data.to_session === sid).length;
  await clock.advance(3 * MESH_WATCHDOG_MS);
  assert.equal(to('a-old'), 1 + MESH_MAX_ICE_RESTARTS);
  assert.deepEqual(pcA.offerOpts, [{ iceRestart: true }, { iceRestart: true }]);
  assert.equal(to('c-old'), 1); // ICE is checking: the watchdog waits a few rounds
  await clock.advance(MESH_WATCHDOG_MS);
  assert.equal(to('c-old'), 2); // ... then counts it as stuck
  assert.deepEqual(pcC.offerOpts, [{ iceRestart: true }]);
  await clock.advance(20 * MESH_WATCHDOG_MS);
  assert.equal(to('a-old'), 1 + MESH_MAX_ICE_RESTARTS);
  assert.equal(to('c-old'), 1 + MESH_MAX_ICE_RESTARTS);
});

test('mesh: renegotiation glare after the first connection: the polite side answers, the impolite side ignores', async () => {
  const me = 'm-me';
  const { ws, call } = await joinMeeting({ me, participants: [P('a-old', 'amy', 100), P('z-old', 'zed', 100), P(me, 'bob', 200)], stream: fakeStream(['audio']) });
  assert.equal(FakePC.all.length, 2);
  // with only a microphone, the offers still ask to receive video
  for (const pc of FakePC.all) assert.deepEqual(pc.ops, ['addTrack:audio', 'addTransceiver:video:recvonly', 'setLocal:offer']);
  ws.serverSend(sig(1, 'a-old', me, 'answer', { type: 'answer', sdp: 'a1' }));
  ws.serverSend(sig(2, 'z-old', me, 'answer', { type: 'answer', sdp: 'z1' }));
  await flush();
  for (const peer of call.media.peers.values()) assert.equal(peer.established, true);
  // both sides renegotiate at once (e.g. a track change)
  for (const pc of FakePC.all) pc.onnegotiationneeded();
  ws.serverSend(sig(3, 'a-old', me, 'offer', { type: 'offer', sdp: 'x' })); // we are impolite vs 'a…'
  ws.serverSend(sig(4, 'z-old', me, 'offer', { type: 'offer', sdp: 'y' })); // we are polite vs 'z…'
  await flush();
  assert.deepEqual(sent(ws, 'answer').map((x) => x.data.to_session), ['z-old']);
});

test('mesh: a signal that arrives before the media path is up is kept for it', async () => {
  RecPC.all = FakePC.all = [];
  const { client } = makeClient({ RTCPeerConnection: RecPC, getUserMedia: async () => fakeStream() });
  const ws = await connectClient(client);
  const call = client.call('default', 'm');
  const j = call.join({ media: { audio: true, video: true } });
  await flush();
  const me = 'm-me';
  ws.serverSend(sig(1, 'n-new', me, 'offer', { type: 'offer', sdp: 'v=0 offer' }));
  ws.answer('call.join', { type: 'response', data: { session_id: me, role: 'participant', sfu: null, call: CALL, members: [], participants: [P(me, 'bob', 100)] } });
  await j;
  await flush();
  assert.equal(FakePC.all.length, 1);
  assert.deepEqual(FakePC.all[0].ops, ['addTrack:audio', 'addTrack:video', 'setRemote:offer', 'setLocal:answer']);
  assert.deepEqual(sent(ws, 'answer').map((x) => x.data.to_session), ['n-new']);
});
