# Mechanical scoring: ONE job per conversation (the full suite has 7,560 and planning costs per
# job) that writes each stage's own file: VAD segments, the anonymised transcript, and the
# turn-taking / occupancy / leak measures. Each stage also runs alone: dyafdb segments | transcript | mechanical.
from dyafdb.scoring_plan import ScoringPlan

SCORING = ScoringPlan(config, CONVERSATIONS, RESULTS)


rule score:
    input:
        audio=SCORING.recording_file("audio.wav"),
        text=SCORING.recording_file("text.jsonl"),
        meta=SCORING.recording_file("meta.json"),
        garble=SCORING.recording_file("garble.json"),
        scenario=scenario_file,
    output:
        segments=f"{RESULTS}/segments/{{conversation}}.json",
        transcript=f"{RESULTS}/transcripts/{{conversation}}.txt",
        transcript_json=f"{RESULTS}/transcripts/{{conversation}}.json",
        measures=f"{RESULTS}/measures/{{conversation}}.json",
    params:
        cfg=CONFIG_ARGS,
        settings=SCORING.score_settings,
    log:
        "logs/score/{conversation}.log",
    benchmark:
        "benchmarks/score/{conversation}.tsv"
    conda:
        "../../envs/dyafdb.yml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "dyafdb score {params.cfg} --id {wildcards.conversation} > {log} 2>&1"
