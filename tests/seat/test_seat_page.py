"""The seat's page in headless Chromium against a scripted partner (fast: no model to load): tone bursts
from a WAV as the fake microphone, the audio context at 48 kHz so the capture worklet resamples to
24 kHz, and the listen-in page. tests/seat/test_seat_browser.py is the slow run with Piper speech and
the CPU agent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from helpers_seat import SeatServer
from test_seat_server import seat_config

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("no Chromium at /usr/bin/chromium: apt-get install -y --no-install-recommends chromium", allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")

from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS  # noqa: E402
from dyafdb.paths import results_of  # noqa: E402
from dyafdb.record.recording import read_meta, read_recording  # noqa: E402
from dyafdb.seat.study import seat_rows  # noqa: E402

BURSTS = [(1.0, 0.6), (2.6, 0.5)]  # (start s, length s) into the WAV
RATE = 48_000


def args(wav: Path) -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--autoplay-policy=no-user-gesture-required",
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={wav}%noloop"]


def bursts_wav(path: Path) -> None:
    audio = np.zeros(int(8 * RATE), dtype=np.float32)
    for start, length in BURSTS:
        n = int(length * RATE)
        t = np.arange(n) / RATE
        audio[int(start * RATE):int(start * RATE) + n] = 0.3 * np.sin(2 * np.pi * 440 * t)
    sf.write(path, audio, RATE, subtype="PCM_16")


def onsets(channel: np.ndarray) -> list[float]:
    frames = len(channel) // FRAME_SAMPLES
    rms = np.sqrt(np.mean(channel[: frames * FRAME_SAMPLES].reshape(frames, FRAME_SAMPLES) ** 2, axis=1))
    voiced = rms > 0.02
    return [t * FRAME_SECONDS for t in range(frames) if voiced[t] and (t == 0 or not voiced[t - 1])]


def talk(page, url: str, conversation_id: str) -> None:
    """Take one conversation on the page as a person would: its card, consent, start; wait until saved."""
    page.goto(url)
    page.click(f"tr[data-id='{conversation_id}'] button.take")
    page.wait_for_selector("#card p")
    page.check("#agree")
    page.click("#start")
    page.wait_for_selector("body[data-state='saved'], body[data-state='error']", state="attached", timeout=120_000)
    assert page.get_attribute("body", "data-state") == "saved", page.inner_text("#end-message")


def test_the_page_records_a_resampled_microphone_and_listens_in(suite_root, tmp_path):
    wav = tmp_path / "bursts.wav"
    bursts_wav(wav)
    config = seat_config(window_s=4.0)
    config["suites"]["t"]["cross_play_only"] = False  # partner+partner gives listen-in a conversation
    row = next(r for r in seat_rows(config, suite_root) if r.model_a == "someone" and r.opener == "a")
    with SeatServer(config, suite_root) as server, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=args(wav))
        page = browser.new_page()
        talk(page, server.url + "/?aec=0&rate=48000", row.conversation_id)

        page.goto(server.url + "/listen")
        page.click("tbody tr:first-child button")
        page.wait_for_selector("body[data-state='saved']", state="attached", timeout=120_000)
        assert page.get_attribute("body", "data-ticks") == str(int(4.0 / FRAME_SECONDS))
        browser.close()

    folder = results_of(config, suite_root).recording(row.conversation_id)
    rec, meta = read_recording(folder), read_meta(folder)
    timing = meta["seat"]["timing"]
    assert timing["context_rate"] == RATE  # the worklet resampled 48 kHz to 24 kHz
    assert rec.audio.shape == (2, 50 * FRAME_SAMPLES) and timing["late_input_frames"] <= 2
    got = onsets(rec.audio[0])
    expected = [start - timing["capture_offset_s"] for start, _ in BURSTS]
    assert len(got) == len(expected), (got, expected, timing)
    for e, g in zip(expected, got):
        assert e - timing["mic_open_s"] - 2 * FRAME_SECONDS <= g <= e + 2 * FRAME_SECONDS, (got, expected, timing)
    # a 440 Hz tone survives the resampling: its spectrum peaks at 440 Hz on the 24 kHz channel
    at = int((got[0] + 0.1) / FRAME_SECONDS) * FRAME_SAMPLES
    spectrum = np.abs(np.fft.rfft(rec.audio[0, at:at + 4800]))
    assert abs(np.argmax(spectrum) * 24_000 / 4800 - 440) <= 10


@pytest.mark.parametrize("grow", [False, True])
def test_a_stalled_model_frame_is_silence_or_raises_the_delay(suite_root, tmp_path, grow):
    """A partner that holds the clock up for 1 s at tick 25: its frames reach the page late. By default
    they are skipped and listed; with ?grow=1 the playback delay grows and every frame is played."""
    wav = tmp_path / "bursts.wav"
    bursts_wav(wav)
    config = seat_config(window_s=4.0, partner={"adapter": "helpers_seat:StallAgent", "params": {"stall_at": 25, "stall_s": 1.0}})
    row = next(r for r in seat_rows(config, suite_root) if r.model_a == "someone" and r.opener == "a")
    with SeatServer(config, suite_root) as server, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=args(wav))
        page = browser.new_page()
        talk(page, server.url + f"/?aec=0&grow={int(grow)}", row.conversation_id)
        browser.close()
    timing = read_meta(results_of(config, suite_root).recording(row.conversation_id))["seat"]["timing"]
    late = timing["late_playback_ticks"]
    assert timing["tick_lag_s"]["max"] >= 0.9 and late and min(late) >= 25, timing  # the stall, and only after it
    assert timing["late_input_frames"] == 0  # the person's frames queued meanwhile and were all recorded
    if grow:
        assert timing["played_frames"] == 50 and len(timing["playback_delay_changes"]) >= 1
        assert timing["playback_delay_changes"][-1][1] >= timing["playback_delay_s"] + 0.7
    else:
        assert timing["played_frames"] == 50 - len(late) and timing["playback_delay_changes"] == []
