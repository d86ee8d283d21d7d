"""Per-conversation results sit one folder down, in their scenario's shard (dyafdb.paths), so no
folder holds thousands of entries; the rules match only the right shard; an old flat results folder
is named and moved, never silently recorded again."""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from pathlib import Path

import yaml
from snakemake.io import regex_from_filepattern, update_wildcard_constraints

from conftest import REPO, scripted_config, write_suite
from dyafdb.cli import main
from dyafdb.commands._preflight import results_checks
from dyafdb.config import validate_config
from dyafdb.paths import (CONVERSATION_IN_SHARD, CONVERSATION_RULES, SHARD_PATTERN, Results, flat_layout_entries,
                          shard_of)
from dyafdb.suite.design import build_design, conversation_id, pairings
from results_paths import RESULTS, results_at

CID = conversation_id("t1-1-cake-order", "m1", "m2", "a", 1, 60)


def per_conversation_paths(results: Results, cid: str) -> dict[str, str]:
    """Every path Results names for one conversation: each method that takes a conversation, found
    by its signature, so a method added later is covered without listing it here."""
    paths = {}
    for name, method in inspect.getmembers(results, inspect.ismethod):
        params = inspect.signature(method).parameters
        if "conversation" not in params:
            continue
        if "rule" in params:
            paths.update({f"{name}({rule})": method(rule, cid) for rule in CONVERSATION_RULES})
        elif "name" in params:
            paths.update({f"{name}({f})": method(cid, f) for f in ("audio.wav", "text.jsonl", "meta.json", "garble.json")})
        else:
            paths[name] = method(cid)
    return paths


def test_every_per_conversation_path_is_in_its_shard():
    paths = per_conversation_paths(Results("r"), CID)
    assert {"recording", "segments", "transcript_txt", "transcript_json", "measures_json", "worker_log_dir",
            "conversation_log(record)", "conversation_benchmark(score)"} <= set(paths), sorted(paths)
    for name, path in paths.items():
        assert f"/t1-1-cake-order/{CID}" in path, (name, path)
    # the rules' patterns: the shard becomes a wildcard beside the conversation
    for name, path in per_conversation_paths(Results("r"), "{conversation}").items():
        assert "/{shard}/{conversation}" in path, (name, path)
    assert Results("r").worker_log_dir("{wildcards.conversation}") == "r/logs/workers/{wildcards.shard}/{wildcards.conversation}"
    assert shard_of("by-hand.take-2") == "by-hand.take-2"  # an id outside the design is its own shard


def test_no_folder_holds_more_than_a_few_hundred_entries_for_8000_conversations():
    # 8 archetypes x 20 scenarios x 4 models' 10 pairings x 5 (opener, repetition, window):
    # 8,000 conversations, the optional suites' scale. Paths only, nothing is written.
    models = ["m1", "m2", "m3", "m4"]
    ids = [conversation_id(f"t{a}-1-scenario-{s:02d}", m1, m2, opener, rep, window)
           for a in range(1, 9) for s in range(20) for m1, m2 in pairings(models)
           for opener, rep, window in (("a", 1, 60), ("b", 1, 60), ("a", 2, 60), ("b", 2, 60), ("a", 1, 30))]
    assert len(set(ids)) == 8000
    entries: dict[str, set[str]] = defaultdict(set)
    for cid in ids:
        for path in per_conversation_paths(Results("r"), cid).values():
            parts = path.split("/")
            for depth in range(1, len(parts)):
                entries["/".join(parts[:depth])].add(parts[depth])
    biggest = max(entries, key=lambda folder: len(entries[folder]))
    assert len(entries[biggest]) <= 200, (biggest, len(entries[biggest]))
    assert len(entries["r/recordings"]) == 160  # one shard per scenario


def _constrained(pattern: str) -> re.Pattern:
    """The regex Snakemake builds for an output pattern with the rules' constraints."""
    return re.compile(regex_from_filepattern(update_wildcard_constraints(
        pattern, {"shard": SHARD_PATTERN, "conversation": CONVERSATION_IN_SHARD}, {})))


def test_the_rules_constraints_match_a_conversation_only_in_its_own_shard():
    for pattern in (RESULTS.recording_file("{conversation}", "meta.json"), RESULTS.measures_json("{conversation}"),
                    RESULTS.conversation_log("record", "{conversation}")):
        regex = _constrained(pattern)
        right = RESULTS.recording_file(CID, "meta.json") if "recordings" in pattern else (
            RESULTS.measures_json(CID) if "measures" in pattern else RESULTS.conversation_log("record", CID))
        match = regex.match(right)
        assert match and match["shard"] == "t1-1-cake-order" and match["conversation"] == CID
        for wrong in ("t1-1-cake", "t1-1-cake-order-2", "t1-2-cake-order"):
            assert not regex.match(right.replace("/t1-1-cake-order/", f"/{wrong}/")), (pattern, wrong)
    # Snakemake also checks each wildcard's value against its constraint alone (Rule.get_wildcards)
    assert re.compile(SHARD_PATTERN).match("t1-1-cake-order") and re.compile(CONVERSATION_IN_SHARD).match(CID)


