"""A turn-taking metric is declared once (dyafdb.score.turntaking.METRICS); the scorer's output and the
analysis's names, labels and table loops all come from that declaration."""

from __future__ import annotations

from dyafdb.analysis import columns as C
from dyafdb.score.turntaking import METRICS, SideTurnTaking


def test_scorer_writes_each_declared_metric_and_its_denominator():
    values = SideTurnTaking().values()
    for m in METRICS:
        assert m.name in values
        if m.denominator:
            assert m.denominator in values


def test_analysis_reads_the_declared_names_and_labels():
    assert C.TURN_TAKING == tuple(m.name for m in METRICS)
    assert C.TURN_TAKING_LABELS == {m.name: m.label for m in METRICS}
