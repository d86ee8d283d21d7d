from dyafdb.garble import garble_params


rule record:
    input:
        scenario=scenario_file,
    output:
        audio=f"{RESULTS}/recordings/{{conversation}}/audio.wav",
        text=f"{RESULTS}/recordings/{{conversation}}/text.jsonl",
        meta=f"{RESULTS}/recordings/{{conversation}}/meta.json",
        garble=f"{RESULTS}/recordings/{{conversation}}/garble.json",
    params:
        cfg=CONFIG_ARGS,
        spec=record_params,
        garble=lambda wildcards: garble_params(config, conversation(wildcards)),
        out=lambda wildcards, output: os.path.dirname(os.path.dirname(output.meta)),
    log:
        "logs/record/{conversation}.log",
    benchmark:
        "benchmarks/record/{conversation}.tsv"
    conda:
        "../../envs/dyafdb.yml"
    threads: record_resource("cpus", 1)
    resources:
        gpu=record_resource("gpus", 0),
        mem_mb=record_resource("mem_mb", 2000),
        runtime=record_resource("runtime_min", 10, max),
        **GPU_SITE,
    shell:
        "dyafdb record {params.cfg} --id {wildcards.conversation} --out {params.out}"
        " --log-dir logs/workers/{wildcards.conversation} --no-progress > {log} 2>&1"


FINAL_TARGETS.extend(expand(f"{RESULTS}/recordings/{{c}}/meta.json", c=CONVERSATION_IDS))
