"""Screenshots for the docs (docs/img/), taken in headless Chromium from pages the pipeline builds:
the report's task-score heatmaps, the leaderboard and one conversation page of the viewer.

The report is built from synthetic measures (tests/helpers/synthetic_analysis.py) with the bootstrap
on, so the pictures show intervals, n, tie counts and colour bars; the viewer page comes from the
viewer tests' demo site. Running this test rewrites the PNGs; commit them when the pages change.
Skips without Chromium, as the browser tests do.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pandas as pd
import pytest

import synthetic_analysis as S
from viewer_site import built_demo

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no Chromium at /usr/bin/chromium: apt-get install -y --no-install-recommends chromium",
                allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")

from dyafdb.analysis import columns as C  # noqa: E402
from dyafdb.analysis import figures  # noqa: E402
from dyafdb.analysis.products import matrix_product, rating_product, runs_product  # noqa: E402
from dyafdb.analysis.report import build_report  # noqa: E402
from dyafdb.analysis.settings import from_config  # noqa: E402
from dyafdb.analysis.tables import Matrix  # noqa: E402
from dyafdb.config import validate_config  # noqa: E402
from dyafdb.suite.design import build_design  # noqa: E402
from dyafdb.viewer.layout import conversation_page  # noqa: E402
from dyafdb.viewer.site import build_site  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
IMG = REPO / "docs" / "img"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
TASKS = ("T1-1", "T2", "T4-1", "T4-2")
MODELS = ("alpha", "beta", "gamma")
MAX_BYTES = 300_000


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("shots-report")
    config = validate_config({
        "scenarios_dir": "scenarios", "results_dir": "results",
        "models": {m: {"adapter": "null", "label": m.title()} for m in MODELS},
        "suites": {"main": {"models": list(MODELS), "archetypes": list(TASKS), "repetitions": 2, "window_s": 60}},
        "judge": {"judges": {"judge-main": {"backend": "anthropic", "model": "x"}, "judge-second": {"backend": "anthropic", "model": "y"}}},
        "analysis": {"bootstrap": 200, "dpi": 80, "figure_formats": ["png"]},
        "text_pairing": {"max_turns": 8},
    }, root / "config.yaml")
    settings = from_config(config, root)
    spec = S.Spec(models=MODELS, tasks=TASKS, scenarios=3, repetitions=2, own={"alpha": 0.8, "gamma": -0.6}, seed=3)
    measures = root / "measures.tsv"
    S.write(spec, measures)
    tables, figs = root / "analysis" / "tables", root / "analysis" / "figures"
    runs = runs_product([measures], settings, root / "analysis" / "runs" / "all.tsv")
    for task in TASKS:
        matrix_product(runs, settings, task, tables / f"score_{task}.tsv", tables / f"score_{task}.html")
    rating_product(runs, settings, tables / "leaderboard.tsv", tables / "rating_effects.tsv", tables / "leaderboard.html")
    mats = [Matrix.from_frame(pd.read_csv(tables / f"score_{t}.tsv", sep="\t"), t, C.TASK_TITLES[t]) for t in TASKS]
    figures.save(figures.matrices_figure(mats, settings), figs / "task_matrices", settings)
    out = root / "analysis" / "report.html"
    build_report([tables / "leaderboard.html"], [figs / "task_matrices.png"], settings, out,
                 REPO / "workflow" / "report", config=config)
    return out, tables / "leaderboard.html"


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory):
    """The viewer demo, built before the browser starts (its judge runs an event loop of its own,
    which cannot start inside Playwright's)."""
    root, config = built_demo(tmp_path_factory)
    build_site(config, root)
    return root, config, root / "results" / "site"


@pytest.fixture(scope="module")
def browser(report, demo_site):
    with playwright_api.sync_playwright() as p, tempfile.TemporaryDirectory(prefix="dyafdb-chromium-") as profile:
        # a fresh profile each run, so nothing an earlier run left changes the pictures
        context = p.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), args=ARGS,
                                                       viewport={"width": 1280, "height": 900})
        yield context
        context.close()


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def _check(path: Path, min_w: int, min_h: int) -> None:
    """A picture worth committing: a PNG of at least that size, under the docs' size budget, not one colour."""
    from PIL import Image

    w, h = _png_size(path)
    assert w >= min_w and h >= min_h, (path, w, h)
    assert 5_000 < path.stat().st_size < MAX_BYTES, (path, path.stat().st_size)
    colours = Image.open(path).convert("RGB").resize((64, 64)).getcolors(64 * 64)
    assert colours is None or len(colours) > 20, path


def test_report_heatmaps_and_leaderboard(report, browser):
    out, leaderboard = report
    page = browser.new_page()
    page.goto(out.as_uri())
    figure = page.locator("section img[alt='task_matrices']")
    figure.scroll_into_view_if_needed()
    figure.screenshot(path=str(IMG / "report-heatmaps.png"))
    _check(IMG / "report-heatmaps.png", 600, 200)
    page.goto(leaderboard.as_uri())
    text = page.inner_text("body")
    assert "anchor, pinned" in text and "ties" in text and "battles" in text
    page.locator("body").screenshot(path=str(IMG / "leaderboard.png"))
    _check(IMG / "leaderboard.png", 600, 150)
    page.close()


def test_viewer_page(demo_site, browser):
    root, config, site = demo_site
    row = next(r for r in build_design(config, root) if r.archetype == "T1-1" and r.model_a != r.model_b and r.opener == "b")
    page = browser.new_page()
    page.goto((site / conversation_page(row.conversation_id)).as_uri())
    page.click(".tl-label.spk-B button.mute")  # show the mute/solo controls in use
    assert "Speaker A · side b" in page.inner_text(".chips")
    page.screenshot(path=str(IMG / "viewer-page.png"))
    _check(IMG / "viewer-page.png", 1000, 600)
    page.close()
