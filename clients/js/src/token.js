// @ts-check
/** Token helpers: reading a JWT's `exp` without verifying it, and redaction for logs. */

/** @param {string} token @returns {number|null} expiry in ms, or null when unreadable */
export function tokenExpiresAt(token) {
  try {
    const part = String(token).split('.')[1];
    if (!part) return null;
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (part.length % 4)) % 4);
    const json = typeof atob === 'function' ? atob(b64) : '';
    const claims = JSON.parse(json);
    return typeof claims.exp === 'number' ? claims.exp * 1000 : null;
  } catch { return null; }
}

const SECRET_KEYS = new Set(['token', 'resume_token', 'pin', 'authorization', 'admin_secret', 'apisecret']);
const JWT_RE = /eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

/** Deep copy with every secret replaced by "<redacted>": safe to log. */
export function redact(value) {
  if (typeof value === 'string') return value.replace(JWT_RE, '<redacted>').replace(/([?&](token|resume_token)=)[^&]*/g, '$1<redacted>');
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.has(k.toLowerCase()) && v != null ? '<redacted>' : redact(v);
    return out;
  }
  return value;
}

/** Wraps a user logger so everything it receives is redacted; a missing logger logs nothing. */
export function safeLogger(logger) {
  const call = (level) => (msg, data) => {
    const fn = logger && (logger[level] || logger.log);
    if (typeof fn === 'function') {
      try { data === undefined ? fn.call(logger, redact(msg)) : fn.call(logger, redact(msg), redact(data)); } catch { /* ignore */ }
    }
  };
  return { debug: call('debug'), info: call('info'), warn: call('warn'), error: call('error') };
}
