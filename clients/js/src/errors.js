// @ts-check
/** Server error codes (docs/protocol.md 6.14) plus the client's own codes. */
export const ErrorCode = Object.freeze({
  INVALID_REQUEST: 'invalid_request',
  UNAUTHENTICATED: 'unauthenticated',
  TOKEN_EXPIRED: 'token_expired',
  TOKEN_INVALID: 'token_invalid',
  FORBIDDEN: 'forbidden',
  CONFLICT: 'conflict',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  RATE_LIMITED: 'rate_limited',
  UNAVAILABLE: 'unavailable',
  INTERNAL: 'internal',
  UNKNOWN_TYPE: 'unknown_type',
  CALL_NOT_FOUND: 'call_not_found',
  SESSION_NOT_FOUND: 'session_not_found',
  CALL_ENDED: 'call_ended',
  NOT_A_MEMBER: 'not_a_member',
  CALL_FULL: 'call_full',
  NO_SFU_AVAILABLE: 'no_sfu_available',
  NOT_FOUND: 'not_found',
  TOO_MANY_DEVICES: 'too_many_devices',
  // client-side codes
  TIMEOUT: 'timeout',
  CONNECTION_LOST: 'connection_lost',
  NOT_CONNECTED: 'not_connected',
  CONNECTION_REPLACED: 'connection_replaced',
  TOKEN_PROVIDER_FAILED: 'token_provider_failed',
  MEDIA_FAILED: 'media_failed',
  SFU_FAILED: 'sfu_failed',
  UNSUPPORTED_SFU: 'unsupported_sfu',
  UNKNOWN: 'unknown',
});

/** Codes after which the same request may succeed if simply retried later. */
const RETRYABLE = new Set([
  'rate_limited', 'unavailable', 'internal', 'no_sfu_available',
  'timeout', 'connection_lost', 'not_connected', 'sfu_failed',
]);

export function isRetryableCode(code) { return RETRYABLE.has(code); }

/** The one error type of the library. */
export class SwitchboardError extends Error {
  /**
   * @param {string} code stable error code
   * @param {string} [message] human-readable text
   * @param {{retryable?: boolean, requestType?: string, closeCode?: number, cause?: unknown}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message || code);
    this.name = 'SwitchboardError';
    /** @type {string} */
    this.code = code;
    /** @type {boolean} */
    this.retryable = extra.retryable ?? isRetryableCode(code);
    /** @type {string|undefined} */
    this.requestType = extra.requestType;
    /** @type {number|undefined} */
    this.closeCode = extra.closeCode;
    if (extra.cause !== undefined) this.cause = extra.cause;
  }

  /** Builds the error from a server `error` frame. */
  static fromFrame(frame, requestType) {
    const e = (frame && frame.error) || {};
    const code = typeof e.code === 'string' ? e.code : ErrorCode.UNKNOWN;
    return new SwitchboardError(code, typeof e.message === 'string' ? e.message : code, { requestType });
  }

  /** Wraps anything thrown into a SwitchboardError (kept as is when it already is one). */
  static wrap(err, code = ErrorCode.UNKNOWN) {
    if (err instanceof SwitchboardError) return err;
    const msg = err && typeof err === 'object' && 'message' in err ? String(err.message) : String(err);
    return new SwitchboardError(code, msg, { cause: err });
  }
}
