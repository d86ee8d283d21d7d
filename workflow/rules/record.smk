rule record:
    input:
        scenario=scenario_file,
    output:
        audio=f"{RESULTS}/recordings/{{conversation}}/audio.wav",
        text=f"{RESULTS}/recordings/{{conversation}}/text.jsonl",
        meta=f"{RESULTS}/recordings/{{conversation}}/meta.json",
    params:
        spec=record_params,
        out=f"{RESULTS}/recordings",
    log:
        "logs/record/{conversation}.log",
    benchmark:
        "benchmarks/record/{conversation}.tsv"
    threads: record_resource("cpus", 1)
    resources:
        gpu=record_resource("gpus", 0),
        mem_mb=record_resource("mem_mb", 2000),
        runtime=record_resource("runtime_min", 10, max),
    shell:
        "{DYAFDB} record {CONFIG_ARGS} --id {wildcards.conversation} --out {params.out}"
        " --log-dir logs/workers/{wildcards.conversation} --no-progress > {log} 2>&1"


def recording_meta(wildcards):
    return f"{RESULTS}/recordings/{wildcards.conversation}/meta.json"


FINAL_TARGETS.extend(expand(f"{RESULTS}/recordings/{{c}}/meta.json", c=CONVERSATION_IDS))
