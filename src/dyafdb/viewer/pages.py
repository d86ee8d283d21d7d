"""The site's HTML: the index, one page per conversation, and the blind annotation pages.

Pages are static: the data a page's script needs sits in the page as JSON, or (the index and the
annotation study, shared by many pages) in a ``.js`` file next to it, because a browser will not
``fetch`` a local file from ``file://``. Nothing refers to anything outside the site.

Positions on the timeline are percentages of the conversation's length, written here, so the
segments, overlap and axis need no script to lay out; the script draws the waveform, moves the
cursor and handles clicks and keys.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Mapping, Sequence

from dyafdb.viewer.layout import CONVERSATION_ROOT
from dyafdb.analysis.answers import AnswerPolicy
from dyafdb.analysis.columns import measure_label
from dyafdb.viewer.summary import fmt, mechanical_order, show, withheld

ASSET_FILES = ("viewer.css", "player.js", "cellfilter.js", "index.js", "annotate.js")


def h(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def json_script(doc: Any, element_id: str = "dyafdb-data") -> str:
    """Data for the page's script; every ``<`` is escaped, so no value can end (or confuse) the element."""
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def clock(seconds: float, decimals: int = 1) -> str:
    m, s = divmod(max(0.0, float(seconds)), 60)
    return f"{int(m)}:{s:0{3 + decimals}.{decimals}f}"


def layout(title: str, body: str, prefix: str, scripts: Sequence[str] = (), nav: str = "", body_class: str = "",
           data: str = "") -> str:
    tags = "".join(f'<script src="{h(s)}"></script>' for s in scripts)
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        # an empty icon, so the browser does not ask for /favicon.ico (a request outside the site's files)
        f"<title>{h(title)}</title>\n<link rel=\"icon\" href=\"data:,\">\n"
        f"<link rel=\"stylesheet\" href=\"{prefix}assets/viewer.css\">\n</head>\n"
        f"<body class=\"{body_class}\">\n<header class=\"topbar\"><span class=\"brand\">DyaFDB</span>{nav}</header>\n"
        f"<main>\n{body}\n</main>\n{data}\n{tags}\n</body>\n</html>\n"
    )


def full_nav(prefix: str, annotation: bool) -> str:
    links = [f'<a href="{prefix}index.html">Conversations</a>']
    if annotation:
        links.append(f'<a href="{prefix}annotate/index.html">Blind annotation</a>')
    return "<nav>" + "".join(links) + "</nav>"


def seat_label(side: str, speakers: Mapping[str, str]) -> str:
    """How every part of a conversation page names a seat: its speaker letter first (A spoke first),
    then its side. One function, so the chips, timeline, measures, judge answers and what Whisper heard
    cannot name the same seat in two orders."""
    return f"Speaker {speakers[side]} · side {side}"


def seats(speakers: Mapping[str, str]) -> list[str]:
    """The sides in speaker order (A first), the order every per-seat list on a page follows."""
    return sorted("ab", key=lambda side: speakers[side])


def pct(t: float, duration: float) -> str:
    return f"{100.0 * max(0.0, min(t, duration)) / duration:.3f}%" if duration > 0 else "0%"


def _axis_step(duration: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120):
        if duration / step <= 14:
            return float(step)
    return 300.0


# ----------------------------------------------------------------------------- player

