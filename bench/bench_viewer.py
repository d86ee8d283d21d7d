"""The viewer's build cost: seconds and bytes per conversation, per audio format, cold and cached.

    python bench/bench_viewer.py                         # 24 synthetic 60 s recordings (scripted agents)
    python bench/bench_viewer.py --quick                  # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/bench_viewer.py -n 60 --jobs 4
    python bench/bench_viewer.py --config config/demo.yaml   # the recordings that config already has

Synthetic recordings are the scripted agent's shaped noise (speech-like timing, not speech-like
sound), which is the hard case for a lossy encoder; real speech encodes faster and smaller, so
--config on real recordings gives the figures to plan with. Printed: per format, the cold build
(audio encoded) and the cached rebuild (only pages), per conversation and for the whole set, the
audio size per minute of recording, and the size of index-data.js per conversation.
"""

from __future__ import annotations

from _figures import Bench, emit, row as figure  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("viewer",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import dataclasses
import io
import sys
import tempfile
import time
from pathlib import Path



def synthetic(root: Path, n: int, window_s: float, asr: bool = True) -> dict:
    """``asr``: the score jobs transcribe each side for the audio health's word share and WER (what is
    timed is the site build, not this; --quick leaves them empty, as `health.asr: false` does)."""
    from dyafdb.config import validate_config
    from dyafdb.paths import Results
    from dyafdb.suite.design import build_design
    from dyafdb.record.conversation import record_many
    from dyafdb.score.conversation import score_conversation
    import _testpath  # noqa: F401 (puts tests/helpers on the path)
    from synthetic_suite import write_suite

    write_suite(root, per_archetype=max(1, -(-n // 8)), archetypes=["T1-1"])
    turns = [{"start_s": t, "end_s": t + 2.2, "text": "a few words said here"} for t in range(0, int(window_s) - 3, 5)]
    answers = [{"start_s": t + 2.6, "end_s": t + 4.4, "text": "and a reply to that"} for t in range(0, int(window_s) - 5, 5)]
    models = {m: {"adapter": "scripted", "params": {"opener_script": turns, "responder_script": answers}} for m in ("m1", "m2")}
    config = validate_config({"scenarios_dir": "scenarios", "results_dir": "results", "models": models,
                              "suites": {"b": {"models": ["m1", "m2"], "archetypes": ["T1-1"], "repetitions": 1,
                                               "window_s": window_s}},
                              "bridge": {"in_process": True, "progress": False}, "health": {"asr": asr},
                              "judge": {"judges": {"main": {"backend": "openai", "model": "x", "api_key_env": None}}}},
                             "bench")
    rows = build_design(config, root)[:n]
    record_many(config, rows, Path(Results(str(root / "results")).recordings), root=root)
    for row in rows:
        score_conversation(config, root, row.conversation_id)
    config["suites"]["b"]["scenarios"] = sorted({r.scenario for r in rows})
    return config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=None, help="synthetic recordings (default 24; 2 with --quick)")
    parser.add_argument("--window", type=float, default=None, help="synthetic recording length (default 60 s; 10 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="2 recordings of 10 s scored without Whisper (health.asr: false), every format (CI)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--config", type=Path, help="bench on this config's existing recordings instead")
    parser.add_argument("--formats", default="vorbis,flac,wav")
    args = parser.parse_args()
    args.n = args.n or (2 if args.quick else 24)
    args.window = args.window or (10.0 if args.quick else 60.0)

    from dyafdb.config import load_config
    from dyafdb.viewer.settings import viewer_settings
    from dyafdb.viewer.site import build_site

    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        tmp_path = Path(tmp)
        if args.config:
            root, config = Path("."), load_config(args.config)
        else:
            t0 = time.perf_counter()
            root, config = tmp_path, synthetic(tmp_path, args.n, args.window, asr=not args.quick)
            print(f"made {args.n} synthetic {args.window:g} s recordings in {time.perf_counter() - t0:.1f} s")
        base = viewer_settings(config, root)
        rows = []
        for fmt in args.formats.split(","):
            settings = dataclasses.replace(base, out=tmp_path / f"site-{fmt}", audio=fmt)
            quiet = io.StringIO()
            t0 = time.perf_counter()
            cold = build_site(config, root, settings, jobs=args.jobs, log=quiet)
            t_cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            build_site(config, root, settings, jobs=args.jobs, log=quiet)
            t_warm = time.perf_counter() - t0
            n = max(1, cold.conversations)
            audio_minutes = _audio_minutes(settings.out)
            index_kb = (settings.out / "index-data.js").stat().st_size / 1e3
            print(f"{fmt:7s} {n} conversations, {args.jobs} jobs: cold {t_cold:.1f} s ({t_cold / n * 1000:.0f} ms each), "
                  f"cached {t_warm:.1f} s ({t_warm / n * 1000:.0f} ms each); audio {cold.audio_bytes / 1e6:.1f} MB "
                  f"({cold.audio_bytes / 1e6 / max(audio_minutes, 1e-9):.2f} MB per minute); "
                  f"index-data.js {index_kb / n:.2f} kB per conversation")
            rows += [figure(f"{fmt}: audio per minute of recording", [cold.audio_bytes / 1e6 / max(audio_minutes, 1e-9)], "MB"),
                     figure(f"{fmt}: cold build per conversation ({args.jobs} jobs)", [t_cold / n], "s wall"),
                     figure(f"{fmt}: cached rebuild per conversation", [t_warm / n], "s wall")]
    if not args.config and args.formats == parser.get_default("formats"):  # the table's own rows, nothing else
        emit("viewer", rows)
    return 0


def _audio_minutes(site: Path) -> float:
    import json

    total = 0.0
    for path in (site / "media").glob("*/*.json"):  # media/<tt>/<key>.json (viewer.layout)
        total += json.loads(path.read_text())["media"]["duration_s"]
    return total / 60.0


if __name__ == "__main__":
    sys.exit(main())
