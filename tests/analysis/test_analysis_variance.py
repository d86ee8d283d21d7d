"""Variance decomposition: a matrix with a known decomposition, statsmodels as a cross-check, the CLI."""

from __future__ import annotations

import io
import itertools
import json
import warnings
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.variance import decompose_cells, variance_table
from dyafdb.cli import main

MODELS = ["m1", "m2", "m3"]
A = {"m1": -1.0, "m2": 0.0, "m3": 1.0}  # model effects: SS = T*P * 2
B = {"m1": 0.5, "m2": 0.0, "m3": -0.5}  # partner effects: SS = T*M * 0.5
INTER = {("m1", "m1"): 1, ("m1", "m2"): -1, ("m2", "m1"): -1, ("m2", "m2"): 1}  # zero row/column sums: SS = T * 4
TASK = {"t1": -1.0, "t2": 1.0}  # SS = M*P * 2
D = {("t1", "m1"): 0.5, ("t1", "m2"): -0.5, ("t2", "m1"): -0.5, ("t2", "m2"): 0.5}  # task x model: SS = P * 1


def known_cells(with_task: bool) -> pd.DataFrame:
    rows = []
    tasks = list(TASK) if with_task else [None]
    for t, m, p in itertools.product(tasks, MODELS, MODELS):
        value = 2.0 + A[m] + B[p] + INTER.get((m, p), 0)
        if t:
            value += TASK[t] + D.get((t, m), 0)
        rows.append({**({"task": t} if t else {}), "model": m, "partner": p, "value": value})
    return pd.DataFrame(rows)


def test_known_matrix_without_task():
    got = decompose_cells(known_cells(False))
    total = 6 + 1.5 + 4
    assert set(got) == {"model", "partner", "model_x_partner"}
    assert got["model"] == pytest.approx(6 / total)
    assert got["partner"] == pytest.approx(1.5 / total)
    assert got["model_x_partner"] == pytest.approx(4 / total)


def test_known_cells_with_task():
    got = decompose_cells(known_cells(True))
    total = 18 + 12 + 3 + 8 + 3
    assert got == pytest.approx({"task": 18 / total, "model": 12 / total, "partner": 3 / total,
                                 "model_x_partner": 8 / total, "residual": 3 / total})


def test_closed_form_matches_statsmodels_anova_lm():
    rng = np.random.default_rng(3)
    cells = pd.DataFrame([{"task": t, "model": m, "partner": p, "value": rng.normal()}
                          for t, m, p in itertools.product("abcdefg", MODELS, MODELS)])
    fit = smf.ols("value ~ C(task) + C(model) + C(partner) + C(model):C(partner)", cells).fit()
    table = anova_lm(fit, typ=2)
    eta = table["sum_sq"] / table["sum_sq"].sum()
    got = decompose_cells(cells)
    assert got["task"] == pytest.approx(eta["C(task)"])
    assert got["model"] == pytest.approx(eta["C(model)"])
    assert got["partner"] == pytest.approx(eta["C(partner)"])
    assert got["model_x_partner"] == pytest.approx(eta["C(model):C(partner)"])
    assert got["residual"] == pytest.approx(eta["Residual"])


def test_cross_play_only_equals_nested_least_squares():
    rng = np.random.default_rng(4)
    cells = pd.DataFrame([{"task": t, "model": m, "partner": p, "value": rng.normal()}
                          for t, m, p in itertools.product("abcd", MODELS, MODELS) if m != p])
    got = decompose_cells(cells)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns that the interaction dummies are rank-deficient
        ssr = {f: smf.ols(f"value ~ {f}", cells).fit().ssr for f in (
        "C(task) + C(partner)", "C(task) + C(model)", "C(task) + C(model) + C(partner)",
            "C(task) + C(model) + C(partner) + C(model):C(partner)", "C(model) + C(partner) + C(model):C(partner)")}
    full = ssr["C(task) + C(model) + C(partner) + C(model):C(partner)"]
    main_ = ssr["C(task) + C(model) + C(partner)"]
    total = ((cells["value"] - cells["value"].mean()) ** 2).sum()
    assert got["model"] == pytest.approx((ssr["C(task) + C(partner)"] - main_) / total)
    assert got["partner"] == pytest.approx((ssr["C(task) + C(model)"] - main_) / total)
    assert got["model_x_partner"] == pytest.approx((main_ - full) / total)
    assert got["task"] == pytest.approx((ssr["C(model) + C(partner) + C(model):C(partner)"] - full) / total)
    assert got["residual"] == pytest.approx(full / total)