def timeline(player: Mapping[str, Any], blind: bool) -> str:
    d = float(player["duration_s"])
    labels, tracks = [], []
    for i, row in enumerate(player["rows"]):
        spk = row["speaker"]
        if blind:
            labels.append(f'<div class="tl-label spk-{spk}"><span class="tl-head"><b>Speaker {spk}</b>{channel_buttons(row, spk)}</span></div>')
        else:
            opener = " · opener" if row["opener"] else ""
            labels.append(
                f'<div class="tl-label spk-{spk}"><span class="tl-head"><b>Speaker {spk}</b>{channel_buttons(row, spk)}</span>'
                f'<small>side {h(row["side"])} · {h(row["channel"])} · {h(row["role"])}{opener}</small>'
                f'<small class="model">{h(row["model_label"])}</small></div>')
        parts = [f'<canvas class="wave" data-row="{i}"></canvas>']
        for s, e in row["segments"] or []:
            parts.append(f'<div class="seg" style="left:{pct(s, d)};width:{pct(e - s, d)}" data-start="{s:.2f}" '
                         f'data-end="{e:.2f}" title="Speaker {spk} {s:.2f}–{e:.2f} s"></div>')
        for s, e in row.get("backchannels") or []:
            parts.append(f'<span class="ev bc" style="left:{pct(s, d)}" title="backchannel {s:.2f}–{e:.2f} s"></span>')
        for b in row.get("barge_ins") or []:
            outcome = b["outcome"].replace("_", " ")
            parts.append(f'<span class="ev bi {h(b["outcome"])}" style="left:{pct(b["t"], d)}" '
                         f'title="barge-in at {b["t"]:.2f} s: {h(outcome)}"></span>')
        tracks.append(f'<div class="track spk-{spk}" data-speaker="{spk}">{"".join(parts)}</div>')
    overlays = []
    if player["lead_in_s"]:
        lead = player["lead_in_s"]
        overlays.append(f'<div class="leadin" style="width:{pct(lead, d)}" '
                        f'title="lead-in: the opener speaks alone for {lead:.2f} s"><span>lead-in</span></div>')
    for s, e in player["overlap"] or []:
        overlays.append(f'<div class="overlap" style="left:{pct(s, d)};width:{pct(e - s, d)}" '
                        f'title="overlap {s:.2f}–{e:.2f} s"></div>')
    step = _axis_step(d)
    ticks, t = [], 0.0
    while t <= d + 1e-6:
        ticks.append(f'<span style="left:{pct(t, d)}">{t:g}</span>')
        t += step
    missing = ("" if player["rows"][0]["segments"] is not None
               else '<p class="note">No VAD segments yet (run <code>dyafdb score</code>).</p>')
    return (
        f'<div class="timeline" id="timeline" data-duration="{d:.3f}">'
        f'<div class="tl-labels">{"".join(labels)}<div class="tl-label axis-label">seconds</div></div>'
        f'<div class="tl-area" id="tl-area">{"".join(overlays)}{"".join(tracks)}'
        f'<div class="axis">{"".join(ticks)}</div><div class="hover" id="hover"><span></span></div>'
        f'<div class="cursor" id="cursor"></div></div></div>{missing}'
    )


def channel_buttons(row: Mapping[str, Any], spk: str) -> str:
    """Mute and solo for one speaker's channel of the stereo file (player.js routes the channels)."""
    channel = row["audio_channel"]
    return (f'<span class="chan" data-channel="{channel}">'
            f'<button type="button" class="btn-chan mute" data-channel="{channel}" aria-pressed="false" '
            f'title="mute Speaker {spk}">mute</button>'
            f'<button type="button" class="btn-chan solo" data-channel="{channel}" aria-pressed="false" '
            f'title="hear only Speaker {spk}">solo</button></span>')


def legend(blind: bool) -> str:
    items = ['<span class="lg spk-A"><i></i>Speaker A</span>', '<span class="lg spk-B"><i></i>Speaker B</span>',
             '<span class="lg lg-overlap"><i></i>overlap</span>', '<span class="lg lg-leadin"><i></i>lead-in</span>']
    if not blind:
        items += ['<span class="lg lg-bc"><i></i>backchannel</span>', '<span class="lg lg-bi"><i></i>barge-in</span>']
    return f'<div class="legend">{"".join(items)}</div>'


def player_card(player: Mapping[str, Any], blind: bool) -> str:
    audio = player["audio"]
    return (
        '<section class="card player" id="player">'
        '<div class="controls">'
        '<button type="button" class="btn-play" id="play" title="play / pause (space)" aria-label="play">'
        '<span class="i-play">▶</span><span class="i-pause">❚❚</span></button>'
        f'<span class="time"><b id="now">0:00.0</b> / {clock(player["duration_s"])}</span>'
        '<button type="button" class="btn" data-skip="-5" title="back 5 s (←)">−5 s</button>'
        '<button type="button" class="btn" data-skip="5" title="forward 5 s (→)">+5 s</button>'
        '<label class="rate">speed <select id="rate"><option value="0.75">0.75×</option>'
        '<option value="1" selected>1×</option><option value="1.25">1.25×</option><option value="1.5">1.5×</option>'
        '<option value="2">2×</option></select></label>'
        f'{legend(blind)}</div>'
        f'{timeline(player, blind)}'
        f'<audio id="audio" preload="auto"><source src="{h(audio["src"])}" type="{h(audio["mime"])}"></audio>'
        '</section>'
    )


