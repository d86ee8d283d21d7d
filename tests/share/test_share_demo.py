"""Issue 27's checks on a finished run (the demo's): DYAFDB_SHARE_RESULTS=<results folder> runs them,
e.g. DYAFDB_SHARE_RESULTS=results/demo; without it they skip (the small workflow run in
test_share_workflow.py checks the same on every run of the suite).

- compare of the run against itself flags no cell;
- its bundle without audio is under 5 MB and verifies (schema, digests, answers, numbers);
- its report holds one card per model, each shown in headless Chromium with its intervals and links.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest

from dyafdb.cli import main

RESULTS = os.environ.get("DYAFDB_SHARE_RESULTS")
pytestmark = pytest.mark.skipif(not RESULTS, reason="set DYAFDB_SHARE_RESULTS=<a finished results folder> (e.g. results/demo)")
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def results() -> Path:
    folder = Path(RESULTS).resolve()
    if not (folder / "run.json").exists():
        pytest.skip(f"{folder}: no run.json (not a results folder the workflow wrote)")
    return folder


def test_compare_of_the_run_with_itself_flags_nothing(results, tmp_path):
    assert main(["compare", str(results), str(results), "--out", str(tmp_path / "self.tsv")]) == 0
    table = pd.read_csv(tmp_path / "self.tsv", sep="\t", keep_default_na=False)
    shared = table[table["in"] == "both"]
    assert len(shared) > 100 and not shared["significant"].astype(str).eq("True").any()
    assert shared["paired"].astype(str).eq("True").all()


def test_its_bundle_is_small_and_verifies(results, tmp_path, capsys):
    bundle = tmp_path / "run.tar.gz"
    assert main(["bundle", "--results", str(results), "-o", str(bundle)]) == 0
    print(f"bundle without audio: {bundle.stat().st_size / 1e6:.2f} MB")
    assert bundle.stat().st_size < 5_000_000
    assert main(["verify", str(bundle)]) == 0
    assert capsys.readouterr().out.count("ok: ") == 1


def test_the_model_cards_in_chromium(results):
    if not CHROMIUM.exists():
        pytest.skip("no Chromium at /usr/bin/chromium")
    api = pytest.importorskip("playwright.sync_api")
    report = results / "analysis" / "report.html"
    models = sorted(set(re.findall(r"id='card-([^']+)'", report.read_text(encoding="utf-8"))))
    assert len(models) >= 2, "the report has no model cards: run `dyafdb analysis report` (or snakemake) again"
    with api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        for model in models:
            page.goto(report.as_uri() + f"#card-{model}")
            card = page.locator(f"#card-{model}")
            assert card.is_visible()
            assert card.locator("table").count() >= 4
            text = card.inner_text()
            assert re.search(r"\[[-.\d]+, [-.\d]+\] n=\d+", text), text[:500]
            links = card.locator("a.conversation")
            assert links.count() >= 1
            target = (report.parent / links.first.get_attribute("href")).resolve()
            assert target.exists(), target
        browser.close()
