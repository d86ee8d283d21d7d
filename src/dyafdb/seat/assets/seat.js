// The seat: list -> role card + consent -> microphone -> conversation -> saved (docs/seat.md).
import { Player, FRAME_S, query, socketUrl, summary, withToken } from './player.js';

const $ = (id) => document.getElementById(id);
const show = (id) => { for (const s of ['list', 'card-view', 'talk-view', 'end-view']) $(s).classList.toggle('hidden', s !== id); };
const JITTER_S = Number(query('jitter', '0.2'));
// `?grow=1`: late model frames raise the playback delay instead of being skipped (player.js).
const GROW = query('grow', '0') === '1';
const AEC = query('aec', '1') !== '0';
// The audio context's rate: 24 kHz unless asked (`?rate=48000`); at another rate the worklet resamples.
const CONTEXT_RATE = Number(query('rate', '24000'));  // echo cancellation: on unless the person wears headphones (or a test feeds a file)
let current = null;

async function api(path) {
  const res = await fetch(withToken(path));
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function text(el, value) { el.textContent = value; return el; }

async function showList() {
  show('list');
  $('listen-link').href = withToken('listen');
  const data = await api('api/seat');
  text($('who'), data.participant ? `Participant ${data.participant}: your conversations.` : 'Pick a conversation.');
  const body = $('rows');
  body.replaceChildren();
  for (const c of data.conversations) {
    const tr = document.createElement('tr');
    tr.dataset.id = c.id;
    for (const v of [c.scenario, c.role, c.partner, c.you_open ? 'you' : 'the model']) tr.appendChild(text(document.createElement('td'), v));
    const td = document.createElement('td');
    const b = text(document.createElement('button'), c.recorded ? 'Done (again)' : 'Take this seat');
    b.className = 'take';
    b.onclick = () => showCard(c.id);
    td.appendChild(b);
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

async function showCard(id) {
  const data = await api('api/card?id=' + encodeURIComponent(id));
  current = data;
  const c = data.card;
  text($('card-title'), c.title);
  const card = $('card');
  card.replaceChildren();
  const add = (tag, value) => card.appendChild(text(document.createElement(tag), value));
  add('p', c.situation);
  add('p', `You are ${c.name}${c.persona ? ', ' + c.persona : ''}.`);
  add('p', c.prompt);
  add('p', c.opens ? 'You speak first: begin as soon as the conversation starts.' : 'The other person speaks first.');
  add('p', `The conversation lasts ${c.window_s} seconds.`);
  text($('consent'), data.consent);
  $('agree').checked = false;
  $('start').disabled = true;
  show('card-view');
}

async function talk() {
  show('talk-view');
  const status = $('status');
  const requested = performance.now();
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: AEC, noiseSuppression: false, autoGainControl: false } });
  const micOpen = (performance.now() - requested) / 1000;
  let ctx;
  try { ctx = new AudioContext({ sampleRate: CONTEXT_RATE, latencyHint: 'interactive' }); } catch (e) { ctx = new AudioContext({ latencyHint: 'interactive' }); }
  await ctx.audioWorklet.addModule(new URL('capture-worklet.js', import.meta.url));
  const source = ctx.createMediaStreamSource(stream);
  const node = new AudioWorkletNode(ctx, 'capture', { numberOfOutputs: 1 });
  const mute = ctx.createGain();
  mute.gain.value = 0;
  source.connect(node).connect(mute).connect(ctx.destination);
  const player = new Player(ctx, JITTER_S, 1, GROW);
  const rtts = [];
  const pings = new Map();
  let workletStart = null, base = null, t0 = null, streaming = false, pinger = null, sent = 0;
  const ws = new WebSocket(socketUrl('ws/seat?id=' + encodeURIComponent(current.id)));
  ws.binaryType = 'arraybuffer';
  const stop = () => { clearInterval(pinger); streaming = false; stream.getTracks().forEach((t) => t.stop()); };
  $('abandon').onclick = () => { stop(); try { ws.send(JSON.stringify({ type: 'abandon' })); } catch (e) {} ws.close(); finish('Abandoned: nothing of this conversation was kept.'); ctx.close(); };
  node.port.onmessage = (ev) => {
    const m = ev.data;
    if (m.type === 'start') { workletStart = m.time; return; }
    let peak = 0;
    for (const v of m.samples) peak = Math.max(peak, Math.abs(v));
    $('meter').style.width = Math.min(100, peak * 300) + '%';
    if (!streaming || ws.readyState !== WebSocket.OPEN) return;
    if (base === null) { base = m.index; t0 = m.time; }
    const msg = new ArrayBuffer(4 + m.samples.byteLength);
    new DataView(msg).setUint32(0, m.index - base, true);
    new Float32Array(msg, 4).set(m.samples);
    ws.send(msg);
    sent++;
    text($('clock'), `${(sent * FRAME_S).toFixed(1)} s`);
  };
  ws.onopen = () => { status.textContent = 'Loading the model…'; ws.send(JSON.stringify({ type: 'consent', digest: current.consent_digest })); };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') {
      const tick = new DataView(ev.data).getUint32(0, true);
      if (t0 !== null) player.play(t0, tick, new Float32Array(ev.data, 4));
      return;
    }
    const m = JSON.parse(ev.data);
    if (m.type === 'ready') {
      streaming = true;
      status.textContent = 'Talking: the conversation is being recorded.';
      document.body.dataset.state = 'talking';
      pinger = setInterval(() => { const id = pings.size + rtts.length; pings.set(id, performance.now()); ws.send(JSON.stringify({ type: 'ping', id })); }, 250);
    } else if (m.type === 'pong') {
      if (pings.has(m.id)) { rtts.push(performance.now() - pings.get(m.id)); pings.delete(m.id); }
    } else if (m.type === 'end') {
      stop();
      status.textContent = 'Saving…';
      ws.send(JSON.stringify({
        type: 'stats', playback_delay_s: player.initialDelay, output_latency_s: (ctx.outputLatency || 0) + (ctx.baseLatency || 0),
        late_playback_frames: player.late.length, late_playback_ticks: player.late, played_frames: player.played,
        round_trip_ms: summary(rtts), context_rate: ctx.sampleRate, capture_offset_s: t0 - workletStart, mic_open_s: micOpen,
        echo_cancellation: AEC, jitter_buffer_s: JITTER_S, playback_grows: GROW, playback_delay_changes: player.changes,
      }));
    } else if (m.type === 'saved') {
      document.body.dataset.state = 'saved';
      document.body.dataset.saved = m.conversation_id;
      finish(`Saved: ${m.ticks} frames of ${m.conversation_id} in ${m.folder}. Thank you.`, 'done');
      offerScore(m.conversation_id);
      ws.close(); ctx.close();
    } else if (m.type === 'abandoned' || m.type === 'error') {
      stop();
      document.body.dataset.state = m.type;
      finish(m.message, 'error');
      ws.close(); ctx.close();
    }
  };
  ws.onclose = () => { if (document.body.dataset.state === 'talking') { stop(); finish('The connection closed: nothing was kept.', 'error'); } };
}