def _project(tmp_path: Path) -> list:
    write_suite(tmp_path, archetypes=["T1-1"])
    cfg = {**scripted_config(), "judge": {"prompts_dir": str(REPO / "config" / "judge")}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    return build_design(validate_config(cfg, "test"), tmp_path)


def test_the_plan_puts_outputs_logs_and_benchmarks_in_shards_and_refuses_a_wrong_one(tmp_path):
    from test_resume import snakemake

    rows = _project(tmp_path)
    cid = rows[0].conversation_id
    plan = snakemake(tmp_path, "-n", RESULTS.measures_json(cid))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    shard = f"/{rows[0].scenario}/{cid}"
    for kind in ("output", "log", "benchmark"):
        listed = re.findall(rf"^\s*{kind}: (.+)$", plan.stdout, re.M)
        assert len(listed) == 2 and all(shard in p for line in listed for p in line.split(", ")), (kind, listed)
    wrong = RESULTS.measures_json(cid).replace(f"/{rows[0].scenario}/", "/t1-1-fixture/")
    assert wrong != RESULTS.measures_json(cid)
    refused = snakemake(tmp_path, "-n", wrong)
    assert refused.returncode != 0 and "MissingRuleException" in refused.stdout + refused.stderr


def _flat_results(results: Path, cids: list[str]) -> dict[Path, str]:
    """A results folder as versions before the shards wrote it: {path: content}."""
    written = {}
    for cid in cids:
        for rel in (f"recordings/{cid}/meta.json", f"recordings/{cid}/audio.wav", f"segments/{cid}.json",
                    f"transcripts/{cid}.txt", f"transcripts/{cid}.json", f"measures/{cid}.json", f"logs/record/{cid}.log",
                    f"logs/score/{cid}.log", f"benchmarks/record/{cid}.tsv", f"logs/workers/{cid}/a.log"):
            path = results / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{rel}\n")
            written[path] = f"{rel}\n"
    return written


def test_an_old_flat_results_folder_is_named_by_the_preflight_and_moved_by_reshard(tmp_path, capsys):
    rows = _project(tmp_path)
    config = validate_config(yaml.safe_load((tmp_path / "config.yaml").read_text()), "test")
    cids = [rows[0].conversation_id, rows[1].conversation_id, "c1"]  # c1: an id without "__", its own shard
    results = tmp_path / "results"
    written = _flat_results(results, cids)
    (results / "recordings" / f".staging-{cids[0]}-99").mkdir()  # a recording in progress is no result
    paths = results_at(tmp_path)
    assert len(list(flat_layout_entries(paths))) == 9 * len(cids)  # the recording folder is one entry
    [_, layout] = results_checks(config, 0, tmp_path)
    assert not layout.ok and "27 per-conversation results in the old flat layout" in layout.detail
    assert "dyafdb reshard" in layout.fix

    cfg = ["--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)]
    assert main(["reshard", *cfg, "--dry-run"]) == 0
    assert "would move 27" in capsys.readouterr().out and all(p.exists() for p in written)
    assert main(["reshard", *cfg]) == 0
    assert "moved 27" in capsys.readouterr().out
    for cid in cids:
        moved = {Path(paths.recording_file(cid, "meta.json")): f"recordings/{cid}/meta.json",
                 Path(paths.segments(cid)): f"segments/{cid}.json", Path(paths.transcript_json(cid)): f"transcripts/{cid}.json",
                 Path(paths.measures_json(cid)): f"measures/{cid}.json",
                 Path(paths.conversation_log("score", cid)): f"logs/score/{cid}.log",
                 Path(paths.conversation_benchmark("record", cid)): f"benchmarks/record/{cid}.tsv",
                 Path(paths.worker_log_dir(cid)) / "a.log": f"logs/workers/{cid}/a.log"}
        for path, rel in moved.items():
            assert path.read_text() == f"{rel}\n", path
    assert not list(flat_layout_entries(paths)) and results_checks(config, 0, tmp_path)[1].ok
    assert paths.recorded() == sorted(cids)
    assert (results / "recordings" / f".staging-{cids[0]}-99").is_dir()
    assert main(["reshard", *cfg]) == 0 and "moved 0" in capsys.readouterr().out


def test_reshard_leaves_an_entry_whose_place_is_taken(tmp_path, capsys):
    rows = _project(tmp_path)
    cid = rows[0].conversation_id
    _flat_results(tmp_path / "results", [cid])
    taken = Path(results_at(tmp_path).segments(cid))
    taken.parent.mkdir(parents=True)
    taken.write_text("newer\n")
    assert main(["reshard", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "1 left in place" in out and f"segments/{cid}.json" in out
    assert taken.read_text() == "newer\n" and (tmp_path / "results" / "segments" / f"{cid}.json").exists()


def test_the_workflow_stops_before_recording_again_what_the_old_layout_holds(tmp_path, monkeypatch):
    from test_resume import snakemake

    rows = _project(tmp_path)
    _flat_results(tmp_path / "results", [rows[0].conversation_id])
    run = snakemake(tmp_path, "--until", "record")
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert "preflight failed" in out and "FAILED results layout" in out and "dyafdb reshard" in out
    assert not Path(results_at(tmp_path).recording(rows[1].conversation_id)).exists()  # nothing recorded