def transcript_card(player: Mapping[str, Any]) -> str:
    if not player["scored"]:
        body = '<p class="note">No transcript yet (run <code>dyafdb score</code>).</p>'
    elif not player["lines"]:
        body = '<p class="note">Nobody spoke.</p>'
    else:
        rows = []
        for line in player["lines"]:
            text = line["text"] or "(no text)"
            empty = "" if line["text"] else " empty"
            rows.append(
                f'<div class="line spk-{line["speaker"]}{empty}" data-start="{line["start"]:.2f}" '
                f'data-end="{line["end"]:.2f}" tabindex="0" title="play from {line["start"]:.2f} s">'
                f'<span class="ts">{clock(line["start"], 2)}</span><span class="who">{line["speaker"]}</span>'
                f'<span class="text">{h(text)}</span><span class="prog"></span></div>')
        body = f'<div class="lines" id="lines">{"".join(rows)}</div>'
    return f'<section class="card transcript"><h2>Transcript</h2>{body}</section>'


def scenario_card(prompts: Mapping[str, Any], blind: bool) -> str:
    sides = []
    for s in prompts["sides"]:
        who = f'Speaker {s["speaker"]}'
        detail = f'{h(s["role"])}' + (f' · side {h(s["side"])} · {h(s["model"])}' if not blind else "")  # speaker is the heading
        opener = f'<p class="opener-line">{h(s["opener_line"])}</p>' if s["opener_line"] else ""
        sides.append(f'<div class="prompt spk-{s["speaker"]}"><h3>{who} <small>{detail}</small></h3>'
                     f'<p>{h(s["prompt"])}</p>{opener}</div>')
    return (f'<section class="card scenario"><h2>Scenario</h2><h3 class="situation-h">Shared situation</h3>'
            f'<p class="situation">{h(prompts["situation"])}</p>{"".join(sides)}</section>')


# ----------------------------------------------------------------------------- full conversation page

def measures_card(measures: Mapping[str, Any] | None, speakers: Mapping[str, str]) -> str:
    if not measures:
        return '<section class="card measures"><h2>Mechanical measures</h2><p class="note">Not measured yet.</p></section>'
    values = measures.get("values") or {}
    names = [m for m in mechanical_order() if any(m in values.get(s, {}) for s in "ab")]
    names += sorted({m for s in "ab" for m in values.get(s, {})} - set(names))
    order = seats(speakers)
    rows = "".join(
        f'<tr><th>{h(measure_label(m))}</th>' + "".join(f'<td>{h(show(m, values.get(s, {}).get(m), None))}</td>' for s in order) + "</tr>"
        for m in names)
    head = "".join(f'<th class="spk-{speakers[s]}">{h(seat_label(s, speakers))}</th>' for s in order)
    leak = measures.get("leak") or {}
    extra = ""
    if leak.get("leaked"):
        extra = (f'<p class="note">Leak: the defender says “{h(leak.get("matched"))}” '
                 f'in its line at {fmt(leak.get("time_s"))} s.</p>')
    extra += heard_html(measures.get("health"), speakers)
    return (f'<section class="card measures"><h2>Mechanical measures</h2><table class="kv"><thead><tr><th></th>{head}'
            f'</tr></thead><tbody>{rows}</tbody></table>{extra}</section>')


def heard_html(health: Mapping[str, Any] | None, speakers: Mapping[str, str]) -> str:
    """What Whisper heard on each side (the speech-text agreement compares it with the text channel)."""
    detail = (health or {}).get("detail") or {}
    items = []
    for s in seats(speakers):
        heard = (detail.get(s) or {}).get("transcript")
        if heard and heard.get("source") != "none":
            # "garble" only in measures scored before 92e6027, which reused the watcher's transcripts
            source = "the garble watcher's transcript" if heard.get("source") == "garble" else "Whisper on its speech"
            items.append(f'<li class="spk-{speakers[s]}">{h(seat_label(s, speakers))} ({h(source)}): '
                         f'“{h(heard.get("asr") or "")}”</li>')
    if not items:
        return ""
    return ('<details class="heard"><summary>What the audio says (speech-text agreement)</summary><ul>'
            + "".join(items) + "</ul></details>")


