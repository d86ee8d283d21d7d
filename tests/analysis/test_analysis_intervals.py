"""n and intervals on every number read as a result: the scenario-cluster bootstrap and where it shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.bootstrap import interval, resampled_cluster_means
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import Matrix, score_matrix


def _cluster_mean_interval(values, clusters, rng, n_boot=400):
    codes = np.zeros(len(values), dtype=np.int64)
    samples = np.concatenate(list(resampled_cluster_means(values, codes, 1, clusters, n_boot, rng)))
    lo, hi = interval(samples, 0.95)
    return float(lo[0]), float(hi[0])


def test_the_scenario_cluster_bootstrap_covers_a_known_effect_where_resampling_runs_does_not():
    """20 scenarios x 6 runs each, a scenario effect much larger than the run noise: the true mean (0.5)
    must lie inside the cluster interval about 95% of the time; resampling runs as if independent
    undercovers badly (its intervals ignore that a scenario's runs move together)."""
    rng = np.random.default_rng(7)
    true_mean, trials, hits_cluster, hits_runs = 0.5, 200, 0, 0
    clusters = np.repeat(np.arange(20), 6)
    for _ in range(trials):
        effect = rng.normal(0, 0.15, 20)[clusters]
        values = true_mean + effect + rng.normal(0, 0.03, len(clusters))
        lo, hi = _cluster_mean_interval(values, clusters, rng)
        hits_cluster += lo <= true_mean <= hi
        lo, hi = _cluster_mean_interval(values, np.arange(len(values)), rng)  # every run its own cluster
        hits_runs += lo <= true_mean <= hi
    assert 0.88 <= hits_cluster / trials <= 0.99
    assert hits_runs / trials < 0.75


def _t42(n_scenarios=6):
    convs = []
    for s in range(n_scenarios):
        for rep in (1, 2):
            convs.append(conv(f"c{s}{rep}", "T4-2", "x", "y", a={"leak": int(s % 2 == 0)}, scenario=f"s{s}", rep=rep))
    return frame(*convs)


def test_every_matrix_cell_and_average_has_an_interval_that_travels_through_its_table():
    st = settings(models=("x", "y"), bootstrap=200)
    m = score_matrix(build_runs(_t42(), st), "T4-2", st)
    assert m.values.loc["x", "y"] == 0.5 and m.n.loc["x", "y"] == 12
    lo, hi = m.lower.loc["x", "y"], m.upper.loc["x", "y"]
    assert 0 <= lo < 0.5 < hi <= 1
    back = Matrix.from_frame(m.to_frame())
    assert back.lower.loc["x", "y"] == lo and back.avg_upper["x"] == m.avg_upper["x"]
    from dyafdb.analysis.render import matrix_html

    page = matrix_html(m, st)
    assert "n=12" in page and f"[{lo:.2f}".replace("0.", ".") in page


def test_summary_headline_shows_the_average_its_interval_and_n_from_the_score_table(tmp_path):
    from dyafdb.analysis.io import write_tsv
    from dyafdb.analysis.run_summary import headline_cells

    st = settings(models=("x", "y"), bootstrap=200)
    m = score_matrix(build_runs(_t42(), st), "T4-2", st)
    write_tsv(m.to_frame(), tmp_path / "score_T4-2.tsv")
    cell = headline_cells(tmp_path, ["T4-2"])["x"]["T4-2"]
    assert cell.startswith(".50 [") and cell.endswith("n=12")