function offerScore(id) {
  const button = $('score');
  button.classList.remove('hidden');
  button.onclick = async () => {
    button.disabled = true;
    text($('score-status'), 'Scoring (VAD, transcript, turn-taking, measures) and building the viewer page…');
    try {
      const data = await api('api/score?id=' + encodeURIComponent(id));
      text($('score-status'), data.judged ? 'Scored and judged.' : 'Scored (start the seat with --judge to ask the judges too).');
      const link = $('site-link');
      link.href = withToken(data.page);
      link.classList.remove('hidden');
      document.body.dataset.scored = data.page;
    } catch (e) {
      text($('score-status'), 'Scoring failed: ' + e.message);
      document.body.dataset.scored = 'error';
    }
  };
}

function finish(message, cls = '') {
  if (cls !== 'done') { $('score').classList.add('hidden'); $('site-link').classList.add('hidden'); }
  const el = text($('end-message'), message);
  el.className = cls;
  show('end-view');
}

$('agree').onchange = () => { $('start').disabled = !$('agree').checked; };
$('start').onclick = () => talk().catch((e) => { document.body.dataset.state = 'error'; finish('Could not start: ' + e.message, 'error'); });
$('back').onclick = showList;
$('again').onclick = showList;
showList().catch((e) => finish('Could not load the seat: ' + e.message, 'error'));