def _fields(rec: Mapping[str, Any]) -> str:
    out = []
    for k, v in (rec.get("fields") or {}).items():
        if k.endswith("_s") and isinstance(v, (int, float)):
            out.append(f'<button type="button" class="seek" data-t="{float(v):.2f}" title="play from here">'
                       f'{h(k[:-2])} ▶ {float(v):.2f} s</button>')
        elif v is not None:
            out.append(f'<span class="field">{h(k)}: {h(v)}</span>')
    return " ".join(out)


def _verdict(r: Mapping[str, Any], speakers: Mapping[str, str], policy: AnswerPolicy | None = None) -> str:
    """One judge record: question, seat, label, the rows it produced, every raw reply."""
    seat = r.get("seat")
    who = seat_label(seat, speakers) if seat else "the pair"
    status = "" if r.get("valid", True) else ' <span class="chip bad">invalid</span>'
    failed = r.get("checks") or []
    if failed:  # the answer failed a judge check: its values are withheld and the reason shown
        status += "".join(f' <span class="chip bad">{h(withheld(c, policy))}</span>' for c in failed)
    derived = ", ".join(
        f'{x["measure"]}{"" if seat else " (" + x["side"] + ")"} = '
        f'{"withheld" if x.get("check") else show(x["measure"], x.get("value"), x.get("label"))}'
        for x in r.get("rows", []))
    replies = r.get("replies") or []
    raw = "".join(f'<div class="reply"><div class="reply-n">reply {i + 1}{" (after the reminder)" if i else ""}</div>'
                  f"<pre>{h(text)}</pre></div>" for i, text in enumerate(replies))
    cost = "cached" if r.get("cached") else f'{r.get("input_tokens", 0)} in / {r.get("output_tokens", 0)} out tokens'
    summary = f'raw repl{"y" if len(replies) == 1 else "ies"} ({len(replies)}) · {h(cost)}'
    return (f'<div class="verdict"><div class="v-head"><span class="q">{h(r.get("question"))}</span>'
            f'<span class="who">{h(who)}</span><span class="label">{h("withheld" if failed else r.get("label"))}</span>'
            f'{status}{"" if failed else _fields(r)}</div>'
            f'<div class="v-rows">{h(derived)}</div><details><summary>{summary}'
            f'{" · the answer failed a check" if failed else ""}</summary>{raw}</details></div>')


def judges_card(judges: Sequence[str], records: Sequence[Mapping[str, Any]], speakers: Mapping[str, str],
                policy: AnswerPolicy | None = None) -> str:
    if not records:
        note = "No judge answers yet (run <code>dyafdb judge</code>)." if judges else "No judge configured."
        return f'<section class="card judges"><h2>Judge answers</h2><p class="note">{note}</p></section>'
    blocks = []
    for judge in judges:
        mine = [r for r in records if r.get("judge") == judge]
        if not mine:
            continue
        first = mine[0]
        demo = ' <span class="chip warn">demo quality</span>' if first.get("demo_quality") else ""
        head = f'{h(judge)} <small>{h(first.get("backend"))} · {h(first.get("model"))}</small>{demo}'
        blocks.append(f'<div class="judge"><h3>{head}</h3>{"".join(_verdict(r, speakers, policy) for r in mine)}</div>')
    return f'<section class="card judges"><h2>Judge answers</h2>{"".join(blocks)}</section>'


def _pass_text(p: Mapping[str, Any] | None, name: str) -> str:
    if not p:
        return ""
    share = p.get("share")
    return f"{name} {'no words to compare' if share is None else fmt(float(share)) + ' of the words heard'} ({fmt(p.get('seconds'))} s)"


