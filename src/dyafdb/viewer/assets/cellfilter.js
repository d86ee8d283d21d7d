/* DyaFDB viewer: the index filter a report's matrix cell links to. The URL hash may carry
 * tasks (archetypes, joined by commas), model and partner (the row model against the column
 * partner, on either side unless side=a: the row model on side a), and window (seconds). Kept apart
 * from index.js so it can be checked without a browser (tests/viewer/test_cell_filter.py). */
(function (root) {
  "use strict";
  var KEYS = ["tasks", "model", "partner", "side", "window"];

  function parse(hash) {
    var p = new URLSearchParams(String(hash || "").replace(/^#/, ""));
    var cell = {};
    KEYS.forEach(function (k) { cell[k] = p.get(k) || ""; });
    return cell;
  }

  function active(cell) {
    return KEYS.some(function (k) { return !!cell[k]; });
  }

  function matches(row, cell) {
    if (cell.tasks && cell.tasks.split(",").indexOf(row.archetype) < 0) return false;
    if (cell.window && Math.abs(Number(row.window_s) - Number(cell.window)) > 1e-9) return false;
    var sides = cell.side === "a" ? [["a", "b"]] : cell.side === "b" ? [["b", "a"]] : [["a", "b"], ["b", "a"]];
    return sides.some(function (s) {
      return (!cell.model || row["model_" + s[0]] === cell.model) && (!cell.partner || row["model_" + s[1]] === cell.partner);
    });
  }

  function describe(cell, name) {
    var parts = [];
    if (cell.model) parts.push((name ? name(cell.model) : cell.model) + (cell.side === "a" ? " (side a)" : ""));
    if (cell.partner) parts.push("against " + (name ? name(cell.partner) : cell.partner));
    if (cell.tasks) parts.push("in " + cell.tasks.split(",").join(", "));
    if (cell.window) parts.push("at " + cell.window + " s");
    return parts.join(" ");
  }

  root.DYAFDB_CELL = { KEYS: KEYS, parse: parse, active: active, matches: matches, describe: describe };
})(typeof window !== "undefined" ? window : globalThis);
