import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialCallState, applyEvent, applyResponse, applyLocal, CallingState } from '../src/call-state.js';
import { fixture, received, answerTo } from './helpers.js';

const cidOf = (frames, i = 0) => frames.filter((f) => f.type === 'call.ring')[i].call_cid.split(':')[1];

test('callee: ring → incoming, accept → idle, join → joined, leave by initiator → ended', () => {
  const f = fixture('ringing-flow');
  const bob = received(f, 'bob');
  let s = initialCallState('ringing', cidOf(bob), 'bob');
  assert.equal(s.callingState, CallingState.IDLE);
  s = applyEvent(s, bob.find((x) => x.type === 'call.ring'));
  assert.equal(s.callingState, 'ringing-incoming');
  assert.equal(s.ringing.from, 'alice');
  assert.equal(typeof s.ringing.deadline, 'number');
  assert.equal(s.ringing.incoming, true);
  s = applyResponse(s, 'call.accept', answerTo(f, 'bob', 'call.accept').data);
  assert.equal(s.callingState, 'idle');
  assert.equal(s.ringing.myRingState, 'accepted');
  s = applyLocal(s, { joining: true });
  assert.equal(s.callingState, 'joining');
  s = applyResponse(s, 'call.join', answerTo(f, 'bob', 'call.join').data);
  assert.equal(s.callingState, 'joined');
  assert.match(s.ownSessionId, /^[0-9a-f-]{36}$/);
  assert.equal(s.role, 'participant');
  assert.equal(s.sfu, null);
  s = applyResponse(s, 'call.leave', answerTo(f, 'bob', 'call.leave').data);
  assert.equal(s.callingState, 'idle');
  assert.equal(s.leftReason, 'left');
});

test('caller: get_or_create with ring → outgoing; accepted → not ringing; join → joined; end → ended', () => {
  const f = fixture('ringing-flow');
  const alice = received(f, 'alice');
  const goc = answerTo(f, 'alice', 'call.get_or_create');
  let s = initialCallState('ringing', goc.data.call.id, 'alice');
  s = applyResponse(s, 'call.get_or_create', goc.data);
  assert.equal(s.callingState, 'ringing-outgoing');
  assert.equal(s.ringing.outgoing, true);
  assert.equal(s.custom.title, 'Standup');
  s = applyEvent(s, alice.find((x) => x.type === 'call.accepted'));
  assert.equal(s.callingState, 'idle');
  assert.equal(s.members.find((m) => m.user_id === 'bob').ring_state, 'accepted');
  s = applyResponse(s, 'call.join', answerTo(f, 'alice', 'call.join').data);
  assert.equal(s.callingState, 'joined');
  assert.equal(s.role, 'initiator');
  s = applyResponse(s, 'call.end', answerTo(f, 'alice', 'call.end').data);
  assert.equal(s.callingState, 'ended');
  assert.equal(s.endedReason, 'ended_by_user');
  assert.equal(s.ownSessionId, null);
});

test('decline: callee idle, other device stops ringing, caller sees all_rejected end', () => {
  const f = fixture('reject-cancel-elsewhere');
  const bob = received(f, 'bob'); const bob2 = received(f, 'bob2'); const alice = received(f, 'alice');
  const id = cidOf(bob, 0);
  let b = applyEvent(initialCallState('ringing', id, 'bob'), bob.filter((x) => x.type === 'call.ring')[0]);
  assert.equal(b.callingState, 'ringing-incoming');
  b = applyResponse(b, 'call.reject', answerTo(f, 'bob', 'call.reject').data);
  assert.equal(b.callingState, 'ended'); // the answer comes after the all_rejected end
  assert.equal(b.endedReason, 'all_rejected');
  assert.equal(b.members.find((m) => m.user_id === 'bob').ring_state, 'rejected');
  let b2 = applyEvent(initialCallState('ringing', id, 'bob'), bob2.filter((x) => x.type === 'call.ring')[0]);
  b2 = applyEvent(b2, bob2.find((x) => x.type === 'call.rejected'));
  assert.equal(b2.callingState, 'idle');
  let a = applyResponse(initialCallState('ringing', id, 'alice'), 'call.get_or_create', answerTo(f, 'alice', 'call.get_or_create', 0).data);
  assert.equal(a.callingState, 'ringing-outgoing');
  a = applyEvent(a, alice.find((x) => x.type === 'call.rejected'));
  assert.equal(a.callingState, 'idle');
  assert.equal(a.members.find((m) => m.user_id === 'bob').ring_reason, 'decline');
  a = applyEvent(a, alice.find((x) => x.type === 'call.ended' && x.data.reason === 'all_rejected'));
  assert.equal(a.callingState, 'ended');
  assert.equal(a.endedReason, 'all_rejected');
});

test('cancel by the caller: callee gets ring_stopped cancelled', () => {
  const f = fixture('reject-cancel-elsewhere');
  const bob = received(f, 'bob');
  const id = cidOf(bob, 1);
  let b = applyEvent(initialCallState('ringing', id, 'bob'), bob.filter((x) => x.type === 'call.ring')[1]);
  assert.equal(b.callingState, 'ringing-incoming');
  b = applyEvent(b, bob.find((x) => x.type === 'call.ring_stopped'));
  assert.equal(b.callingState, 'idle');
  assert.equal(b.ringing.stoppedReason, 'cancelled');
  assert.equal(b.ringing.myRingState, 'rejected');
  let a = applyResponse(initialCallState('ringing', id, 'alice'), 'call.get_or_create', answerTo(f, 'alice', 'call.get_or_create', 1).data);
  assert.equal(a.callingState, 'ringing-outgoing');
  a = applyResponse(a, 'call.reject', answerTo(f, 'alice', 'call.reject').data);
  assert.equal(a.callingState, 'ended');
  assert.equal(a.endedReason, 'cancelled');
});

