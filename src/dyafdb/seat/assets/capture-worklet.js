// The seat's microphone on the audio thread: 24 kHz mono frames of 1,920 samples, indexed by their
// sample count. Where the context runs at another rate the input is resampled here (linear
// interpolation); the page asks for a 24 kHz context first, so Chromium usually resamples for us.
const RATE = 24000;
const FRAME = 1920;

class Capture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / RATE;  // input samples per output sample
    this.next = 0;  // input position (global, in input samples) of the next output sample
    this.seen = 0;  // input samples before the current block
    this.prev = 0;  // the last sample of the previous block
    this.frame = new Float32Array(FRAME);
    this.fill = 0;
    this.index = 0;
    this.frameTime = null;
    this.started = false;
  }

  process(inputs, outputs) {
    const input = inputs[0] && inputs[0][0];
    if (!input) return true;
    if (!this.started) {
      this.started = true;
      this.port.postMessage({ type: 'start', time: currentTime });
    }
    const n = input.length;
    while (this.next <= this.seen + n - 1) {
      const pos = this.next - this.seen;
      const i0 = Math.floor(pos);
      const frac = pos - i0;
      const a = i0 >= 0 ? input[i0] : this.prev;
      const b = frac > 0 ? input[i0 + 1] : a;
      if (this.fill === 0) this.frameTime = currentTime + pos / sampleRate;
      this.frame[this.fill++] = a + (b - a) * frac;
      if (this.fill === FRAME) {
        this.port.postMessage({ type: 'frame', index: this.index++, time: this.frameTime, samples: this.frame }, [this.frame.buffer]);
        this.frame = new Float32Array(FRAME);
        this.fill = 0;
      }
      this.next += this.step;
    }
    this.prev = input[n - 1];
    this.seen += n;
    return true;
  }
}

registerProcessor('capture', Capture);
