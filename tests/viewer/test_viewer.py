"""The viewer's site builder without a browser: sampler, peaks, questions, blind files, rebuilds, CLI, workflow."""

from __future__ import annotations

import base64
import binascii
import re
import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import REPO, TEST_PATH, TESTS_DIR, scripted_config, write_suite
from dyafdb.cli import main as cli_main
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from dyafdb.judge.rubric import QUESTIONS, Context, LabelQuestion, Verdict
from dyafdb.suite.scenarios import load_scenario
from dyafdb.errors import InputError
from synthetic_suite import scenario_doc
from dyafdb.viewer import media as media_mod
from dyafdb.viewer.layout import MEDIA_SHARD_CHARS, conversation_page, media_name
from dyafdb.viewer.media import FORMATS, compute_peaks, media_key
from dyafdb.paths import shard_of
from dyafdb.config import load_config
from dyafdb.viewer.pages import json_script
from dyafdb.viewer.questions import human_questions
from dyafdb.viewer.sampler import Candidate, apportion, sample
from dyafdb.viewer.settings import viewer_settings
from dyafdb.viewer.site import build_site
from dyafdb.viewer.study import key_file
from viewer_site import REPLY_MARKER, built_demo, leaks
from results_paths import results_at


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return built_demo(tmp_path_factory)


def settings_at(config, root, out: Path, **changes):
    return dataclasses.replace(viewer_settings(config, root), out=out, **changes)


# ---------------------------------------------------------------------------- sampler


def candidates(archetype: str, sizes: dict[str, int]) -> list[Candidate]:
    return [Candidate(f"{archetype}-{p}-{i:03d}", archetype, p) for p, n in sizes.items() for i in range(n)]


def test_apportion_is_proportional_with_largest_remainders():
    assert apportion(10, {"x": 20, "y": 20, "z": 10}) == {"x": 4, "y": 4, "z": 2}
    assert apportion(5, {"x": 30, "y": 10, "z": 10}) == {"x": 3, "y": 1, "z": 1}
    assert apportion(2, {"x": 10, "y": 10, "z": 10}) == {"x": 1, "y": 1, "z": 0}  # tie: name order
    assert apportion(100, {"x": 3, "y": 4}) == {"x": 3, "y": 4}  # capped at what exists
    for n in range(0, 31):
        got = apportion(n, {"a": 12, "b": 12, "c": 6})
        assert sum(got.values()) == n
        assert all(abs(got[k] - n * v / 30) < 1 for k, v in {"a": 12, "b": 12, "c": 6}.items())


def test_sampler_is_uniform_within_pairings_in_proportion_and_seeded():
    pool = candidates("T1-1", {"m1+m1": 60, "m1+m2": 120, "m2+m2": 60}) + candidates("T1-2", {"m1+m1": 30, "m1+m2": 60, "m2+m2": 30})
    picks = sample(pool, {"T1-1": 40, "T1-2": 60}, seed=7)
    assert len(picks) == 100  # the paper's 100 conversations...
    assert sum(len(p.seats) for p in picks) == 140  # ...and 140 seats
    per = Counter((p.archetype, p.pairing) for p in picks)
    assert per == {("T1-1", "m1+m1"): 10, ("T1-1", "m1+m2"): 20, ("T1-1", "m2+m2"): 10,
                   ("T1-2", "m1+m1"): 15, ("T1-2", "m1+m2"): 30, ("T1-2", "m2+m2"): 15}
    assert {p.seats for p in picks if p.archetype == "T1-1"} == {("a", "b")}
    assert {p.seats for p in picks if p.archetype == "T1-2"} == {("a",)}
    assert [p.code for p in picks] == [f"{i:03d}" for i in range(1, 101)]
    assert len({p.conversation_id for p in picks}) == 100
    # shuffled: the archetypes are not in blocks
    assert [p.archetype for p in picks] != sorted(p.archetype for p in picks)
    assert sample(pool, {"T1-1": 40, "T1-2": 60}, seed=7) == picks
    assert {p.conversation_id for p in sample(pool, {"T1-1": 40, "T1-2": 60}, seed=8)} != {p.conversation_id for p in picks}
    # adding an archetype does not change what is drawn for another
    alone = {p.conversation_id for p in sample(pool, {"T1-1": 40}, seed=7)}
    assert alone == {p.conversation_id for p in picks if p.archetype == "T1-1"}


