// Fake WebRTC pieces for media unit tests (no browser): enough to check the signalling plumbing.
export class FakePC {
  static all = [];
  constructor(config) {
    this.config = config; this.signalingState = 'stable'; this.localDescription = null; this.remoteDescription = null;
    this.tracks = []; this.transceivers = []; this.candidates = []; this.closed = false; this._neg = false;
    FakePC.all.push(this);
  }
  _negotiate() {
    if (this._neg) return;
    this._neg = true;
    queueMicrotask(() => { this._neg = false; if (this.onnegotiationneeded) this.onnegotiationneeded(); });
  }
  addTrack(track, stream) { this.tracks.push({ track, stream }); this._negotiate(); }
  addTransceiver(kind, init) { this.transceivers.push({ kind, init }); this._negotiate(); }
  async createOffer() { return { type: 'offer', sdp: 'v=0 offer' }; }
  async createAnswer() { return { type: 'answer', sdp: 'v=0 answer' }; }
  async setLocalDescription(d) {
    const desc = d || (this.signalingState === 'have-remote-offer' ? { type: 'answer', sdp: 'v=0 answer' } : { type: 'offer', sdp: 'v=0 offer' });
    this.localDescription = desc;
    this.signalingState = desc.type === 'offer' ? 'have-local-offer' : 'stable';
  }
  async setRemoteDescription(d) {
    this.remoteDescription = d;
    this.signalingState = d.type === 'offer' ? 'have-remote-offer' : 'stable';
  }
  async addIceCandidate(c) { this.candidates.push(c); }
  close() { this.closed = true; }
  /** Test hook: a remote track arrives. */
  fireTrack(stream) { this.ontrack && this.ontrack({ track: { kind: 'video' }, streams: [stream] }); }
}

export function fakeStream(kinds = ['audio', 'video']) {
  const tracks = kinds.map((kind) => ({ kind, enabled: true, stopped: false, stop() { this.stopped = true; } }));
  return {
    id: `stream-${Math.random().toString(36).slice(2)}`,
    getTracks: () => tracks,
    getAudioTracks: () => tracks.filter((t) => t.kind === 'audio'),
    getVideoTracks: () => tracks.filter((t) => t.kind === 'video'),
    addTrack: (t) => tracks.push(t),
  };
}
