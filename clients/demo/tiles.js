// The video grid: one `.tile` per participant, in the order of
// `call.state.participants` (the server's default sort order). Tiles and their
// <video> elements are kept by session id and only moved, never rebuilt, so a
// playing video does not flicker or restart when the order changes.

import { sessionIdOf, userIdOf, nameOf, ownSessionId, dominantSessionId, participantsOf } from './util.js';

const MIC_OFF_SVG = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 14a3 3 0 0 0 3-3V5a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.92V21h2v-3.08A7 7 0 0 0 19 11h-2z"/><path d="M3 3l18 18" stroke="currentColor" stroke-width="2"/></svg>';

const tilesByContainer = new WeakMap();

/** Which participant is our own: our session id when known, else our first session by user id. */
function localSessionId(call, participants, me) {
  const own = ownSessionId(call);
  if (own && participants.some((p) => sessionIdOf(p) === own)) return own;
  const mine = participants.find((p) => userIdOf(p) === me);
  return mine ? sessionIdOf(mine) : null;
}

function streamFor(call, sessionId, isLocal) {
  if (isLocal) return call.localStream || null;
  const streams = call.remoteStreams;
  if (streams && typeof streams.get === 'function') return streams.get(sessionId) || null;
  return null;
}

function hasLiveVideo(stream, isLocal) {
  if (!stream || typeof stream.getVideoTracks !== 'function') return false;
  return stream.getVideoTracks().some((t) => t.readyState === 'live' && (!isLocal || t.enabled));
}

function createTile(sessionId) {
  const tile = document.createElement('div');
  tile.className = 'tile';
  tile.dataset.sessionId = sessionId;

  const video = document.createElement('video');
  video.autoplay = true;
  video.playsInline = true;
  video.setAttribute('autoplay', '');
  video.setAttribute('playsinline', '');

  const avatar = document.createElement('div');
  avatar.className = 'tile-avatar';
  avatar.setAttribute('aria-hidden', 'true');

  const label = document.createElement('div');
  label.className = 'tile-label';
  const mic = document.createElement('span');
  mic.className = 'tile-mic';
  mic.innerHTML = MIC_OFF_SVG;
  mic.title = 'microphone off';
  const name = document.createElement('span');
  name.className = 'tile-name';
  label.append(mic, name);

  tile.append(video, avatar, label);
  // A remote picture shows once frames arrive; until then the avatar.
  const refresh = () => tile.classList.toggle('video-off', !(tile.wantVideo && (tile.classList.contains('local') || video.readyState >= 2)));
  for (const ev of ['loadeddata', 'playing', 'emptied']) video.addEventListener(ev, refresh);
  return tile;
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function updateTile(tile, call, p, { isLocal, isDominant }) {
  const sessionId = sessionIdOf(p);
  const userId = userIdOf(p) || '';
  tile.dataset.userId = userId;
  tile.classList.toggle('local', isLocal);
  tile.classList.toggle('dominant', isDominant);
  tile.classList.toggle('speaking', !!p.speaking);
  tile.classList.toggle('audio-off', p.audio === false);

  const video = tile.querySelector('video');
  if (isLocal !== video.muted) {
    video.muted = isLocal;
    video.toggleAttribute('muted', isLocal);
  }
  const stream = streamFor(call, sessionId, isLocal);
  if (video.srcObject !== stream) {
    video.srcObject = stream;
    if (stream) video.play().catch(() => {});
  }
  // Show the picture when video flows; the avatar when the camera is off or nothing arrived.
  tile.wantVideo = hasLiveVideo(stream, isLocal) && (isLocal || p.video !== false);
  tile.classList.toggle('video-off', !(tile.wantVideo && (isLocal || video.readyState >= 2)));

  const display = nameOf(p) || userId;
  setText(tile.querySelector('.tile-avatar'), (display.trim()[0] || '?').toUpperCase());
  setText(tile.querySelector('.tile-name'), isLocal ? `${display} (you)` : display);
  tile.title = display;
}

/**
 * Render `call`'s participants into `container`. Reuses tiles by session id
 * and reorders the existing nodes to match the participants' order.
 */
export function renderTiles(container, call, me) {
  let tiles = tilesByContainer.get(container);
  if (!tiles) {
    tiles = new Map();
    tilesByContainer.set(container, tiles);
  }
  const participants = call ? participantsOf(call) : [];
  const localId = call ? localSessionId(call, participants, me) : null;
  const dominantId = call ? dominantSessionId(call) : null;

  const wanted = [];
  const seen = new Set();
  for (const p of participants) {
    const sid = sessionIdOf(p);
    if (!sid || seen.has(sid)) continue;
    seen.add(sid);
    let tile = tiles.get(sid);
    if (!tile) {
      tile = createTile(sid);
      tiles.set(sid, tile);
    }
    updateTile(tile, call, p, {
      isLocal: sid === localId,
      isDominant: dominantId != null ? sid === dominantId : !!p.dominant_speaker,
    });
    wanted.push(tile);
  }

  // Drop tiles of participants who left.
  for (const [sid, tile] of tiles) {
    if (seen.has(sid)) continue;
    const video = tile.querySelector('video');
    if (video) video.srcObject = null;
    tile.remove();
    tiles.delete(sid);
  }

  // Reorder by moving only the nodes that are out of place.
  wanted.forEach((tile, i) => {
    const at = container.children[i];
    if (at !== tile) {
      container.insertBefore(tile, at || null);
      const video = tile.querySelector('video');
      if (video && video.srcObject && video.paused) video.play().catch(() => {});
    }
  });
  // Anything else in the container (not a tile of ours) goes.
  while (container.children.length > wanted.length) container.lastElementChild.remove();

  const n = wanted.length;
  container.dataset.count = String(n);
  container.style.setProperty('--cols', String(columnsFor(n, container)));
}

/** Columns for n tiles: 1 → 1, 2 → 2 (1 on a narrow screen), 3–4 → 2, 5–6 → 3. */
function columnsFor(n, container) {
  const narrow = (container.clientWidth || window.innerWidth) < 640;
  if (n <= 1) return 1;
  if (narrow) return n <= 2 ? 1 : 2;
  if (n <= 4) return 2;
  if (n <= 9) return 3;
  return 4;
}

/** Forget every tile (the call is over). */
export function clearTiles(container) {
  const tiles = tilesByContainer.get(container);
  if (tiles) {
    for (const tile of tiles.values()) {
      const video = tile.querySelector('video');
      if (video) video.srcObject = null;
    }
    tiles.clear();
  }
  container.replaceChildren();
  container.dataset.count = '0';
}
