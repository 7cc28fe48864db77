// Hand-written declarations of the public API of /sdk/switchboard.js.

export declare const CallingState: Readonly<{
  IDLE: 'idle';
  RINGING_OUTGOING: 'ringing-outgoing';
  RINGING_INCOMING: 'ringing-incoming';
  JOINING: 'joining';
  JOINED: 'joined';
  RECONNECTING: 'reconnecting';
  ENDED: 'ended';
}>;
export type CallingStateValue = (typeof CallingState)[keyof typeof CallingState];
export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'disconnected';

export declare const ErrorCode: Readonly<Record<string, string>>;

export declare class SwitchboardError extends Error {
  constructor(code: string, message?: string, extra?: { retryable?: boolean; requestType?: string; closeCode?: number; cause?: unknown });
  readonly name: 'SwitchboardError';
  /** Server code (docs/protocol.md 6.14, e.g. too_many_devices, not_found) or a client code: timeout, connection_lost, not_connected, connection_replaced, token_provider_failed, media_failed, sfu_failed, unsupported_sfu. */
  code: string;
  retryable: boolean;
  requestType?: string;
  closeCode?: number;
  static fromFrame(frame: unknown, requestType?: string): SwitchboardError;
  static wrap(err: unknown, code?: string): SwitchboardError;
}

export interface SfuInfo {
  id: string;
  kind: 'janus' | 'heartbeat' | string;
  url: string;
  region?: string;
  room?: number;
  /** Only in this session's own SFU (join answer, call.sfu_changed). */
  token?: string;
  pin?: string;
}

export interface CallObject {
  cid: string; type: string; id: string;
  created_at: number; created_by: string; custom: Record<string, unknown>;
  dominant_speaker: string | null; ended_at: number | null; ended_reason: string | null;
  ringing: boolean; session: number; sfu: SfuInfo | null;
}

export interface Member {
  user_id: string;
  ring_state: 'none' | 'ringing' | 'accepted' | 'rejected' | 'missed';
  ring_reason: 'decline' | 'busy' | 'cancel' | 'timeout' | null;
  ring_updated_at: number | null;
}

export interface Participant {
  session_id: string; user_id: string; role: 'initiator' | 'participant';
  audio: boolean; video: boolean; screenshare: boolean; speaking: boolean; pinned: boolean;
  audio_level: number; dominant_speaker: boolean; joined_at: number;
}

export interface RingingInfo {
  active: boolean; incoming: boolean; outgoing: boolean;
  from: string | null; deadline: number | null;
  myRingState: Member['ring_state'] | null;
  stoppedReason: 'accepted_elsewhere' | 'cancelled' | 'timeout' | null;
}

export interface CallState {
  callingState: CallingStateValue;
  cid: string; type: string; id: string;
  userId: string | null;
  call: CallObject | null;
  members: Member[];
  /** In the protocol's default order, re-sorted on every update. */
  participants: Participant[];
  dominantSpeaker: string | null;
  sfu: SfuInfo | null;
  createdBy: string | null;
  custom: Record<string, unknown>;
  ended: boolean;
  endedReason: string | null;
  ringing: RingingInfo;
  ownSessionId: string | null;
  role: 'initiator' | 'participant' | null;
  /** Why our session ended: left, kicked, connection_lost, call_ended. */
  leftReason: string | null;
  joining: boolean;
  reconnecting: boolean;
}

/** The `data` of a response carrying a call's state. */
export interface CallStateResponse { call: CallObject; members: Member[]; participants: Participant[]; created?: boolean }

export interface ServerFrame { type: string; seq?: number; call_cid?: string; id?: string | number | null; data?: any; error?: { code: string; message: string } }

export interface StreamEvent { sessionId: string; userId: string | null; stream: MediaStream }

export interface JoinOptions {
  location?: { latitude?: number; longitude?: number; region?: string; rtt?: Record<string, number> };
  create?: boolean;
  ring?: boolean;
  members?: string[];
  media?: { audio?: boolean; video?: boolean } | false;
  localStream?: MediaStream;
  /** Join again automatically when the session is lost with the connection (default true). */
  rejoin?: boolean;
}

export interface ParticipantUpdate {
  audio?: boolean; video?: boolean; screenshare?: boolean; speaking?: boolean; pinned?: boolean;
  audioLevel?: number; audio_level?: number; sessionId?: string;
}