def garble_html(kept: Mapping[str, Any] | None, report: Mapping[str, Any] | None,
                speakers: Mapping[str, str]) -> tuple[str, str]:
    """(chip, history) for the garble watcher's verdict: the chip says which attempt was kept and why,
    the history lists every attempt with each checked side's word share. ``kept`` is meta.json's
    ``garble`` (it decides), ``report`` garble.json (the detail, absent when lost)."""
    kept = dict(kept or {})
    report = report or {}
    status = kept.get("status") or report.get("status")
    if status in (None, "not_checked"):
        return "", ""
    attempts = list(report.get("attempts") or [])
    accepted = kept.get("accepted_attempt", report.get("accepted_attempt"))
    checked = kept.get("checked_sides") or report.get("checked_sides") or []
    failed = kept.get("failed_sides") or []
    first = attempts[0]["attempt"] if attempts else 1
    rerecorded = bool(accepted and accepted > first) or len(attempts) > 1
    names = ", ".join(seat_label(s, speakers) for s in checked)
    if status == "failed":
        chip = (f"garble check failed on {', '.join(seat_label(s, speakers) for s in failed)} after "
                f"{len(attempts) or accepted} attempts; attempt {accepted} kept")
    elif rerecorded:
        chip = f"re-recorded: attempt {accepted} kept ({len(attempts) or accepted} attempts, earlier ones garbled)"
    else:
        chip = f"garble check: ok on the first attempt ({names})"
    if not rerecorded and status != "failed":
        return chip, ""
    items = []
    for a in attempts:
        sides = a.get("sides") or {}
        why = "; ".join(
            f"{seat_label(s, speakers)}: " + ", ".join(x for x in (_pass_text(r.get("first_pass"), "first pass"),
                                                                  _pass_text(r.get("full_pass"), "whole recording")) if x)
            + (" — garbled" if r.get("flagged") else " — clear")
            for s, r in sorted(sides.items(), key=lambda kv: speakers[kv[0]]))
        fate = "kept" if a.get("attempt") == accepted else "rejected"
        items.append(f'<li class="attempt {fate}"><b>attempt {h(a.get("attempt"))}</b> ({fate}, '
                     f'{"garbled" if a.get("flagged") else "clear"}): {h(why)}</li>')
    if not items:
        items.append(f"<li>garble.json is missing: only the verdict in meta.json is known (attempt {h(accepted)} kept)</li>")
    history = (f'<details class="card garble" id="garble" open><summary>Recording attempts: {h(chip)}</summary>'
               f'<p class="note">The garble watcher compares what Whisper hears on each checked side ({h(names)}) with '
               f'the words the model meant to say; a side with too small a share is garbled and the conversation '
               f'is recorded again.</p><ul>{"".join(items)}</ul></details>')
    return chip, history


def conversation_page(*, row: Any, meta: Mapping[str, Any], player: Mapping[str, Any], prompts: Mapping[str, Any],
                      measures: Mapping[str, Any] | None, judges: Sequence[str], records: Sequence[Mapping[str, Any]],
                      garble: Mapping[str, Any] | None, speakers: Mapping[str, str], annotation: bool,
                      demo_quality: bool, policy: AnswerPolicy | None = None) -> str:
    model_of = {"a": row.model_a, "b": row.model_b}
    # the pairing as the rest of the page names its seats (speaker order), not as the id spells it (a, b)
    chips = [row.archetype, *(f"{seat_label(s, speakers)}: {model_of[s]}" for s in seats(speakers)), f"{row.play}-play",
             f"opener: {seat_label(row.opener, speakers)}",
             f"rep {row.repetition}", f"window {row.window_s:g} s", f"{clock(player['duration_s'])} recorded",
             f"end: {meta.get('end_reason', '?')}"]
    verdict, history = garble_html(meta.get("garble"), garble, speakers)
    if verdict:
        chips.append(verdict)
    chip_html = "".join(f'<span class="chip">{h(c)}</span>' for c in chips)
    if demo_quality:
        chip_html += '<span class="chip warn">demo quality</span>'
    body = (
        f'<div class="crumbs"><a href="{CONVERSATION_ROOT}index.html">All conversations</a> › {h(row.archetype)} › '
        f'<span class="cid">{h(row.conversation_id)}</span></div>'
        f'<h1>{h(prompts["title"])}</h1><div class="chips">{chip_html}</div>'
        f'{history}{player_card(player, blind=False)}'
        f'<div class="grid2">{transcript_card(player)}{scenario_card(prompts, blind=False)}</div>'
        f'<div class="grid2">{measures_card(measures, speakers)}{judges_card(judges, records, speakers, policy)}</div>'
        f'<details class="card meta"><summary>Recording metadata (meta.json)</summary>'
        f'<pre>{h(json.dumps(meta, indent=1, ensure_ascii=False))}</pre></details>'
    )
    data = json_script({"mode": "full", "duration_s": player["duration_s"], "bin_s": player["bin_s"],
                        "peaks": [r["peaks"] for r in player["rows"]]})
    return layout(f"{prompts['title']} · {row.conversation_id}", body, CONVERSATION_ROOT,
                  [f"{CONVERSATION_ROOT}assets/player.js"], full_nav(CONVERSATION_ROOT, annotation), "page-conversation", data)


