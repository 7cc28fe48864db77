// Camera and microphone: opening them, the mute and camera buttons.

import { app, $ } from './ui.js';

/**
 * Opens camera and microphone; falls back to the microphone only, then the
 * camera only, then nothing (we still join and receive).
 */
export async function openMedia() {
  const md = navigator.mediaDevices;
  if (!md || typeof md.getUserMedia !== 'function') return null;
  const tries = [{ audio: true, video: true }, { audio: true, video: false }, { audio: false, video: true }];
  for (const constraints of tries) {
    try {
      return await md.getUserMedia(constraints);
    } catch (err) {
      console.warn('getUserMedia', constraints, err && err.name);
    }
  }
  return null;
}

export function stopStream(stream) {
  if (!stream) return;
  for (const track of stream.getTracks()) {
    try { track.stop(); } catch { /* ignore */ }
  }
}

function tracksOf(kind) {
  const s = app.localStream || (app.call && app.call.localStream);
  if (!s) return [];
  return kind === 'audio' ? s.getAudioTracks() : s.getVideoTracks();
}

/** Reflect microphone/camera state on #mute-button and #camera-button (aria-pressed = off). */
export function syncControls() {
  const mute = $('mute-button');
  const cam = $('camera-button');
  const hasAudio = tracksOf('audio').length > 0;
  const hasVideo = tracksOf('video').length > 0;
  const micOff = !app.media.audio || !hasAudio;
  const camOff = !app.media.video || !hasVideo;
  setToggle(mute, micOff, micOff ? 'Unmute' : 'Mute', micOff ? 'Turn microphone on' : 'Mute microphone');
  setToggle(cam, camOff, camOff ? 'Start video' : 'Stop video', camOff ? 'Turn camera on' : 'Turn camera off');
  mute.disabled = !hasAudio;
  cam.disabled = !hasVideo;
  const joined = !!(app.call && app.call.state.ownSessionId);
  const oneToOne = app.call && app.call.type === 'ringing';
  $('hangup-button').querySelector('.ctl-label').textContent = oneToOne ? 'End' : 'Leave';
  $('hangup-button').title = oneToOne ? 'End call' : 'Leave call';
  document.body.classList.toggle('joined', joined);
}

function setToggle(button, pressed, label, title) {
  button.setAttribute('aria-pressed', String(pressed));
  button.dataset.on = String(!pressed);
  button.title = title;
  const el = button.querySelector('.ctl-label');
  if (el.textContent !== label) el.textContent = label;
}

/**
 * Toggle the microphone ('audio') or camera ('video'): enables/disables the
 * local track and tells the others with updateParticipant({audio|video}).
 */
export async function toggleMedia(kind, onMuted) {
  const call = app.call;
  if (!call || app.done) return;
  const tracks = tracksOf(kind);
  if (!tracks.length) return;
  const on = !app.media[kind];
  app.media[kind] = on;
  for (const t of tracks) t.enabled = on;
  syncControls();
  if (kind === 'audio' && onMuted) onMuted(!on);
  if (!call.state.ownSessionId) return;
  try {
    await call.updateParticipant({ [kind]: on });
  } catch (err) {
    console.warn('updateParticipant', err && err.code);
  }
}
