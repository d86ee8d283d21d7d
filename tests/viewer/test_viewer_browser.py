"""The viewer in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

Against a small demo-like site (scripted recordings, real scoring, judged by a fake backend): the
index filters, a page plays audio and its cursor moves, clicking a transcript line or a segment
seeks, blind pages hide every model name (checked on the rendered DOM), labels survive a reload,
and the exported CSV is read back by the agreement analysis. The site is opened from file:// and
from a static HTTP server; no request may leave the site.

Screenshots of the index, a conversation page and an annotation page go to $DYAFDB_SCREENSHOTS
(default: a temporary folder, printed).

Needs: ``apt-get install -y --no-install-recommends chromium`` and ``pip install playwright``
(never ``playwright install``: the system browser is used).
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import http.server
import json
import os
import tempfile
import threading
from pathlib import Path

import pytest

from viewer_site import REPLY_MARKER, built_demo, leaks

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no Chromium at /usr/bin/chromium: apt-get install -y --no-install-recommends chromium",
                allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")

from dyafdb.analysis.agreement import agreement_table, majority, read_human_labels  # noqa: E402
from dyafdb.analysis.io import read_measures  # noqa: E402
from dyafdb.analysis.settings import from_config  # noqa: E402
from dyafdb.viewer.study import key_file  # noqa: E402
from dyafdb.viewer.layout import conversation_page  # noqa: E402
from dyafdb.suite.design import build_design  # noqa: E402
from dyafdb.measures.table import table_rows, write_table  # noqa: E402
from dyafdb.viewer.site import build_site  # noqa: E402
from results_paths import results_at

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
MEASURE_NAMES = ("occupancy", "role_adherence", "role_entry_s", "tor_pause", "barge_in", "landed_option", "pairing")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root, config = built_demo(tmp_path_factory)
    build_site(config, root, jobs=2)
    return root, config, root / "results" / "site"


@pytest.fixture(scope="module")
def shots(pytestconfig) -> Path:
    folder = Path(os.environ.get("DYAFDB_SCREENSHOTS") or tempfile.mkdtemp(prefix="dyafdb-screenshots-"))
    folder.mkdir(parents=True, exist_ok=True)
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # shown even though pytest captures the tests' output
        print(f"\nviewer screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    pg.requests = []  # type: ignore[attr-defined]
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    assert not pg.errors, pg.errors
    context.close()


def url(site: Path, rel: str) -> str:
    return (site / rel).as_uri()


def visible_rows(page) -> int:
    return page.locator("#rows tr").count()


# ---------------------------------------------------------------------------- index


def test_index_filters_by_archetype_pairing_opener_and_measure(demo, page, shots):
    root, config, site = demo
    rows = build_design(config, root)
    page.goto(url(site, "index.html"))
    assert visible_rows(page) == len(rows) == 24
    page.screenshot(path=str(shots / "index.png"), full_page=True)

    page.select_option("#f-archetype", "T1-2")
    assert visible_rows(page) == sum(r.archetype == "T1-2" for r in rows)
    cross = "zephyrine+quokkalux"
    page.select_option("#f-pairing", cross)
    assert visible_rows(page) == sum(r.archetype == "T1-2" and r.pairing == cross for r in rows) == 4
    page.select_option("#f-opener", "quokkalux")
    expected = {r.conversation_id for r in rows if r.archetype == "T1-2" and r.pairing == cross and r.opener_model == "quokkalux"}
    shown = set(page.locator("#rows tr").evaluate_all("els => els.map(e => e.dataset.id)"))
    assert shown == expected and len(expected) == 2
    assert "archetype=T1-2" in page.evaluate("location.hash")  # the filtered view is bookmarkable

    # a measure filter: side a's channel occupancy of at least 0.5, over all conversations
    page.click("#f-reset")
    assert visible_rows(page) == 24
    page.click("#f-addm")
    page.select_option(".mfilter select.m-key", "occupancy|a|")
    page.select_option(".mfilter select.m-op", ">=")
    page.fill(".mfilter input.m-value", "0.5")
    want = set()
    for r in rows:
        doc = json.loads(Path(results_at(root).measures_json(r.conversation_id)).read_text())
        occ = doc["values"]["a"]["occupancy"]
        if occ is not None and occ >= 0.5:
            want.add(r.conversation_id)
    assert 0 < len(want) < 24
    shown = set(page.locator("#rows tr").evaluate_all("els => els.map(e => e.dataset.id)"))
    assert shown == want
    assert page.locator("#conv-head th", has_text="occupancy · side a").count() == 1

    # a judge's label: main judge says T1-1 side b stayed in role
    page.select_option(".mfilter select.m-key", "role_adherence|b|main")
    page.select_option(".mfilter select.m-op", "=")
    page.fill(".mfilter input.m-value", "yes")
    want = set()
    for line in (root / "results" / "judge" / "main" / "T1-1" / "role_adherence.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["seat"] == "b" and rec["label"] == "yes":
            want.add(rec["conversation_id"])
    shown = set(page.locator("#rows tr").evaluate_all("els => els.map(e => e.dataset.id)"))
    assert shown == want and want
    # reopening the bookmarked view restores it
    page.reload()
    assert set(page.locator("#rows tr").evaluate_all("els => els.map(e => e.dataset.id)")) == want
    assert all(u.startswith("file://") for u in page.requests)


# ---------------------------------------------------------------------------- conversation page


def conversation_with_overlap(root: Path, site: Path) -> str:
    # a glob for an id is a glob for its shard too: segments/t1-1-*/t1-1-*.json
    for path in sorted(map(Path, glob.glob(results_at(root).segments("t1-1-*")))):
        doc = json.loads(path.read_text())
        a = {t for s, e in doc["channels"]["a"] for t in range(s, e)}
        if any(t in a for s, e in doc["channels"]["b"] for t in range(s, e)) and "__zephyrine__quokkalux__" in path.stem:
            return path.stem
    raise AssertionError("the demo has no T1-1 conversation with overlap")


def test_page_plays_audio_the_cursor_moves_and_clicks_seek(demo, page, shots):
    root, config, site = demo
    cid = conversation_with_overlap(root, site)
    page.goto(url(site, conversation_page(cid)))
    transcript = json.loads(Path(results_at(root).transcript_json(cid)).read_text())
    assert page.locator(".line").count() == len(transcript["lines"])
    assert page.locator(".track.spk-A .seg").count() + page.locator(".track.spk-B .seg").count() == len(transcript["lines"])
    assert page.locator(".overlap").count() >= 1
    # both judges' answers with their raw replies, and the measures, are on the page
    assert page.locator(".judge").count() == 2
    assert REPLY_MARKER in page.locator(".judges").text_content()  # in the closed "raw reply" details
    assert "occupancy" in page.locator(".measures").inner_text()

    left0 = page.eval_on_selector("#cursor", "e => parseFloat(e.style.left)")
    page.click("#play")
    page.wait_for_function("document.getElementById('audio').currentTime > 1.2", timeout=10_000)
    left1 = page.eval_on_selector("#cursor", "e => parseFloat(e.style.left)")
    t = page.evaluate("document.getElementById('audio').currentTime")
    duration = float(page.get_attribute("#timeline", "data-duration"))
    assert left1 > left0 and abs(left1 - 100 * t / duration) < 4  # the cursor follows the audio
    assert page.locator(".line.active").count() >= 1  # ...and the transcript
    page.screenshot(path=str(shots / "conversation.png"), full_page=True)

    # click the fourth transcript line: playback jumps to its start and keeps going
    line = page.locator(".line").nth(3)
    start = float(line.get_attribute("data-start"))
    line.click()
    page.wait_for_function(f"Math.abs(document.getElementById('audio').currentTime - {start}) < 0.4")
    page.wait_for_function(f"document.getElementById('audio').currentTime > {start} + 0.2", timeout=5_000)
    assert "active" in (page.locator(".line").nth(3).get_attribute("class") or "") or \
        page.evaluate("document.getElementById('audio').currentTime") >= float(line.get_attribute("data-end"))

    # click a segment of speaker B on the timeline
    seg = page.locator(".track.spk-B .seg").first
    seg_start = float(seg.get_attribute("data-start"))
    seg.click()
    page.wait_for_function(f"Math.abs(document.getElementById('audio').currentTime - {seg_start}) < 0.4")
    page.keyboard.press("Space")  # pause
    page.wait_for_function("document.getElementById('audio').paused")
    assert all(u.startswith("file://") for u in page.requests)


def test_site_works_from_a_static_server(demo, page):
    root, config, site = demo
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        page.goto(base + "index.html")
        assert visible_rows(page) == 24
        page.locator("#rows tr td.title a").first.click()
        page.wait_for_selector("#play")
        page.click("#play")
        page.wait_for_function("document.getElementById('audio').currentTime > 0.3", timeout=10_000)
        assert page.requests and all(u.startswith(base) for u in page.requests)
    finally:
        server.shutdown()


# ---------------------------------------------------------------------------- blind annotation


def test_blind_pages_hide_every_model_name(demo, page, shots):
    root, config, site = demo
    page.goto(url(site, "annotate/index.html"))
    codes = page.locator("#items tbody a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert len(codes) == 8
    for href in ["index.html", *codes]:
        page.goto(url(site, f"annotate/{href}"))
        # the rendered DOM: markup, attributes (audio and script URLs), inline data, the title, the inputs
        dom = page.evaluate("document.documentElement.outerHTML + ' ' + document.title + ' ' + "
                            "Array.from(document.querySelectorAll('input')).map(i => i.value).join(' ')").lower()
        assert not leaks(dom, config, root), f"{href}: the DOM shows {leaks(dom, config, root)}"
        for word in MEASURE_NAMES:
            assert word not in dom, f"{href}: the DOM shows the measure name {word!r}"
        if href != "index.html":
            assert page.locator(".track").count() == 2 and page.locator(".question").count() >= 1
            labels = page.locator(".tl-label b").all_inner_texts()
            assert labels == ["Speaker A", "Speaker B"]
    for u in page.requests:
        assert u.startswith("file://") and not leaks(u.rsplit("/site/", 1)[1], config, root), u

    # a screenshot of the busiest item, half answered
    study = page.evaluate("window.DYAFDB_STUDY")
    busiest = max(study["items"], key=lambda it: len(it["q"]))
    page.goto(url(site, f"annotate/item-{busiest['code']}.html"))
    page.keyboard.press("y")
    page.keyboard.press("p")
    page.click("#play")
    page.wait_for_function("document.getElementById('audio').currentTime > 2.0", timeout=10_000)
    page.keyboard.press("Space")
    page.screenshot(path=str(shots / "annotate-item.png"), full_page=True)


def answer_item(page, keys: list[str]) -> None:
    for key in keys:
        page.keyboard.press(key)


def test_labels_survive_a_reload_and_the_export_reads_back(demo, page, tmp_path):
    root, config, site = demo
    page.goto(url(site, "annotate/index.html"))
    page.fill("#rater", "r7")
    study = page.evaluate("window.DYAFDB_STUDY")
    n_items = len(study["items"])

    # answer every question of every item from the keyboard: the first option each time
    with page.expect_navigation():
        page.locator("#items tbody a").first.click()
    answered: dict[tuple[str, str], str] = {}
    for k in range(n_items):
        code = page.evaluate("window.DyafdbAnnotate.code")
        item = next(it for it in study["items"] if it["code"] == code)
        questions = page.locator(".question")
        for i in range(questions.count()):
            q = questions.nth(i)
            first = q.locator("button.opt").first
            key = first.get_attribute("data-key") or "0"
            page.keyboard.press(key)
            seat, measure = item["q"][i]
            answered[(code, f"{seat}:{measure}")] = first.get_attribute("data-value")
        assert page.locator("#item-progress").get_attribute("data-answered") == str(questions.count())
        if k == 0:
            # a reload keeps the answers, and changing one sticks too
            page.reload()
            assert page.locator(".question.answered").count() == questions.count()
            chosen = page.locator(".question").first.locator("button.opt.chosen")
            assert chosen.count() == 1
            page.locator(".question").first.click()
            page.keyboard.press("Backspace")
            assert page.locator(".question.answered").count() == questions.count() - 1
            page.reload()
            assert page.locator(".question.answered").count() == questions.count() - 1
            last = page.locator(".question").first.locator("button.opt").last
            last.click()
            seat, measure = item["q"][0]
            answered[(code, f"{seat}:{measure}")] = last.get_attribute("data-value")
            page.reload()
            assert page.locator(".question.answered").count() == questions.count()
        with page.expect_navigation():
            page.keyboard.press("]")  # next conversation (the last one leads back to the list)

    assert page.url.endswith("annotate/index.html")
    progress = page.locator("#progress").get_attribute("data-answers")
    assert int(progress) == len(answered)
    with page.expect_download() as dl:
        page.click("#export")
    path = tmp_path / "labels.csv"
    dl.value.save_as(str(path))
    text = path.read_text()
    assert text.splitlines()[0] == "rater,item,seat,measure,label"  # items by token: no conversation id

    # the agreement analysis reads it as it is, placing items through the key beside the site
    labels = read_human_labels(path, key_file(site))
    assert len(labels) == len(answered) and set(labels["rater"]) == {"r7"}
    sample = {it["code"]: it["conversation_id"] for it in json.loads(key_file(site).read_text())["items"]}
    got = {(r.conversation_id, f"{r.side}:{r.measure}"): r.label for r in labels.itertuples()}
    want = {(sample[code], key): value.lower() for (code, key), value in answered.items()}
    assert got == want

    # ...and compares it with both judges over the same seats
    measures_tsv = tmp_path / "measures.tsv"
    write_table(measures_tsv, table_rows(config, root, build_design(config, root)))
    voted, ties = majority(labels)
    assert ties == 0 and len(voted) == len(answered)
    settings = dataclasses.replace(from_config(config, root), annotation_key=key_file(site))
    result = agreement_table(read_measures(measures_tsv), settings, "main", "second", None, human=path)
    human = result[result["comparison"] == "main vs human majority"]
    role = human[(human["archetype"] == "T1-1") & (human["measure"] == "role_adherence")]
    n_t11 = sum(1 for (code, key) in answered if key.endswith(":role_adherence") and sample[code].startswith("t1-1"))
    assert int(role["n"].iloc[0]) == n_t11
    assert set(human["measure"]) >= {"role_adherence", "role_entry_s", "landed_option"}


def test_time_questions_take_the_speakers_line_at_the_cursor(demo, page):
    root, config, site = demo
    study = json.loads((site / "annotate" / "study.js").read_text().split("=", 1)[1].strip().rstrip(";"))
    item = next(it for it in study["items"] if ["a", "role_entry_s"] in it["q"])
    page.goto(url(site, f"annotate/item-{item['code']}.html"))
    i = item["q"].index(["a", "role_entry_s"])
    question = page.locator(".question").nth(i)
    speaker = question.get_attribute("data-speaker")
    line = page.locator(f".line.spk-{speaker}").nth(1)
    start = float(line.get_attribute("data-start"))
    page.evaluate(f"window.DyafdbPlayer.seek({start} + 0.1, false)")
    question.locator(".q-text").click()  # makes it the active question
    page.keyboard.press("t")
    assert question.locator("button.opt.chosen").get_attribute("data-value") == f"{start:.2f}"
    assert page.evaluate("window.DyafdbAnnotate.answers()")[str(i)] == f"{start:.2f}"


def test_each_channel_mutes_and_solos_and_playback_goes_on(demo, page):
    """Mute and solo act on the stereo file's channels (0 = side a): the gains player.js sets, the
    buttons' pressed state and the dimmed track follow every press, and the audio keeps playing."""
    root, config, site = demo
    cid = conversation_with_overlap(root, site)
    page.goto(url(site, conversation_page(cid)))
    assert page.evaluate("window.DyafdbPlayer.levels()") is None  # no graph until someone mutes
    side_of_a = page.locator(".tl-label.spk-A .chan").get_attribute("data-channel")
    a, b = int(side_of_a), 1 - int(side_of_a)
    page.click("#play")
    page.click(f".tl-label.spk-A button.mute")
    levels = page.evaluate("window.DyafdbPlayer.levels()")
    assert levels[a] == 0 and levels[b] == 1
    assert page.get_attribute(".tl-label.spk-A button.mute", "aria-pressed") == "true"
    assert "silent" in page.locator(".track.spk-A").get_attribute("class")
    page.click(f".tl-label.spk-A button.solo")  # solo beats mute: only A is heard
    levels = page.evaluate("window.DyafdbPlayer.levels()")
    assert levels[a] == 1 and levels[b] == 0
    assert "silent" in page.locator(".track.spk-B").get_attribute("class")
    page.click(f".tl-label.spk-B button.solo")  # solo moves to B
    assert page.evaluate("window.DyafdbPlayer.levels()")[a] == 0
    page.click(f".tl-label.spk-B button.solo")  # solo off: back to A muted, B heard
    levels = page.evaluate("window.DyafdbPlayer.levels()")
    assert levels[a] == 0 and levels[b] == 1
    page.click(f".tl-label.spk-A button.mute")
    assert page.evaluate("window.DyafdbPlayer.levels()") == [1, 1]
    page.wait_for_function("document.getElementById('audio').currentTime > 0.5", timeout=10_000)


def test_the_index_task_column_is_not_clipped(demo, page):
    """The task-measure column sits wholly inside the table's card, at the test viewport and a narrow one,
    its measure names as the report spells them."""
    from dyafdb.analysis.columns import measure_label

    root, config, site = demo
    for width in (1400, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url(site, "index.html"))
        cells = page.locator("#rows td.task")
        assert cells.count() == 24
        card = page.locator(".table-card").bounding_box()
        for i in range(cells.count()):
            cell = cells.nth(i)
            box = cell.bounding_box()
            assert box["x"] + box["width"] <= card["x"] + card["width"] + 1, (width, i)
            assert cell.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), (width, i)
    names = set(page.locator("#rows td.task .m").all_inner_texts())
    assert names and names <= {measure_label(m) for m in ("role_adherence", "landed_option", "won")}
