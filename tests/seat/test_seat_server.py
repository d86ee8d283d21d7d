"""The seat without a browser: a Python client plays the person over the WebSocket protocol against a
scripted partner, so the wall-clock bridge, the recording, the ASR text channel and study mode are
checked in seconds (tests/seat/test_seat_browser.py does the same through Chromium and the CPU agent)."""

from __future__ import annotations

import json
from pathlib import Path
import struct
import threading
import time

import numpy as np
import pytest
from websockets.sync.client import connect

from conftest import scripted_config
from helpers_seat import SeatServer
from dyafdb.agents.base import AgentError, Session
from dyafdb.agents.person import PersonAgent
from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS
from dyafdb.config import validate_config
from dyafdb.errors import InputError
from dyafdb.paths import results_of
from dyafdb.record.recording import is_complete, read_meta, read_recording
from dyafdb.seat.server import check_host
from dyafdb.seat.study import new_participant, participant_config, participant_rows, seat_rows
from dyafdb.suite.design import build_design

HEADER = struct.Struct("<I")
PARTNER_SCRIPT = [{"start_s": 2.0, "end_s": 3.0, "text": "the partner answers", "amplitude": 0.05}]


def seat_config(window_s: float = 4.0, partner: dict | None = None) -> dict:
    partner = partner or {"adapter": "scripted", "params": {"script": PARTNER_SCRIPT}}
    config = scripted_config(models={"someone": {"adapter": "person", "label": "Person"}, "partner": partner},
                             window_s=window_s, cross_play_only=True)
    config["bridge"]["lead_in_s"] = 1.5
    config["results_dir"] = "results"
    return validate_config(config, "seat test config")  # fills in the schema's defaults (garble, vad, ...)


def person_frame(t: int) -> np.ndarray:
    """A frame that says which tick it was sent for (so a shifted or lost frame shows)."""
    return np.full(FRAME_SAMPLES, 0.01 + t * 1e-4, dtype=np.float32)


def talk(server: SeatServer, cid: str, *, stop_after: int | None = None, skip: set[int] = frozenset()) -> dict:
    """Play the person: consent, then one frame per 80 ms of wall clock; collect the model's frames."""
    status, card = server.get(f"/api/card?id={cid}")
    assert status == 200
    got: dict[int, np.ndarray] = {}
    messages = []
    with connect(f"{server.ws}/ws/seat?id={cid}", max_size=2 ** 20) as ws:
        ws.send(json.dumps({"type": "consent", "digest": card["consent_digest"]}))
        assert json.loads(ws.recv(timeout=60))["type"] == "ready"
        done = threading.Event()

        def send() -> None:
            start = time.perf_counter()
            t = 0
            while not done.is_set() and (stop_after is None or t < stop_after):
                wait = start + (t + 1) * FRAME_SECONDS - time.perf_counter()  # a frame leaves once captured
                if wait > 0:
                    time.sleep(wait)
                if t not in skip:
                    ws.send(HEADER.pack(t) + person_frame(t).tobytes())
                t += 1

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        if stop_after is not None:
            sender.join()
            ws.close()
            return {"received": got}
        while True:
            msg = ws.recv(timeout=60)
            if isinstance(msg, bytes):
                got[HEADER.unpack_from(msg)[0]] = np.frombuffer(msg, dtype="<f4", offset=4)
                continue
            m = json.loads(msg)
            messages.append(m)
            if m["type"] == "end":
                done.set()
                ws.send(json.dumps({"type": "stats", "playback_delay_s": 0.25, "late_playback_frames": 0,
                                    "played_frames": len(got), "round_trip_ms": {"n": 1, "median": 1.0}}))
            elif m["type"] in ("saved", "error", "abandoned"):
                break
    return {"received": got, "messages": messages, "card": card}


@pytest.fixture
def seat_root(suite_root):
    return suite_root


def test_person_pairs_with_models_only_and_is_refused_outside_a_seat(seat_root):
    config = seat_config()
    config["suites"]["t"]["cross_play_only"] = False
    rows = build_design(config, seat_root)
    assert {r.pairing for r in rows} == {"someone+partner", "partner+partner"}  # never someone+someone
    with pytest.raises(AgentError, match="is a person .* `dyafdb seat"):
        PersonAgent({}, "someone").open(Session("c", "a", "p", "A", 1, True, 10))


