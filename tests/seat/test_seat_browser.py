"""Issue 29's end-to-end check: a person (a WAV of Piper speech, fed to headless Chromium as its fake
microphone) takes the seat's page through consent and a 20 s T1-1 conversation with the embedded CPU
agent; the recording is complete, the person's speech onsets on their channel match the WAV's within
two frames plus the recorded latency, the agent answered, and the recording is scored, judged (by the
viewer tests' stand-in judge) and shown in the viewer.

Needs Chromium (/usr/bin/chromium), the playwright package and the CPU agent's models (slow).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from conftest import REPO, TEST_PATH

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no Chromium at /usr/bin/chromium: apt-get install -y --no-install-recommends chromium", allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")

from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS, SAMPLE_RATE  # noqa: E402
from dyafdb.config import validate_config  # noqa: E402
from dyafdb.paths import results_of  # noqa: E402
from dyafdb.record.recording import read_meta, read_recording  # noqa: E402
from dyafdb.seat.study import seat_rows  # noqa: E402

pytestmark = pytest.mark.slow

# What the person says, and when (seconds into the WAV): the café owner of t1-1-barista-interview opening.
LINES = [(3.0, "Hi, thanks for coming in. Tell me about your coffee experience."),
         (9.5, "Can you open the cafe at seven on Sunday mornings?"),
         (15.5, "Great. Why do you want this job?")]
WAV_S = 30.0
ONSET_GAP_FRAMES = 6  # speech after at least 0.48 s of silence starts a new utterance
VOICED_RMS = 0.01


def write_person_wav(path: Path) -> list[float]:
    """The person's speech at 24 kHz (16-bit PCM, as Chromium's fake capture reads it); returns its onsets."""
    from dyafdb.agents.cascade.models import get_models

    models = get_models(1)
    audio = np.zeros(int(WAV_S * SAMPLE_RATE), dtype=np.float32)
    for start, text in LINES:
        speech = np.asarray(models.speak(text, 1.0, 0.8, 0.32).audio)
        at = int(start * SAMPLE_RATE)
        audio[at:at + len(speech)] = speech[: len(audio) - at]
    sf.write(path, audio, SAMPLE_RATE, subtype="PCM_16")
    return onsets(audio)


def onsets(audio: np.ndarray) -> list[float]:
    """Seconds at which speech starts after a pause, on the 80 ms frame grid."""
    frames = len(audio) // FRAME_SAMPLES
    rms = np.sqrt(np.mean(audio[: frames * FRAME_SAMPLES].reshape(frames, FRAME_SAMPLES).astype(np.float64) ** 2, axis=1))
    out, quiet = [], ONSET_GAP_FRAMES
    for t, voiced in enumerate(rms > VOICED_RMS):
        if voiced and quiet >= ONSET_GAP_FRAMES:
            out.append(t * FRAME_SECONDS)
        quiet = 0 if voiced else quiet + 1
    return out


def seat_config(root: Path) -> dict:
    config = {
        "scenarios_dir": str(REPO / "scenarios"), "results_dir": "results", "demo_quality": True,
        "models": {"human": {"adapter": "person", "label": "Human"},
                   "cpu_eager": {"adapter": "cascade", "label": "CPU eager", "params": {"variant": "eager"}}},
        "suites": {"seat": {"models": ["human", "cpu_eager"], "archetypes": ["T1-1"], "scenarios_per_archetype": 1,
                            "repetitions": 1, "window_s": 20, "cross_play_only": True}},
        "bridge": {"lead_in_s": 1.5},
        "judge": {"judges": {"main": {"backend": "openai", "model": "fake-main", "api_key_env": None}},
                  "prompts_dir": str(REPO / "config" / "judge"), "cache_dir": str(root / "judge-cache")},
        "viewer": {"audio": "wav"},
    }
    (root / "seat.yaml").write_text(json.dumps(config))
    return validate_config(config, "seat browser test config")


def start_seat(root: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "dyafdb", "seat", "-c", str(root / "seat.yaml"), "--root", str(root),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        match = re.match(r"seat: (http://\S+)", line)
        if match:
            return proc, match.group(1)
    raise AssertionError("the seat did not start:\n" + "".join(seen))


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def judge_one(config: dict, root: Path, row) -> list[dict]:
    from viewer_site import FakeJudge
    from dyafdb.fileio import write_text_atomic
    from dyafdb.judge.cache import ReplyCache
    from dyafdb.judge.rubric import QUESTIONS, judge_plan
    from dyafdb.judge.runner import Usage, build_items, judge_items, judge_output_path, record
    from dyafdb.judge.settings import judge_settings

    settings = judge_settings(config, root)
    spec = settings.judge("main")
    answers = []
    for archetype, qid in judge_plan([row.archetype]):
        question = QUESTIONS[qid]
        items = build_items(config, root, settings, archetype, question, [row])
        asyncio.run(judge_items(FakeJudge(spec, off_label_first=False), ReplyCache(settings.cache_dir), items, question, 1, Usage()))
        lines = [record(it, question, spec) for it in items]
        write_text_atomic(judge_output_path(config, root, "main", archetype, qid), "".join(json.dumps(x) + "\n" for x in lines))
        answers += lines
    return answers


def test_a_person_talks_to_the_cpu_agent_in_the_browser(tmp_path):
    root = tmp_path
    config = seat_config(root)
    wav = root / "person.wav"
    wav_onsets = write_person_wav(wav)
    assert len(wav_onsets) == len(LINES)
    row = next(r for r in seat_rows(config, root) if r.model_a == "human" and r.opener == "a")  # the person opens
    proc, url = start_seat(root)
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--autoplay-policy=no-user-gesture-required",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={wav}%noloop"])
            page = browser.new_page()
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url + "?aec=0")
            page.click(f"tr[data-id='{row.conversation_id}'] button.take")
            page.wait_for_selector("#card p")
            card = page.inner_text("#card")
            assert "Marisol" in card and "Jamal, nineteen" not in card  # own role card only, never the partner's
            assert "Where it is kept" in page.inner_text("#consent")
            assert page.is_disabled("#start")
            page.check("#agree")
            page.click("#start")
            page.wait_for_selector(",".join(f"body[data-state='{s}']" for s in ("saved", "error", "abandoned")),
                                   state="attached", timeout=240_000)
            message = page.inner_text("#end-message")
            assert page.get_attribute("body", "data-state") == "saved", message
            page.click("#score")  # the page's own way to see it scored: score + a viewer page, served by the seat
            page.wait_for_selector("body[data-scored]", state="attached", timeout=240_000)
            scored = page.get_attribute("body", "data-scored")
            assert scored != "error", page.inner_text("#score-status")
            page.goto(url.rstrip("/") + "/" + scored)
            assert "Speaker A" in page.content()
            assert all(u.startswith(url.rstrip("/")) or u.startswith("ws://127.0.0.1") for u in requests), requests
            browser.close()
    finally:
        stop(proc)

    folder = Path(results_of(config, root).recording(row.conversation_id))
    rec, meta = read_recording(folder), read_meta(folder)
    ticks = 250
    assert meta["complete"] and meta["ticks"] == ticks and rec.audio.shape == (2, ticks * FRAME_SAMPLES)
    timing = meta["seat"]["timing"]
    print("seat timing:", json.dumps(timing))
    assert timing["late_input_frames"] <= 3, timing  # the page kept up with the clock
    assert timing["playback_delay_s"] is not None and timing["round_trip_ms"]["n"] > 10

    # The person's onsets: WAV time minus where the recording began in the file (capture_offset_s after
    # the audio thread started; the file started up to mic_open_s before that), within two frames.
    offset, latency = timing["capture_offset_s"], timing["mic_open_s"]
    heard = onsets(rec.audio[0])
    print("WAV onsets", wav_onsets, "recorded", heard)
    expected = [w - offset for w in wav_onsets if 0.5 < w - offset < 19.0]
    assert expected, (wav_onsets, offset)
    for w in expected:
        assert any(w - latency - 2 * FRAME_SECONDS <= r <= w + 2 * FRAME_SECONDS for r in heard), (w, heard, timing)

    # The agent answered: its channel speaks after the person's first words, and its text channel has words.
    first = int(heard[0] / FRAME_SECONDS) * FRAME_SAMPLES
    assert np.sqrt(np.mean(rec.audio[1, first:] ** 2)) > 0.005
    assert [t for t in rec.tokens if t.channel == "b"], "the agent said nothing"
    person_words = " ".join(t.text for t in rec.tokens if t.channel == "a").lower()
    assert "coffee" in person_words or "sunday" in person_words, person_words  # Whisper heard the person
    assert meta["channels"][0]["text_source"] == "asr"

    from dyafdb.score.conversation import score_conversation
    from dyafdb.viewer.layout import conversation_page
    from dyafdb.viewer.site import build_site

    paths = score_conversation(config, root, row.conversation_id)
    segments = json.loads(Path(paths.segments).read_text())
    assert segments and Path(paths.measures).exists()
    transcript = Path(paths.transcript_txt).read_text().lower()  # what the judge reads: the person's words kept
    assert "coffee" in transcript or "sunday" in transcript, transcript
    answers = judge_one(config, root, row)
    assert answers and all(a["valid"] and a["conversation_id"] == row.conversation_id for a in answers)
    summary = build_site(config, root, ids=[row.conversation_id])
    page_path = Path(summary.out) / conversation_page(row.conversation_id)
    html = page_path.read_text()
    assert "coffee" in html.lower() or "sunday" in html.lower()
