// @ts-check
/**
 * Switchboard browser client: the call protocol of docs/protocol.md section 6.
 *   import { SwitchboardClient, SwitchboardError, CallingState } from '/sdk/switchboard.js';
 * Types: switchboard.d.ts next to this file.
 */
export { SwitchboardClient } from './client.js';
export { Call } from './call.js';
export { SwitchboardError, ErrorCode } from './errors.js';
export { CallingState } from './call-state.js';
export { compareParticipants, sortParticipants } from './participants.js';
export { backoffDelay } from './backoff.js';

/**
 * @typedef {object} CallState
 * @property {string} callingState one of CallingState
 * @property {string} cid @property {string} type @property {string} id
 * @property {string|null} userId the local user
 * @property {object|null} call the server's call object
 * @property {object[]} members @property {object[]} participants in the protocol's default order
 * @property {string|null} dominantSpeaker session id
 * @property {object|null} sfu the SFU of our session (with Janus token/PIN while joined)
 * @property {string|null} createdBy @property {object} custom
 * @property {boolean} ended @property {string|null} endedReason
 * @property {{active: boolean, incoming: boolean, outgoing: boolean, from: string|null, deadline: number|null, myRingState: string|null, stoppedReason: string|null}} ringing
 * @property {string|null} ownSessionId @property {string|null} role @property {string|null} leftReason
 * @property {boolean} joining @property {boolean} reconnecting
 */

/**
 * @typedef {object} SwitchboardClientOptions
 * @property {string} url
 * @property {{id: string, name?: string}} [user]
 * @property {string} [token]
 * @property {() => Promise<string>} [tokenProvider]
 * @property {boolean} [persistSocket]
 * @property {any} [WebSocket] @property {any} [RTCPeerConnection] @property {(c: any) => Promise<any>} [getUserMedia]
 * @property {any} [fetch] @property {any[]} [iceServers]
 * @property {{debug?: Function, info?: Function, warn?: Function, error?: Function}} [logger]
 * @property {number} [requestTimeoutMs] @property {number} [pingIntervalMs] @property {number} [connectAttempts] @property {number} [tokenAttempts]
 * @property {{baseMs?: number, maxMs?: number}} [backoff]
 * @property {(fn: Function, ms: number) => any} [setTimeout] @property {(t: any) => void} [clearTimeout]
 * @property {() => number} [now] @property {() => number} [random]
 */

/**
 * A registered push device of the user (`device.register`, `device.list`).
 * @typedef {object} Device
 * @property {string} device_id what the admin API's DELETE /v1/users/{user}/devices/{device} takes
 * @property {string} user_id
 * @property {'apns'|'apns_voip'|'fcm'|'webpush'} provider
 * @property {string} token the provider's token (webpush: the subscription as JSON text)
 * @property {number} created_at ms since 1970, when it was (last) registered
 */