test('accepted elsewhere: the other device stops ringing; initiator leaving ends the call for bob', () => {
  const f = fixture('reject-cancel-elsewhere');
  const bob = received(f, 'bob'); const bob2 = received(f, 'bob2');
  const id = cidOf(bob, 2);
  let b2 = applyEvent(initialCallState('ringing', id, 'bob'), bob2.filter((x) => x.type === 'call.ring')[2]);
  b2 = applyEvent(b2, bob2.filter((x) => x.type === 'call.ring_stopped').at(-1));
  assert.equal(b2.callingState, 'idle');
  assert.equal(b2.ringing.stoppedReason, 'accepted_elsewhere');
  let b = applyEvent(initialCallState('ringing', id, 'bob'), bob.filter((x) => x.type === 'call.ring')[2]);
  b = applyResponse(b, 'call.join', answerTo(f, 'bob', 'call.join').data);
  assert.equal(b.callingState, 'joined');
  const rest = bob.filter((x) => x.call_cid === `ringing:${id}` && x.type !== 'call.ring');
  const seen = [];
  for (const ev of rest) { b = applyEvent(b, ev); seen.push([ev.type, b.callingState, b.participants.length]); }
  assert.deepEqual(seen, [
    ['call.participant_joined', 'joined', 2],
    ['call.participant_left', 'joined', 1],
    ['call.ended', 'ended', 0],
  ]);
  assert.equal(b.endedReason, 'initiator_left');
});

test('no optimistic join: a failed join goes back to the previous state; reconnecting only while joined', () => {
  let s = initialCallState('default', 'm', 'me');
  s = applyLocal(s, { joining: true });
  assert.equal(s.callingState, 'joining');
  s = applyLocal(s, { joining: false });
  assert.equal(s.callingState, 'idle');
  s = applyLocal(s, { reconnecting: true });
  assert.equal(s.callingState, 'idle');
  s = applyResponse(s, 'call.join', { session_id: 's1', role: 'initiator', sfu: null, call: { cid: 'default:m', ended_at: null, created_by: 'me', sfu: null }, members: [], participants: [{ session_id: 's1', user_id: 'me' }] });
  s = applyLocal(s, { reconnecting: true });
  assert.equal(s.callingState, 'reconnecting');
  s = applyLocal(s, { sessionLost: 'connection_lost' });
  assert.equal(s.callingState, 'idle');
  assert.equal(s.leftReason, 'connection_lost');
});

test('janus sfu: join keeps own token; sfu_changed for our session replaces it, public sfu has no secrets', () => {
  const sfu = { id: 'janus-1', kind: 'janus', url: 'http://j1/janus', room: 42, token: 'sb1.aaa', pin: 'p1', region: 'fra' };
  let s = initialCallState('default', 'm', 'me');
  s = applyResponse(s, 'call.join', { session_id: 's1', role: 'initiator', sfu, call: { cid: 'default:m', ended_at: null, created_by: 'me', sfu: { id: 'janus-1', kind: 'janus', url: 'http://j1/janus', room: 42 } }, members: [], participants: [{ session_id: 's1', user_id: 'me' }] });
  assert.equal(s.sfu.token, 'sb1.aaa');
  s = applyEvent(s, { type: 'call.participant_joined', seq: 1, data: { participant: { session_id: 's2', user_id: 'x' } } });
  assert.equal(s.sfu.token, 'sb1.aaa');
  s = applyEvent(s, { type: 'call.sfu_changed', seq: 2, data: { session_id: 'other', sfu: { ...sfu, id: 'janus-2', token: 'nope' } } });
  assert.equal(s.sfu.token, 'sb1.aaa');
  s = applyEvent(s, { type: 'call.sfu_changed', seq: 3, data: { session_id: 's1', sfu: { ...sfu, id: 'janus-2', room: 7, token: 'sb1.bbb', pin: 'p2' } } });
  assert.equal(s.sfu.token, 'sb1.bbb');
  assert.equal(s.sfu.room, 7);
  assert.equal(s.call.sfu.token, undefined);
  assert.equal(s.call.sfu.pin, undefined);
});

test('a caller who joined at once stays ringing-outgoing until someone answers', () => {
  const f = fixture('ringing-flow');
  const alice = received(f, 'alice');
  const id = cidOf(received(f, 'bob'), 0);
  let a = applyResponse(initialCallState('ringing', id, 'alice'), 'call.get_or_create', answerTo(f, 'alice', 'call.get_or_create').data);
  assert.equal(a.callingState, 'ringing-outgoing');
  // Alice's own join while bob still rings: her session exists, the call still rings.
  const join = answerTo(f, 'alice', 'call.join').data;
  const stillRinging = { ...join, members: join.members.map((m) => (m.user_id === 'bob' ? { ...m, ring_state: 'ringing' } : m)) };
  a = applyResponse(a, 'call.join', stillRinging);
  assert.ok(a.ownSessionId);
  assert.equal(a.callingState, 'ringing-outgoing');
  // Bob accepts: now she is in the call.
  a = applyEvent(a, alice.find((x) => x.type === 'call.accepted'));
  assert.equal(a.callingState, 'joined');
});
