"""Energy VAD (Appendix A): hysteresis at both thresholds, the drop, the merge, and their order."""

from __future__ import annotations

from pathlib import Path

import json

import numpy as np
import pytest

from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError
from dyafdb.score.vad import (VadParams, detect, drop_short, frame_rms, frames_ceil, frames_floor, from_mask, hysteresis,
                        merge_gaps, segments_from_rms, to_mask)
from scoring_fixtures import channel_audio, frame_of_rms
from results_paths import results_at

P = VadParams()


def test_defaults_on_the_grid():
    assert (P.start_rms, P.end_rms) == (0.010, 0.004)
    assert P.min_segment_frames == 2  # 0.16 s
    assert P.max_gap_frames == 4  # 0.32 s
    assert frames_ceil(0.17) == 3 and frames_floor(0.33) == 4 and frames_floor(0.31) == 3


def test_start_needs_strictly_above_start_threshold():
    assert hysteresis([0.010, 0.010, 0.010], 0.010, 0.004) == []
    assert hysteresis([0.005, 0.0100001, 0.005], 0.010, 0.004) == [(1, 3)]


def test_end_at_first_frame_strictly_below_end_threshold():
    # 0.004 exactly keeps the segment open; the first frame below it is the exclusive end.
    assert hysteresis([0.02, 0.004, 0.004, 0.0039999, 0.02], 0.010, 0.004) == [(0, 3), (4, 5)]


def test_hysteresis_band_keeps_state_both_ways():
    rms = [0.008, 0.009, 0.02, 0.005, 0.009, 0.001, 0.009, 0.005]
    # frames between the thresholds neither start (0, 1, 6, 7) nor end (3, 4) a segment
    assert hysteresis(rms, 0.010, 0.004) == [(2, 5)]


def test_segment_open_at_the_end_ends_there():
    assert hysteresis([0.001, 0.02, 0.006], 0.010, 0.004) == [(1, 3)]
    assert hysteresis([0.02], 0.010, 0.004) == [(0, 1)]
    assert hysteresis([], 0.010, 0.004) == []


def test_drop_keeps_exactly_min_segment():
    segs = [(0, 1), (5, 7), (10, 13)]
    assert drop_short(segs, P.min_segment_frames) == [(5, 7), (10, 13)]  # 1 frame = 0.08 s < 0.16 s
    assert drop_short(segs, VadParams(min_segment_s=0.17).min_segment_frames) == [(10, 13)]


def test_merge_gap_of_at_most_max_gap():
    assert merge_gaps([(0, 5), (9, 12)], P.max_gap_frames) == [(0, 12)]  # gap 4 frames = 0.32 s: merged
    assert merge_gaps([(0, 5), (10, 12)], P.max_gap_frames) == [(0, 5), (10, 12)]  # gap 5 = 0.40 s: kept apart
    assert merge_gaps([(0, 2), (4, 6), (8, 10)], P.max_gap_frames) == [(0, 10)]  # chains


def test_drop_happens_before_merge():
    # A one-frame click between two segments would bridge them if merging came first.
    loud, quiet = 0.05, 0.0
    rms = [loud] * 5 + [quiet] * 2 + [loud] + [quiet] * 2 + [loud] * 5
    assert segments_from_rms(rms, P) == [(0, 5), (10, 15)]
    assert merge_gaps(hysteresis(rms, 0.010, 0.004), 4) == [(0, 15)]  # the other order, for contrast
    # Two one-frame blips two frames apart vanish instead of merging into a kept 3-frame segment.
    assert segments_from_rms([loud, quiet, loud, quiet, quiet, quiet], P) == []


def test_frame_rms_of_float_samples():
    rng = np.random.default_rng(3)
    audio = np.concatenate([frame_of_rms(0.05, rng), np.zeros(FRAME_SAMPLES, np.float32), frame_of_rms(0.007, rng),
                            np.ones(100, np.float32)])  # trailing partial frame ignored
    rms = frame_rms(audio)
    assert rms.shape == (3,)
    assert rms[0] == pytest.approx(0.05, rel=1e-6) and rms[1] == 0.0 and rms[2] == pytest.approx(0.007, rel=1e-6)


def test_detect_on_audio_returns_the_built_segments():
    segs = [(3, 10), (16, 17), (20, 30), (33, 40)]  # (16, 17) is dropped; (20, 30) and (33, 40) merge (gap 3)
    audio = channel_audio(segs, 50)
    assert detect(audio, P) == [(3, 10), (20, 40)]


def test_band_amplitude_continues_but_does_not_start():
    rng = np.random.default_rng(0)
    frames = [frame_of_rms(a, rng) for a in (0.007, 0.02, 0.007, 0.007, 0.002, 0.007)]
    assert detect(np.concatenate(frames), P) == [(1, 4)]


def test_masks_round_trip():
    segs = [(0, 3), (5, 6), (9, 10)]
    mask = to_mask(segs, 10)
    assert mask.sum() == 5 and from_mask(mask) == segs


def test_thresholds_come_from_config():
    params = VadParams.from_config({"vad": {"start_rms": 0.02, "end_rms": 0.01, "min_segment_s": 0.4, "max_gap_s": 0.0}})
    assert params.min_segment_frames == 5 and params.max_gap_frames == 0
    with pytest.raises(InputError, match="end_rms"):
        VadParams.from_config({"vad": {"start_rms": 0.01, "end_rms": 0.02}})


def test_segments_file_has_half_open_frame_intervals(tmp_path):
    from scoring_fixtures import load, write_project, write_recording_from_segments
    from dyafdb.score.conversation import score_conversation

    write_project(tmp_path, ["T1-1"])
    config = load(tmp_path)
    cid = "c1"
    write_recording_from_segments(Path(results_at(tmp_path).recording(cid)), {"a": [(0, 12), (20, 30)], "b": [(12, 19)]},
                                  40, conversation_id=cid, archetype="T1-1", scenario="t1-1-fixture-01")
    paths = score_conversation(config, tmp_path, cid, ["segments"])
    doc = json.loads(paths.segments.read_text())
    assert doc["channels"] == {"a": [[0, 12], [20, 30]], "b": [[12, 19]]}
    assert doc["frame_samples"] == 1920 and doc["ticks"] == 40 and doc["vad"]["start_rms"] == 0.010


def test_fast_rms_decides_thresholds_exactly_like_float64():
    rng = np.random.default_rng(7)
    frames = []
    for k in range(400):  # RMS within a few ulps-to-1e-6 of the start threshold, both sides
        frame = rng.standard_normal(FRAME_SAMPLES)
        target = 0.010 * (1 + (k - 200) * 1e-8)
        frames.append((frame * (target / np.sqrt(np.mean(frame ** 2)))).astype(np.float32))
    audio = np.concatenate(frames)
    exact = np.array([np.sqrt(np.mean(f.astype(np.float64) ** 2)) for f in frames])
    fast = frame_rms(audio, exact_near=(0.010,))
    assert np.array_equal(fast > 0.010, exact > 0.010)
    assert 0 < np.sum(exact > 0.010) < 400  # the set really straddles the threshold