# ----------------------------------------------------------------------------- index

def index_page(summary: Mapping[str, Any], annotation: bool, report_href: str | None = None,
               cards: Sequence[tuple[str, str]] = ()) -> str:
    demo = '<span class="chip warn">demo quality</span>' if summary.get("demo_quality") else ""
    report = (f' The numbers they make up are in <a class="report" href="{h(report_href)}">the report</a>.'
              if report_href else "")
    if cards:  # (label, href) of each model's card in the report
        report += (' <span class="cards">Model cards: '
                   + ", ".join(f'<a class="model-card" href="{h(href)}">{h(label)}</a>' for label, href in cards) + ".</span>")
    body = f"""
<h1>Conversations {demo}</h1>
<p class="lede">{summary['conversations']} recorded conversations · {summary['archetypes']} archetypes ·
{summary['pairings']} pairings{summary.get('missing_note', '')}. Click a row to watch, listen and read it.{report}</p>
<p class="note cell-filter" id="cell-filter" hidden></p>
<section class="card filters" id="filters">
  <div class="frow">
    <label>Archetype <select id="f-archetype" data-field="archetype"><option value="">all</option></select></label>
    <label>Pairing <select id="f-pairing" data-field="pairing"><option value="">all</option></select></label>
    <label>Opener <select id="f-opener" data-field="opener_model"><option value="">all</option></select></label>
    <label>Play <select id="f-play" data-field="play"><option value="">all</option></select></label>
    <label class="grow">Search <input id="f-text" type="search" placeholder="scenario, model, id…"></label>
    <button type="button" class="btn" id="f-reset">Reset</button>
  </div>
  <div class="mfilters" id="mfilters"></div>
  <div class="frow"><button type="button" class="btn" id="f-addm">+ measure filter</button>
  <span class="count" id="count"></span></div>
</section>
<section class="card table-card">
<table class="conv" id="conv"><thead><tr id="conv-head"></tr></thead><tbody id="rows"></tbody></table>
<div class="more"><button type="button" class="btn" id="more" hidden>Show more</button></div>
<noscript><p class="note">The filters need JavaScript; the pages are under <code>c/</code>, a folder per scenario.</p></noscript>
</section>"""
    return layout("DyaFDB conversations", body, "", ["index-data.js", "assets/cellfilter.js", "assets/index.js"],
                  full_nav("", annotation),
                  "page-index")


# ----------------------------------------------------------------------------- blind annotation

def annotate_nav(prefix: str) -> str:
    return (f'<nav><a href="{prefix}annotate/index.html">Annotation items</a>'
            f'<span class="rater-badge" id="rater-badge"></span></nav>')


def annotate_index_page(n_items: int, n_seats: int) -> str:
    body = f"""
<h1>Blind annotation</h1>
<p class="lede">{n_items} conversations, {n_seats} seats. Speakers are called A (the first to speak) and B.
Listen to each conversation, read its transcript, and answer the questions the judge answered.
Your answers stay in this browser until you export them.</p>
<section class="card study">
  <div class="frow">
    <label>Your rater id <input id="rater" autocomplete="off" placeholder="e.g. r1" maxlength="40"></label>
    <span class="count" id="progress"></span>
    <button type="button" class="btn primary" id="export">Export CSV</button>
    <button type="button" class="btn" id="clear">Clear my answers</button>
  </div>
  <p class="note" id="export-note"></p>
</section>
<section class="card">
  <table class="items" id="items"><thead><tr><th>Item</th><th>Questions</th><th>Answered</th><th></th></tr></thead>
  <tbody></tbody></table>
</section>
<section class="card keys"><h2>Keyboard</h2>{keys_help()}</section>"""
    return layout("Blind annotation", body, "../", ["study.js", "../assets/annotate.js"], annotate_nav("../"),
                  "page-annotate-index")


