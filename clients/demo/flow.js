// The call lifecycle: ringing (outgoing/incoming screens), meetings, hanging
// up, and which screen a call's state shows. The library derives the calling
// state from server frames; this module only maps it onto screens and texts.

import { CallingState } from '/sdk/switchboard.js';
import { app, $, setScreen, setStatus, syncCallingState, initialOf, listen, setBusy } from './ui.js';
import { renderTiles, clearTiles } from './tiles.js';
import { SpeakingMonitor } from './speaking.js';
import { randomCallId, CALL_ID_RE, errorText, sessionIdOf, userIdOf, membersOf, participantsOf,
  createdByOf, callerOf, pageOptions } from './util.js';
import { syncControls, stopStream, openMedia } from './media.js';

let speaking = null;
let clock = null;
let idleCheck = null;

const abandoned = (call) => app.call !== call || app.done;
const me = () => app.me;

// ---- adopting a call --------------------------------------------------------

function adopt(call, mode, peer) {
  for (const off of app.offs) off();
  stopSpeaking();
  stopStream(app.localStream);
  Object.assign(app, {
    call, mode, peer, done: false, pending: false, hangingUp: false, live: false,
    peerSeen: false, localStream: null, media: { audio: true, video: true }, joinedAt: 0,
  });
  const render = () => { if (app.call === call && !app.done) route(); };
  app.offs = [listen(call, 'state', render), listen(call, 'stream', render), listen(call, 'stream-removed', render)];
  clearTiles($('tiles'));
  setStatus('');
  route();
}

function joinOptions(extra = {}) {
  // Without a camera or microphone we still join, receiving only.
  return app.localStream ? { ...extra, localStream: app.localStream } : { ...extra, media: { audio: false, video: false } };
}

function afterJoin(call) {
  const s = app.localStream;
  app.media = { audio: !!(s && s.getAudioTracks().length), video: !!(s && s.getVideoTracks().length) };
  stopSpeaking();
  if (s && pageOptions.speaking) speaking = new SpeakingMonitor(call, s).start();
  syncControls();
}

function stopSpeaking() {
  if (speaking) speaking.stop();
  speaking = null;
}

export function speakingMonitor() { return speaking; }

// ---- user actions -----------------------------------------------------------

/** #ring-button: a fresh 'ringing' call with [me, callee], ring: true, joined as the caller. */
export async function startOutgoing(calleeRaw) {
  const callee = String(calleeRaw || '').trim();
  if (!app.client || !callee) return;
  if (callee === me()) { setStatus('You cannot call yourself.', true); return; }
  if (app.call && !app.done) return;
  const call = app.client.call('ringing', randomCallId());
  await withLocalMedia(call, 'outgoing', callee, async (stream) => {
    $('outgoing-preview').srcObject = stream;
    await call.getOrCreate({ members: [me(), callee], ring: true });
    if (abandoned(call)) { call.end().catch(() => {}); return; }
    if (call.state.ended) return; // every callee busy: ended at once (route() says why)
    await call.join(joinOptions());
    if (abandoned(call)) { call.end().catch(() => call.leave().catch(() => {})); return; }
    afterJoin(call);
  });
}

/**
 * Shows `call` in `mode`, opens the camera and microphone, then runs `body(stream)`; a failure
 * goes to fail(), and the screens are routed again at the end (ringing and meetings alike).
 */
async function withLocalMedia(call, mode, peer, body) {
  adopt(call, mode, peer);
  app.pending = true;
  setBusy(true);
  try {
    const stream = await openMedia();
    if (abandoned(call)) { stopStream(stream); return; }
    app.localStream = stream;
    await body(stream);
  } catch (err) {
    await fail(call, err);
  } finally {
    if (app.call === call) { app.pending = false; setBusy(false); route(); }
  }
}

/** #join-meeting-button: a 'default' call, joined at once (meeting mode). */
export async function joinMeeting(idRaw) {
  const id = String(idRaw || '').trim();
  if (!app.client) return;
  if (!CALL_ID_RE.test(id)) { setStatus('A meeting id is 1–64 letters, digits, _ or -.', true); return; }
  if (app.call && !app.done) return;
  const call = app.client.call('default', id);
  await withLocalMedia(call, 'call', null, async () => {
    await call.join(joinOptions({ create: true }));
    if (abandoned(call)) { call.leave().catch(() => {}); return; }
    afterJoin(call);
  });
}

/** client 'ring': show the incoming screen, or answer busy when already in a call. */
export function onRing(call) {
  if (app.call === call && !app.done) return;
  if (app.call && !app.done) { call.reject('busy').catch(() => {}); return; }
  adopt(call, 'incoming', callerOf(call));
}

