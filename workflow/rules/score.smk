# Mechanical scoring: ONE job per conversation (the full suite has 7,560 and planning costs per
# job) that writes each stage's own file: VAD segments, the anonymised transcript, and the
# turn-taking / occupancy / leak measures. Each stage also runs alone: dyafdb score segments | transcript | mechanical.
from dyafdb.paths import CONVERSATION_IN_SHARD, SHARD_PATTERN
from dyafdb.score.inputs import ScoringInputs
from dyafdb.score.pool import SCORE

SCORING = ScoringInputs(config, CONVERSATIONS, RESULTS)
# Score jobs hand their conversation to scoring processes that serve several in turn (imports and
# audio-health models loaded once per process, not per job; dyafdb.score.pool). Through the
# environment, like the config files: neither the shell command nor the params change, so no job reruns.
SCORE.share_in_workflow(config["score"]["conversations_per_process"])


rule score:
    input:
        # The job also reads audio.wav, text.jsonl, garble.json and the scenario (T4-2's secret).
        # The record job writes the three files before meta.json and takes the scenario as its own
        # input, so a change to any of them renews meta.json: this one file stands for all five.
        # Planning costs per listed file; the full suite's plan lists 30,240 fewer (measured: ~2 s less).
        meta=R.recording_file("{conversation}", "meta.json"),
    output:
        # `dyafdb score all` writes the segments and transcripts first and the measures last, each
        # atomically, and Snakemake removes the measures before the job starts: the measures file
        # stands for the other three (every declared file costs the plan per job, as in `record`).
        measures=R.measures_json("{conversation}"),
    params:
        settings=SCORING.score_settings,
    log:
        R.conversation_log("score", "{conversation}"),
    benchmark:
        R.conversation_benchmark("score", "{conversation}")
    # {shard} is the conversation's scenario id, as in the record rule (dyafdb.paths).
    wildcard_constraints:
        shard=SHARD_PATTERN,
        conversation=CONVERSATION_IN_SHARD,
    conda:
        "../../envs/dyafdb.yml"
    threads: 1
    resources:
        # Whisper tiny.en and the DNSMOS model for the audio-health measures: 481 MB peak measured
        # on a 20 s demo conversation (45 MB without them).
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb score all --id {wildcards.conversation} > {log:q} 2>&1"


# One archetype's mechanical measures (every conversation's VAD, turn-taking, occupancy and leak
# rows, and garble failures) in the long format of measures.tsv. Written once all of the archetype's
# conversations are scored, so later rules (judge, per-run tables, the whole table) list this one
# file instead of one file per conversation: the full suite's plan has 7,560 fewer files to resolve
# for each of those rules.
rule mechanical_table:
    input:
        SCORING.archetype_measures,
    output:
        SCORING.mechanical_table,
    log:
        R.log("mechanical_table", "{archetype}"),
    benchmark:
        R.benchmark("mechanical_table", "{archetype}")
    conda:
        "../../envs/dyafdb.yml"
    wildcard_constraints:
        archetype=r"T[0-9](-[0-9])?",
    resources:
        mem_mb=1000,
        runtime=15,
        **CPU_SITE,
    shell:
        "dyafdb measures --archetype {wildcards.archetype} --no-judge --out {output:q} > {log:q} 2>&1"
