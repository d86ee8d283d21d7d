/* DyaFDB viewer: the conversation player (waveforms, VAD segments, cursor, transcript, audio).
 * Used by the full conversation pages and the blind annotation pages alike. The page holds its data
 * as JSON (#dyafdb-data: duration, peak bins per row); segments, overlap and transcript lines are
 * already in the markup with their times in data attributes. No network access beyond the page's
 * own audio file. */
(function () {
  "use strict";
  var dataEl = document.getElementById("dyafdb-data");
  var audio = document.getElementById("audio");
  if (!dataEl || !audio) return;
  var data = JSON.parse(dataEl.textContent);
  var duration = Number(data.duration_s) || 1;
  var area = document.getElementById("tl-area");
  var cursor = document.getElementById("cursor");
  var hover = document.getElementById("hover");
  var nowEl = document.getElementById("now");
  var playBtn = document.getElementById("play");
  var playerCard = document.getElementById("player");
  var linesBox = document.getElementById("lines");
  var lines = Array.prototype.map.call(document.querySelectorAll(".line[data-start]"), function (el) {
    return { el: el, start: Number(el.dataset.start), end: Number(el.dataset.end), prog: el.querySelector(".prog") };
  });
  var peaks = (data.peaks || []).map(decode);
  var following = true; // the transcript follows playback until the reader scrolls it by hand
  var lastActiveKey = "";

  function decode(b64) {
    var s = atob(b64 || "");
    var out = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }

  function clock(t) {
    t = Math.max(0, t || 0);
    var m = Math.floor(t / 60);
    var s = t - 60 * m;
    return m + ":" + (s < 10 ? "0" : "") + s.toFixed(1);
  }

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#555";
  }

  function drawWaves() {
    var canvases = document.querySelectorAll("canvas.wave");
    Array.prototype.forEach.call(canvases, function (canvas) {
      var row = Number(canvas.dataset.row);
      var bins = peaks[row];
      var track = canvas.parentElement;
      var dpr = window.devicePixelRatio || 1;
      var w = Math.max(1, Math.round(track.clientWidth * dpr));
      var h = Math.max(1, Math.round(track.clientHeight * dpr));
      canvas.width = w;
      canvas.height = h;
      var ctx = canvas.getContext("2d");
      ctx.clearRect(0, 0, w, h);
      if (!bins || !bins.length) return;
      var speaker = track.dataset.speaker;
      ctx.fillStyle = cssVar("--spk-" + speaker);
      ctx.globalAlpha = 0.9;
      var mid = h / 2;
      var half = h / 2 - 3 * dpr;
      // one bar per device pixel: the loudest bin under it
      var binsPerSecond = 1 / Number(data.bin_s || 0.02);
      var scale = (bins.length / binsPerSecond) / duration; // share of the width the audio covers
      for (var x = 0; x < w; x++) {
        var b0 = Math.floor((x / w) * bins.length / scale);
        var b1 = Math.max(b0 + 1, Math.floor(((x + 1) / w) * bins.length / scale));
        var v = 0;
        for (var b = b0; b < b1 && b < bins.length; b++) if (bins[b] > v) v = bins[b];
        if (!v) continue;
        var y = Math.max(0.6 * dpr, (v / 255) * half);
        ctx.fillRect(x, mid - y, 1, 2 * y);
      }
    });
  }

  function timeAt(clientX) {
    var r = area.getBoundingClientRect();
    return Math.max(0, Math.min(duration, ((clientX - r.left) / r.width) * duration));
  }

  function seek(t, play) {
    t = Math.max(0, Math.min(duration, Number(t) || 0));
    audio.currentTime = t;
    update(t);
    if (play) start();
  }

  function start() {
    var p = audio.play();
    if (p && p.catch) p.catch(function (err) { showError("Playback failed: " + err.message); });
  }

  function toggle() {
    if (audio.paused) start(); else audio.pause();
  }

  function showError(text) {
    var note = document.getElementById("player-error");
    if (!note) {
      note = document.createElement("p");
      note.id = "player-error";
      note.className = "note error";
      playerCard.appendChild(note);
    }
    note.textContent = text;
  }

  function update(t) {
    if (t === undefined) t = audio.currentTime;
    var frac = Math.max(0, Math.min(1, t / duration));
    cursor.style.left = (100 * frac).toFixed(3) + "%";
    cursor.dataset.t = t.toFixed(2);
    nowEl.textContent = clock(t);
    var activeKey = "";
    var firstActive = null;
    for (var i = 0; i < lines.length; i++) {
      var l = lines[i];
      var on = t >= l.start && t < l.end;
      if (on) {
        activeKey += i + ",";
        if (!firstActive) firstActive = l;
        l.prog.style.width = (100 * (t - l.start) / Math.max(0.01, l.end - l.start)).toFixed(1) + "%";
      }
      l.el.classList.toggle("active", on);
      l.el.classList.toggle("past", t >= l.end);
    }
    if (activeKey !== lastActiveKey) {
      lastActiveKey = activeKey;
      if (firstActive && following && !audio.paused) scrollToLine(firstActive.el);
    }
  }

  function scrollToLine(el) {
    if (!linesBox) return;
    var top = el.offsetTop - linesBox.offsetTop;
    var view = linesBox.scrollTop;
    if (top < view + 20 || top > view + linesBox.clientHeight - 60) {
      programmaticScroll = true;
      linesBox.scrollTop = Math.max(0, top - linesBox.clientHeight / 3);
    }
  }

  var programmaticScroll = false;
  if (linesBox) {
    linesBox.addEventListener("scroll", function () {
      if (programmaticScroll) { programmaticScroll = false; return; }
      following = false;
    });
  }

  var raf = 0;
  function loop() {
    update();
    raf = audio.paused ? 0 : requestAnimationFrame(loop);
  }

  audio.addEventListener("play", function () {
    playerCard.classList.add("playing");
    playBtn.setAttribute("aria-label", "pause");
    following = true;
    if (!raf) raf = requestAnimationFrame(loop);
  });
  audio.addEventListener("pause", function () {
    playerCard.classList.remove("playing");
    playBtn.setAttribute("aria-label", "play");
    update();
  });
  audio.addEventListener("seeked", function () { update(); });
  audio.addEventListener("ended", function () { update(); });
  audio.addEventListener("error", function () { showError("This browser cannot play the audio file."); }, true);
  var source = audio.querySelector("source");
  if (source) source.addEventListener("error", function () { showError("The audio file could not be loaded."); });

  playBtn.addEventListener("click", toggle);
  Array.prototype.forEach.call(document.querySelectorAll("[data-skip]"), function (b) {
    b.addEventListener("click", function () { seek(audio.currentTime + Number(b.dataset.skip), !audio.paused); });
  });
  var rate = document.getElementById("rate");
  if (rate) rate.addEventListener("change", function () { audio.playbackRate = Number(rate.value) || 1; });

  area.addEventListener("click", function (ev) {
    var seg = ev.target.closest && ev.target.closest(".seg");
    seek(seg ? Number(seg.dataset.start) : timeAt(ev.clientX), true);
  });
  area.addEventListener("mousemove", function (ev) {
    var t = timeAt(ev.clientX);
    hover.style.display = "block";
    hover.style.left = (100 * t / duration).toFixed(3) + "%";
    hover.firstChild.textContent = clock(t);
  });
  area.addEventListener("mouseleave", function () { hover.style.display = "none"; });

  lines.forEach(function (l) {
    l.el.addEventListener("click", function () { following = true; seek(l.start, true); });
    l.el.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { ev.preventDefault(); seek(l.start, true); }
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("button.seek[data-t]"), function (b) {
    b.addEventListener("click", function () { seek(Number(b.dataset.t), true); });
  });

  function typing(ev) {
    var t = ev.target;
    return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
  }
  document.addEventListener("keydown", function (ev) {
    if (typing(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === " " || ev.key === "Spacebar") { ev.preventDefault(); toggle(); }
    else if (ev.key === "ArrowLeft") { ev.preventDefault(); seek(audio.currentTime - 5, !audio.paused); }
    else if (ev.key === "ArrowRight") { ev.preventDefault(); seek(audio.currentTime + 5, !audio.paused); }
  });

  // Per-channel mute and solo. The page plays one stereo file (channel 0 = side a, 1 = side b), so
  // the channels are split and gained in Web Audio. The graph is built on the first press only: once
  // an element feeds a MediaElementSource it is heard through the graph alone, and a page nobody
  // mutes keeps the plain <audio> path.
  var muted = [false, false];
  var solo = -1;
  var gains = null;
  function heard() {
    return [0, 1].map(function (c) { return solo >= 0 ? (c === solo ? 1 : 0) : (muted[c] ? 0 : 1); });
  }
  function route() {
    var levels = heard();
    if (!gains) {
      var Ctx = window.AudioContext || window.webkitAudioContext;
      if (!Ctx) { showError("This browser cannot mute one channel."); return levels; }
      var ctx = new Ctx();
      var src = ctx.createMediaElementSource(audio);
      var split = ctx.createChannelSplitter(2);
      var merge = ctx.createChannelMerger(2);
      src.connect(split);
      gains = [0, 1].map(function (c) {
        var g = ctx.createGain();
        split.connect(g, c);
        g.connect(merge, 0, c);
        return g;
      });
      merge.connect(ctx.destination);
      audio.addEventListener("play", function () { if (ctx.state === "suspended") ctx.resume(); });
      if (!audio.paused) ctx.resume();
    }
    gains.forEach(function (g, c) { g.gain.value = levels[c]; });
    return levels;
  }
  function showChannels() {
    var levels = heard();
    Array.prototype.forEach.call(document.querySelectorAll("button.mute[data-channel]"), function (b) {
      b.setAttribute("aria-pressed", String(muted[Number(b.dataset.channel)]));
    });
    Array.prototype.forEach.call(document.querySelectorAll("button.solo[data-channel]"), function (b) {
      b.setAttribute("aria-pressed", String(solo === Number(b.dataset.channel)));
    });
    Array.prototype.forEach.call(document.querySelectorAll(".chan[data-channel]"), function (span) {
      var track = document.querySelectorAll(".track")[Array.prototype.indexOf.call(
        document.querySelectorAll(".chan[data-channel]"), span)];
      if (track) track.classList.toggle("silent", !levels[Number(span.dataset.channel)]);
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("button.mute[data-channel], button.solo[data-channel]"), function (b) {
    b.addEventListener("click", function (ev) {
      ev.stopPropagation();
      var c = Number(b.dataset.channel);
      if (b.classList.contains("mute")) muted[c] = !muted[c];
      else solo = solo === c ? -1 : c;
      route();
      showChannels();
    });
  });

  var resizeTimer = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(drawWaves, 80);
  });
  drawWaves();
  update(0);

  window.DyafdbPlayer = {
    audio: audio, seek: seek, toggle: toggle, duration: duration,
    time: function () { return audio.currentTime; },
    levels: function () { return gains ? gains.map(function (g) { return g.gain.value; }) : null; },
    linesOf: function (speaker) {
      return lines.filter(function (l) { return l.el.classList.contains("spk-" + speaker); });
    }
  };
})();
