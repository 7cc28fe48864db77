// @ts-check
/**
 * The protocol's default participant order (docs/protocol.md 6.9): pinned first, then
 * screensharing, the dominant speaker, speaking, publishing video, publishing audio, then by user
 * id and session id. Each criterion only breaks ties of the ones before it.
 */

/**
 * Compares by Unicode code points (as the server's Swift `String <` does), not UTF-16 units.
 * @param {string} a @param {string} b
 */
export function cmpStr(a, b) {
  if (a === b) return 0;
  const A = [...a]; const B = [...b];
  for (let i = 0; i < Math.min(A.length, B.length); i++) {
    const d = /** @type {number} */ (A[i].codePointAt(0)) - /** @type {number} */ (B[i].codePointAt(0));
    if (d) return d < 0 ? -1 : 1;
  }
  return A.length - B.length < 0 ? -1 : A.length > B.length ? 1 : 0;
}
/** true sorts first */
function cmpFlag(a, b) { return (b ? 1 : 0) - (a ? 1 : 0); }

/**
 * @param {any} a participant
 * @param {any} b participant
 * @param {string|null} [dominant] session id of the dominant speaker (else the flags are used)
 */
export function compareParticipants(a, b, dominant) {
  const dom = (p) => (dominant === undefined ? !!p.dominant_speaker : p.session_id === dominant);
  return cmpFlag(a.pinned, b.pinned)
    || cmpFlag(a.screenshare, b.screenshare)
    || cmpFlag(dom(a), dom(b))
    || cmpFlag(a.speaking, b.speaking)
    || cmpFlag(a.video, b.video)
    || cmpFlag(a.audio, b.audio)
    || cmpStr(String(a.user_id), String(b.user_id))
    || cmpStr(String(a.session_id), String(b.session_id));
}

/** Returns a new array in the default order. */
export function sortParticipants(list, dominant) {
  return [...list].sort((a, b) => compareParticipants(a, b, dominant));
}

/** Inserts or replaces a participant (by session id) and returns the re-sorted list. */
export function upsertParticipant(list, participant, dominant) {
  const rest = list.filter((p) => p.session_id !== participant.session_id);
  rest.push(participant);
  return sortParticipants(rest, dominant);
}

/** Removes a participant by session id. */
export function removeParticipant(list, sessionId) {
  return list.filter((p) => p.session_id !== sessionId);
}

/** Sets every participant's `dominant_speaker` flag from the dominant session id and re-sorts. */
export function applyDominantSpeaker(list, sessionId) {
  const next = list.map((p) => {
    const flag = sessionId != null && p.session_id === sessionId;
    return p.dominant_speaker === flag ? p : { ...p, dominant_speaker: flag };
  });
  return sortParticipants(next, sessionId ?? null);
}
