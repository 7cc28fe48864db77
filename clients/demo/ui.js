// Shared app state and the small DOM helpers every module uses.

export const $ = (id) => document.getElementById(id);

/**
 * The app's one mutable state.
 * - client: the SwitchboardClient of the signed-in user (null on the login screen)
 * - call: the current call (kept after it ends, until the next one starts)
 * - mode: how we are in it: 'outgoing' (we ring), 'incoming' (we are rung), 'call' (in the call)
 * - done: the current call is over for this app (we are back home)
 */
export const app = {
  client: null,
  me: null,
  call: null,
  mode: null,
  done: true,
  peer: null,          // the other user of a 1:1 call (callee or caller)
  peerSeen: false,     // a remote participant has been in the call
  localStream: null,   // camera/microphone we opened (we stop it)
  media: { audio: true, video: true },
  offs: [],            // unsubscribe functions of the current call's listeners
};

export function setScreen(screen) {
  if (document.body.dataset.screen !== screen) document.body.dataset.screen = screen;
}

/** The status line on the login and home screens; `error` styles it as a problem. */
export function setStatus(text, error = false) {
  const el = $('status');
  el.textContent = text || '';
  el.classList.toggle('error', !!error && !!text);
}

/** body[data-calling-state]: the current call's callingState, or 'idle' without one. */
export function syncCallingState() {
  let cs = app.call ? app.call.state.callingState : 'idle';
  if (app.done && cs !== 'ended') cs = 'idle';
  document.body.dataset.callingState = cs || 'idle';
}

export function syncConnection() {
  const cs = app.client ? app.client.connectionState : 'disconnected';
  document.body.dataset.connection = cs;
  const text = { idle: 'offline', connecting: 'connecting…', connected: 'online', reconnecting: 'reconnecting…', disconnected: 'offline' };
  $('connection-text').textContent = text[cs] || cs;
  $('connection-indicator').title = `connection: ${cs}`;
}

export function initialOf(name) {
  const s = String(name || '').trim();
  return s ? Array.from(s)[0].toUpperCase() : '?';
}

/** Subscribe and remember how to unsubscribe (the library's `on` returns an unsubscribe function). */
export function listen(emitter, event, fn) {
  const off = emitter.on(event, fn);
  return typeof off === 'function' ? off : () => emitter.off && emitter.off(event, fn);
}

/** Disable the home buttons while a call is being set up. */
export function setBusy(busy) {
  for (const id of ['ring-button', 'join-meeting-button']) $(id).disabled = busy;
}