/** #accept-button */
export async function acceptIncoming() {
  const call = app.call;
  if (!call || app.done || app.mode !== 'incoming' || app.pending) return;
  app.pending = true;
  app.mode = 'call';
  route();
  try {
    await call.accept();
    if (abandoned(call)) return;
    if (call.state.ended) return;
    const stream = await openMedia();
    if (abandoned(call)) { stopStream(stream); return; }
    app.localStream = stream;
    await call.join(joinOptions());
    if (abandoned(call)) { call.leave().catch(() => {}); return; }
    afterJoin(call);
  } catch (err) {
    await fail(call, err.code === 'conflict' ? 'The call is no longer ringing.' : err);
  } finally {
    if (app.call === call) { app.pending = false; route(); }
  }
}

/** #reject-button: reject with reason 'decline'. */
export async function rejectIncoming() {
  const call = app.call;
  if (!call || app.done || app.mode !== 'incoming') return;
  app.hangingUp = true;
  try { await call.reject('decline'); } catch { /* the ring may be over already */ }
  finish(call, `declined call from ${app.peer}`);
}

/** #cancel-button: stop ringing (cancel), end the call, leave. */
export async function cancelOutgoing() {
  const call = app.call;
  if (!call || app.done) return;
  app.hangingUp = true;
  const st = call.state;
  try {
    if (st.ringing && st.ringing.outgoing) await call.reject('cancel');
  } catch { /* someone accepted meanwhile: end below */ }
  try {
    if (!call.state.ended && call.state.call && createdByOf(call) === me()) await call.end();
  } catch { /* not ours to end */ }
  try { if (call.state.ownSessionId) await call.leave(); } catch { /* gone already */ }
  finish(call, 'call cancelled');
}

/** #hangup-button: leave; a 1:1 ringing call is ended (by its initiator) for both. */
export async function hangup(text = 'call ended') {
  const call = app.call;
  if (!call || app.done || app.hangingUp) return;
  app.hangingUp = true;
  const oneToOne = call.type === 'ringing' && membersOf(call).length <= 2;
  const creator = createdByOf(call);
  try {
    if (oneToOne && !call.state.ended && (!creator || creator === me())) await call.end();
    else await call.leave();
  } catch (err) {
    console.warn('hangup', err && err.code, err && err.message);
    try { await call.leave(); } catch { /* the call is gone */ }
  }
  finish(call, text);
}

async function fail(call, err) {
  if (abandoned(call)) return;
  app.hangingUp = true;
  const st = call.state;
  try { if (st.ringing && st.ringing.outgoing) await call.reject('cancel'); } catch { /* ignore */ }
  try { if (call.state.ownSessionId) await call.leave(); } catch { /* ignore */ }
  finish(call, typeof err === 'string' ? err : errorText(err), true);
}

// ---- the end of a call --------------------------------------------------------

function finish(call, text, error = false) {
  if (abandoned(call)) return;
  app.done = true;
  app.pending = false;
  stopSpeaking();
  if (clock) clearInterval(clock);
  clock = null;
  if (call.localStream && call.localStream === app.localStream && !call.state.ownSessionId) call.localStream = null;
  stopStream(app.localStream);
  app.localStream = null;
  $('outgoing-preview').srcObject = null;
  clearTiles($('tiles'));
  setStatus(text, error);
  setBusy(false);
  setScreen(app.client ? 'home' : 'login');
  syncCallingState();
}

function rejectedText(call) {
  const others = membersOf(call).filter((m) => m.user_id !== me() && m.ring_state === 'rejected');
  if (!others.length) return 'call declined';
  return others.map((m) => (m.ring_reason === 'busy' ? `${m.user_id} is busy`
    : m.ring_reason === 'timeout' ? `${m.user_id}: no answer` : `${m.user_id} declined`)).join(', ');
}

/** Why an incoming ring is over (we did not accept or decline it here). */
function ringOverText(call) {
  const r = call.state.ringing || {};
  if (r.stoppedReason === 'accepted_elsewhere' || r.myRingState === 'accepted') return 'answered on another device';
  if (r.myRingState === 'rejected' && !r.stoppedReason && !call.state.ended) return 'declined on another device';
  return `missed call from ${app.peer}`;
}