def keys_help() -> str:
    keys = [("Space", "play / pause"), ("← →", "back / forward 5 s"), ("y p n", "yes / partly / no"),
            ("1–9, 0", "pick an option (0 = none)"), ("t", "time questions: the speaker's line at the cursor"),
            ("↓ ↑  or  j k", "next / previous question"), ("Backspace", "clear the answer"),
            ("[ ]", "previous / next conversation")]
    return '<dl class="keys">' + "".join(f"<dt>{h(k)}</dt><dd>{h(v)}</dd>" for k, v in keys) + "</dl>"


def question_html(q: Mapping[str, Any], index: int) -> str:
    spk = f' spk-{q["speaker"]}' if q.get("speaker") else ""
    time_hint = (f' <span class="t-hint">Press <kbd>t</kbd> for Speaker {h(q["speaker"])}’s line at the cursor.</span>'
                 if q["question"] == "role_timing" else "")
    if q["kind"] == "number":
        control = ('<div class="opts"><input class="num" type="text" inputmode="decimal" placeholder="number, then Enter">'
                   '<button type="button" class="opt" data-value="none"><kbd>0</kbd>none</button></div>')
    else:
        opts = []
        for o in q["options"]:
            kbd = f'<kbd>{h(o["key"])}</kbd>' if o.get("key") else ""
            hint = f'<small>{h(o["hint"])}</small>' if o.get("hint") else ""
            opts.append(f'<button type="button" class="opt" data-value="{h(o["value"])}" data-key="{h(o.get("key", ""))}">'
                        f'{kbd}<span>{h(o["label"])}</span>{hint}</button>')
        control = f'<div class="opts{" times" if q["question"] == "role_timing" else ""}">{"".join(opts)}</div>'
    return (f'<div class="question{spk}" data-q="{index}" data-kind="{h(q["kind"])}" '
            f'data-time="{1 if q["question"] == "role_timing" else 0}" data-speaker="{h(q.get("speaker") or "")}">'
            f'<div class="q-text"><span class="q-n">{index + 1}</span>{h(q["text"])}</div>'
            f'<p class="q-rules">{h(q["rules"])}{time_hint}</p>{control}</div>')


def annotate_item_page(*, code: str, position: int, total: int, prev_code: str | None, next_code: str | None,
                       player: Mapping[str, Any], prompts: Mapping[str, Any], questions: Sequence[Mapping[str, Any]]) -> str:
    prev_link = (f'<a class="btn" href="item-{prev_code}.html" id="prev">‹ previous</a>' if prev_code
                 else '<span class="btn disabled">‹ previous</span>')
    next_link = (f'<a class="btn" href="item-{next_code}.html" id="next">next ›</a>' if next_code
                 else '<a class="btn" href="index.html" id="next">done ›</a>')
    qs = "".join(question_html(q, i) for i, q in enumerate(questions))
    body = (
        f'<div class="item-head"><h1>Conversation {h(code)} <small>{position} of {total}</small></h1>'
        f'<div class="item-nav">{prev_link}<span class="count" id="item-progress"></span>{next_link}</div></div>'
        f'<div class="annotate-grid"><div class="left">{player_card(player, blind=True)}'
        f'<div class="grid2">{transcript_card(player)}{scenario_card(prompts, blind=True)}</div></div>'
        f'<aside class="card questions" id="questions"><h2>Questions</h2>{qs}'
        f'<p class="saved" id="saved"></p><details class="keys-d"><summary>Keyboard</summary>{keys_help()}</details></aside></div>'
    )
    data = json_script({"mode": "blind", "code": code, "duration_s": player["duration_s"], "bin_s": player["bin_s"],
                        "peaks": [r["peaks"] for r in player["rows"]]})
    return layout(f"Conversation {code}", body, "../", ["study.js", "../assets/player.js", "../assets/annotate.js"],
                  annotate_nav("../"),
                  "page-annotate-item", data)


def redirect_page(target: str, text: str) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={h(target)}">'
            f'<link rel="icon" href="data:,"><title>{h(text)}</title></head><body><a href="{h(target)}">{h(text)}</a></body></html>\n')
