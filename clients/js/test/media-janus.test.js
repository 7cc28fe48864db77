import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeClient, connectClient, flush } from './helpers.js';
import { FakePC, fakeStream } from './fake-media.js';

/** A scripted Janus HTTP API: refuses the first `refusals` creates with 403, then serves a VideoRoom. */
function fakeJanus({ refusals = 0, publishers = [] } = {}) {
  const j = { requests: [], polls: 0, queue: [], waiter: null, nextId: 1000, refusals, destroyed: false };
  const push = (ev) => { j.queue.push(ev); if (j.waiter) { const w = j.waiter; j.waiter = null; w(); } };
  const json = (status, body) => ({ status, json: async () => body });
  j.fetch = async (url, init) => {
    const u = new URL(url);
    if (init.method === 'GET') {
      j.polls++;
      j.lastPollToken = u.searchParams.get('token');
      if (!j.queue.length) await new Promise((r) => { j.waiter = r; });
      return json(200, j.queue.splice(0));
    }
    const body = JSON.parse(init.body);
    j.requests.push({ path: u.pathname, body });
    const tx = body.transaction;
    switch (body.janus) {
      case 'create':
        if (j.refusals-- > 0) return json(200, { janus: 'error', transaction: tx, error: { code: 403, reason: 'Unauthorized request (wrong or missing secret/token)' } });
        return json(200, { janus: 'success', transaction: tx, data: { id: 1 } });
      case 'attach': return json(200, { janus: 'success', transaction: tx, data: { id: j.nextId++ } });
      case 'message': {
        const sender = Number(u.pathname.split('/').pop());
        const b = body.body;
        queueMicrotask(() => {
          if (b.request === 'join' && b.ptype === 'publisher') push({ janus: 'event', sender, transaction: tx, plugindata: { plugin: 'janus.plugin.videoroom', data: { videoroom: 'joined', room: b.room, id: 1, private_id: 9, publishers } } });
          else if (b.request === 'configure') push({ janus: 'event', sender, transaction: tx, plugindata: { data: { videoroom: 'event', configured: 'ok' } }, jsep: { type: 'answer', sdp: 'janus-answer' } });
          else if (b.request === 'join' && b.ptype === 'subscriber') push({ janus: 'event', sender, transaction: tx, plugindata: { data: { videoroom: 'attached', room: b.room } }, jsep: { type: 'offer', sdp: 'janus-offer' } });
          else if (b.request === 'start') push({ janus: 'event', sender, transaction: tx, plugindata: { data: { videoroom: 'event', started: 'ok' } } });
        });
        return json(200, { janus: 'ack', transaction: tx });
      }
      case 'destroy': j.destroyed = true; return json(200, { janus: 'success', transaction: tx });
      default: return json(200, { janus: 'ack', transaction: tx });
    }
  };
  j.push = push;
  return j;
}

const SFU = { id: 'janus-1', kind: 'janus', url: 'http://janus.test:8088/janus', room: 4862117034126581, token: 'sb1.tok', pin: 'pin1', region: 'fra' };
const P = (sid, user) => ({ session_id: sid, user_id: user, audio: false, video: false, screenshare: false, pinned: false, speaking: false, dominant_speaker: false });

globalThis.MediaStream = class { constructor() { this.tracks = []; } addTrack(t) { this.tracks.push(t); } getTracks() { return this.tracks; } };

