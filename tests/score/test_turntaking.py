"""Turn-taking measures (Appendix C) on frame sets, with every threshold hit from both sides.

Default thresholds in frames: 1 s = 13 frames (12 frames = 0.96 s is "shorter than 1 s"),
0.5 s = 7 frames. X is the measured side, P its partner.
"""

from __future__ import annotations

from pathlib import Path

import json


from dyafdb.score.turntaking import TurnTakingParams, measure_conversation, measure_side
from results_paths import results_at

def m(x, p, n=None, **params):
    """X against P; by default the recording ends with the last segment (no trailing silence)."""
    n = n if n is not None else max(e for _, e in [*x, *p, (0, 1)])
    return measure_side(x, p, n, TurnTakingParams(**params))


def test_thresholds_in_frames():
    f = TurnTakingParams().frames
    assert f == {"pause_s": 13, "min_speech_s": 13, "backchannel_max_s": 13, "hold_s": 7, "yield_s": 7}
    assert TurnTakingParams(hold_s=0.3, pause_s=0.96).frames["hold_s"] == 4
    assert TurnTakingParams(pause_s=0.96).frames["pause_s"] == 12
    assert TurnTakingParams.from_config({"turntaking": {"yield_s": 1.0}}).frames["yield_s"] == 13


# ---------------------------------------------------------------- TOR_pause

P_PAUSE = [(0, 20), (32, 60)]  # a 12-frame (0.96 s) silence inside P's speech: a pause


def test_pause_versus_turn_end_at_one_second():
    assert len(m([], P_PAUSE).pauses) == 1 and m([], P_PAUSE).turn_ends == []
    r = m([], [(0, 20), (33, 60)])  # 13 frames = 1.04 s: a turn end
    assert r.pauses == [] and r.turn_ends == [(20, 33)]


def test_cut_into_pause_needs_one_second_of_speech():
    assert m([(25, 38)], P_PAUSE).values()["tor_pause"] == 1.0  # 13 frames
    assert m([(25, 37)], P_PAUSE).values()["tor_pause"] == 0.0  # 12 frames: too short
    assert m([(25, 37)], P_PAUSE).values()["tor_pause_n"] == 1


def test_cut_in_must_start_inside_the_pause():
    assert m([(20, 40)], P_PAUSE).values()["tor_pause"] == 1.0  # onset on the pause's first frame
    assert m([(32, 50)], P_PAUSE).values()["tor_pause"] == 0.0  # onset when P resumes: not inside
    # already talking when P paused: not a pause it could cut into, so not a case at all
    assert m([(15, 40)], P_PAUSE).values()["tor_pause_n"] == 0


def test_a_pause_inside_a_running_barge_in_is_no_tor_pause_case():
    # X barges in at frame 15 over P; P stops at 20 (and yields): a barge-in success. P's 0.96 s
    # silence [20, 32) lies inside X's speech, so it is neither cut into nor missed.
    v = m([(15, 40)], P_PAUSE).values()
    assert v["barge_in"] == 1.0 and v["barge_in_n"] == 1
    assert v["tor_pause"] is None and v["tor_pause_n"] == 0
    # X speech that ended exactly where P paused is not running in the pause: the pause counts
    assert m([(10, 20)], P_PAUSE).values()["tor_pause_n"] == 1


def test_no_partner_pause_gives_no_rate():
    v = m([(0, 50)], [(100, 150)]).values()
    assert v["tor_pause"] is None and v["tor_pause_n"] == 0


# ---------------------------------------------------------------- TOR_end

P_END = [(0, 20), (40, 60)]  # 20-frame silence: a turn end


def test_turn_end_taken_with_one_second_before_partner_resumes():
    assert m([(25, 38)], P_END).values()["tor_end"] == 1.0  # 13 frames inside the silence
    assert m([(28, 40)], P_END).values()["tor_end"] == 0.0  # 12 frames
    assert m([(28, 50)], P_END).values()["tor_end"] == 0.0  # 12 frames before P resumed, the rest overlaps


