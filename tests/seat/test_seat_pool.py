"""Several participants pooled into one analysis (`dyafdb seat --pool`, dyafdb.seat.pool): three people
talk to two scripted models from the Python client (tests/seat/test_seat_server.py), the models' own
conversations are recorded in the main folder, and the pool holds every session under an id of its own,
passes `dyafdb verify`, is measured, and its analysis labels the person with 3 people and 6 sessions."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from helpers_seat import SeatServer
from test_seat_server import seat_config, talk
from dyafdb.cli import main
from dyafdb.config import validate_config
from dyafdb.paths import results_of
from dyafdb.record.recording import read_meta
from dyafdb.seat.study import new_participant, participant_config, participant_rows, seat_rows, write_participant_config
from dyafdb.suite.design import build_design, split_participant

OTHER = {"adapter": "scripted", "params": {"script": [{"start_s": 1.6, "end_s": 1.9, "text": "yes", "amplitude": 0.05}]}}


def pool_test_config() -> dict:
    config = seat_config(window_s=2.0)
    config["models"]["other"] = OTHER
    config["suites"]["t"]["models"].append("other")
    return validate_config(config, "seat pool test config")


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_three_participants_pool_into_one_analysis_beside_the_models(suite_root, capsys):
    root = suite_root
    config = pool_test_config()
    config_path = root / "seat.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    args = ["-c", str(config_path), "--root", str(root)]
    design = build_design(config, root)
    models_only = [r.conversation_id for r in design if "someone" not in (r.model_a, r.model_b)]
    assert len(models_only) == 4  # partner+other: 2 role assignments x 2 openers
    for cid in models_only:
        assert main(["record", *args, "--id", cid, "--in-process", "--no-progress"]) == 0

    # Participants whose numbers lie a cell's variant count apart get the same variant: their sessions
    # are one design row, told apart by the participant tag.
    rows = seat_rows(config, root)
    same = [participant_rows(config, rows, pid)[0].conversation_id for pid in ("p001", "p005")]
    assert same[0] == same[1]
    tagged = {pid: [r.conversation_id for r in build_design(participant_config(config, root, pid), root)]
              for pid in ("p001", "p005")}
    assert tagged["p001"][0] == same[0] + "__p001" and tagged["p005"][0] == same[0] + "__p005"

    sessions = {}
    for n in range(3):
        pid = new_participant(config, root)
        own = participant_config(config, root, pid)
        write_participant_config(own, root)
        share = build_design(own, root)
        assert len(share) == 2 and all(split_participant(r.conversation_id)[1] == pid for r in share)
        sessions[pid] = [r.conversation_id for r in share]
        with SeatServer(own, root, participant=pid) as server:
            for row in share[:1] if pid == "p003" else share:  # p003 comes back for their second session later
                assert talk(server, row.conversation_id)["messages"][-1]["type"] == "saved"
    assert len({cid for ids in sessions.values() for cid in ids}) == 6

    # p001's first session scored in their own folder: its scores travel with it, made from the same recording
    p001 = ["-c", str(root / "results" / "participants" / "p001" / "seat-config.yaml"), "--root", str(root)]
    assert main(["score", *p001, "--id", sessions["p001"][0]]) == 0
    code, out = run_cli(capsys, "seat", *args, "--pool")
    assert code == 0, out
    assert "9 conversations (9 added, 0 replaced, 0 kept, 0 removed; 1 brought their scores)" in out, out
    assert "p003: 1 session of their share not recorded yet" in out and "scored 8 of 9" in out, out
    pool_config_path = root / "results" / "pool" / "seat-config.yaml"
    pooled = validate_config(yaml.safe_load(pool_config_path.read_text()), pool_config_path)
    assert results_of(pooled, root).root.endswith("results/pool")

    own = participant_config(config, root, "p003")  # p003's second session, then the pool again
    with SeatServer(own, root, participant="p003") as server:
        assert talk(server, sessions["p003"][1])["messages"][-1]["type"] == "saved"
    code, out = run_cli(capsys, "seat", *args, "--pool")
    assert code == 0 and "10 conversations (1 added, 0 replaced, 9 kept, 0 removed" in out, out
    assert "scored 1 of 10" in out, out

    pool_args = ["-c", str(pool_config_path), "--root", str(root)]
    pooled = validate_config(yaml.safe_load(pool_config_path.read_text()), pool_config_path)
    ids = {r.conversation_id for r in build_design(pooled, root)}
    assert ids == {cid for v in sessions.values() for cid in v} | set(models_only)
    for pid, cids in sessions.items():  # each recording is the participant's own, provenance untouched
        for cid in cids:
            pool_meta = read_meta(results_of(pooled, root).recording(cid))
            own_meta = read_meta(results_of(participant_config(config, root, pid), root).recording(cid))
            assert pool_meta == own_meta and pool_meta["seat"]["participant"] == pid
    code, out = run_cli(capsys, "verify", *pool_args, "--deep")
    assert code == 0 and out.startswith("ok: 10 conversations, 10 recordings, 10 measures"), out

    assert main(["measures", *pool_args, "--no-judge"]) == 0
    measures = Path(results_of(pooled, root).measures_table)
    with open(measures, newline="") as fh:
        held = {rec["conversation_id"] for rec in csv.DictReader(fh, delimiter="\t")}
    assert held == ids
    code, out = run_cli(capsys, "verify", *pool_args)
    assert code == 0 and "ok:" in out, out

    from dyafdb.analysis.settings import from_config

    labels = from_config(pooled, root)
    assert labels.label("someone") == "Person (3 people, 6 sessions)", labels.label("someone")
    assert labels.label("partner") == "partner" and labels.label("other") == "other"
    runs = root / "runs.tsv"
    assert main(["analysis", "runs", *pool_args, "--measures", str(measures), "--out", str(runs)]) == 0
    table, page = root / "speech.tsv", root / "speech.html"
    assert main(["analysis", "turntaking", *pool_args, "--runs", str(runs), "--metric", "backchannel",
                 "--out", str(table), "--html", str(page)]) == 0
    with open(table, newline="") as fh:  # the person's row holds all 6 sessions, each model's its own
        matrix = {rec["row"]: rec for rec in csv.DictReader(fh, delimiter="\t")}
    assert (matrix["someone"]["n:partner"], matrix["someone"]["n:other"]) == ("3", "3"), matrix["someone"]
    assert (matrix["partner"]["n:other"], matrix["partner"]["n:someone"]) == ("4", "3"), matrix["partner"]
    html = page.read_text()
    assert "Person (3 people, 6 sessions)" in html, html[:2000]

    # A participant left out of the pool takes their sessions out of it.
    code, out = run_cli(capsys, "seat", *args, "--pool", "p001", "p002")
    assert code == 0 and "8 conversations (0 added, 0 replaced, 8 kept, 2 removed" in out, out
    code, out = run_cli(capsys, "verify", *pool_args)
    assert code == 1 and "rows" in out  # the measures table still holds p003's rows until it is rebuilt
    assert main(["measures", *pool_args, "--no-judge"]) == 0
    code, out = run_cli(capsys, "verify", *pool_args)
    assert code == 0, out
    pooled = validate_config(yaml.safe_load(pool_config_path.read_text()), pool_config_path)
    assert from_config(pooled, root).label("someone") == "Person (2 people, 4 sessions)"
