# The conversation viewer and blind annotation pages: one job that writes a static site under
# <results_dir>/site (dyafdb viewer; docs/viewer.md). Audio copies and waveform peaks are cached
# next to the pages, so a rerun after new recordings or judge answers re-encodes only what changed.
from dyafdb.viewer.settings import viewer_settings

VIEWER = viewer_settings(config)
VIEW_INDEX = f"{VIEWER.out}/index.html"
VIEW_THREADS = 4
# Measured (bench/bench_viewer.py, demo speech): Ogg Vorbis takes ~1.1 s per minute of stereo
# recording on one core, FLAC ~0.15 s; the pages ~10 ms each. Planned with a margin for Vorbis.
VIEW_AUDIO_MIN = sum(row.window_s for row in CONVERSATIONS.values()) / 60


# The site shows every recording, segmentation, transcript, measure and judge answer; the measures
# table is built from all of them (directly or through the score jobs), so it is the one input listed.
rule view:
    input:
        R.measures_table,
    output:
        VIEW_INDEX,
    params:
        settings=json.dumps(VIEWER.to_json(), sort_keys=True),
    log:
        R.log("view"),
    benchmark:
        R.benchmark("view")
    conda:
        "../../envs/dyafdb.yml"
    threads: VIEW_THREADS
    resources:
        mem_mb=2000,
        runtime=10 + int(VIEW_AUDIO_MIN * 1.5 / VIEW_THREADS / 60),
        **CPU_SITE,
    shell:
        "dyafdb viewer --jobs {threads} > {log:q} 2>&1"


if VIEWER.build:
    FINAL_TARGETS.append(VIEW_INDEX)