def test_turn_end_counts_speech_that_started_before_partner_stopped():
    assert m([(15, 33)], P_END).values()["tor_end"] == 1.0  # 13 frames within [20, 40)
    assert m([(15, 32)], P_END).values()["tor_end"] == 0.0


def test_trailing_silence_is_a_turn_end_only_when_long_enough():
    r = m([(50, 63)], [(0, 50)], n=63)  # 13 silent frames to the end, all X speech
    assert r.turn_ends == [(50, 63)] and r.values()["tor_end"] == 1.0
    r = m([(51, 62)], [(0, 50)], n=62)  # 12 frames: pause or end is unknown, left out
    assert r.turn_ends == [] and r.pauses == []


def test_silence_before_partner_first_speech_is_not_counted():
    r = m([(0, 30)], [(40, 60)], n=60)
    assert r.turn_ends == [] and r.pauses == []


# ---------------------------------------------------------------- backchannel

P_LONG = [(0, 100)]


def test_backchannel_short_over_partner_who_holds():
    r = m([(10, 22)], P_LONG)  # 12 frames (0.96 s), P speaks on for 78 frames
    assert r.backchannels == [(10, 22)] and r.values()["backchannel"] == 1
    assert r.barge_ins == [] and r.turns == 0


def test_backchannel_length_limit_at_one_second():
    r = m([(10, 23)], P_LONG)  # 13 frames: not a backchannel but a barge-in attempt that X yields
    assert r.backchannels == []
    assert r.barge_ins == [{"onset": 10, "at": 23, "outcome": "side_yielded"}]
    assert r.values()["barge_in"] == 0.0


def test_backchannel_hold_at_half_a_second():
    assert m([(10, 15)], [(0, 22)]).backchannels == [(10, 15)]  # P speaks [15, 22): 7 frames = 0.56 s
    r = m([(10, 15)], [(0, 21)], n=40)  # 6 frames = 0.48 s: P stops -> a barge-in attempt instead
    assert r.backchannels == [] and r.barge_ins == [{"onset": 10, "at": 15, "outcome": "unresolved"}]
    assert m([(10, 15)], [(0, 21)], n=40, hold_s=0.48).backchannels == [(10, 15)]  # hold threshold from config


def test_backchannel_must_start_over_partner_speech():
    assert m([(10, 15)], [(10, 50)]).backchannels == []  # same onset frame: simultaneous, not over P
    assert m([(10, 15)], [(11, 50)]).backchannels == []  # X first
    assert m([(10, 15)], [(9, 50)]).backchannels == [(10, 15)]


def test_short_utterance_cut_by_window_end_is_unclassified():
    r = m([(190, 195)], [(0, 200)], n=200)  # hold frames [195, 202) run past the end
    assert r.backchannels == [] and r.barge_ins == [] and r.turns == 0


# ---------------------------------------------------------------- barge-in

def test_partner_yields():
    r = m([(20, 47)], [(0, 40)])  # P stops at 40, X goes on [40, 47) = 7 frames
    assert r.barge_ins == [{"onset": 20, "at": 40, "outcome": "partner_yielded"}]
    assert r.values()["barge_in"] == 1.0 and r.values()["barge_in_n"] == 1


def test_yield_needs_the_other_to_go_on_half_a_second():
    r = m([(20, 46)], [(0, 40)])  # X goes on only 6 frames
    assert r.barge_ins[0]["outcome"] == "unresolved"
    assert r.values()["barge_in"] is None and r.values()["barge_in_n"] == 0


def test_side_yields():
    r = m([(20, 35)], [(0, 60)])
    assert r.barge_ins[0]["outcome"] == "side_yielded" and r.values()["barge_in"] == 0.0


def test_both_stop_together_is_unresolved():
    assert m([(20, 40)], [(0, 40)]).barge_ins[0]["outcome"] == "unresolved"


def test_overlap_running_to_the_end_is_unresolved():
    r = m([(20, 100)], [(0, 100)], n=100)
    assert r.barge_ins == [{"onset": 20, "at": None, "outcome": "unresolved"}]


def test_yield_cut_by_window_end_is_unresolved():
    assert m([(20, 45)], [(0, 40)], n=45).barge_ins[0]["outcome"] == "unresolved"  # only 5 frames left


