"""A turn-taking metric is declared once (``@metric`` on its compute function in
dyafdb.score.turntaking); the scorer's output and the analysis's names, labels and table loops all
come from that declaration."""

from __future__ import annotations

import pytest

from dyafdb.analysis import columns as C
from dyafdb.score.turntaking import Metric, SideTurnTaking, metrics


def test_scorer_writes_each_declared_metric_and_its_denominator_in_declaration_order():
    values = SideTurnTaking(pauses=[(0, 3), (5, 6)], pauses_cut=[(0, 3)], turns=2, speech_frames=25).values()
    # measures.tsv's rows, in the order they always had
    assert list(values) == ["tor_pause", "tor_pause_n", "tor_end", "tor_end_n", "backchannel", "barge_in",
                            "barge_in_n", "turns", "speech_s", "exclusive_s", "overlap_s"]
    assert values["tor_pause"] == 0.5 and values["tor_pause_n"] == 2 and values["tor_end"] is None
    assert values["turns"] == 2 and values["speech_s"] == 2.0
    assert [n for m in metrics() for n in m.measures] == list(values)


def test_analysis_reads_the_declared_names_and_labels():
    assert C.TURN_TAKING == tuple(m.name for m in metrics() if m.table) == (C.TOR_PAUSE, C.TOR_END, C.BACKCHANNEL, C.BARGE_IN)
    assert C.TURN_TAKING_LABELS == {m.name: m.label for m in metrics() if m.table}
    assert C.colour_range(C.TOR_PAUSE) == (0.0, 1.0) and C.colour_range(C.BACKCHANNEL) is None


def test_a_declaration_with_an_unknown_unit_or_aggregate_is_refused():
    with pytest.raises(ValueError, match="unit='fraction'"):
        Metric("x", "X", "fraction", len)
    with pytest.raises(ValueError, match="aggregate='median'"):
        Metric("x", "X", "share", len, aggregate="median")
