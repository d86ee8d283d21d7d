"""The conversation page shows the audio-health values and what the audio said."""

from __future__ import annotations

import html

from dyafdb.analysis.columns import measure_label
from dyafdb.score.health import MEASURES
from dyafdb.viewer.pages import measures_card


def test_measures_card_orders_health_values_and_shows_what_whisper_heard():
    values = {s: {"tor_end": 0.5, **{m: 0.25 for m in MEASURES}, "text_mismatch": 1, "echo_flag": 0} for s in "ab"}
    health = {"detail": {"a": {"transcript": {"asr": "seven purple <elephants>", "source": "asr"}},
                         "b": {"transcript": {"asr": "", "source": "none"}}}}
    page = measures_card({"values": values, "health": health}, {"a": "A", "b": "B"})
    # measures under their one display name (dyafdb.analysis.columns.measure_label), as the report names them
    L = measure_label
    assert page.index(f"<th>{L('tor_end')}<") < page.index(f"<th>{L('dnsmos_sig')}<") < page.index(f"<th>{L('longest_silence_s')}<")
    assert "seven purple &lt;elephants&gt;" in page and "Whisper on its speech" in page
    assert "side b · Speaker B (" not in page  # no text on b: nothing was transcribed
    row = page[page.index(f"<th>{html.escape(L('text_mismatch'))}</th>"):]
    assert row.split("</tr>")[0].count("yes") == 2
    assert "What the audio says" not in measures_card({"values": values}, {"a": "A", "b": "B"})
