// Measures the microphone and reports `speaking` / `audio_level` with
// call.updateParticipant, so the server can pick the dominant speaker
// (docs/protocol.md 6.9). Throttled: at most one update every MIN_GAP_MS, and
// only when speaking starts/stops or the level moves noticeably.

const SAMPLE_MS = 150;
const MIN_GAP_MS = 500;
const START_LEVEL = 0.06;   // speaking starts above this level …
const STOP_LEVEL = 0.03;    // … and stops after QUIET_MS below this one
const QUIET_MS = 900;
const LEVEL_STEP = 0.15;

export class SpeakingMonitor {
  /** @param {any} call @param {MediaStream} stream */
  constructor(call, stream) {
    this.call = call;
    this.stream = stream;
    this.ctx = null;
    this.timer = null;
    this.speaking = false;
    this.sent = { speaking: false, level: 0, at: 0 };
    this.quietSince = 0;
    this.muted = false;
  }

  start() {
    const track = this.stream && this.stream.getAudioTracks()[0];
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!track || !Ctx) return this;
    try {
      this.ctx = new Ctx();
      const source = this.ctx.createMediaStreamSource(new MediaStream([track]));
      this.analyser = this.ctx.createAnalyser();
      this.analyser.fftSize = 512;
      source.connect(this.analyser);
      this.buf = new Float32Array(this.analyser.fftSize);
      if (this.ctx.state === 'suspended') this.ctx.resume().catch(() => {});
    } catch {
      this.stop();
      return this;
    }
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    return this;
  }

  /** Microphone muted: report silence once and stop measuring until unmuted. */
  setMuted(muted) {
    this.muted = muted;
    if (muted) {
      this.speaking = false;
      this.report(0, true);
    }
  }

  level() {
    this.analyser.getFloatTimeDomainData(this.buf);
    let sum = 0;
    for (let i = 0; i < this.buf.length; i++) sum += this.buf[i] * this.buf[i];
    const rms = Math.sqrt(sum / this.buf.length);
    return Math.min(1, rms * 4);
  }

  sample() {
    if (!this.ctx || this.muted) return;
    if (this.ctx.state === 'suspended') { this.ctx.resume().catch(() => {}); return; }
    const level = this.level();
    const now = Date.now();
    if (level >= START_LEVEL) {
      this.speaking = true;
      this.quietSince = 0;
    } else if (this.speaking && level < STOP_LEVEL) {
      if (!this.quietSince) this.quietSince = now;
      if (now - this.quietSince >= QUIET_MS) this.speaking = false;
    }
    this.report(this.speaking ? level : 0, false);
  }

  report(level, force) {
    const now = Date.now();
    const changed = this.speaking !== this.sent.speaking;
    const moved = this.speaking && Math.abs(level - this.sent.level) >= LEVEL_STEP;
    if (!force && !changed && !moved) return;
    if (force && !changed && this.sent.level === 0) return;
    if (!force && now - this.sent.at < MIN_GAP_MS) return;
    if (!this.call.state || !this.call.state.ownSessionId) return;
    const rounded = Math.round(level * 100) / 100;
    this.sent = { speaking: this.speaking, level: rounded, at: now };
    this.call.updateParticipant({ speaking: this.speaking, audioLevel: rounded }).catch(() => {});
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.ctx) this.ctx.close().catch(() => {});
    this.ctx = null;
  }
}