export declare class Call {
  readonly client: SwitchboardClient;
  readonly type: string;
  readonly id: string;
  readonly cid: string;
  state: CallState;
  localStream: MediaStream | null;
  remoteStreams: Map<string, MediaStream>;
  on(event: 'state', fn: (state: CallState) => void): () => void;
  on(event: 'event', fn: (frame: ServerFrame) => void): () => void;
  on(event: 'stream' | 'stream-removed', fn: (e: StreamEvent) => void): () => void;
  on(event: 'error', fn: (err: SwitchboardError) => void): () => void;
  off(event: string, fn: Function): void;
  getOrCreate(opts?: { members?: (string | { user_id: string })[]; ring?: boolean; custom?: Record<string, unknown> }): Promise<CallStateResponse>;
  get(): Promise<CallStateResponse>;
  join(opts?: JoinOptions): Promise<CallState>;
  accept(): Promise<CallStateResponse>;
  reject(reason?: 'decline' | 'busy' | 'cancel' | 'timeout'): Promise<CallStateResponse>;
  leave(): Promise<CallState>;
  end(): Promise<CallStateResponse>;
  invite(members: string[]): Promise<CallStateResponse>;
  updateParticipant(fields: ParticipantUpdate): Promise<Participant>;
  sendEvent(custom: Record<string, unknown>): Promise<Record<string, never>>;
}

export interface Logger { debug?(...a: unknown[]): void; info?(...a: unknown[]): void; warn?(...a: unknown[]): void; error?(...a: unknown[]): void }

export interface SwitchboardClientOptions {
  /** ws(s)://host:port/v1/connect, or an http(s):// base (…/v1/connect is derived). */
  url: string;
  user?: { id: string; name?: string };
  token?: string;
  tokenProvider?: () => Promise<string>;
  /** Default true: connect() opens the socket and keeps it to hear rings. */
  persistSocket?: boolean;
  WebSocket?: any;
  RTCPeerConnection?: any;
  getUserMedia?: (constraints: { audio: boolean; video: boolean }) => Promise<MediaStream>;
  /** For the Janus HTTP API (default globalThis.fetch). */
  fetch?: typeof fetch;
  iceServers?: RTCIceServer[];
  logger?: Logger;
  requestTimeoutMs?: number;   // default 10000; also how long a socket may wait for connection.ok before it is tried again
  pingIntervalMs?: number;     // default 25000; 0 disables
  connectAttempts?: number;    // failed attempts before the first connect() rejects, default 5
  tokenAttempts?: number;      // tokenProvider attempts before token_provider_failed, default 4
  backoff?: { baseMs?: number; maxMs?: number };  // default 500 / 15000
  setTimeout?: (fn: () => void, ms: number) => any;
  clearTimeout?: (t: any) => void;
  now?: () => number;
  random?: () => number;
}

export interface ConnectionInfo {
  connection_id: string; user_id: string; expires_at: number; resume_token: string;
  resumed: boolean; replayed: number; replay_complete: boolean; last_seq: number; sessions: string[];
}

/** A push service `device.register` takes: APNs, an iOS PushKit VoIP token, Firebase Cloud Messaging, or a browser push subscription. */
export type DeviceProvider = 'apns' | 'apns_voip' | 'fcm' | 'webpush';

/** A registered push device of the user (docs/protocol.md 6.5). */
export interface Device {
  /** What the admin API's DELETE /v1/users/{user}/devices/{device} takes. */
  device_id: string;
  user_id: string;
  provider: DeviceProvider;
  /** The provider's token; for webpush the subscription as its JSON text. */
  token: string;
  /** When it was (last) registered, in ms since 1970. */
  created_at: number;
}

export declare class SwitchboardClient {
  constructor(options: SwitchboardClientOptions);
  readonly user: { id: string; name?: string } | null;
  userId: string | null;
  readonly persistSocket: boolean;
  readonly connectionState: ConnectionState;
  connect(): Promise<ConnectionInfo>;
  disconnect(): void;
  call(type: string, id: string): Call;
  /** device.register: rejects with invalid_request (bad provider or token, checked before sending), payload_too_large or too_many_devices. */
  registerDevice(provider: DeviceProvider, token: string | PushSubscription | PushSubscriptionJSON): Promise<Device>;
  /** device.unregister: rejects with not_found when the user has no such device. */
  unregisterDevice(provider: DeviceProvider, token: string | PushSubscription | PushSubscriptionJSON): Promise<void>;
  /** device.list: the user's devices, oldest first. */
  listDevices(): Promise<Device[]>;
  on(event: 'connection', fn: (state: ConnectionState) => void): () => void;
  on(event: 'ring', fn: (call: Call) => void): () => void;
  on(event: 'error', fn: (err: SwitchboardError) => void): () => void;
  on(event: 'event', fn: (frame: ServerFrame) => void): () => void;
  off(event: string, fn: Function): void;
}

export declare function compareParticipants(a: Participant, b: Participant, dominant?: string | null): number;
export declare function sortParticipants(list: Participant[], dominant?: string | null): Participant[];
export declare function backoffDelay(attempt: number, opts?: { baseMs?: number; maxMs?: number; factor?: number; random?: () => number }): number;
