# Mechanical scoring: ONE job per conversation (the full suite has 7,560 and planning costs per
# job) that writes each stage's own file: VAD segments, the anonymised transcript, and the
# turn-taking / occupancy / leak measures. Each stage also runs alone: dyafdb segments | transcript | mechanical.
from dyafdb.transcript import identifying_names

# What scoring depends on besides the recording and its scenario; a change here rescores.
SCORE_SETTINGS = json.dumps(
    {
        "vad": config.get("vad"),
        "transcript": config.get("transcript"),
        "turntaking": config.get("turntaking") or {},
        "redact": identifying_names(config),
    },
    sort_keys=True,
)


def recording_file(name):
    def get(wildcards):
        return f"{RESULTS}/recordings/{wildcards.conversation}/{name}"

    return get


rule score:
    input:
        audio=recording_file("audio.wav"),
        text=recording_file("text.jsonl"),
        meta=recording_file("meta.json"),
        garble=recording_file("garble.json"),
        scenario=scenario_file,
    output:
        segments=f"{RESULTS}/segments/{{conversation}}.json",
        transcript=f"{RESULTS}/transcripts/{{conversation}}.txt",
        transcript_json=f"{RESULTS}/transcripts/{{conversation}}.json",
        measures=f"{RESULTS}/measures/{{conversation}}.json",
    params:
        cfg=CONFIG_ARGS,
        settings=SCORE_SETTINGS,
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