def test_sampler_draws_every_conversation_equally_often():
    pool = candidates("T1-2", {"x+x": 10, "x+y": 20})
    counts = Counter(p.conversation_id for seed in range(600) for p in sample(pool, {"T1-2": 6}, seed=seed))
    share = np.array([counts[c.conversation_id] for c in pool]) / 600
    assert np.allclose(share, 0.2, atol=0.06)  # 2 of 10 and 4 of 20 per draw


# ---------------------------------------------------------------------------- peaks, questions, escaping


def test_peaks_share_one_scale_and_cover_the_audio():
    audio = np.zeros((2, 24_000 * 2 + 100), dtype=np.float32)
    audio[0, :24_000] = 0.5 * np.sin(np.linspace(0, 2000, 24_000))
    audio[1, 24_000:36_000] = 0.1
    peaks = {k: np.frombuffer(base64.b64decode(v), np.uint8) for k, v in compute_peaks(audio, 50).items()}
    assert len(peaks["a"]) == len(peaks["b"]) == 101  # 480-sample bins, the last one partial
    assert peaks["a"][:50].min() > 200 and not peaks["a"][50:].any()
    assert 40 < peaks["b"][60] < 60  # 0.1 against a 0.5 reference: a fifth of the scale
    assert not peaks["b"][:50].any()


def test_human_questions_use_the_judge_labels_and_measures(tmp_path):
    for archetype in ("T1-1", "T1-2", "T2", "T3-2", "T4-1", "T4-2", "T4-3", "T4-4"):
        doc = scenario_doc(archetype)
        folder = tmp_path / archetype
        folder.mkdir()
        (folder / f"{doc['id']}.yaml").write_text(yaml.safe_dump(doc))
        scenario = load_scenario(folder / f"{doc['id']}.yaml")
        transcript = {"speakers": {"A": "b", "B": "a"}, "lines": [
            {"speaker": "A", "start_s": 0.0, "end_s": 1.0, "text": "hello"},
            {"speaker": "B", "start_s": 1.2, "end_s": 2.0, "text": "hi"},
            {"speaker": "A", "start_s": 2.4, "end_s": 3.0, "text": "so"}]}
        human = human_questions(archetype, scenario.answer_key, transcript)
        by_key = {q.key: q for q in human}
        assert len(by_key) == len(human)
        for question in QUESTIONS.values():
            if archetype not in question.archetypes:
                continue
            for seat in question.seats(archetype):
                ctx = Context(archetype, scenario, transcript, "", seat)
                if isinstance(question, LabelQuestion):
                    labels = question.labels(ctx)
                    rows = question.rows(Verdict(labels[0]), ctx)
                    keys = {f"{r['side']}:{r['measure']}" for r in rows} & set(by_key)
                    assert len(keys) == 1, (archetype, question.id, keys)
                    offered = [o["value"] for o in by_key[keys.pop()].options]
                    assert sorted(offered) == sorted(labels)  # exactly the judge's label set
                elif question.id == "role_timing":
                    for measure in question.measures:
                        q = by_key[f"{seat}:{measure}"]
                        speaker = q.speaker
                        assert [o["value"] for o in q.options] == ["none"] + [
                            f"{t:.2f}" for t in ctx.start_times(seat)]
                        assert speaker == ("A" if seat == "b" else "B")
                else:  # agreed price
                    assert by_key["a:agreed_price"].kind == "number"
        for q in human:
            assert "A" in q.text or "B" in q.text or q.speaker is None
            assert not any(name in q.text.lower() for name in ("side a", "side b"))


def test_page_data_cannot_close_its_script_element():
    text = "</script><!--<script>alert(1)</script>"
    html = json_script({"text": text})
    body = html[html.index(">") + 1:-len("</script>")]
    assert "<" not in body and json.loads(body)["text"] == text


# ---------------------------------------------------------------------------- the built site


def plain_files(folder: Path):
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in (".html", ".js", ".css", ".tsv", ".json"):
            yield path, path.read_text(encoding="utf-8")


