// Listen in: one model-model conversation, ticked on the wall clock by the server, played as it comes.
import { Player, query, socketUrl, withToken } from './player.js';

const JITTER_S = Number(query('jitter', '0.3'));
const status = document.getElementById('status');

async function listen(id) {
  const ctx = new AudioContext({ sampleRate: 24000 });
  const player = new Player(ctx, JITTER_S, 2);
  const ws = new WebSocket(socketUrl('ws/listen?id=' + encodeURIComponent(id)));
  ws.binaryType = 'arraybuffer';
  let t0 = null;
  status.textContent = 'Loading the models…';
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') {
      const tick = new DataView(ev.data).getUint32(0, true);
      if (t0 === null) t0 = ctx.currentTime - tick * 0.08;
      player.play(t0, tick, new Float32Array(ev.data, 4));
      status.textContent = `Playing ${id}: ${(tick * 0.08).toFixed(1)} s (late frames: ${player.late.length})`;
      document.body.dataset.ticks = String(tick + 1);
      return;
    }
    const m = JSON.parse(ev.data);
    if (m.type === 'saved') { status.textContent = `Recorded ${m.ticks} frames of ${m.conversation_id}.`; document.body.dataset.state = 'saved'; ws.close(); }
    if (m.type === 'error') { status.textContent = m.message; document.body.dataset.state = 'error'; }
  };
}

fetch(withToken('api/listen')).then((r) => r.json()).then((data) => {
  const body = document.getElementById('rows');
  for (const c of data.conversations) {
    const tr = document.createElement('tr');
    for (const v of [c.id, c.pairing]) { const td = document.createElement('td'); td.textContent = v; tr.appendChild(td); }
    const td = document.createElement('td');
    const b = document.createElement('button');
    b.textContent = 'Listen';
    b.onclick = () => listen(c.id);
    td.appendChild(b);
    tr.appendChild(td);
    body.appendChild(tr);
  }
});