def test_barge_in_rate_over_resolved_attempts():
    p = [(0, 40), (60, 110), (130, 170)]
    x = [(30, 50), (70, 90), (160, 170)]  # wins; yields; short, P stops too: an unresolved attempt
    r = m(x, p, n=200)
    assert [b["outcome"] for b in r.barge_ins] == ["partner_yielded", "side_yielded", "unresolved"]
    v = r.values()
    assert v["barge_in_n"] == 2 and v["barge_in"] == 0.5


def test_yield_from_config():
    assert m([(20, 44)], [(0, 40)], yield_s=0.3).barge_ins[0]["outcome"] == "partner_yielded"  # 4 frames


# ---------------------------------------------------------------- turns and totals

def test_turns_count_floor_takings():
    assert m([(0, 10), (15, 20)], [], n=30).turns == 1  # own pause, nobody else spoke
    assert m([(0, 10), (15, 20)], [(11, 13)], n=30).turns == 2  # partner spoke in between
    assert m([(0, 10), (30, 35), (60, 80)], [(20, 100)], n=100).turns == 2  # (30, 35) is a backchannel


def test_speech_totals_and_both_sides():
    res = measure_conversation({"a": [(0, 20)], "b": [(10, 30)]}, 40)
    va, vb = res["a"].values(), res["b"].values()
    assert (va["speech_s"], va["exclusive_s"], va["overlap_s"]) == (1.6, 0.8, 0.8)
    assert (vb["speech_s"], vb["exclusive_s"]) == (1.6, 0.8)
    assert json.dumps(res["a"].events())  # serialisable for the measures file


def test_scripted_conversation_end_to_end(tmp_path):
    """Two scripted agents on the real bridge, then scoring; the answers follow from the script."""
    from scoring_fixtures import load, write_project
    from dyafdb.suite.design import build_design
    from dyafdb.record.conversation import AgentPool, record_conversation
    from dyafdb.score.conversation import score_conversation

    models = {  # times on the 80 ms grid; a opens, so b is muted for the 1.52 s lead-in
        "talker": {"adapter": "scripted", "params": {"script": [
            {"start_s": 0.0, "end_s": 3.2, "text": "first"}, {"start_s": 3.68, "end_s": 6.0, "text": "second"}]}},
        "barger": {"adapter": "scripted", "params": {"script": [
            {"start_s": 2.0, "end_s": 2.4, "text": "mm"}, {"start_s": 3.28, "end_s": 4.8, "text": "cut in"},
            {"start_s": 5.6, "end_s": 7.6, "text": "my turn now"}]}},
    }
    write_project(tmp_path, ["T1-1"], models=models, window_s=8.0)
    config = load(tmp_path)
    row = next(r for r in build_design(config, tmp_path)
               if (r.model_a, r.model_b, r.opener) == ("talker", "barger", "a"))
    with AgentPool(config) as pool:
        record_conversation(config, row, Path(results_at(tmp_path).recording(row.conversation_id)), pool, tmp_path)
    paths = score_conversation(config, tmp_path, row.conversation_id)
    segs = json.loads(paths.segments.read_text())["channels"]
    assert segs == {"a": [[0, 40], [46, 75]], "b": [[25, 30], [41, 60], [70, 95]]}
    values = json.loads(paths.measures.read_text())["values"]
    b, a = values["b"], values["a"]
    assert b["backchannel"] == 1  # [25, 30) while a talks on for 10 more frames
    assert (b["tor_pause"], b["tor_pause_n"]) == (1.0, 1)  # a's 0.48 s pause at 3.2 s, cut with 1.52 s
    assert (b["tor_end"], b["tor_end_n"]) == (1.0, 1)  # a's trailing silence from 6.0 s, taken
    assert (b["barge_in"], b["barge_in_n"]) == (1.0, 1)  # at 5.6 s over a, who stopped at 6.0 s
    assert (a["barge_in"], a["barge_in_n"]) == (1.0, 1)  # a resumed over b at 3.68 s; b stopped at 4.8 s
    assert b["turns"] == 2 and a["turns"] == 2
