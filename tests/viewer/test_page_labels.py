"""Issue 26 item 7 on the conversation page, without a browser: every seat is named by one function
(speaker letter, then side) and never in two orders; a re-recorded conversation lists its attempts and
why each was kept or rejected."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from dyafdb.paths import results_of
from dyafdb.record.garble import FORMAT
from dyafdb.suite.design import build_design
from dyafdb.viewer.layout import conversation_page
from dyafdb.viewer.pages import garble_html, seat_label
from dyafdb.viewer.settings import viewer_settings
from dyafdb.viewer.site import build_site
from viewer_site import built_demo

SPEAKERS = {"a": "B", "b": "A"}  # side b opened: it is Speaker A


def _attempt(n: int, flagged_side: str | None) -> dict:
    sides = {}
    for side in "ab":
        bad = side == flagged_side
        sides[side] = {"first_pass": {"share": 0.2 if bad else 0.9, "seconds": 20.0},
                       "full_pass": {"share": 0.3, "seconds": 60.0} if bad else None, "flagged": bad}
    return {"attempt": n, "flagged": flagged_side is not None, "sides": sides}


def test_a_rerecorded_conversation_shows_each_attempt_and_why():
    report = {"status": "ok", "accepted_attempt": 2, "checked_sides": ["a", "b"],
              "attempts": [_attempt(1, "a"), _attempt(2, None)]}
    kept = {"status": "ok", "accepted_attempt": 2, "checked_sides": ["a", "b"], "failed_sides": []}
    chip, history = garble_html(kept, report, SPEAKERS)
    assert chip.startswith("re-recorded: attempt 2 kept") and "2 attempts" in chip
    assert chip != "garble check: ok"
    items = re.findall(r"<li class=\"attempt (\w+)\">(.*?)</li>", history)
    assert [fate for fate, _ in items] == ["rejected", "kept"]
    first = items[0][1]
    # the rejected attempt says which side was garbled and by what share, with the page's seat label
    assert "garbled" in first and f"{seat_label('a', SPEAKERS)}: first pass .20" in first and "whole recording .30" in first
    assert "clear" in items[1][1]


def test_a_failed_check_names_the_failed_seat_and_a_clean_one_says_first_attempt():
    report = {"status": "failed", "accepted_attempt": 3, "checked_sides": ["a", "b"],
              "attempts": [_attempt(1, "b"), _attempt(2, "b"), _attempt(3, "b")]}
    kept = {"status": "failed", "accepted_attempt": 3, "checked_sides": ["a", "b"], "failed_sides": ["b"]}
    chip, history = garble_html(kept, report, SPEAKERS)
    assert chip == f"garble check failed on {seat_label('b', SPEAKERS)} after 3 attempts; attempt 3 kept"
    assert history.count("<li class=\"attempt") == 3
    chip, history = garble_html({"status": "ok", "accepted_attempt": 1, "checked_sides": ["a"], "failed_sides": []},
                                {"attempts": [_attempt(1, None)]}, SPEAKERS)
    assert chip.startswith("garble check: ok on the first attempt") and history == ""
    # garble.json lost: meta.json's verdict still tells a re-recording apart
    chip, history = garble_html({"status": "ok", "accepted_attempt": 2, "checked_sides": ["a"]}, None, SPEAKERS)
    assert chip.startswith("re-recorded: attempt 2 kept") and "garble.json is missing" in history
    assert garble_html({"status": "not_checked"}, None, SPEAKERS) == ("", "")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root, config = built_demo(tmp_path_factory)
    out = tmp_path_factory.mktemp("labels-site")
    rows = build_design(config, root)
    # one conversation re-recorded: its meta.json and garble.json as the watch loop writes them
    target = next(r for r in rows if r.opener == "b" and r.model_a != r.model_b)
    rec = Path(results_of(config, root).recording(target.conversation_id))
    meta = json.loads((rec / "meta.json").read_text())
    meta["garble"] = {"status": "ok", "accepted_attempt": 2, "checked_sides": ["a", "b"], "failed_sides": []}
    (rec / "meta.json").write_text(json.dumps(meta))
    (rec / "garble.json").write_text(json.dumps({"format": FORMAT, "conversation_id": target.conversation_id,
                                                 "status": "ok", "accepted_attempt": 2, "checked_sides": ["a", "b"],
                                                 "attempts": [_attempt(1, "a"), _attempt(2, None)]}))
    try:
        build_site(config, root, dataclasses.replace(viewer_settings(config, root), out=out, annotation=False))
    finally:
        (rec / "garble.json").unlink()
        del meta["garble"]
        (rec / "meta.json").write_text(json.dumps(meta))
    return out, rows, target


def test_every_seat_on_a_page_is_named_one_way(site):
    out, rows, _ = site
    for row in rows:
        page = (out / conversation_page(row.conversation_id)).read_text()
        assert not re.search(r"side [ab] · Speaker [AB]", page), row.conversation_id
        named = set(re.findall(r"Speaker ([AB]) · side ([ab])", page))
        letters = {}
        for letter, side in named:
            assert letters.setdefault(letter, side) == side, (row.conversation_id, named)
        assert len(letters) == 2 and set(letters.values()) == {"a", "b"}
        # the pairing chips name the same seats, Speaker A first, each with its side's model
        chips = re.findall(r'<span class="chip">Speaker ([AB]) · side ([ab]): ([^<]+)</span>', page)
        assert [c[0] for c in chips] == ["A", "B"]
        assert all(letters[letter] == side for letter, side, _ in chips)
        assert {side: model for _, side, model in chips} == {"a": row.model_a, "b": row.model_b}
        side_of = {side: letter for letter, side in letters.items()}
        assert f"opener: Speaker {side_of[row.opener]} · side {row.opener}" in page


def test_the_rerecorded_page_lists_its_attempts(site):
    out, rows, target = site
    page = (out / conversation_page(target.conversation_id)).read_text()
    assert "garble check: ok" not in page
    assert "re-recorded: attempt 2 kept" in page
    assert page.count('<li class="attempt') == 2 and "rejected" in page
    other = next(r for r in rows if r.conversation_id != target.conversation_id)
    assert "Recording attempts" not in (out / conversation_page(other.conversation_id)).read_text()
