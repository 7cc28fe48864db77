// @ts-check
/**
 * Exponential backoff with jitter ("equal jitter"): the ceiling doubles per attempt up to
 * `maxMs`, and the delay is uniformly drawn from [ceiling/2, ceiling].
 * @param {number} attempt 0 for the first retry
 * @param {{baseMs?: number, maxMs?: number, factor?: number, random?: () => number}} [opts]
 */
export function backoffDelay(attempt, opts = {}) {
  const { baseMs = 500, maxMs = 15000, factor = 2, random = Math.random } = opts;
  const ceiling = Math.min(maxMs, baseMs * Math.pow(factor, Math.max(0, attempt)));
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(ceiling / 2 + r * (ceiling / 2));
}

/** Bounds of `backoffDelay` for an attempt (for tests and docs). */
export function backoffBounds(attempt, opts = {}) {
  const { baseMs = 500, maxMs = 15000, factor = 2 } = opts;
  const ceiling = Math.min(maxMs, baseMs * Math.pow(factor, Math.max(0, attempt)));
  return { min: Math.round(ceiling / 2), max: Math.round(ceiling) };
}

/** Stateful helper: `next()` gives the next delay, `reset()` after a success. */
export class Backoff {
  constructor(opts = {}) { this.opts = opts; this.attempt = 0; }
  next() { return backoffDelay(this.attempt++, this.opts); }
  reset() { this.attempt = 0; }
}