def test_variance_command_prints_the_terms(tmp_path):
    path = tmp_path / "cells.tsv"
    known_cells(True).to_csv(path, sep="\t", index=False)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["analysis", "variance-cells", str(path)]) == 0
    got = json.loads(out.getvalue())
    total = 44
    assert list(got) == ["task", "model", "partner", "model_x_partner", "residual"]
    assert got["model"] == pytest.approx(12 / total, abs=1e-6)
    path2 = tmp_path / "matrix.csv"
    known_cells(False).to_csv(path2, index=False)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["analysis", "variance-cells", str(path2)]) == 0
    assert set(json.loads(out.getvalue())) == {"model", "partner", "model_x_partner"}


def test_variance_command_rejects_repeated_cells(tmp_path, capsys):
    path = tmp_path / "bad.tsv"
    pd.DataFrame({"model": ["a", "a"], "partner": ["b", "b"], "value": [1, 2]}).to_csv(path, sep="\t", index=False)
    assert main(["analysis", "variance-cells", str(path)]) == 2
    assert "repeated cells a/b" in capsys.readouterr().err


def _turn_runs(noise: float):
    rng = np.random.default_rng(0)
    convs = []
    k = 0
    for task in ("T1-1", "T2"):
        for ma, mb in itertools.product(["x", "y"], repeat=2):
            for rep in range(3):
                k += 1
                va = {"x": 0.2, "y": 0.6}[ma] + rng.normal(0, noise)
                vb = {"x": 0.2, "y": 0.6}[mb] + rng.normal(0, noise)
                convs.append(conv(f"c{k}", task, ma, mb, a={"tor_pause": va}, b={"tor_pause": vb}))
    return build_runs(frame(*convs), settings(models=("x", "y")))


def test_bootstrap_sd_is_zero_without_within_cell_spread_and_positive_with_it():
    st = settings(models=("x", "y"), bootstrap=50)
    table = variance_table(_turn_runs(0.0), st, tasks=("T1-1", "T2"))
    row = table[(table["measure"] == "tor_pause") & (table["variant"] == "all") & (table["term"] == "model")].iloc[0]
    assert row["eta2"] == pytest.approx(1.0) and row["sd"] == pytest.approx(0.0) and row["complete"]
    noisy = variance_table(_turn_runs(0.2), st, tasks=("T1-1", "T2"))
    row = noisy[(noisy["measure"] == "tor_pause") & (noisy["variant"] == "all") & (noisy["term"] == "model")].iloc[0]
    assert row["sd"] > 0


def test_t3_1_pinned_self_play_is_flagged():
    convs = [conv(f"s{m}", "T3-1", m, m, a={"occupancy": 0.7}, b={"occupancy": 0.3}) for m in "xy"]
    convs += [conv("c1", "T3-1", "x", "y", a={"occupancy": 0.8}, b={"occupancy": 0.2})]
    runs = build_runs(frame(*convs), settings(models=("x", "y")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = variance_table(runs, settings(models=("x", "y")), score_tasks=("T3-1",))
    flagged = table[(table["measure"] == "T3-1") & (table["variant"] == "all")]
    assert flagged["flag"].str.contains("constant 0.50").all()
    # two models: the cross-play cells (x, y), (y, x) cannot separate model from partner, and say so
    cross = table[(table["measure"] == "T3-1") & (table["variant"] == "cross_play")]
    assert cross["flag"].str.contains("cannot separate model from partner").all()
    assert not cross["flag"].str.contains("constant 0.50").any()


def test_variance_command_says_why_instead_of_printing_zeros(tmp_path):
    # two models, cross-play only: model A always meets partner B, so the grid cannot tell them apart
    path = tmp_path / "cross.tsv"
    pd.DataFrame({"model": ["a", "b"], "partner": ["b", "a"], "value": [0.2, 0.7]}).to_csv(path, sep="\t", index=False)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["analysis", "variance-cells", str(path)]) == 0
    got = json.loads(out.getvalue())
    assert got["model"] is None and got["partner"] is None and "cannot separate model from partner" in got["note"]
    # a constant table: nothing to split, said so
    path = tmp_path / "flat.tsv"
    pd.DataFrame({"model": ["a", "a", "b", "b"], "partner": ["a", "b", "a", "b"], "value": [0.5] * 4}).to_csv(path, sep="\t", index=False)
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["analysis", "variance-cells", str(path)]) == 0
    got = json.loads(out.getvalue())
    assert all(got[k] is None for k in ("model", "partner", "model_x_partner")) and "no variance" in got["note"]


def test_two_model_cross_play_variant_is_flagged_not_zero():
    table = variance_table(_turn_runs(0.05), settings(models=("x", "y"), bootstrap=0), tasks=("T1-1", "T2"))
    cross = table[(table["measure"] == "tor_pause") & (table["variant"] == "cross_play")]
    assert cross["flag"].str.contains("cannot separate model from partner").all()
    assert cross.set_index("term")["eta2"][["model", "partner", "model_x_partner"]].isna().all()
    full = table[(table["measure"] == "tor_pause") & (table["variant"] == "all")]
    assert (full["flag"] == "").all() and full.set_index("term")["eta2"]["model"] > 0.5
