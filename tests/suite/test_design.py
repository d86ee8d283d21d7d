"""The design table: the paper's counts, deterministic ids and seeds."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from conftest import REPO, write_suite
from dyafdb.config import load_config
from dyafdb.suite.design import build_design, conversation_id, derive_seed, read_design, write_design


def paper_config(tmp_path: Path, **enable) -> dict:
    write_suite(tmp_path, per_archetype=20)
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for suite, on in enable.items():
        cfg["suites"][suite]["enabled"] = on
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return load_config(path)


def test_main_suite_is_7560_conversations(tmp_path):
    rows = build_design(paper_config(tmp_path), tmp_path)
    assert len(rows) == 7560
    per_pairing = Counter(r.pairing for r in rows)
    assert sorted(per_pairing.values()) == [840, 840, 840, 1680, 1680, 1680]
    for pairing, n in per_pairing.items():
        m1, m2 = pairing.split("+")
        assert n == (840 if m1 == m2 else 1680)
    # per scenario: cross-play 2 roles x 2 openers x 3 reps = 12; self-play 2 openers x 3 reps = 6
    per_cell = Counter((r.scenario, r.pairing) for r in rows)
    assert {n for (s, p), n in per_cell.items() if p.split("+")[0] == p.split("+")[1]} == {6}
    assert {n for (s, p), n in per_cell.items() if p.split("+")[0] != p.split("+")[1]} == {12}


def test_optional_suites_add_what_the_paper_implies(tmp_path):
    rows = build_design(paper_config(tmp_path, game_balance=True, window_30=True, window_120=True), tmp_path)
    by_suite = Counter(r.suite for r in rows)
    assert by_suite == {"main": 7560, "game_balance": 2160, "window_30": 7560, "window_120": 7560}


def test_ids_are_readable_safe_unique_and_seeds_derive_from_them(tmp_path):
    rows = build_design(paper_config(tmp_path), tmp_path)
    ids = [r.conversation_id for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9._+-]*", i) and len(i) < 128 for i in ids)
    row = rows[0]
    assert row.conversation_id == conversation_id(row.scenario, row.model_a, row.model_b, row.opener, row.repetition, row.window_s)
    assert row.seed == derive_seed(row.conversation_id)
    assert derive_seed(row.conversation_id, 2) != row.seed
    again = build_design(paper_config(tmp_path), tmp_path)
    assert [(r.conversation_id, r.seed) for r in again] == [(r.conversation_id, r.seed) for r in rows]


def test_role_swap_only_in_cross_play_and_opener_swap_everywhere(tmp_path):
    rows = build_design(paper_config(tmp_path), tmp_path)
    cell = [r for r in rows if r.scenario == "t4-2-fixture-01" and r.pairing == "personaplex+raon" and r.repetition == 1]
    assert {(r.model_a, r.model_b, r.opener) for r in cell} == {
        ("personaplex", "raon", "a"), ("personaplex", "raon", "b"), ("raon", "personaplex", "a"), ("raon", "personaplex", "b")}
    selfp = [r for r in rows if r.scenario == "t4-2-fixture-01" and r.pairing == "raon+raon" and r.repetition == 1]
    assert {(r.model_a, r.model_b, r.opener) for r in selfp} == {("raon", "raon", "a"), ("raon", "raon", "b")}
    assert all(r.role_a == "attacker" and r.role_b == "defender" for r in cell)


def test_adding_a_model_keeps_every_existing_id(tmp_path):
    cfg = paper_config(tmp_path)
    before = {r.conversation_id for r in build_design(cfg, tmp_path)}
    cfg["suites"]["main"]["models"].append("moshi")
    after = build_design(cfg, tmp_path)
    new = [r for r in after if r.conversation_id not in before]
    assert before <= {r.conversation_id for r in after}
    assert {r.pairing for r in new} == {"personaplex+moshi", "minicpmo+moshi", "raon+moshi", "moshi+moshi"}


def test_design_table_round_trips(tmp_path):
    rows = build_design(paper_config(tmp_path), tmp_path)[:50]
    path = tmp_path / "design" / "conversations.tsv"
    write_design(rows, path)
    assert read_design(path) == rows


# ---------------------------------------------------------------- ids cannot collide (issue 23, item 6)

def _collision_config(models: list[str]) -> dict:
    from conftest import scripted_config

    cfg = scripted_config(models={m: {"adapter": "scripted", "params": {"script": []}} for m in models})
    cfg["suites"]["t"]["cross_play_only"] = False
    return cfg


def test_schema_refuses_model_names_that_would_make_two_rows_one_id(tmp_path):
    """`p`, `q__r`, `p__q`, `r`: p + q__r and p__q + r gave one id, 22 conversations instead of 24."""
    import pytest
    from dyafdb.errors import InputError

    for bad in ("q__r", "p_", "a___b"):
        path = tmp_path / f"{bad}.yaml"
        path.write_text(yaml.safe_dump(_collision_config(["p", bad])))
        with pytest.raises(InputError) as err:
            load_config(path)
        msg = str(err.value)
        assert str(path) in msg and f"'{bad}'" in msg and "'__'" in msg and "rename" in msg, msg
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump(_collision_config(["p", "q_r", "model_2b"])))
    load_config(ok)


def test_scenario_schema_refuses_ids_with_the_id_separator(tmp_path):
    import pytest
    from conftest import scenario_doc
    from dyafdb.errors import InputError
    from dyafdb.suite.scenarios import load_scenario

    doc = {**scenario_doc("T1-1"), "id": "t1-1-a__b"}  # already refused before issue 23: a guard
    path = tmp_path / "scenarios" / "T1-1" / "t1-1-a__b.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"t1-1-a__b"):
        load_scenario(path)


def test_design_refuses_two_rows_with_one_id_naming_both(tmp_path):
    """Without the schema (a config built in code), the design itself refuses a collision."""
    import pytest
    from dyafdb.errors import InputError

    write_suite(tmp_path, archetypes=["T1-1"], per_archetype=1)
    cfg = _collision_config(["p", "q__r", "p__q", "r"])
    cfg["bridge"]["lead_in_s"] = 1.5
    with pytest.raises(InputError) as err:
        build_design(cfg, tmp_path)
    msg = str(err.value)
    assert "p__q__r" in msg and "model_a p, model_b q__r" in msg and "model_a p__q, model_b r" in msg, msg
    assert "suites.t" in msg and "rename" in msg


def test_design_refuses_windows_that_print_alike_but_still_merges_a_repeated_row(tmp_path):
    import pytest
    from dyafdb.errors import InputError

    write_suite(tmp_path, archetypes=["T1-1"], per_archetype=1)
    cfg = _collision_config(["p", "q"])
    cfg["suites"]["w"] = {**cfg["suites"]["t"], "window_s": 4.0000001}
    with pytest.raises(InputError, match=r"suites\.t and suites\.w.*window_s 4\b.*window_s 4\.0000001"):
        build_design(cfg, tmp_path)
    cfg["suites"]["w"]["window_s"] = 4.0  # the same conversation twice: one row, as before
    assert len(build_design(cfg, tmp_path)) == len(build_design(_collision_config(["p", "q"]), tmp_path))


def test_a_suite_that_makes_no_conversation_is_refused_with_the_fix(tmp_path):
    """One model with cross_play_only made an empty design: the design job passed and every later job
    failed on empty inputs (or, beside other suites, the suite vanished without a word)."""
    import pytest
    from conftest import scripted_config, write_suite
    from dyafdb.config import validate_config
    from dyafdb.errors import InputError
    from dyafdb.suite.design import build_design

    write_suite(tmp_path, archetypes=["T1-1"])
    cfg = scripted_config(cross_play_only=True)
    cfg["suites"]["t"]["models"] = ["talker"]
    with pytest.raises(InputError, match=r"suites\.t makes no conversation.*cross_play_only: True.*fix:"):
        build_design(validate_config(cfg, "test"), tmp_path)
    cfg["suites"]["t"].update(models=["talker"], only_with=["talker"])  # only talker's self-play, and that is off
    with pytest.raises(InputError, match=r"suites\.t makes no conversation.*only_with: \['talker'\]"):
        build_design(validate_config(cfg, "test"), tmp_path)