def test_a_conversation_is_recorded_from_the_persons_frames_on_the_wall_clock(seat_root):
    config = seat_config()
    rows = seat_rows(config, seat_root)
    assert len(rows) == 4  # 2 role assignments x 2 openers
    row = next(r for r in rows if r.model_a == "someone")
    with SeatServer(config, seat_root) as server:
        listing = server.get("/api/seat")[1]
        assert {c["id"] for c in listing["conversations"]} == {r.conversation_id for r in rows}
        out = talk(server, row.conversation_id)
    assert out["messages"][-1]["type"] == "saved", out["messages"]
    card, scenario = out["card"]["card"], out["card"]
    assert card["opens"] is (row.opener == "a") and card["prompt"]
    folder = results_of(config, seat_root).recording(row.conversation_id)
    rec = read_recording(folder)
    meta = read_meta(folder)
    ticks = 50
    assert rec.audio.shape == (2, ticks * FRAME_SAMPLES) and meta["end_reason"] == "window"
    for t in range(ticks):  # the person's channel is their frames, each on its own tick
        assert np.array_equal(rec.audio[0, t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES], person_frame(t)), t
    for t, frame in out["received"].items():  # what the page was sent is what was recorded for the model
        assert np.array_equal(rec.audio[1, t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES], frame)
    assert sorted(out["received"]) == list(range(ticks))
    assert [t.text for t in rec.tokens if t.channel == "b"] == ["the", "partner", "answers"]
    seat = meta["seat"]
    assert seat["person_side"] == "a" and seat["timing"]["late_input_frames"] == 0
    assert seat["timing"]["playback_delay_s"] == 0.25 and seat["consent"]["digest"] == out["card"]["consent_digest"]
    assert meta["channels"][0]["text_source"] == "asr" and meta["channels"][1]["text_source"] == "model"
    assert seat["asr"]["word_timestamps"] is True
    assert meta["garble"]["status"] == "not_checked"
    from dyafdb.analysis.settings import from_config

    with SeatServer(config, seat_root) as server:  # the page's "score it" button: score and a viewer page
        status, done = server.get(f"/api/score?id={row.conversation_id}")
        assert status == 200 and done["judged"] is False, done
        status, html = server.get("/" + done["page"])
        assert status == 200 and b"Speaker A" in html, html[:300]
        assert server.get("/site/../../etc/passwd")[0] == 404
    assert Path(results_of(config, seat_root).measures_json(row.conversation_id)).exists()
    labels = from_config(config, seat_root)  # the analysis labels the person's row and column with its counts
    assert labels.label("someone") == "Person (1 person, 1 session)" and labels.label("partner") == "partner"


def test_a_missing_frame_is_silence_and_counted(seat_root):
    config = seat_config()
    row = next(r for r in seat_rows(config, seat_root) if r.model_b == "someone")
    with SeatServer(config, seat_root) as server:
        out = talk(server, row.conversation_id, skip={25, 26})  # after the lead-in (19 ticks), whoever opens
    assert out["messages"][-1]["type"] == "saved"
    folder = results_of(config, seat_root).recording(row.conversation_id)
    rec = read_recording(folder)
    assert not np.any(rec.audio[1, 25 * FRAME_SAMPLES:27 * FRAME_SAMPLES])
    assert np.array_equal(rec.audio[1, 27 * FRAME_SAMPLES:28 * FRAME_SAMPLES], person_frame(27))
    assert read_meta(folder)["seat"]["timing"]["late_input_frames"] == 2


def test_abandoning_leaves_no_recording(seat_root):
    config = seat_config()
    row = seat_rows(config, seat_root)[0]
    with SeatServer(config, seat_root) as server:
        talk(server, row.conversation_id, stop_after=12)
        time.sleep(0.5)
        folder = results_of(config, seat_root).recording(row.conversation_id)
        assert not is_complete(folder)
        assert server.get("/api/seat")[1]["conversations"][0]["recorded"] is False
        again = talk(server, row.conversation_id)  # redone on the same seat, the same agents
        assert again["messages"][-1]["type"] == "saved"
        assert is_complete(folder) and read_meta(folder)["ticks"] == 50