function endedText(call) {
  if (app.mode === 'incoming') return ringOverText(call);
  const reason = call.state.endedReason;
  if (reason === 'all_rejected') return rejectedText(call);
  if (reason === 'no_answer') return 'no answer';
  if (reason === 'cancelled') return 'call cancelled';
  if (reason === 'admin') return 'call ended by an operator';
  if (reason === 'empty') return 'call ended (nobody was left in it)';
  if (reason === 'initiator_left' && createdByOf(call) !== me()) return `call ended (${createdByOf(call)} left)`;
  return 'call ended';
}

function idleText(call) {
  const why = call.state.leftReason;
  if (why === 'kicked') return 'you were removed from the call';
  if (why === 'connection_lost') return 'connection lost: you left the call';
  return 'you left the call';
}

// ---- state → screen -------------------------------------------------------------

/** Called on every state change of the current call. */
export function route() {
  const call = app.call;
  syncCallingState();
  if (!call || app.done) return;
  const cs = call.state.callingState;
  window.dispatchEvent(new CustomEvent('switchboard-demo:state', { detail: call.state }));
  if (cs === CallingState.ENDED) {
    if (!app.hangingUp) finish(call, endedText(call));
    return;
  }
  if (cs === CallingState.IDLE) {
    if (app.pending || app.hangingUp || !app.live) return showFor(app.mode, call);
    // Idle after being live: our ring or session is over, unless the library rejoins at once.
    clearTimeout(idleCheck);
    idleCheck = setTimeout(() => {
      if (abandoned(call) || app.pending || app.hangingUp || call.state.callingState !== CallingState.IDLE) return;
      finish(call, app.mode === 'incoming' ? ringOverText(call) : idleText(call));
    }, 0);
    return;
  }
  app.live = true;
  if (cs === CallingState.RINGING_INCOMING) { app.mode = 'incoming'; return showFor('incoming', call); }
  if (cs === CallingState.RINGING_OUTGOING || (app.mode === 'outgoing' && !answered(call))) return showFor('outgoing', call);
  app.mode = 'call';
  showFor('call', call);
  watchPeer(call);
}

function answered(call) {
  const own = call.state.ownSessionId;
  return membersOf(call).some((m) => m.user_id !== me() && m.ring_state === 'accepted') ||
    participantsOf(call).some((p) => sessionIdOf(p) !== own && userIdOf(p) !== me());
}

/** 1:1 ringing call: when the other person hangs up, we hang up too (like a phone). */
function watchPeer(call) {
  if (call.type !== 'ringing' || membersOf(call).length > 2) return;
  const own = call.state.ownSessionId;
  const remote = participantsOf(call).filter((p) => sessionIdOf(p) !== own);
  if (remote.length) { app.peerSeen = true; return; }
  if (app.peerSeen && call.state.callingState === CallingState.JOINED && !app.hangingUp) {
    const peer = app.peer || 'the other side';
    setTimeout(() => { if (app.call === call && !app.done) hangup(`call ended (${peer} hung up)`); }, 0);
  }
}

function showFor(mode, call) {
  if (mode === 'incoming') {
    $('incoming-caller').textContent = app.peer || '';
    $('incoming-avatar').textContent = initialOf(app.peer);
    setScreen('incoming');
  } else if (mode === 'outgoing') {
    const r = call.state.ringing || {};
    $('outgoing-callee').textContent = app.peer || '';
    $('outgoing-avatar').textContent = initialOf(app.peer);
    $('outgoing-text').textContent = answered(call) ? 'Connecting…' : r.outgoing ? 'Ringing…' : 'Calling…';
    setScreen('outgoing');
  } else {
    showCall(call);
  }
}

function showCall(call) {
  const isMeeting = call.type !== 'ringing';
  $('call-kind').textContent = isMeeting ? 'Meeting' : 'Call';
  $('call-id').textContent = call.id;
  const n = participantsOf(call).length;
  $('call-count').textContent = String(n);
  renderTiles($('tiles'), call, me());
  if (call.state.callingState === CallingState.JOINED && !clock) {
    app.joinedAt = Date.now();
    clock = setInterval(tick, 1000);
    tick();
  }
  syncControls();
  setScreen('call');
}

function tick() {
  const s = Math.max(0, Math.floor((Date.now() - (app.joinedAt || Date.now())) / 1000));
  const mm = Math.floor(s / 60);
  $('call-timer').textContent = `${mm}:${String(s % 60).padStart(2, '0')}`;
}

/** Before the page goes away: leave the call so the others see us go at once. */
export function leaveOnUnload() {
  const call = app.call;
  if (!call || app.done || !call.state.ownSessionId) return;
  app.hangingUp = true;
  call.leave().catch(() => {});
}
