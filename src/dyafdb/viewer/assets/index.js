/* DyaFDB viewer: the conversation index. Filters by archetype, pairing, opener, play and any
 * measure (mechanical, or a judge's), sorts by column, keeps its state in the URL hash so a
 * filtered view can be bookmarked or shared. Data: window.DYAFDB_INDEX from index-data.js. */
(function () {
  "use strict";
  var D = window.DYAFDB_INDEX;
  if (!D) return;
  var PAGE = 200;
  // how a measure reads (the judge's label, yes/no): lists derived from the declarations (viewer/summary.py)
  function setOf(names) { var o = {}; (names || []).forEach(function (n) { o[n] = 1; }); return o; }
  var LABEL_MEASURES = setOf(D.label_measures);
  var BOOLEAN = setOf(D.boolean);
  var OPS = [[">=", "≥"], ["<=", "≤"], ["=", "="], ["!=", "≠"], ["set", "has a value"], ["unset", "no value"]];
  var FIELDS = ["archetype", "pairing", "opener", "play"];
  var catalogIndex = {};
  D.catalog.forEach(function (c, i) { catalogIndex[c.key] = i; });

  var state = { archetype: "", pairing: "", opener: "", play: "", q: "", m: [], sort: "", dir: 1, limit: PAGE };
  var tbody = document.getElementById("rows");
  var head = document.getElementById("conv-head");
  var countEl = document.getElementById("count");
  var more = document.getElementById("more");
  var mbox = document.getElementById("mfilters");
  var selects = {
    archetype: document.getElementById("f-archetype"), pairing: document.getElementById("f-pairing"),
    opener: document.getElementById("f-opener"), play: document.getElementById("f-play")
  };
  var text = document.getElementById("f-text");

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }

  function name(model) { return D.labels[model] || model; }

  function uniq(field) {
    var seen = {};
    D.rows.forEach(function (r) { seen[r[field]] = 1; });
    return Object.keys(seen).sort();
  }

  function fill(select, values, label) {
    values.forEach(function (v) { select.appendChild(el("option", { value: v, text: label ? label(v) : v })); });
  }
  fill(selects.archetype, uniq("archetype"));
  fill(selects.pairing, uniq("pairing"));
  fill(selects.opener, uniq("opener_model"), function (m) { return D.models[m] + " opened"; });
  fill(selects.play, uniq("play"), function (p) { return p + "-play"; });

  function fmt(measure, value, label) {
    if (BOOLEAN[measure] && (value === 0 || value === 1)) return value ? "yes" : "no";
    if (label && (LABEL_MEASURES[measure] || value === null || value === undefined)) return label;
    if (value === null || value === undefined) return "–";
    // the report's number format (analysis.numbers.fmt): .51 for values below one, 12.4, 3
    if (typeof value === "number") {
      if (Math.abs(value) >= 1000) return value.toFixed(0);
      var r = Math.round(value * 100) / 100;
      if (Math.abs(r) < 1) return r.toFixed(2).replace(/^(-?)0\./, "$1.").replace(/^-\.00$/, ".00");
      return r === Math.round(r) ? String(r) : r.toFixed(2);
    }
    return String(value);
  }

  function matches(r, f) {
    var i = catalogIndex[f.key];
    if (i === undefined) return true;
    var v = r.v[i];
    var l = r.l[String(i)];
    var has = !(v === null || v === undefined);
    if (f.op === "set") return has || !!l;
    if (f.op === "unset") return !has && !l;
    if (f.value === "") return true;
    var x = Number(f.value);
    var numeric = f.value.trim() !== "" && !isNaN(x);
    if (f.op === "=" || f.op === "!=") {
      var eq;
      if (numeric && has && typeof v === "number") eq = Math.abs(v - x) < 1e-9;
      else {
        var want = f.value.trim().toLowerCase();
        var shown = fmt(D.catalog[i].measure, v, l).toLowerCase();
        eq = shown === want || (l || "").toLowerCase() === want || (has && String(v).toLowerCase() === want);
      }
      return f.op === "=" ? eq : !eq;
    }
    if (!numeric || !has || typeof v !== "number") return false;
    return f.op === ">=" ? v >= x : v <= x;
  }

  // a report's matrix cell: its conversations (cellfilter.js), shown with a way back to all
  var CELL = window.DYAFDB_CELL;
  var cell = CELL ? CELL.parse(location.hash) : null;
  var cellNote = document.getElementById("cell-filter");

  function showCell() {
    if (!cellNote) return;
    cellNote.hidden = !(cell && CELL.active(cell));
    if (cellNote.hidden) return;
    cellNote.textContent = "Conversations of one report cell: " + CELL.describe(cell, name) + ". ";
    var clear = el("a", { href: "#", text: "show all" });
    clear.addEventListener("click", function (ev) { ev.preventDefault(); cell = null; save(); showCell(); render(); });
    cellNote.appendChild(clear);
  }

  function visible() {
    var q = state.q.trim().toLowerCase();
    return D.rows.filter(function (r) {
      if (cell && CELL.active(cell) && !CELL.matches(r, cell)) return false;
      if (state.archetype && r.archetype !== state.archetype) return false;
      if (state.pairing && r.pairing !== state.pairing) return false;
      if (state.opener && r.opener_model !== state.opener) return false;
      if (state.play && r.play !== state.play) return false;
      if (q) {
        var hay = (r.id + " " + r.title + " " + r.scenario + " " + r.label_a + " " + r.label_b).toLowerCase();
        if (hay.indexOf(q) < 0) return false;
      }
      for (var i = 0; i < state.m.length; i++) if (!matches(r, state.m[i])) return false;
      return true;
    });
  }

  var BASE_COLUMNS = [
    { id: "title", title: "Conversation", sort: function (r) { return r.title + " " + r.id; } },
    { id: "archetype", title: "Archetype", sort: function (r) { return r.archetype; } },
    { id: "pairing", title: "Pairing", sort: function (r) { return r.pairing; } },
    { id: "sides", title: "Side a · side b", sort: function (r) { return r.model_a + " " + r.model_b; } },
    { id: "opener", title: "Opener", sort: function (r) { return r.opener_model; } },
    { id: "length", title: "Length", sort: function (r) { return r.duration_s; } },
    { id: "task", title: "Task measure", sort: null }
  ];

  function columns() {
    var extra = [];
    state.m.forEach(function (f) {
      var i = catalogIndex[f.key];
      if (i === undefined || extra.some(function (c) { return c.id === "m:" + f.key; })) return;
      extra.push({ id: "m:" + f.key, title: D.catalog[i].label, measure: i,
        sort: function (r) { var v = r.v[i]; return v === null || v === undefined ? -Infinity : v; } });
    });
    return BASE_COLUMNS.concat(extra);
  }

  function tableCell(r, c) {
    var td;
    if (c.id === "title") {
      td = el("td", { cls: "title" }, [el("a", { href: r.href, text: r.title }), el("small", { text: r.id })]);
    } else if (c.id === "sides") {
      td = el("td", { cls: "sides" }, [el("div", { title: r.model_a }, [el("span", { cls: "side-tag a", text: "a" }), name(r.model_a)]),
        el("div", { title: r.model_b }, [el("span", { cls: "side-tag b", text: "b" }), name(r.model_b)])]);
    } else if (c.id === "opener") {
      td = el("td", { cls: "nowrap", text: "side " + r.opener + " · " + name(r.opener_model) });
    } else if (c.id === "length") {
      td = el("td", { cls: "num", text: r.duration_s.toFixed(1) + " s" + (r.end_reason && r.end_reason !== "window" ? " (" + r.end_reason + ")" : "") });
    } else if (c.id === "task") {
      // one line per measure: "role_adherence  a yes · b partly"
      var groups = [];
      r.headline.forEach(function (hl) {
        var g = groups.filter(function (x) { return x.measure === hl.measure; })[0];
        if (!g) { g = { measure: hl.measure, label: hl.label, judge: hl.judge, parts: [] }; groups.push(g); }
        g.parts.push(hl);
      });
      td = el("td", { cls: "task" }, groups.map(function (g) {
        var kids = [el("span", { cls: "m", text: g.label || g.measure })];
        g.parts.forEach(function (hl, k) {
          if (k) kids.push(el("span", { cls: "sep", text: "·" }));
          kids.push(el("span", { cls: "s", text: hl.side + " " }));
          kids.push(el("b", { text: hl.text }));
        });
        return el("span", { cls: "hl", title: g.measure + (g.judge ? " (judge " + g.judge + ")" : "") }, kids);
      }));
      if (!r.scored) td.appendChild(el("span", { cls: "chip", text: "not scored" }));
    } else if (c.measure !== undefined) {
      var cat = D.catalog[c.measure];
      td = el("td", { cls: "num", text: fmt(cat.measure, r.v[c.measure], r.l[String(c.measure)]) });
    } else {
      td = el("td", { text: String(r[c.id]) });
    }
    return td;
  }

  function render() {
    var cols = columns();
    var rows = visible();
    var col = cols.filter(function (c) { return c.id === state.sort && c.sort; })[0];
    if (col) {
      rows = rows.slice().sort(function (x, y) {
        var a = col.sort(x), b = col.sort(y);
        return (a < b ? -1 : a > b ? 1 : 0) * state.dir;
      });
    }
    head.innerHTML = "";
    cols.forEach(function (c) {
      var th = el("th", { text: c.title, "data-col": c.id });
      if (c.id === state.sort) th.className = "sorted" + (state.dir > 0 ? " asc" : "");
      if (c.sort) th.addEventListener("click", function () {
        if (state.sort === c.id) state.dir = -state.dir; else { state.sort = c.id; state.dir = 1; }
        save(); render();
      });
      head.appendChild(th);
    });
    tbody.innerHTML = "";
    var frag = document.createDocumentFragment();
    rows.slice(0, state.limit).forEach(function (r) {
      var tr = el("tr", { "data-id": r.id });
      cols.forEach(function (c) { tr.appendChild(tableCell(r, c)); });
      tr.addEventListener("click", function (ev) { if (!ev.target.closest("a")) location.href = r.href; });
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
    countEl.textContent = "Showing " + Math.min(rows.length, state.limit) + " of " + rows.length +
      " matching (" + D.rows.length + " in all)";
    countEl.dataset.matching = rows.length;
    more.hidden = rows.length <= state.limit;
  }

  function mfilterRow(f) {
    var keySel = el("select", { cls: "m-key", "aria-label": "measure" });
    D.catalog.forEach(function (c) { keySel.appendChild(el("option", { value: c.key, text: c.label })); });
    keySel.value = f.key;
    var opSel = el("select", { cls: "m-op", "aria-label": "comparison" });
    OPS.forEach(function (o) { opSel.appendChild(el("option", { value: o[0], text: o[1] })); });
    opSel.value = f.op;
    var input = el("input", { cls: "m-value", type: "text", placeholder: "value", "aria-label": "value" });
    input.value = f.value;
    var drop = el("button", { type: "button", cls: "btn", title: "remove this filter", text: "×" });
    function changed() {
      f.key = keySel.value; f.op = opSel.value; f.value = input.value;
      input.disabled = f.op === "set" || f.op === "unset";
      state.limit = PAGE; save(); render();
    }
    keySel.addEventListener("change", changed);
    opSel.addEventListener("change", changed);
    input.addEventListener("input", changed);
    drop.addEventListener("click", function () {
      state.m.splice(state.m.indexOf(f), 1); drawMfilters(); save(); render();
    });
    input.disabled = f.op === "set" || f.op === "unset";
    return el("div", { cls: "mfilter" }, [keySel, opSel, input, drop]);
  }

  function drawMfilters() {
    mbox.innerHTML = "";
    state.m.forEach(function (f) { mbox.appendChild(mfilterRow(f)); });
  }

  function save() {
    var p = new URLSearchParams();
    FIELDS.concat(["q"]).forEach(function (k) { if (state[k]) p.set(k, state[k]); });
    state.m.forEach(function (f) { p.append("m", [f.key, f.op, f.value].join("~")); });
    if (state.sort) p.set("sort", state.sort + "~" + (state.dir > 0 ? "asc" : "desc"));
    if (cell && CELL.active(cell)) CELL.KEYS.forEach(function (k) { if (cell[k]) p.set(k, cell[k]); });
    var hash = p.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  function load() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    FIELDS.concat(["q"]).forEach(function (k) { state[k] = p.get(k) || ""; });
    state.m = p.getAll("m").map(function (s) {
      var parts = s.split("~");
      return { key: parts[0], op: parts[1] || ">=", value: parts.slice(2).join("~") };
    }).filter(function (f) { return catalogIndex[f.key] !== undefined; });
    var sort = (p.get("sort") || "").split("~");
    state.sort = sort[0] || "";
    state.dir = sort[1] === "desc" ? -1 : 1;
    FIELDS.forEach(function (k) { selects[k].value = state[k]; });
    text.value = state.q;
    cell = CELL ? CELL.parse(location.hash) : null;
    showCell();
    drawMfilters();
  }

  FIELDS.forEach(function (k) {
    selects[k].addEventListener("change", function () { state[k] = selects[k].value; state.limit = PAGE; save(); render(); });
  });
  text.addEventListener("input", function () { state.q = text.value; state.limit = PAGE; save(); render(); });
  document.getElementById("f-addm").addEventListener("click", function () {
    var first = D.catalog.filter(function (c) { return c.measure === "occupancy"; })[0] || D.catalog[0];
    if (!first) return;
    state.m.push({ key: first.key, op: ">=", value: "" });
    drawMfilters(); save(); render();
    var selects2 = mbox.querySelectorAll("select.m-key");
    if (selects2.length) selects2[selects2.length - 1].focus();
  });
  document.getElementById("f-reset").addEventListener("click", function () {
    history.replaceState(null, "", location.pathname + location.search);
    load(); state.limit = PAGE; render();
  });
  more.addEventListener("click", function () { state.limit += PAGE; render(); });
  window.addEventListener("hashchange", function () { load(); render(); });

  load();
  render();
})();
