// @ts-check
/**
 * Holds the user token and calls the app's `tokenProvider`: at most one provider call at a time
 * and one per expiry (no stampede), retried with backoff; a provider that keeps failing gives a
 * terminal `token_provider_failed` error.
 */
import { SwitchboardError, ErrorCode } from './errors.js';
import { backoffDelay } from './backoff.js';
import { tokenExpiresAt } from './token.js';

export class TokenManager {
  /**
   * @param {{token?: string, tokenProvider?: () => Promise<string>, clock: any, log: any, attempts?: number, backoff?: object}} o
   */
  constructor(o) {
    this.token = o.token || null;
    this.provider = o.tokenProvider || null;
    this.clock = o.clock;
    this.log = o.log;
    this.attempts = o.attempts ?? 4;
    this.backoff = { baseMs: 500, maxMs: 5000, ...(o.backoff || {}) };
    this.expired = false;
    this.inflight = null;
    this.handledExpiry = null;
    this.providerCalls = 0;
  }

  canRefresh() { return !!this.provider; }

  markExpired() { this.expired = true; }

  /** A token good for connecting: the current one, or a fresh one when missing or expired. */
  async get() {
    const exp = this.token ? tokenExpiresAt(this.token) : null;
    const stale = !this.token || this.expired || (exp !== null && exp <= this.clock.now());
    if (!stale) return this.token;
    if (!this.provider) {
      if (this.token) return this.token; // let the server say what is wrong with it
      throw new SwitchboardError(ErrorCode.UNAUTHENTICATED, 'no token and no tokenProvider', { retryable: false });
    }
    return this.fetch();
  }

  /**
   * A new token for `connection.token_expiring {expires_at}`: one provider call per expiry.
   * Resolves with the token to send in `token.refresh`, or null when this expiry is already
   * being handled (only the first caller sends it).
   */
  forExpiry(expiresAt) {
    if (!this.provider) return Promise.resolve(null);
    if (expiresAt != null && this.handledExpiry === expiresAt) return Promise.resolve(null);
    this.handledExpiry = expiresAt ?? null;
    // A fetch already running will be sent by whoever started it.
    if (this.inflight) return this.inflight.then(() => null);
    return this.fetch();
  }

  /** Single-flight provider call with retries. */
  fetch() {
    if (this.inflight) return this.inflight;
    this.inflight = (async () => {
      let lastErr;
      for (let attempt = 0; attempt < this.attempts; attempt++) {
        try {
          this.providerCalls++;
          const token = await this.provider();
          if (typeof token !== 'string' || !token) throw new Error('tokenProvider returned no token');
          this.token = token;
          this.expired = false;
          return token;
        } catch (err) {
          lastErr = err;
          this.log.warn('tokenProvider failed', { attempt, message: String(err && err.message || err) });
          if (attempt + 1 < this.attempts) {
            const delay = backoffDelay(attempt, { ...this.backoff, random: this.clock.random });
            await new Promise((r) => this.clock.setTimeout(r, delay));
          }
        }
      }
      throw new SwitchboardError(ErrorCode.TOKEN_PROVIDER_FAILED, `tokenProvider failed ${this.attempts} times: ${lastErr && lastErr.message || lastErr}`, { retryable: false, cause: lastErr });
    })();
    const done = () => { this.inflight = null; };
    this.inflight.then(done, done);
    return this.inflight;
  }
}
