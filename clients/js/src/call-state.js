// @ts-check
/**
 * Pure call-state reducer. The signalling state of a call is derived only from server frames
 * (responses and events); the two local facts kept here are `joining` (a join request is in
 * flight) and `reconnecting` (the socket dropped while we hold a session).
 */
import { sortParticipants, upsertParticipant, removeParticipant, applyDominantSpeaker } from './participants.js';

export const CallingState = Object.freeze({
  IDLE: 'idle',
  RINGING_OUTGOING: 'ringing-outgoing',
  RINGING_INCOMING: 'ringing-incoming',
  JOINING: 'joining',
  JOINED: 'joined',
  RECONNECTING: 'reconnecting',
  ENDED: 'ended',
});

/**
 * @param {string} type @param {string} id @param {string|null} [userId] the local user
 * @returns {import('./switchboard.js').CallState}
 */
export function initialCallState(type, id, userId = null) {
  return {
    callingState: CallingState.IDLE,
    cid: `${type}:${id}`, type, id, userId,
    call: null, members: [], participants: [],
    dominantSpeaker: null, sfu: null, createdBy: null, custom: {},
    ended: false, endedReason: null,
    ringing: { active: false, incoming: false, outgoing: false, from: null, deadline: null, myRingState: null, stoppedReason: null },
    ownSessionId: null, role: null, leftReason: null,
    joining: false, reconnecting: false,
  };
}

/** Derives `callingState` (and the ringing summary) from the facts in `s`. */
export function derive(s) {
  const me = s.members.find((m) => m.user_id === s.userId);
  const myRingState = me ? me.ring_state : null;
  const otherRinging = s.members.some((m) => m.user_id !== s.userId && m.ring_state === 'ringing');
  const incoming = !s.ended && myRingState === 'ringing';
  const outgoing = !s.ended && !incoming && s.createdBy === s.userId && otherRinging;
  const answered = s.members.some((m) => m.user_id !== s.userId && m.ring_state === 'accepted');
  let callingState = CallingState.IDLE;
  if (s.ended) callingState = CallingState.ENDED;
  else if (s.ownSessionId && s.reconnecting) callingState = CallingState.RECONNECTING;
  // A caller who joined at once still rings until someone answers (the outgoing screen).
  else if (s.ownSessionId && outgoing && !answered) callingState = CallingState.RINGING_OUTGOING;
  else if (s.ownSessionId) callingState = CallingState.JOINED;
  else if (s.joining) callingState = CallingState.JOINING;
  else if (incoming) callingState = CallingState.RINGING_INCOMING;
  else if (outgoing) callingState = CallingState.RINGING_OUTGOING;
  return {
    ...s,
    callingState,
    ringing: { ...s.ringing, active: !!(s.call && s.call.ringing) && !s.ended, incoming, outgoing, myRingState },
  };
}

/** Applies a server `call` object. */
function withCall(s, call) {
  if (!call || typeof call !== 'object') return s;
  const ended = call.ended_at != null;
  const next = {
    ...s, call,
    createdBy: call.created_by ?? s.createdBy,
    custom: call.custom ?? s.custom,
    ended, endedReason: ended ? (call.ended_reason ?? s.endedReason) : null,
    dominantSpeaker: call.dominant_speaker ?? null,
  };
  // Our own join answer carries the SFU with our Janus token and PIN: keep it while joined.
  const own = s.sfu && s.ownSessionId && s.sfu.id === (call.sfu && call.sfu.id);
  next.sfu = own ? s.sfu : (call.sfu ?? null);
  if (ended) { next.participants = []; next.ownSessionId = null; next.joining = false; next.dominantSpeaker = null; }
  return next;
}

/** Applies a full `{call, members, participants}` state. */
function withFullState(s, data) {
  let next = withCall(s, data.call);
  if (Array.isArray(data.members)) next.members = data.members;
  if (Array.isArray(data.participants)) {
    next.participants = sortParticipants(data.participants, undefined);
    if (next.ownSessionId && !data.participants.some((p) => p.session_id === next.ownSessionId)) {
      next.ownSessionId = null; // our session is gone (ended, kicked, connection lost)
      next.leftReason = next.leftReason || 'connection_lost';
    }
  }
  return next;
}

function setMemberRing(members, userId, ringState, reason, at) {
  return members.map((m) => (m.user_id === userId
    ? { ...m, ring_state: ringState, ring_reason: reason ?? null, ring_updated_at: at ?? m.ring_updated_at }
    : m));
}

function finishRings(members, ringState, reason) {
  return members.map((m) => (m.ring_state === 'ringing' ? { ...m, ring_state: ringState, ring_reason: reason ?? null } : m));
}

/**
 * Applies the answer to a request.
 * @param {any} state @param {string} requestType e.g. 'call.join' @param {any} data the response `data`
 */