test('janus: 403 retried, publish with display = session id, subscribe to feeds, leave destroys', async () => {
  FakePC.all = [];
  const janus = fakeJanus({ refusals: 2, publishers: [{ id: 77, display: 'alice-session' }] });
  const { client, clock } = makeClient({ RTCPeerConnection: FakePC, getUserMedia: async () => fakeStream(), fetch: janus.fetch });
  const ws = await connectClient(client);
  const call = client.call('default', 'm');
  const errors = [];
  call.on('error', (e) => errors.push(e));
  const j = call.join({});
  await flush();
  ws.answer('call.join', { type: 'response', data: { session_id: 'bob-session', role: 'participant', sfu: SFU, call: { cid: 'default:m', id: 'm', type: 'default', created_by: 'alice', ended_at: null, sfu: { ...SFU, token: undefined, pin: undefined } }, members: [], participants: [P('bob-session', 'bob'), P('alice-session', 'alice')] } });
  await flush();
  await clock.advance(200); await clock.advance(300);
  await j;
  await flush();
  assert.deepEqual(errors, []);
  const creates = janus.requests.filter((r) => r.body.janus === 'create');
  assert.equal(creates.length, 3);
  assert.ok(janus.requests.every((r) => r.body.token === 'sb1.tok'));
  assert.equal(janus.lastPollToken, 'sb1.tok');
  const pubJoin = janus.requests.find((r) => r.body.body && r.body.body.ptype === 'publisher').body.body;
  assert.deepEqual(pubJoin, { request: 'join', ptype: 'publisher', room: SFU.room, token: 'sb1.tok', pin: 'pin1', display: 'bob-session' });
  const configure = janus.requests.find((r) => r.body.body && r.body.body.request === 'configure').body;
  assert.deepEqual(configure.body, { request: 'configure', audio: true, video: true });
  assert.equal(configure.jsep.type, 'offer');
  const subJoin = janus.requests.find((r) => r.body.body && r.body.body.ptype === 'subscriber').body.body;
  assert.deepEqual(subJoin.streams, [{ feed: 77 }]);
  assert.equal(subJoin.pin, 'pin1');
  const start = janus.requests.find((r) => r.body.body && r.body.body.request === 'start').body;
  assert.equal(start.jsep.type, 'answer');
  assert.equal(FakePC.all.length, 2);
  const [pubPc, subPc] = FakePC.all;
  assert.equal(pubPc.remoteDescription.sdp, 'janus-answer');
  assert.equal(subPc.remoteDescription.sdp, 'janus-offer');
  // remote stream per participant session
  const streams = [];
  call.on('stream', (e) => streams.push([e.sessionId, e.userId]));
  janus.push({ janus: 'event', sender: 1000, plugindata: { data: { videoroom: 'event', publishers: [{ id: 78, display: 'carol-session' }] } } });
  await flush(); await flush();
  const carolPc = FakePC.all[2];
  ws.serverSend({ type: 'call.participant_joined', seq: 1, call_cid: 'default:m', data: { participant: P('carol-session', 'carol') } });
  carolPc.ontrack({ track: { kind: 'video' }, streams: [] });
  carolPc.ontrack({ track: { kind: 'audio' }, streams: [] });
  assert.deepEqual(streams, [['carol-session', 'carol'], ['carol-session', 'carol']]);
  assert.equal(call.remoteStreams.get('carol-session').getTracks().length, 2);
  subPc.ontrack({ track: { kind: 'video' }, streams: [] });
  assert.deepEqual(streams.at(-1), ['alice-session', 'alice']);
  // carol unpublishes → stream removed
  const removed = [];
  call.on('stream-removed', (e) => removed.push(e.sessionId));
  janus.push({ janus: 'event', sender: 1000, plugindata: { data: { videoroom: 'event', unpublished: 78 } } });
  await flush();
  assert.deepEqual(removed, ['carol-session']);
  assert.equal(carolPc.closed, true);
  // call.sfu_changed for our session: leave the old Janus, re-join the new room with the new token
  const before = janus.requests.length;
  const SFU2 = { ...SFU, id: 'janus-2', url: 'http://janus2.test:8088/janus', room: 5, token: 'sb1.new', pin: 'pin2' };
  ws.serverSend({ type: 'call.sfu_changed', seq: 2, call_cid: 'default:m', data: { call_cid: 'default:m', session_id: 'bob-session', sfu: SFU2 } });
  await flush(); await flush();
  const after = janus.requests.slice(before);
  const destroy = after.findIndex((r) => r.body.janus === 'destroy');
  assert.equal(after[destroy].body.token, 'sb1.tok');
  assert.ok(destroy < after.findIndex((r) => r.body.janus === 'create'), 'old session destroyed first');
  const rejoin = after.find((r) => r.body.body && r.body.body.ptype === 'publisher');
  assert.equal(rejoin.path.startsWith('/janus/'), true);
  assert.deepEqual([rejoin.body.token, rejoin.body.body.room, rejoin.body.body.pin], ['sb1.new', 5, 'pin2']);
  assert.equal(call.state.sfu.token, 'sb1.new');
  assert.equal(pubPc.closed, true);
  janus.destroyed = false;
  const l = call.leave();
  await flush();
  ws.answer('call.leave', { type: 'response', data: { left: ['bob-session'] } });
  await l;
  await flush();
  assert.equal(janus.destroyed, true);
  assert.equal(subPc.closed, true);
  assert.ok(FakePC.all.every((pc) => pc.closed), 'every peer connection closed');
});

test('janus: a refusal that lasts past ~2 s surfaces sfu_failed', async () => {
  FakePC.all = [];
  const janus = fakeJanus({ refusals: 1000 });
  const { client, clock } = makeClient({ RTCPeerConnection: FakePC, getUserMedia: async () => fakeStream(), fetch: janus.fetch });
  const ws = await connectClient(client);
  const call = client.call('default', 'm');
  const errors = [];
  call.on('error', (e) => errors.push(e.code));
  const j = call.join({});
  await flush();
  ws.answer('call.join', { type: 'response', data: { session_id: 'bob-session', role: 'participant', sfu: SFU, call: { cid: 'default:m', id: 'm', type: 'default', created_by: 'alice', ended_at: null, sfu: null }, members: [], participants: [P('bob-session', 'bob')] } });
  for (let i = 0; i < 30; i++) await clock.advance(200);
  await j;
  assert.deepEqual(errors, ['sfu_failed']);
  const creates = janus.requests.filter((r) => r.body.janus === 'create').length;
  assert.ok(creates >= 5 && creates <= 15, `creates ${creates}`);
  assert.equal(call.state.callingState, 'joined'); // signalling is still joined
});
