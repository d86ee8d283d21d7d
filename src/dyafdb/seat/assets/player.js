// Plays 80 ms frames at fixed times through a small jitter buffer: frame t at t0 + t * 0.08 + delay,
// the delay fixed when the first frame arrives (its lateness plus the jitter buffer). A frame that
// arrives after its time is not played (silence) and is counted, with its tick.
export const FRAME_S = 0.08;
export const RATE = 24000;

// With `grow`, a late frame instead moves the playback delay up by its lateness plus the jitter
// buffer, so that frame and every later one are heard, later (a growing jitter buffer); each change
// is kept as [tick, delay].
export class Player {
  constructor(ctx, jitterS, channels = 1, grow = false) {
    this.ctx = ctx;
    this.jitterS = jitterS;
    this.channels = channels;
    this.grow = grow;
    this.delay = null;
    this.initialDelay = null;
    this.changes = [];
    this.late = [];
    this.played = 0;
  }

  // t0: the context time tick 0 stands for (the capture time of the person's frame 0).
  play(t0, tick, samples) {
    const ctx = this.ctx;
    const frame = samples.length / this.channels;
    if (this.delay === null) this.delay = this.initialDelay = ctx.currentTime - (t0 + tick * FRAME_S) + this.jitterS;
    let when = t0 + tick * FRAME_S + this.delay;
    if (when < ctx.currentTime + 0.002) {
      this.late.push(tick);
      if (!this.grow) return;
      this.delay += ctx.currentTime - when + this.jitterS;
      this.changes.push([tick, this.delay]);
      when = t0 + tick * FRAME_S + this.delay;
    }
    const buffer = ctx.createBuffer(this.channels, frame, RATE);
    for (let c = 0; c < this.channels; c++) buffer.copyToChannel(samples.subarray(c * frame, (c + 1) * frame), c);
    const src = ctx.createBufferSource();
    src.buffer = buffer;
    src.connect(ctx.destination);
    src.start(when);
    this.played++;
  }
}

export function query(name, fallback) {
  const v = new URLSearchParams(location.search).get(name);
  return v === null ? fallback : v;
}

export function withToken(path) {
  const token = query('token', null);
  if (token === null) return path;
  return path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token);
}

export function socketUrl(path) {
  const url = new URL(withToken(path), location.href);  // relative to the page, like its fetches
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.href;
}

export function summary(values) {
  if (!values.length) return { n: 0 };
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1] };
}