def test_blind_files_name_no_model_and_the_study_maps_codes(demo, tmp_path):
    root, config = demo
    out = tmp_path / "site"
    summary = build_site(config, root, settings_at(config, root, out))
    assert summary.conversations == 24 and summary.items == 8
    for path, text in plain_files(out / "annotate"):
        assert not leaks(text, config, root), (path, leaks(text, config, root))
        low = text.lower()
        assert "occupancy" not in low and "role_adherence" not in low or path.name == "study.js", path
    for path in (out / "media").rglob("*"):
        assert not leaks(str(path.relative_to(out)), config, root)
    study = json.loads((out / "annotate" / "study.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    # which conversation each item stands for is only in the key file beside the site
    assert not (out / "annotation-sample.tsv").exists()
    key = json.loads(key_file(out).read_text())
    assert key_file(out).parent == out.parent and key["study"] == study["study"]
    assert [(it["code"], it["ref"]) for it in study["items"]] == [(r["code"], r["item"]) for r in key["items"]]
    per_archetype = Counter(r["archetype"] for r in key["items"])
    assert per_archetype == {"T1-1": 3, "T1-2": 3, "T4-1": 2}  # viewer.annotation.conversations in the demo config
    for it, row in zip(study["items"], key["items"]):
        assert {seat for seat, _ in it["q"]} == set(row["seats"])
    # the full pages do show the models, the judges and their raw replies
    page = next((out / "c").glob("t1-1-*/t1-1-*__zephyrine__quokkalux__*.html")).read_text()
    assert "Zephyrine XL" in page and "Quokkalux Mini" in page and REPLY_MARKER in page and "occupancy" in page


def _local_links(html: str):
    for link in re.findall(r'(?:href|src)="([^"]*)"', html):
        if link and not link.startswith(("#", "data:", "http:", "https:", "mailto:")):
            yield link.split("#", 1)[0]


def test_site_files_sit_one_folder_down_and_every_link_resolves(demo, tmp_path):
    root, config = demo
    out = tmp_path / "site"
    build_site(config, root, settings_at(config, root, out))
    pages = [p for p in (out / "c").rglob("*") if p.is_file()]
    media = [p for p in (out / "media").rglob("*") if p.is_file()]
    assert len(pages) == 24 and len(media) == 48  # audio and peaks per conversation
    for path in pages:  # c/<scenario>/<id>.html
        rel = path.relative_to(out / "c")
        assert len(rel.parts) == 2 and rel.parts[0] == shard_of(path.stem), rel
    for path in media:  # media/<first characters of the token>/<token>.<ext>
        rel = path.relative_to(out / "media")
        assert len(rel.parts) == 2 and rel.parts[0] == path.stem[:MEDIA_SHARD_CHARS] and len(rel.parts[0]) == 2, rel
    # every page's links (scripts, styles, audio, navigation) resolve from the page's own folder
    checked = 0
    for path in out.rglob("*.html"):
        for link in _local_links(path.read_text(encoding="utf-8")):
            if link.endswith("analysis/report.html"):  # outside the site; the demo fixture builds no report
                continue
            assert (path.parent / link).resolve().is_file(), (path.relative_to(out), link)
            checked += 1
    assert checked > 24 * 4
    # and so do the index's row links, which index.js makes from index-data.js
    text = (out / "index-data.js").read_text()
    rows = json.loads(text[text.index("=") + 1:].strip().rstrip(";"))["rows"]
    assert rows and all((out / r["href"]).is_file() for r in rows)


def test_no_site_folder_holds_an_entry_per_conversation_at_main_suite_scale():
    """The files a full build of the main suite (7,560 conversations) writes under c/ and media/:
    no folder holds more than a few hundred entries (flat, c/ and media/ held 7,560 and 15,120)."""
    config = load_config(REPO / "config" / "config.yaml")
    ids = [r.conversation_id for r in build_design(config, REPO)]
    assert len(ids) == 7560
    salt = "0f" * 16
    ext = FORMATS["vorbis"][0]
    files = [conversation_page(i) for i in ids]
    files += [f"media/{media_name(media_key(i, salt), e)}" for i in ids for e in (ext, ".json")]
    assert len(set(files)) == 3 * len(ids)
    entries: dict[str, set[str]] = {}
    for f in files:
        parts = f.split("/")
        for depth in range(1, len(parts)):
            entries.setdefault("/".join(parts[:depth]), set()).add(parts[depth])
    biggest = max(entries, key=lambda k: len(entries[k]))
    assert len(entries[biggest]) <= 300, (biggest, len(entries[biggest]))
    assert len(entries["media"]) == 256 and len(entries["c"]) == len({shard_of(i) for i in ids})


def test_index_data_holds_every_measure(demo, tmp_path):
    root, config = demo
    out = tmp_path / "site"
    build_site(config, root, settings_at(config, root, out, annotation=False))
    assert not (out / "annotate").exists() or not any((out / "annotate").iterdir())
    text = (out / "index-data.js").read_text()
    data = json.loads(text[text.index("=") + 1:].strip().rstrip(";"))
    assert len(data["rows"]) == 24
    keys = [c["key"] for c in data["catalog"]]
    assert {"occupancy|a|", "tor_end|b|", "role_adherence|a|main", "role_adherence|b|second", "won|b|main"} <= set(keys)
    row = next(r for r in data["rows"] if r["archetype"] == "T1-1")
    measures = json.loads(Path(results_at(root).measures_json(row['id'])).read_text())
    assert row["v"][keys.index("occupancy|b|")] == measures["values"]["b"]["occupancy"]
    judged = [json.loads(x) for x in (root / "results" / "judge" / "main" / "T1-1" / "role_adherence.jsonl").read_text().splitlines()]
    label = next(r["label"] for r in judged if r["conversation_id"] == row["id"] and r["seat"] == "a")
    assert row["l"][str(keys.index("role_adherence|a|main"))] == label


def test_rebuild_reuses_audio_and_drops_stale_pages(demo, tmp_path, monkeypatch):
    root, config = demo
    out = tmp_path / "site"
    settings = settings_at(config, root, out, audio="flac")
    build_site(config, root, settings)
    audio = sorted((out / "media").glob("*/*.flac"))
    assert len(audio) == 24 and all(p.stat().st_size > 1000 for p in audio)
    stamp = {p: p.stat().st_mtime_ns for p in audio}

    calls = []
    real = media_mod.sf.write
    monkeypatch.setattr(media_mod.sf, "write", lambda *a, **k: calls.append(a) or real(*a, **k))
    ids = [r.conversation_id for r in build_design(config, root) if r.archetype == "T1-1"]
    summary = build_site(config, root, dataclasses.replace(settings, annotation=False), ids=ids)
    assert not calls  # nothing re-encoded: the peaks and audio came from the cache
    assert sorted(p.stem for p in (out / "c").glob("*/*.html")) == sorted(ids)
    assert len(list((out / "media").glob("*/*.flac"))) == 8 and summary.removed > 0
    assert all(p.stat().st_mtime_ns == stamp[p] for p in (out / "media").glob("*/*.flac"))
    # the sub-folders of scenarios no longer built are removed with their pages
    assert {p.name for p in (out / "c").iterdir()} == {shard_of(i) for i in ids}
    assert not (out / "annotation-sample.tsv").exists()

    # a build that fails half-way leaves no index.html behind
    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(media_mod.sf, "write", boom)
    with pytest.raises(OSError):
        build_site(config, root, dataclasses.replace(settings, audio="wav"))
    assert not (out / "index.html").exists()


def _decodings(text: str):
    """Every reading of the token-like strings in ``text``: URL-decoded, base64 (standard and URL-safe)
    and hex, each as text."""
    from urllib.parse import unquote

    yield unquote(text)
    for token in set(re.findall(r"[A-Za-z0-9+/_=-]{8,}", text)):
        core = token.rstrip("=")
        for alphabet in (None, b"-_"):
            try:
                raw = base64.b64decode(core + "=" * (-len(core) % 4), altchars=alphabet, validate=False)
            except (binascii.Error, ValueError):
                continue
            yield raw.decode("utf-8", errors="ignore")
        for run in re.findall(r"[0-9a-fA-F]{8,}", token):
            yield bytes.fromhex(run[: len(run) // 2 * 2]).decode("utf-8", errors="ignore")


def _all_text(folder: Path):
    for path in sorted(folder.rglob("*")):
        yield path, str(path.relative_to(folder))  # every file and folder name
        if path.is_file() and path.suffix in (".html", ".js", ".css", ".json", ".tsv", ".txt"):
            yield path, path.read_text(encoding="utf-8")


def test_the_blind_site_decodes_to_no_id_or_model_name(demo, tmp_path):
    root, config = demo
    out = tmp_path / "raters"
    build_site(config, root, settings_at(config, root, out), annotation_only=True)
    names = {r.conversation_id for r in build_design(config, root)}
    checked = 0
    for path, text in _all_text(out):
        for decoded in _decodings(text):
            checked += 1
            assert not leaks(decoded, config, root), (path, leaks(decoded, config, root))
    assert checked > 50
    # the key outside the site is what maps tokens back, and media names are salted: a hash of an id
    # (what an outsider could compute from the design) names no file
    key = json.loads(key_file(out).read_text())
    assert {it["conversation_id"] for it in key["items"]} <= names
    import hashlib

    media = {p.stem for p in (out / "media").rglob("*")}
    assert not media & {hashlib.sha256(cid.encode()).hexdigest()[:16] for cid in names}
    # a rebuild keeps the salt, so tokens and media names stay the same
    before = (out / "annotate" / "study.js").read_text()
    build_site(config, root, settings_at(config, root, out), annotation_only=True)
    assert (out / "annotate" / "study.js").read_text() == before


def test_annotation_only_site_holds_only_the_sample(demo, tmp_path):
    root, config = demo
    out = tmp_path / "raters"
    summary = build_site(config, root, settings_at(config, root, out), annotation_only=True)
    assert summary.items == 8 and summary.conversations == 0
    assert not (out / "c").exists() and not (out / "index-data.js").exists()
    assert len(list((out / "media").glob("*/*.ogg"))) == 8
    assert "annotate/index.html" in (out / "index.html").read_text()
    for path, text in plain_files(out):
        assert not leaks(text, config, root), (path, leaks(text, config, root))


# ---------------------------------------------------------------------------- CLI, config, workflow


def test_cli_builds_the_site_and_guards_the_full_one(demo, tmp_path, capsys):
    root, config = demo
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    out = tmp_path / "cli-site"
    ids = [r.conversation_id for r in build_design(config, root)][:2]
    argv = ["viewer", "-c", str(cfg), "--root", str(root), "--out", str(out), "--id", ids[0], "--id", ids[1],
            "--audio", "wav", "--no-annotation"]
    assert cli_main(argv) == 0
    assert "2 conversation pages" in capsys.readouterr().out
    assert len(list((out / "media").glob("*/*.wav"))) == 2 and (out / "index.html").exists()
    site = viewer_settings(config, root).out
    assert cli_main(["viewer", "-c", str(cfg), "--root", str(root), "--annotation-only", "--out", str(site)]) == 2
    assert "overwrite the full site" in capsys.readouterr().err
    assert cli_main(["viewer", "-c", str(cfg), "--root", str(root), "--out", str(out), "--sample", "T1-1"]) == 2
    assert cli_main(["viewer", "-c", str(cfg), "--root", str(root), "--out", str(out), "--id", "nope"]) == 2


def test_viewer_config_is_checked():
    base = scripted_config()
    with pytest.raises(InputError, match="viewer"):
        validate_config({**base, "viewer": {"audio": "mp3"}}, "test")
    with pytest.raises(InputError, match="viewer"):
        validate_config({**base, "viewer": {"annotation": {"conversations": {"T5": 3}}}}, "test")
    ok = validate_config({**base, "viewer": {"annotation": {"conversations": {"T1-1": 3}, "questions": ["role_adherence"]}}}, "t")
    s = viewer_settings(ok, Path("/r"))
    assert s.sample == {"T1-1": 3} and s.questions == ("role_adherence",) and s.out == Path("/r/results/site")


def snakemake_dry_run(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp),
           "--configfile", str(tmp / "config.yaml"), "--cores", "1", "-n", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_workflow_builds_the_site_in_the_default_target(tmp_path):
    write_suite(tmp_path)
    cfg = scripted_config()
    cfg["judge"] = {"judges": {"main": {"backend": "openai", "model": "m", "api_key_env": None}},
                    "prompts_dir": str(REPO / "config" / "judge")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    plan = snakemake_dry_run(tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "rule view:" in plan.stdout and "results/site/index.html" in plan.stdout
    cfg["viewer"] = {"build": False}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    plan = snakemake_dry_run(tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "rule view:" not in plan.stdout
