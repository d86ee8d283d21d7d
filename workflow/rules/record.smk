rule record:
    input:
        scenario=scenario_file,
    output:
        audio=R.recording_file("{conversation}", "audio.wav"),
        text=R.recording_file("{conversation}", "text.jsonl"),
        meta=R.recording_file("{conversation}", "meta.json"),
        garble=R.recording_file("{conversation}", "garble.json"),
    params:
        cfg=CONFIG_ARGS,
        spec=record_params,
    log:
        R.log("record", "{conversation}"),
    benchmark:
        R.benchmark("record", "{conversation}")
    conda:
        "../../envs/dyafdb.yml"
    threads: record_resource("cpus", 1)
    resources:
        gpu=record_resource("gpus", 0),
        mem_mb=record_resource("mem_mb", 2000),
        runtime=record_resource("runtime_min", 10, max),
        **RECORD_SITE,
    shell:
        # The recordings folder, derived from the output in the shell: a param function would cost
        # every one of the 7,560 jobs a call while Snakemake plans.
        "dyafdb record {params.cfg} --id {wildcards.conversation}"
        ' --out "$(dirname "$(dirname {output.meta:q})")"'
        f" --log-dir {shlex.quote(R.log_dir('workers'))}/{{wildcards.conversation}} --no-progress > {{log}} 2>&1"


# No final target of its own: every recording is upstream of measures.tsv (a final target), and
# listing 7,560 recordings in `rule all` again would cost the plan as much as a rule per conversation.
