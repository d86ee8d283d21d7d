/* DyaFDB viewer: blind annotation. Answers live in localStorage (per study, so two studies never
 * mix) and survive reloads; the items page exports them as the CSV that
 * dyafdb.analysis.agreement reads: rater,item,seat,measure,label (item: the opaque token).
 * window.DYAFDB_STUDY (study.js) maps each item code to its conversation and question list; an item
 * page itself knows only its code and the question texts. */
(function () {
  "use strict";
  var STUDY = window.DYAFDB_STUDY;
  if (!STUDY) return;
  var STORE = "dyafdb-annotation/" + STUDY.study;
  var RATER = "dyafdb-annotation/rater";
  var itemsByCode = {};
  STUDY.items.forEach(function (it) { itemsByCode[it.code] = it; });

  function load() {
    try {
      var doc = JSON.parse(localStorage.getItem(STORE) || "null");
      if (doc && doc.answers) return doc;
    } catch (e) { /* a damaged entry is replaced below */ }
    return { answers: {} };
  }
  function store(doc) {
    doc.updated = new Date().toISOString();
    localStorage.setItem(STORE, JSON.stringify(doc));
  }
  function rater() { return (localStorage.getItem(RATER) || "").trim(); }

  function answeredCount(doc, it) {
    var a = doc.answers[it.code] || {};
    var n = 0;
    for (var i = 0; i < it.q.length; i++) if (a[i] !== undefined && a[i] !== "") n++;
    return n;
  }

  function badge() {
    var b = document.getElementById("rater-badge");
    if (b) b.textContent = rater() ? "rater: " + rater() : "no rater id yet";
  }

  function csvField(v) {
    v = String(v);
    return /[",\r\n]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
  }

  function exportRows(doc) {
    // items by their opaque token: only the key file beside the site maps them to conversations
    var rows = [["rater", "item", "seat", "measure", "label"]];
    var who = rater();
    STUDY.items.forEach(function (it) {
      var a = doc.answers[it.code] || {};
      it.q.forEach(function (q, i) {
        if (a[i] !== undefined && a[i] !== "") rows.push([who, it.ref, q[0], q[1], a[i]]);
      });
    });
    return rows;
  }

  function download(name, text) {
    var blob = new Blob([text], { type: "text/csv;charset=utf-8" });
    var url = URL.createObjectURL(blob);
    var a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(url); a.remove(); }, 1000);
  }

  // ------------------------------------------------------------------ the items page
  function itemsPage() {
    var input = document.getElementById("rater");
    var note = document.getElementById("export-note");
    var tbody = document.querySelector("#items tbody");
    input.value = rater();
    input.addEventListener("input", function () {
      localStorage.setItem(RATER, input.value.trim());
      badge();
      note.textContent = "";
      note.className = "note";
    });
    function draw() {
      var doc = load();
      tbody.innerHTML = "";
      var done = 0, answers = 0, total = 0;
      STUDY.items.forEach(function (it) {
        var n = answeredCount(doc, it);
        answers += n; total += it.q.length;
        if (n === it.q.length && n) done++;
        var status = n === it.q.length && n ? ["done", "status-done"] : n ? ["in progress", "status-part"] : ["to do", "status-todo"];
        var tr = document.createElement("tr");
        tr.innerHTML = '<td><a href="item-' + it.code + '.html">Conversation ' + it.code + "</a></td><td>" + it.q.length +
          "</td><td>" + n + '</td><td class="' + status[1] + '">' + status[0] + "</td>";
        tbody.appendChild(tr);
      });
      var p = document.getElementById("progress");
      p.textContent = done + " of " + STUDY.items.length + " conversations done · " + answers + " of " + total + " answers";
      p.dataset.answers = answers;
    }
    document.getElementById("export").addEventListener("click", function () {
      if (!rater()) {
        note.textContent = "Enter your rater id first: it goes into every row of the export.";
        note.className = "note error";
        input.focus();
        return;
      }
      var rows = exportRows(load());
      var text = rows.map(function (r) { return r.map(csvField).join(","); }).join("\n") + "\n";
      download("human-labels-" + rater().replace(/[^A-Za-z0-9_.-]+/g, "_") + "-" + STUDY.study + ".csv", text);
      note.textContent = "Exported " + (rows.length - 1) + " labels. Give the file to whoever runs the agreement analysis " +
        "(config analysis.human_labels or dyafdb analysis agreement --human).";
      note.className = "note";
    });
    document.getElementById("clear").addEventListener("click", function () {
      if (confirm("Delete every answer of this study stored in this browser? Export them first if you need them.")) {
        localStorage.removeItem(STORE);
        draw();
      }
    });
    badge();
    draw();
  }

  // ------------------------------------------------------------------ one conversation
  function itemPage() {
    var data = JSON.parse(document.getElementById("dyafdb-data").textContent);
    var it = itemsByCode[data.code];
    if (!it) return;
    var qs = Array.prototype.slice.call(document.querySelectorAll(".question"));
    var active = 0;
    var savedEl = document.getElementById("saved");
    var progressEl = document.getElementById("item-progress");

    function answers() { return load().answers[it.code] || {}; }

    function setAnswer(i, value) {
      var doc = load();
      var a = doc.answers[it.code] || {};
      if (value === null) delete a[i]; else a[i] = value;
      doc.answers[it.code] = a;
      store(doc);
      paint();
      savedEl.textContent = value === null ? "Answer cleared." : "Saved in this browser.";
    }

    function paint() {
      var a = answers();
      var n = 0;
      qs.forEach(function (q, i) {
        var v = a[i];
        var has = v !== undefined && v !== "";
        if (has) n++;
        q.classList.toggle("answered", has);
        q.classList.toggle("active", i === active);
        Array.prototype.forEach.call(q.querySelectorAll("button.opt"), function (b) {
          b.classList.toggle("chosen", has && b.dataset.value === v);
        });
        var num = q.querySelector("input.num");
        if (num && document.activeElement !== num) num.value = has && v !== "none" ? v : "";
      });
      progressEl.textContent = n + " of " + qs.length + " answered";
      progressEl.dataset.answered = n;
    }

    function focusQuestion(i) {
      active = Math.max(0, Math.min(qs.length - 1, i));
      paint();
      var q = qs[active];
      if (q && q.scrollIntoView) q.scrollIntoView({ block: "nearest" });
    }

    function advance() {
      var a = answers();
      for (var k = 1; k <= qs.length; k++) {
        var j = (active + k) % qs.length;
        if (a[j] === undefined || a[j] === "") { focusQuestion(j); return; }
      }
      paint();
    }

    function choose(i, value) {
      active = i;
      setAnswer(i, value);
      advance();
    }

    function parseNumber(text) {
      var t = text.trim().toLowerCase().replace(/[$€£¥,\s]/g, "");
      if (t === "" || t === "none") return t === "none" ? "none" : null;
      if (!/^\d+(\.\d+)?$/.test(t)) return undefined;
      return t.replace(/\.0+$/, "").replace(/(\.\d*?)0+$/, "$1");
    }

    qs.forEach(function (q, i) {
      q.addEventListener("click", function () { if (active !== i) { active = i; paint(); } });
      Array.prototype.forEach.call(q.querySelectorAll("button.opt"), function (b) {
        b.addEventListener("click", function (ev) { ev.stopPropagation(); choose(i, b.dataset.value); b.blur(); });
      });
      var num = q.querySelector("input.num");
      if (num) {
        var commit = function (move) {
          var v = parseNumber(num.value);
          if (v === undefined) { savedEl.textContent = "Type a plain number (digits), or choose none."; return; }
          if (v === null) return;
          active = i;
          setAnswer(i, v);
          if (move) { num.blur(); advance(); }
        };
        num.addEventListener("keydown", function (ev) {
          if (ev.key === "Enter") { ev.preventDefault(); commit(true); }
          else if (ev.key === "Escape") { num.blur(); }
        });
        num.addEventListener("change", function () { commit(false); });
      }
    });

    function optionByKey(q, key) {
      return q.querySelector('button.opt[data-key="' + key + '"]');
    }

    function lineAtCursor(q) {
      var player = window.DyafdbPlayer;
      if (!player) return null;
      var t = player.time() + 0.05;
      var best = null;
      player.linesOf(q.dataset.speaker).forEach(function (l) { if (l.start <= t) best = l; });
      return best ? best.start.toFixed(2) : null;
    }

    document.addEventListener("keydown", function (ev) {
      var tag = ev.target && ev.target.tagName;
      if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      var q = qs[active];
      var key = ev.key;
      if (key === "ArrowDown" || key === "j") { ev.preventDefault(); focusQuestion(active + 1); return; }
      if (key === "ArrowUp" || key === "k") { ev.preventDefault(); focusQuestion(active - 1); return; }
      if (key === "[" || key === "]") {
        var link = document.getElementById(key === "[" ? "prev" : "next");
        if (link && link.href) location.href = link.href;
        return;
      }
      if (!q) return;
      if (key === "Backspace" || key === "Delete") { ev.preventDefault(); setAnswer(active, null); return; }
      if (key === "t" && q.dataset.time === "1") {
        var at = lineAtCursor(q);
        if (at !== null && q.querySelector('button.opt[data-value="' + at + '"]')) choose(active, at);
        return;
      }
      if (q.dataset.kind === "number") {
        if (key === "0") { ev.preventDefault(); choose(active, "none"); }
        else if (/^[1-9]$/.test(key)) { var num = q.querySelector("input.num"); num.focus(); }
        return;
      }
      var opt = optionByKey(q, key.toLowerCase());
      if (opt) { ev.preventDefault(); choose(active, opt.dataset.value); }
    });

    badge();
    var a = answers();
    var first = 0;
    while (first < qs.length && a[first] !== undefined && a[first] !== "") first++;
    active = first < qs.length ? first : 0;
    paint();
    window.DyafdbAnnotate = { answers: answers, code: it.code };
  }

  if (document.body.classList.contains("page-annotate-index")) itemsPage();
  if (document.body.classList.contains("page-annotate-item")) itemPage();
})();
