import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sortParticipants, compareParticipants, cmpStr } from '../src/participants.js';
import { initialCallState, applyEvent, applyResponse } from '../src/call-state.js';
import { fixture, received, answerTo } from './helpers.js';

const P = (user_id, session_id, f = {}) => ({ user_id, session_id, pinned: false, screenshare: false, dominant_speaker: false, speaking: false, video: false, audio: false, audio_level: 0, ...f });
const ids = (list) => list.map((p) => p.session_id);

test('default order: each criterion in its place', () => {
  const list = [
    P('a', 's-audio', { audio: true }),
    P('b', 's-video', { video: true }),
    P('c', 's-speaking', { speaking: true }),
    P('d', 's-dominant', { dominant_speaker: true }),
    P('e', 's-screen', { screenshare: true }),
    P('f', 's-pinned', { pinned: true }),
    P('g', 's-plain'),
  ];
  assert.deepEqual(ids(sortParticipants([...list].reverse())), ['s-pinned', 's-screen', 's-dominant', 's-speaking', 's-video', 's-audio', 's-plain']);
});

test('ties broken by user id, then session id; later criteria only break ties', () => {
  const list = [P('bob', 's2'), P('alice', 's9'), P('bob', 's1'), P('zed', 'z', { pinned: true, audio: false }), P('amy', 'y', { audio: true, video: true })];
  assert.deepEqual(ids(sortParticipants(list)), ['z', 'y', 's9', 's1', 's2']);
  assert.equal(compareParticipants(P('a', '1', { video: true }), P('b', '2', { audio: true })) < 0, true);
  // the dominant speaker from the call wins over the participant flag when given
  assert.deepEqual(ids(sortParticipants([P('a', 'x', { dominant_speaker: true }), P('b', 'y')], 'y')), ['y', 'x']);
});

test('recorded ringing flow: order after every kind of update (bob\'s view)', () => {
  const f = fixture('ringing-flow');
  let s = initialCallState('ringing', f.find((e) => e.frame && e.frame.type === 'call.get_or_create').frame.data.id, 'bob');
  s = applyResponse(s, 'call.join', answerTo(f, 'bob', 'call.join').data);
  const bobSid = s.ownSessionId;
  const events = received(f, 'bob').filter((fr) => fr.seq && fr.type !== 'call.ring');
  const orders = [];
  let aliceSid;
  for (const ev of events) {
    s = applyEvent(s, ev);
    if (ev.type === 'call.participant_joined') aliceSid = ev.data.participant.session_id;
    orders.push([ev.type, ids(s.participants).map((x) => (x === bobSid ? 'bob' : x === aliceSid ? 'alice' : x))]);
  }
  assert.deepEqual(orders, [
    ['call.participant_joined', ['alice', 'bob']],        // tie on everything: alice < bob
    ['call.dominant_speaker_changed', ['alice', 'bob']],  // alice dominant
    ['call.participant_updated', ['alice', 'bob']],       // alice audio+speaking
    ['call.participant_updated', ['alice', 'bob']],       // bob video: dominant still first
    ['call.participant_updated', ['bob', 'alice']],       // bob screenshare beats dominant
    ['call.participant_updated', ['alice', 'bob']],       // alice pinned beats screenshare
    ['call.participant_updated', ['alice', 'bob']],       // alice stops speaking (pinned)
    ['call.dominant_speaker_changed', ['alice', 'bob']],
    ['call.participant_updated', ['alice', 'bob']],
    ['call.custom', ['alice', 'bob']],
    ['signal', ['alice', 'bob']],
    ['call.members_added', ['alice', 'bob']],
  ]);
  assert.equal(s.dominantSpeaker, bobSid);
  assert.equal(s.participants.find((p) => p.session_id === bobSid).dominant_speaker, true);
  assert.equal(s.participants.find((p) => p.session_id === aliceSid).dominant_speaker, false);
  assert.deepEqual(s.members.map((m) => m.user_id), ['alice', 'bob', 'carol']);
});

test('alice\'s view: bob leaving removes him and clears the dominant speaker', () => {
  const f = fixture('ringing-flow');
  let s = initialCallState('ringing', 'x', 'alice');
  s = applyResponse(s, 'call.join', answerTo(f, 'alice', 'call.join').data);
  for (const ev of received(f, 'alice').filter((fr) => fr.seq)) s = applyEvent(s, ev);
  assert.equal(s.callingState, 'ended');
  assert.deepEqual(s.participants, []);
  assert.equal(s.dominantSpeaker, null);
  assert.equal(s.endedReason, 'ended_by_user');
});

test('unpinning and dropping video re-sort', () => {
  let s = initialCallState('default', 'm', 'me');
  s = applyResponse(s, 'call.get', { call: { cid: 'default:m', ended_at: null, created_by: 'me', dominant_speaker: null }, members: [], participants: [P('zoe', 'z', { pinned: true }), P('amy', 'a', { video: true })] });
  assert.deepEqual(ids(s.participants), ['z', 'a']);
  s = applyEvent(s, { type: 'call.participant_updated', seq: 1, data: { participant: P('zoe', 'z', { pinned: false }) } });
  assert.deepEqual(ids(s.participants), ['a', 'z']);
  s = applyEvent(s, { type: 'call.participant_updated', seq: 2, data: { participant: P('amy', 'a', { video: false }) } });
  assert.deepEqual(ids(s.participants), ['a', 'z']);
  s = applyEvent(s, { type: 'call.participant_updated', seq: 3, data: { participant: P('zoe', 'z', { audio: true }) } });
  assert.deepEqual(ids(s.participants), ['z', 'a']);
  s = applyEvent(s, { type: 'call.participant_left', seq: 4, data: { participant: { session_id: 'z', user_id: 'zoe', reason: 'left' } } });
  assert.deepEqual(ids(s.participants), ['a']);
});

test('user ids compare by code point, like the server', () => {
  assert.equal(cmpStr('\uFF21', '\u{1F600}'), -1); // UTF-16 order would say the opposite
  assert.equal(cmpStr('bob', 'bobby'), -1);
  assert.equal(cmpStr('b', 'a'), 1);
  assert.equal(cmpStr('x', 'x'), 0);
});