export function applyResponse(state, requestType, data, extra = {}) {
  let s = { ...state };
  switch (requestType) {
    case 'call.get':
    case 'call.get_or_create':
    case 'call.accept':
    case 'call.reject':
    case 'call.invite':
    case 'call.end':
      s = withFullState(s, data || {});
      break;
    case 'call.join':
      s.joining = false;
      s.ownSessionId = data.session_id;
      s.role = data.role ?? null;
      s.leftReason = null;
      s.reconnecting = false;
      s = withFullState(s, data);
      s.sfu = data.sfu ?? null; // the session's own SFU (Janus token and PIN included)
      break;
    case 'call.leave': {
      const left = (data && data.left) || [];
      for (const sid of left) s.participants = removeParticipant(s.participants, sid);
      if (s.ownSessionId && (left.includes(s.ownSessionId) || extra.all)) {
        s.ownSessionId = null; s.leftReason = 'left'; s.sfu = s.call ? s.call.sfu ?? null : null;
      }
      break;
    }
    case 'call.update_participant':
      if (data && data.session_id) s.participants = upsertParticipant(s.participants, data, s.dominantSpeaker);
      break;
    default:
      return state;
  }
  return derive(s);
}

/** Local facts: `{joining: bool}`, `{reconnecting: bool}`, `{sessionLost: reason}`. */
export function applyLocal(state, fact) {
  const s = { ...state };
  if ('joining' in fact) s.joining = !!fact.joining;
  if ('reconnecting' in fact) s.reconnecting = !!fact.reconnecting;
  if ('sessionLost' in fact && s.ownSessionId) {
    s.participants = removeParticipant(s.participants, s.ownSessionId);
    s.ownSessionId = null; s.leftReason = fact.sessionLost; s.reconnecting = false;
  }
  return derive(s);
}

/**
 * Applies a server event frame addressed to this call.
 * @param {any} state @param {{type: string, data?: any, call_cid?: string}} frame
 */
export function applyEvent(state, frame) {
  const d = frame.data || {};
  let s = { ...state };
  switch (frame.type) {
    case 'call.ring':
      s = withCall(s, d.call);
      if (Array.isArray(d.members)) s.members = d.members;
      if (s.userId && !s.members.some((m) => m.user_id === s.userId && m.ring_state === 'ringing')) {
        s.members = s.members.some((m) => m.user_id === s.userId)
          ? setMemberRing(s.members, s.userId, 'ringing', null)
          : [...s.members, { user_id: s.userId, ring_state: 'ringing', ring_reason: null, ring_updated_at: null }];
      }
      s.ringing = { ...s.ringing, from: d.from ?? null, deadline: d.ring_deadline ?? null, stoppedReason: null };
      break;
    case 'call.accepted':
      s = withCall(s, d.call);
      s.members = setMemberRing(s.members, d.user_id, 'accepted', null);
      break;
    case 'call.rejected':
      s = withCall(s, d.call);
      s.members = setMemberRing(s.members, d.user_id, 'rejected', d.reason);
      break;
    case 'call.ring_stopped': {
      s = withCall(s, d.call);
      const [st, reason] = d.reason === 'accepted_elsewhere' ? ['accepted', null]
        : d.reason === 'timeout' ? ['missed', null] : ['rejected', 'cancel'];
      s.members = setMemberRing(s.members, s.userId, st, reason);
      s.ringing = { ...s.ringing, stoppedReason: d.reason ?? null };
      break;
    }
    case 'call.missed':
      s = withCall(s, d.call);
      s.members = finishRings(s.members, 'missed');
      break;
    case 'call.ended':
      s = withCall(s, d.call);
      s.ended = true;
      s.endedReason = d.reason ?? (d.call && d.call.ended_reason) ?? s.endedReason;
      s.members = finishRings(s.members, d.reason === 'no_answer' ? 'missed' : 'rejected', d.reason === 'no_answer' ? null : 'cancel');
      s.participants = []; s.ownSessionId = null; s.joining = false; s.dominantSpeaker = null;
      if (!s.leftReason) s.leftReason = 'call_ended';
      break;
    case 'call.participant_joined':
      if (d.participant) s.participants = upsertParticipant(s.participants, d.participant, s.dominantSpeaker);
      break;
    case 'call.participant_updated':
      if (d.participant) {
        const p = { ...d.participant, dominant_speaker: d.participant.session_id === s.dominantSpeaker };
        s.participants = upsertParticipant(s.participants, p, s.dominantSpeaker);
      }
      break;
    case 'call.participant_left': {
      const p = d.participant || {};
      s.participants = removeParticipant(s.participants, p.session_id);
      if (p.session_id && p.session_id === s.ownSessionId) {
        s.ownSessionId = null; s.leftReason = p.reason ?? 'left';
      }
      break;
    }
    case 'call.dominant_speaker_changed':
      s.dominantSpeaker = d.session_id ?? null;
      if (s.call) s.call = { ...s.call, dominant_speaker: s.dominantSpeaker };
      s.participants = applyDominantSpeaker(s.participants, s.dominantSpeaker);
      break;
    case 'call.members_added':
      s = withCall(s, d.call);
      if (Array.isArray(d.members)) s.members = d.members;
      break;
    case 'call.sfu_changed':
      if (!d.session_id || d.session_id === s.ownSessionId) s.sfu = d.sfu ?? null;
      if (s.call && d.sfu) {
        const { token, pin, ...pub } = d.sfu; // the call's public SFU never carries secrets
        s.call = { ...s.call, sfu: pub };
      }
      break;
    default:
      return state; // call.custom, signal and unknown events change no state
  }
  return derive(s);
}
