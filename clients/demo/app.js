// Switchboard demo calling app: sign in with a development token, ring
// someone (outgoing/incoming screens) or join a meeting by id.
// Served by the daemon at /demo/ (switchboard serve --dev); the library at /sdk/.

import { SwitchboardClient } from '/sdk/switchboard.js';
import { app, $, setScreen, setStatus, syncConnection, syncCallingState, initialOf, listen } from './ui.js';
import { pageOptions, connectUrl, fetchDevToken, errorText } from './util.js';
import { startOutgoing, joinMeeting, onRing, acceptIncoming, rejectIncoming, cancelOutgoing, hangup,
  leaveOnUnload, speakingMonitor, route } from './flow.js';
import { toggleMedia } from './media.js';

// For tests and the console: the client and the current call (kept current).
window.switchboardDemo = {
  get client() { return app.client; },
  get call() { return app.call; },
  get me() { return app.me; },
  get state() { return app.call ? app.call.state : null; },
  app,
};

let clientOffs = [];
let signingOut = false;

// ---- signing in and out ---------------------------------------------------------

async function login(nameRaw) {
  const userId = String(nameRaw || '').trim();
  if (!userId) { setStatus('Enter a user name.', true); return; }
  if (app.client) return;
  const button = $('login-button');
  button.disabled = true;
  setStatus('Signing in…');
  try {
    const first = await fetchDevToken(userId);
    const client = new SwitchboardClient({
      url: connectUrl(),
      user: { id: userId, name: userId },
      token: first.token,
      // Called by the library before the token expires (and when reconnecting with an expired one).
      tokenProvider: async () => (await fetchDevToken(userId)).token,
      persistSocket: true,
      logger: pageOptions.debug ? console : undefined,
    });
    app.client = client;
    app.me = userId;
    clientOffs = [
      listen(client, 'connection', onConnection),
      listen(client, 'ring', onRing),
      listen(client, 'error', onClientError),
    ];
    syncConnection();
    await client.connect();
    showSignedIn();
    if (!app.call || app.done) setStatus('');
  } catch (err) {
    teardownClient();
    setStatus(errorText(err), true);
    setScreen('login');
  } finally {
    button.disabled = false;
  }
}

function showSignedIn() {
  $('me').textContent = app.me;
  $('me-avatar').textContent = initialOf(app.me);
  document.title = `${app.me} · Switchboard demo`;
  if (!app.call || app.done) setScreen('home');
  if (pageOptions.meeting && !$('meeting-id').value) $('meeting-id').value = pageOptions.meeting;
  $(app.call && !app.done ? 'accept-button' : 'callee').focus();
}

function teardownClient() {
  for (const off of clientOffs) off();
  clientOffs = [];
  const client = app.client;
  app.client = null;
  app.me = null;
  if (client) {
    try { client.disconnect(); } catch { /* already closed */ }
  }
  syncConnection();
}

async function logout() {
  signingOut = true;
  try {
    if (app.call && !app.done) await hangup('signed out');
    teardownClient();
    app.call = null;
    app.done = true;
    syncCallingState();
    $('me').textContent = '';
    document.title = 'Switchboard demo call';
    setStatus('');
    setScreen('login');
    $('user-name').focus();
  } finally {
    signingOut = false;
  }
}

// ---- client events ----------------------------------------------------------------

function onConnection() {
  syncConnection();
  const state = app.client && app.client.connectionState;
  if (state === 'disconnected' && !signingOut && app.client) {
    setStatus('Disconnected from the server. Start a call to reconnect, or sign in again.', true);
  } else if (state === 'connected' && /^Disconnected/.test($('status').textContent)) {
    setStatus('');
  }
}

function onClientError(err) {
  console.warn('switchboard error', err && err.code, err && err.message);
  if (!err) return;
  // The library recovers from these by itself (reconnect and resume, new token, retry);
  // media trouble inside a call shows on the tiles. The rest goes to the status line.
  const recovering = app.client && app.client.connectionState !== 'disconnected';
  if (['token_expired', 'connection_lost', 'timeout', 'not_connected'].includes(err.code) && recovering) return;
  if (err.retryable && recovering) return;
  if (['media_failed', 'sfu_failed', 'unsupported_sfu'].includes(err.code) && app.call && !app.done) return;
  setStatus(errorText(err), true);
}

// ---- wiring ---------------------------------------------------------------------

function onSubmit(formId, fn) {
  $(formId).addEventListener('submit', (ev) => {
    ev.preventDefault();
    fn();
  });
}

function onClick(id, fn) {
  $(id).addEventListener('click', (ev) => {
    ev.preventDefault();
    fn();
  });
}

onSubmit('login-form', () => login($('user-name').value));
onSubmit('ring-form', () => startOutgoing($('callee').value));
onSubmit('meeting-form', () => joinMeeting($('meeting-id').value));
onClick('cancel-button', () => cancelOutgoing());
onClick('accept-button', () => acceptIncoming());
onClick('reject-button', () => rejectIncoming());
onClick('hangup-button', () => hangup());
onClick('mute-button', () => toggleMedia('audio', (muted) => {
  const monitor = speakingMonitor();
  if (monitor) monitor.setMuted(muted);
  route();
}));
onClick('camera-button', () => toggleMedia('video', null).then(() => route()));
onClick('logout-button', () => logout());
window.addEventListener('pagehide', () => leaveOnUnload());
window.addEventListener('resize', () => { if (app.call && !app.done) route(); });

// ---- start ------------------------------------------------------------------------

setScreen('login');
syncCallingState();
syncConnection();
if (pageOptions.user) {
  $('user-name').value = pageOptions.user;
  login(pageOptions.user);
}
