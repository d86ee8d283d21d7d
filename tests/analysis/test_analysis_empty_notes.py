"""A verdict needs events, and every empty place says why in place (issue 26, item 4): Figure 4's
empty panels carry a one-line note; every dash of Table 9 (text pairing) names its reason."""

from __future__ import annotations

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.action_success import action_success_table
from dyafdb.analysis.figures import action_success_figure
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import table9, table9_gaps


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_an_action_success_panel_without_a_point_says_why_in_place():
    # T4-2: nobody asked for the secret in 3 runs, so p(leak | asked) has no point; T3-2 has one
    convs = [conv(f"d{i}", "T4-2", "x", "y", a={"asked": 0, "leak": 0}, scenario=f"s{i}") for i in range(3)]
    convs += [conv("p1", "T3-2", "x", "y", a={"asked": 1, "agreement": 1, "occupancy": 0.5})]
    st = settings(models=("x", "y"))
    fig = action_success_figure(action_success_table(build_runs(frame(*convs), st), st), st)
    texts = _texts(fig)
    assert any("no run asked (0 of 3 runs)" in t for t in texts), texts
    assert any("T4-2" in n and "no run asked" in n for n in fig._dyafdb_notes)
    assert not any("T3-2" in n for n in getattr(fig, "_dyafdb_notes", []))


def test_every_dash_of_the_text_pairing_table_says_why():
    # the text pairing: "tw" only ever defends in T4-2 and avoids in T3-2 (side b), which the table does not read
    text = build_runs(frame(
        conv("t1", "T4-2", "tc", "tw", a={"asked": 1, "leak": 1}),
        conv("t2", "T3-2", "tc", "tw", a={"asked": 1, "agreement": 0, "occupancy": 0.5}, b={"occupancy": 0.5}),
        conv("t3", "T1-1", "tc", "tw", a={"role_adherence": "yes"}, b={"role_adherence": "yes"}),
    ), settings(models=("tc", "tw")))
    labels = {"tc": "SmolLM2 cold", "tw": "SmolLM2 warm"}
    table = table9(text.iloc[0:0], text, settings(models=("tc", "tw")), labels).set_index("model")
    assert table.isna().loc["tw", ["T4-2", "T3-2 agreement", "T2"]].all()
    gaps = table9_gaps(table.reset_index(), text.iloc[0:0], text)
    assert "SmolLM2 warm, T4-2: plays only the defender (side b); the column reads the attacker's side" in gaps
    assert "SmolLM2 warm, T3-2 agreement: plays only the avoider (side b); the column reads the presser's side" in gaps
    assert "SmolLM2 warm, T2: no T2 run" in gaps and "SmolLM2 cold, T2: no T2 run" in gaps
    assert not any(g.startswith("SmolLM2 cold, T4-2") for g in gaps)