def test_study_mode_counterbalances_across_participants(seat_root):
    config = seat_config()
    rows = seat_rows(config, seat_root)
    ids = [new_participant(config, seat_root) for _ in range(4)]
    assert ids == ["p001", "p002", "p003", "p004"]
    assert (seat_root / "results" / "participants" / "participants.tsv").read_text().count("\n") == 5
    chosen = [participant_rows(config, rows, pid) for pid in ids]
    assert all(len(c) == 1 for c in chosen)  # one per cell (one scenario, one partner)
    assert sorted(c[0].conversation_id for c in chosen) == sorted(r.conversation_id for r in rows)
    own = participant_config(config, seat_root, "p002")
    assert own["results_dir"] == "results/participants/p002"
    # their share only, the id tagged with the participant (two participants' sessions of a row never share one)
    assert [r.conversation_id for r in build_design(own, seat_root)] == [chosen[1][0].conversation_id + "__p002"]
    with pytest.raises(InputError, match="never a name"):
        participant_config(config, seat_root, "alice")
    bad = {**config, "suites": {"t": {**config["suites"]["t"], "conversations": ["t1-1-nope__x__y__open-a__rep1__4s"]}}}
    with pytest.raises(InputError, match="suites.t.conversations lists 't1-1-nope"):
        build_design(bad, seat_root)
    models_only = f"{rows[0].scenario}__partner__other__open-a__rep1__4s__p001"  # tagged, but no person in it
    mixed = {**config, "suites": {"t": {**config["suites"]["t"], "models": ["partner", "someone", "other"],
                                        "conversations": [models_only]}},
             "models": {**config["models"], "other": config["models"]["partner"]}}
    with pytest.raises(InputError, match="a participant tag belongs to a conversation with a person only"):
        build_design(mixed, seat_root)


def test_other_hosts_need_a_token_and_every_request_carries_it(seat_root):
    with pytest.raises(InputError, match="needs --token"):
        check_host("0.0.0.0", None)
    check_host("0.0.0.0", "s3cret")
    with SeatServer(seat_config(), seat_root, token="s3cret") as server:
        assert server.get("/api/seat")[0] == 403
        assert server.get("/api/seat?token=wrong")[0] == 403
        assert server.get("/api/seat?token=s3cret")[0] == 200
        status, page = server.get("/")
        assert status == 200 and b"Talk to a model" in page


def test_listen_in_streams_both_channels_as_the_recording_is_made(seat_root):
    config = seat_config(window_s=2.0)
    config["suites"]["t"]["cross_play_only"] = False
    with SeatServer(config, seat_root) as server:
        rows = server.get("/api/listen")[1]["conversations"]
        assert [c["pairing"] for c in rows] == ["partner+partner", "partner+partner"]  # no person among them
        cid = rows[0]["id"]
        got, start, arrivals = {}, None, []
        with connect(f"{server.ws}/ws/listen?id={cid}", max_size=2 ** 20) as ws:
            assert json.loads(ws.recv(timeout=60))["type"] == "ready"
            while True:
                msg = ws.recv(timeout=60)
                if isinstance(msg, bytes):
                    start = start or time.perf_counter()
                    arrivals.append(time.perf_counter() - start)
                    got[HEADER.unpack_from(msg)[0]] = np.frombuffer(msg, dtype="<f4", offset=4).reshape(2, FRAME_SAMPLES)
                    continue
                assert json.loads(msg)["type"] == "saved"
                break
    ticks = 25
    assert sorted(got) == list(range(ticks))
    assert arrivals[-1] >= (ticks - 1) * FRAME_SECONDS * 0.9  # paced by the wall clock, not as fast as it can
    folder = results_of(config, seat_root).recording(cid)
    rec = read_recording(folder)
    for t, frames in got.items():
        assert np.array_equal(rec.audio[:, t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES], frames)
    assert read_meta(folder)["listen"]["paced"] is True


def test_a_participants_folder_goes_through_the_pipeline_unchanged(seat_root):
    """Study mode end to end: the participant's config cuts the design to their share, so score and the
    measures table (the stages after them read that table) run on their folder as on any results folder."""
    import yaml

    from dyafdb.cli import main
    from dyafdb.seat.study import write_participant_config

    config = seat_config()
    pid = new_participant(config, seat_root)
    own = participant_config(config, seat_root, pid)
    saved = write_participant_config(own, seat_root)
    reloaded = validate_config(yaml.safe_load(saved.read_text()), saved)
    (row,) = build_design(reloaded, seat_root)
    with SeatServer(own, seat_root, participant=pid) as server:
        assert [c["id"] for c in server.get("/api/seat")[1]["conversations"]] == [row.conversation_id]
        out = talk(server, row.conversation_id)
    assert out["messages"][-1]["type"] == "saved"
    meta = read_meta(results_of(own, seat_root).recording(row.conversation_id))
    assert meta["seat"]["participant"] == pid and "participants/p001/" in results_of(own, seat_root).recording(row.conversation_id)
    args = ["-c", str(saved), "--root", str(seat_root)]
    assert main(["score", *args, "--id", row.conversation_id]) == 0
    assert main(["measures", *args, "--no-judge"]) == 0
    table = (Path(results_of(own, seat_root).root) / "scores" / "measures.tsv").read_text()
    assert row.conversation_id in table
