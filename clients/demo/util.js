// Small helpers of the demo app: page parameters, development tokens, and
// tolerant accessors for the call state the browser library exposes.

const params = new URLSearchParams(location.search);

/**
 * Page options: `?user=alice` prefills the name and signs in, `?ttl=60` asks short
 * tokens, `?meeting=standup` prefills the meeting id.
 */
export const pageOptions = {
  user: (params.get('user') || '').trim(),
  ttl: clampTtl(params.get('ttl')),
  meeting: (params.get('meeting') || '').trim(),
  speaking: params.get('speaking') !== '0', // `?speaking=0`: do not report the microphone level
  debug: params.has('debug'), // `?debug`: the library logs to the console (secrets redacted)
};

function clampTtl(raw) {
  const n = Number.parseInt(raw || '', 10);
  if (!Number.isFinite(n) || n <= 0) return 3600;
  return Math.min(n, 86400);
}

/** `ws(s)://<host>/v1/connect` for the page's own origin. */
export function connectUrl() {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/v1/connect`;
}

/** An error carrying the server's message (from the JSON error body). */
export class TokenError extends Error {
  constructor(message, code, status) {
    super(message);
    this.name = 'TokenError';
    this.code = code;
    this.status = status;
  }
}

/**
 * POST /dev/token on the page's origin (development daemons only: `--dev`,
 * loopback clients). Resolves to {token, user_id, expires_at}.
 */
export async function fetchDevToken(userId, ttlSeconds = pageOptions.ttl) {
  let res;
  try {
    res = await fetch('/dev/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ user_id: userId, ttl_seconds: ttlSeconds }),
      cache: 'no-store',
    });
  } catch (err) {
    throw new TokenError(`cannot reach the server: ${err.message}`, 'network', 0);
  }
  let body = null;
  try { body = await res.json(); } catch { body = null; }
  if (!res.ok || !body || typeof body.token !== 'string') {
    const e = body && body.error;
    const message = (e && e.message) || `token request failed (HTTP ${res.status})`;
    throw new TokenError(message, (e && e.code) || 'http_' + res.status, res.status);
  }
  return body;
}

/** A fresh call id: 1–64 characters of A–Z a–z 0–9 _ -. */
export function randomCallId() {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `c-${Date.now().toString(36)}-${hex}`;
}

export const CALL_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** First defined value among several spellings of a field. */
export function pick(obj, ...names) {
  if (!obj) return undefined;
  for (const n of names) {
    if (obj[n] !== undefined && obj[n] !== null) return obj[n];
  }
  return undefined;
}

export const sessionIdOf = (p) => pick(p, 'session_id', 'sessionId');
export const userIdOf = (p) => pick(p, 'user_id', 'userId');
export const nameOf = (p) => pick(p, 'name', 'user_name') || userIdOf(p) || '';

/** The call object inside a call state (`state.call`), or the state itself. */
function callInfo(state) {
  return (state && (state.call || state)) || {};
}

export function createdByOf(call) {
  const st = call.state || {};
  return pick(st, 'createdBy', 'created_by') || pick(callInfo(st), 'created_by', 'createdBy') ||
    pick(call, 'createdBy', 'created_by');
}

export function membersOf(call) {
  const m = (call.state && call.state.members) || [];
  return Array.isArray(m) ? m : [];
}

export function participantsOf(call) {
  const p = (call.state && call.state.participants) || [];
  return Array.isArray(p) ? p : [];
}

/** Our own participant session id in the call, when the library tells it. */
export function ownSessionId(call) {
  return pick(call, 'sessionId', 'session_id') ||
    pick(call.state || {}, 'sessionId', 'session_id', 'ownSessionId', 'localSessionId');
}

export function dominantSessionId(call) {
  const d = call.state && (call.state.dominantSpeaker ?? call.state.dominant_speaker);
  if (d && typeof d === 'object') return sessionIdOf(d);
  return d || pick(callInfo(call.state), 'dominant_speaker') || null;
}

/** Who rings us (the `from` of call.ring), else the call's creator. */
export function callerOf(call) {
  const st = call.state || {};
  return pick(st.ringing || {}, 'from') || pick(st, 'ringFrom', 'from') || createdByOf(call) || 'someone';
}

/** A short human text for an error (SwitchboardError or anything else). */
export function errorText(err) {
  if (!err) return 'unknown error';
  if (typeof err === 'string') return err;
  const code = err.code && typeof err.code === 'string' ? err.code : '';
  const msg = err.message || String(err);
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}
