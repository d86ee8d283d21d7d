"""Issue 27's "done when", on a small run of the real workflow (scripted agents, the local stub judge):

- compare of the run against itself flags no cell;
- after one judge prompt is edited and Snakemake reruns what it plans (the judge jobs of that
  question and the analysis after them, no recording, no scoring), compare flags that question's
  cells and no other, and refuses the two runs until the prompt's difference is accepted;
- a bundle round-trips: bundle -> verify -> the analysis from the bundle's measures gives the run's
  tables byte for byte; a bundle with one measure and one judge answer tampered names both;
- a run with one model left out, plus a bundle of that model's conversations, merges to the same
  tables as the full run, an archetype only the bundle holds included (its tables read the bundle's
  conversations alone); a bundle made with another judge prompt is refused, naming the prompt;
- the report holds a card per model, which the viewer's index links to.

The run takes the workflow a minute or two on a loaded machine; every test here shares it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, TEST_PATH, scripted_config, write_suite
from dyafdb.cli import main
from stub_chat_server import StubChat

MODELS = {
    "talker": {"adapter": "scripted", "label": "Talker",
               "params": {"script": [{"start_s": 0.0, "end_s": 1.0, "text": "hello there"}]}},
    "quiet": {"adapter": "scripted", "label": "Quiet",
              "params": {"script": [{"start_s": 2.0, "end_s": 2.8, "text": "hi"}]}},
}
ARCHETYPES = ["T1-1", "T4-2"]
MARK = "Be strict: STRICT-RUBRIC."


class StrictStub(StubChat):
    """The stub judge, answering the last label offered when the prompt carries MARK: an edited prompt
    that changes the judge's answers, as a reworded rubric does with a real judge."""

    def answer(self, body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        offered = re.search(r"<one of: ([^>]*)>", prompt)
        if body["model"] == "stub-judge" and MARK in prompt and offered:
            return "ANSWER: " + offered.group(1).split(" | ")[-1]
        return super().answer(body)


def _config(url: str, models=("talker", "quiet")) -> dict:
    cfg = scripted_config(models={m: MODELS[m] for m in models}, window_s=4.0, archetypes=ARCHETYPES,
                          scenarios_per_archetype=1)
    cfg["judge"] = {"judges": {"main": {"backend": "openai", "model": "stub-judge", "base_url": url, "api_key_env": None}},
                    "prompts_dir": "prompts"}
    # a bundle's model is rated as a new model against the references: the full run rates it so too
    # PNG only, at a low resolution: figure formats and dpi change no number a bundle or compare reads
    cfg["analysis"] = {"bootstrap": 40, "reference_models": ["talker"], "figure_formats": ["png"], "dpi": 50}
    return cfg


def snakemake(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """The workflow on the project in ``tmp`` (as tests/workflow/test_resume.py runs it)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp),
           "--configfile", str(tmp / "config.yaml"), *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


def _run(tmp: Path, *args: str):
    done = snakemake(tmp, "--cores", "2", *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("share")
    write_suite(tmp, archetypes=ARCHETYPES)
    shutil.copytree(REPO / "config" / "judge", tmp / "prompts")
    with StrictStub() as stub:
        cfg = _config(stub.url)
        (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))
        _run(tmp)
        shutil.copytree(tmp / "results", tmp / "before")  # run A's files, kept as they were
        # run A as it travels: a folder's fingerprint is what its config and files say now, so the
        # run before an edit is kept as a bundle (results.json holds the prompts' digests then)
        assert _cli("bundle", "-c", tmp / "config.yaml", "--root", tmp, "-o", tmp / "before.tar.gz") == 0
        assert _cli("bundle", "-c", tmp / "config.yaml", "--root", tmp, "--model", "quiet", "-o", tmp / "quiet.tar.gz") == 0
        prompt = tmp / "prompts" / "role_adherence.txt"
        prompt.write_text(prompt.read_text().replace("Question:", f"{MARK}\n\nQuestion:", 1))
        plan = snakemake(tmp, "-n", "--cores", "2")
        _run(tmp)
        yield {"root": tmp, "cfg": cfg, "plan": plan.stdout, "url": stub.url}


def _cli(*argv: str) -> int:
    return main([str(a) for a in argv])


def _tables(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(folder).glob("*.tsv"))}


def test_compare_of_a_run_with_itself_flags_nothing(project, tmp_path):
    root = project["root"]
    assert _cli("compare", root / "before", root / "before", "--out", tmp_path / "same.tsv") == 0
    table = pd.read_csv(tmp_path / "same.tsv", sep="\t", keep_default_na=False)
    shared = table[table["in"] == "both"]
    assert len(shared) > 20 and shared["paired"].all()
    assert not shared["significant"].any()
    assert (shared["diff"] == 0).all()
    assert set(table["in"]) == {"both"}
    page = (tmp_path / "same.html").read_text()
    assert "0 significant" in page


def test_one_prompt_edit_replans_its_question_and_compare_flags_only_its_cells(project, tmp_path, capsys):
    root, plan = project["root"], project["plan"]
    planned = re.findall(r"^rule (\w+):", plan, re.M)
    assert "judge" in planned and "record" not in planned and "score" not in planned, sorted(set(planned))
    questions = set(re.findall(r"question=(\w+)", plan))
    assert questions == {"role_adherence"}, questions

    # refused without accepting the prompt's difference, the difference named
    assert _cli("compare", root / "before.tar.gz", root / "results", "--out", tmp_path / "c.tsv") == 2
    assert "judge.prompt.role_adherence" in capsys.readouterr().err
    code = _cli("compare", root / "before.tar.gz", root / "results", "--out", tmp_path / "c.tsv",
                "--accept", "judge.prompt.role_adherence")
    assert code == 1  # something is flagged
    table = pd.read_csv(tmp_path / "c.tsv", sep="\t", keep_default_na=False)
    flagged = table[table["significant"].astype(str) == "True"]
    # role_adherence and the two things read from it: in_role and the T1-1 score (its average too)
    assert set(flagged["measure"]) <= {"role_adherence", "in_role", "score"}
    assert "role_adherence" in set(flagged["measure"])
    assert set(flagged["task"]) == {"T1-1"}
    assert table[table["in"] == "both"]["paired"].all()  # same recordings: every cell paired
    others = table[(table["in"] == "both") & ~table["measure"].isin(["role_adherence", "in_role", "score"])]
    assert len(others) > 10 and (others["diff"].astype(float) == 0).all()
    # sorted by size of change: the flagged cells come first
    sizes = table[table["in"] == "both"]["diff"].astype(float).abs().tolist()
    assert sizes == sorted(sizes, reverse=True)
    page = (tmp_path / "c.html").read_text()
    assert "judge.prompt.role_adherence" in page and "class='sig'" in page
    assert "site/index.html#" in page  # cells link to the conversations in each run's viewer


def test_a_bundle_round_trips_through_verify_and_the_analysis(project, tmp_path):
    root = project["root"]
    bundle = root / "before.tar.gz"
    assert bundle.stat().st_size < 5_000_000
    assert _cli("verify", bundle) == 0
    with tarfile.open(bundle) as tf:
        names = tf.getnames()
        doc = json.load(tf.extractfile("results.json"))
        text = b"".join(tf.extractfile(m).read() for m in tf.getmembers() if m.isfile())
    assert names[0] == "results.json"
    assert str(root).encode() not in text and b"/tmp/" not in text  # no absolute path travels
    design = (root / "before" / "design" / "conversations.tsv").read_text().strip().splitlines()
    assert doc["conversations"] == len(design) - 1 and doc["audio"] == "none"
    assert doc["fingerprint"]["settings"]["judge.prompt.role_adherence"]
    assert {h["partner"] for h in doc["headline"]} >= {"talker", "quiet", "avg"}
    assert all("n" in h and "lower" in h for h in doc["headline"])
    # the analysis from the bundle's measures: the run's tables, byte for byte
    from dyafdb.share.recompute import recompute_tables
    from dyafdb.share.sources import open_source
    from dyafdb.paths import Results
    from dyafdb.suite.design import build_design

    src = open_source(bundle)
    rows = build_design(src.config, src.root)
    out = Results(str(tmp_path / "again"))
    stems = recompute_tables(src.config, src.root, src.measures_path, out, {r.conversation_id: r for r in rows})
    original = _tables(root / "before" / "analysis" / "tables")
    again = _tables(tmp_path / "again" / "analysis" / "tables")
    assert len(stems) > 10
    for name in original:
        if Path(name).stem in stems:
            assert again[name] == original[name], name
    src.close()


def _rewrite(bundle: Path, out: Path, edit) -> None:
    with tarfile.open(bundle) as tf:
        members = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    edit(members)
    with tarfile.open(out, "w:gz") as tf:
        import io

        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def test_verify_names_a_tampered_measure_and_a_tampered_answer(project, tmp_path, capsys):
    root = project["root"]
    bundle = tmp_path / "run.tar.gz"
    assert _cli("bundle", "-c", root / "config.yaml", "--root", root, "-o", bundle) == 0
    capsys.readouterr()

    def tamper(members: dict) -> None:
        lines = members["results/scores/measures.tsv"].decode().splitlines(keepends=True)
        head = lines[0].rstrip("\n").split("\t")
        measure, value = head.index("measure"), head.index("value")
        at = next(i for i, ln in enumerate(lines[1:], 1) if ln.split("\t")[measure] == "text_share"
                  and ln.split("\t")[value] not in ("",))
        cells = lines[at].rstrip("\n").split("\t")
        cells[value] = "0.0123"
        lines[at] = "\t".join(cells) + "\n"
        members["results/scores/measures.tsv"] = "".join(lines).encode()
        batch = next(n for n in sorted(members) if n.startswith("results/judge/main/T4-2/") and n.endswith(".jsonl"))
        recs = [json.loads(ln) for ln in members[batch].decode().splitlines() if ln.strip()]
        rec = next(r for r in recs if r.get("rows"))
        rec["rows"][0]["label"] = "yes" if rec["rows"][0]["label"] != "yes" else "no"
        members[batch] = ("\n".join(json.dumps(r) for r in recs) + "\n").encode()
        # a careful forger also fixes the digests: the numbers and the answers still give it away
        doc = json.loads(members["results.json"])
        from dyafdb.share.bundle import member_digest

        doc["files"] = {n: member_digest(d) for n, d in members.items() if n != "results.json"}
        members["results.json"] = json.dumps(doc).encode()

    forged = tmp_path / "forged.tar.gz"
    _rewrite(bundle, forged, tamper)
    assert _cli("verify", forged) == 1
    out = capsys.readouterr().out
    assert re.search(r"numbers: health_text_share\.tsv: \d+ cell\(s\) differ \(row '\w+' column '\w+': '[.\d]+' in the bundle, '[.\d]+' recomputed", out), out
    assert re.search(r"answers: results/judge/main/T4-2/\w+\.jsonl: conversation \S+ seat [ab] measure", out), out

    def tamper_bytes(members: dict) -> None:
        members["results/scores/measures.tsv"] += b""
        name = next(n for n in members if n.endswith(".txt") and n.startswith("results/transcripts/"))
        members[name] = members[name] + b"added later\n"

    _rewrite(bundle, forged, tamper_bytes)
    assert _cli("verify", forged) == 1
    out = capsys.readouterr().out
    assert "digest: results/transcripts/" in out and "changed after the bundle was written" in out


def test_one_model_left_out_plus_its_bundle_merges_to_the_full_tables(project, tmp_path):
    from dyafdb.config import validate_config
    from dyafdb.paths import Results
    from dyafdb.share.recompute import recompute_tables
    from dyafdb.suite.design import build_design

    root = project["root"]
    bundle = root / "quiet.tar.gz"  # quiet's conversations, made before the prompt edit
    assert _cli("verify", bundle) == 0
    # the lab's side: the same project, a run of talker alone (its recordings are the full run's)
    lab = tmp_path / "local"
    shutil.copytree(root / "before", lab / "results")
    for name in ("scenarios", "prompts"):
        shutil.copytree(root / name, lab / name)
    shutil.copy(REPO / "config" / "judge" / "role_adherence.txt", lab / "prompts" / "role_adherence.txt")
    full_cfg = validate_config(_config(project["url"]), "full")
    local = _config(project["url"], models=("talker",))
    local["analysis"]["bundles"] = [str(bundle)]
    local = validate_config(local, "local")
    rows = build_design(local, lab)
    assert {r.pairing for r in rows} == {"talker+talker"}
    out = Results(str(tmp_path / "merged"))
    stems = recompute_tables(local, lab, None, out, {r.conversation_id: r for r in build_design(full_cfg, lab)})
    full = _tables(root / "before" / "analysis" / "tables")
    merged = _tables(tmp_path / "merged" / "analysis" / "tables")
    checked = [n for n in full if Path(n).stem in stems]
    assert "leaderboard.tsv" in checked and "score_T1-1.tsv" in checked
    for name in checked:
        assert merged[name] == full[name], name
    # the new model's row and column are there, and its label says where it came from
    score = pd.read_csv(tmp_path / "merged" / "analysis" / "tables" / "score_T1-1.tsv", sep="\t")
    assert set(score["row"]) >= {"talker", "quiet"}
    from dyafdb.analysis.bundles import with_bundle_models

    marked = with_bundle_models(dict(local), lab)
    assert marked["models"]["quiet"]["label"] == f"Quiet [bundle {bundle.name}]"
    from dyafdb.analysis.report import build_report
    from dyafdb.analysis.settings import from_config

    report = tmp_path / "merged" / "analysis" / "report.html"
    build_report(sorted((tmp_path / "merged" / "analysis" / "tables").glob("*.html")), [], from_config(marked, lab), report,
                 config=marked, root=lab)
    page = report.read_text()
    assert "<h2>merged bundles</h2>" in page and "quiet.tar.gz: quiet (" in page
    assert f"Model card: Quiet [bundle {bundle.name}]" in page and "id='card-talker'" in page
    # the same through the command line: `dyafdb analysis --add-bundle FILE <product> ...`
    local_cfg = _config(project["url"], models=("talker",))
    (lab / "config.yaml").write_text(yaml.safe_dump(local_cfg))
    runs = tmp_path / "runs_T1-1.tsv"
    assert _cli("analysis", "--add-bundle", bundle, "runs", "-c", lab / "config.yaml", "--root", lab,
                "--archetype", "T1-1", "--out", runs) == 0
    assert set(pd.read_csv(runs, sep="\t")["model"]) == {"talker", "quiet"}
    assert _cli("analysis", "runs", "-c", lab / "config.yaml", "--root", lab, "--archetype", "T1-1", "--out", runs) == 0
    assert set(pd.read_csv(runs, sep="\t")["model"]) == {"talker"}


def test_an_archetype_only_the_bundle_holds_gets_its_tables_from_the_bundle(project, tmp_path):
    """A local design without an archetype the bundle holds (as a cross-play-only suite is without
    conversations when one model is run locally): the analysis plans that archetype's tables, reading
    the bundle's conversations alone, and they are the full run's tables over the same conversations."""
    from dyafdb.analysis import columns as C
    from dyafdb.analysis.inputs import AnalysisInputs
    from dyafdb.analysis.io import read_measures, write_tsv
    from dyafdb.config import validate_config
    from dyafdb.paths import Results
    from dyafdb.share.recompute import recompute_tables
    from dyafdb.suite.design import build_design

    root = project["root"]
    bundle = root / "quiet.tar.gz"  # quiet's conversations of T1-1 and T4-2, made before the prompt edit
    lab = tmp_path / "local"
    shutil.copytree(root / "before", lab / "results")
    for name in ("scenarios", "prompts"):
        shutil.copytree(root / name, lab / name)
    shutil.copy(REPO / "config" / "judge" / "role_adherence.txt", lab / "prompts" / "role_adherence.txt")
    local = _config(project["url"], models=("talker",))
    local["suites"]["t"]["archetypes"] = ["T1-1"]
    local["analysis"]["bundles"] = [str(bundle)]
    local = validate_config(local, "local")
    rows = {r.conversation_id: r for r in build_design(local, lab)}
    assert {r.archetype for r in rows.values()} == {"T1-1"}
    plan = AnalysisInputs(local, rows, str(lab / "results"), lab)
    assert plan.tasks == ["T1-1", "T4-2"]
    # the bundle-only archetype's runs table is made from the bundle alone (no local score or judge file)
    assert plan.archetype_files(type("W", (), {"task": "T4-2"})()) == [str(bundle)]
    assert len(plan.archetype_files(type("W", (), {"task": "T1-1"})())) > 1
    stems = recompute_tables(local, lab, None, Results(str(tmp_path / "merged")), rows)
    assert "score_T4-2" in stems
    # the full run's tables over the same conversations: its measures without talker's T4-2 self-play
    measures = read_measures([root / "before" / "scores" / "measures.tsv"])
    dropped = (measures[C.ARCHETYPE] == "T4-2") & (measures[C.MODEL] == "talker") & (measures[C.PARTNER] == "talker")
    assert dropped.any() and not measures[~dropped].empty
    kept = tmp_path / "measures.tsv"
    raw = pd.read_csv(root / "before" / "scores" / "measures.tsv", sep="\t", dtype=str, keep_default_na=False)
    write_tsv(raw[~raw[C.CONVERSATION].isin(set(measures.loc[dropped, C.CONVERSATION]))], kept)
    full_cfg = validate_config(_config(project["url"]), "full")
    full_rows = {r.conversation_id: r for r in build_design(full_cfg, lab)}
    recompute_tables(full_cfg, lab, kept, Results(str(tmp_path / "full")), full_rows)
    want = _tables(tmp_path / "full" / "analysis" / "tables")
    got = _tables(tmp_path / "merged" / "analysis" / "tables")
    assert sorted(got) == sorted(want) and "score_T4-2.tsv" in got
    for name in want:
        assert got[name] == want[name], name
    score = pd.read_csv(tmp_path / "merged" / "analysis" / "tables" / "score_T4-2.tsv", sep="\t")
    assert "quiet" in set(score["row"])
    runs = pd.read_csv(tmp_path / "merged" / "analysis" / "runs" / "T4-2.tsv", sep="\t")
    assert not ((runs["model"] == "talker") & (runs["partner"] == "talker")).any() and (runs["model"] == "quiet").any()


def test_a_bundle_made_with_another_prompt_is_refused_naming_it(project, tmp_path, capsys):
    from dyafdb.analysis.bundles import merge_bundles
    from dyafdb.analysis.io import read_measures
    from dyafdb.config import validate_config
    from dyafdb.errors import InputError

    root = project["root"]
    edited = tmp_path / "edited.tar.gz"  # made after the prompt edit (results/)
    assert _cli("bundle", "-c", root / "config.yaml", "--root", root, "--model", "quiet", "-o", edited) == 0
    lab = tmp_path / "lab"
    for name in ("scenarios", "prompts"):
        shutil.copytree(root / name, lab / name)
    shutil.copy(REPO / "config" / "judge" / "role_adherence.txt", lab / "prompts" / "role_adherence.txt")
    local = _config(project["url"], models=("talker",))
    local["analysis"]["bundles"] = [str(edited)]
    local = validate_config(local, "local")
    with pytest.raises(InputError, match=r"cannot merge.*judge\.prompt\.role_adherence"):
        merge_bundles(read_measures(root / "before" / "scores" / "measures.tsv"), local, lab)


def test_the_report_has_a_card_per_model_linked_from_the_viewer(project):
    root = project["root"]
    report = (root / "results" / "analysis" / "report.html").read_text()
    for model, label in (("talker", "Talker"), ("quiet", "Quiet")):
        assert f"id='card-{model}'" in report and f"Model card: {label}" in report
    index = (root / "results" / "site" / "index.html").read_text()
    assert 'href="../analysis/report.html#card-talker"' in index
    assert 'href="../analysis/report.html#card-quiet"' in index


def test_the_card_spells_conversation_pages_as_the_viewer_does():
    from dyafdb.analysis.cards import conversation_href
    from dyafdb.viewer.layout import conversation_page

    cid = "t1-1-x__a__b__open-a__rep1__20s"
    assert conversation_href(Path("/s/site/index.html"), cid, Path("/s/site")) == conversation_page(cid)


CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--allow-file-access-from-files"]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("no Chromium at /usr/bin/chromium: apt-get install -y --no-install-recommends chromium")
    api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")
    with api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def test_model_cards_in_chromium_from_the_viewer_to_a_conversation(project, browser):
    site = project["root"] / "results" / "site"
    page = browser.new_page()
    page.goto((site / "index.html").as_uri())
    page.click("a.model-card:has-text('Quiet')")
    page.wait_for_load_state()
    assert page.url.endswith("report.html#card-quiet")
    card = page.locator("#card-quiet")
    assert card.is_visible()
    assert card.locator("h2").inner_text() == "Model card: Quiet"
    text = card.inner_text()
    for heading in ("Profile", "Task scores against each partner", "Additive effects", "Audio health",
                    "Best and worst conversations per task"):
        assert heading in text, heading
    scores = card.locator("table").nth(1).inner_text()
    assert "vs Talker" in scores and "vs Quiet" in scores and "n=" in scores
    assert re.search(r"\[[-.\d]+, [-.\d]+\]", scores), scores  # values carry their intervals
    link = card.locator("a.conversation").first
    href = link.get_attribute("href")
    link.click()
    page.wait_for_load_state()
    assert page.url.endswith(href.split("/")[-1]) and "quiet" in page.url
    assert page.locator("h1").count() >= 1
    page.close()


def test_a_shared_site_is_sealed_and_plays_in_chromium(project, browser, tmp_path):
    root = project["root"]
    bundle = tmp_path / "preview.tar.gz"
    assert _cli("bundle", "-c", root / "config.yaml", "--root", root, "--preview-audio", "-o", bundle) == 0
    with tarfile.open(bundle) as tf:
        assert any(n.endswith("/audio.ogg") for n in tf.getnames())
    site = tmp_path / "shared"
    assert _cli("viewer", "--share", bundle, "--out", site) == 0
    from dyafdb.share.site import outside_links

    assert outside_links(site) == []
    assert "the report" not in (site / "index.html").read_text()  # no report travelled: no link to one
    page = browser.new_page()
    outside = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(site.as_uri()) and
            not r.url.startswith(("data:", "blob:")) else None)
    page.goto((site / "index.html").as_uri())
    page.wait_for_selector("table tbody tr")
    design = (root / "results" / "design" / "conversations.tsv").read_text().strip().splitlines()
    assert page.locator("table tbody tr").count() == len(design) - 1
    page.locator("table tbody tr").first.click()
    page.wait_for_selector("audio", state="attached")
    duration = page.evaluate("""() => new Promise(done => { const a = document.querySelector('audio');
        if (a.readyState >= 1) done(a.duration); else a.addEventListener('loadedmetadata', () => done(a.duration)); })""")
    assert duration > 1.0
    assert outside == [], outside
    page.close()


def test_compare_draws_runs_apart_when_their_recordings_differ(project, tmp_path):
    root = project["root"]

    def rerecorded(members: dict) -> None:
        lines = members["results/scores/measures.tsv"].decode().splitlines(keepends=True)
        col = lines[0].rstrip("\n").split("\t").index("recording")
        out = [lines[0]]
        for ln in lines[1:]:
            cells = ln.rstrip("\n").split("\t")
            cells[col] = "f" * 16  # the same design rows, recorded again
            out.append("\t".join(cells) + "\n")
        members["results/scores/measures.tsv"] = "".join(out).encode()

    other = tmp_path / "other.tar.gz"
    _rewrite(root / "before.tar.gz", other, rerecorded)
    assert _cli("compare", root / "before.tar.gz", other, "--out", tmp_path / "u.tsv") in (0, 1)
    table = pd.read_csv(tmp_path / "u.tsv", sep="\t", keep_default_na=False)
    shared = table[table["in"] == "both"]
    assert len(shared) > 20 and not shared["paired"].astype(str).eq("True").any()


def test_a_secret_in_a_file_stops_the_bundle(project, tmp_path, monkeypatch, capsys):
    root = project["root"]
    key = "sk-ant-test-0123456789abcdef0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    leaky = tmp_path / "leaky"
    shutil.copytree(root / "before", leaky)
    transcript = sorted((leaky / "transcripts").rglob("*.txt"))[0]
    transcript.write_text(transcript.read_text() + f"my key is {key}\n")
    out = tmp_path / "leaky.tar.gz"
    assert _cli("bundle", "-c", root / "config.yaml", "--root", root, "--override-json",
                json.dumps({"results_dir": str(leaky)}), "-o", out) == 2
    err = capsys.readouterr().err
    assert transcript.name in err and "secret" in err and key not in err
    assert not out.exists()


def test_the_workflow_plans_a_configured_bundle_as_an_input_of_the_runs_tables(tmp_path):
    from dyafdb.analysis.inputs import AnalysisInputs
    from dyafdb.config import validate_config
    from dyafdb.suite.design import build_design

    write_suite(tmp_path, archetypes=ARCHETYPES)
    cfg = _config("http://127.0.0.1:9/v1", models=("talker",))
    plain = validate_config(cfg, "plain")
    cfg["analysis"]["bundles"] = ["lab.tar.gz"]
    merged = validate_config(cfg, "merged")
    rows = {r.conversation_id: r for r in build_design(plain, tmp_path)}
    wildcards = type("W", (), {"task": "T1-1"})()
    assert "lab.tar.gz" not in AnalysisInputs(plain, rows, "results").archetype_files(wildcards)
    assert "lab.tar.gz" in AnalysisInputs(merged, rows, "results").archetype_files(wildcards)
    # a run without bundles keeps the params it had (nothing reruns for the new key); one with them reruns
    assert "bundles" not in AnalysisInputs(plain, rows, "results").runs_settings()
    assert "lab.tar.gz" in AnalysisInputs(merged, rows, "results").runs_settings()
