import shlex

from dyafdb.paths import CONVERSATION_IN_SHARD, SHARD_PATTERN
from dyafdb.record.engine_groups import ENGINE_SOCKET, EngineGroups
from dyafdb.record.inputs import RecordingInputs
from dyafdb.record.pool import RECORD, shares


# Engine node groups on a cluster (dyafdb.record.engine_groups): when the profile groups the engine
# rule, record jobs of one pairing share one engine per model, whose GPUs the group asks for once.
ENGINE_GROUPS = EngineGroups(config, CONVERSATIONS, group_name=lambda: workflow.group_settings.overwrite_groups.get("engine"),
                             cores=lambda: workflow.resource_settings.cores, local=lambda: workflow.local_exec,
                             target_jobs=lambda: workflow.dag_settings.target_jobs)
RECORDING = RecordingInputs(config, CONVERSATIONS, ENGINE_GROUPS)
# Record jobs of in-process agents hand their conversation to record processes that serve several in
# turn (the models loaded once per process, fresh agents per conversation; dyafdb.record.pool).
# Through the environment, like score.smk's: neither the shell command nor the params change.
RECORD.share_in_workflow(shares(config))


rule engine:
    output:
        sock=service(ENGINE_SOCKET),
    params:
        argv=ENGINE_GROUPS.engine_argv,
    # the same group as its record jobs (ENGINE_GROUPS.record_group), also inside the group's SLURM job
    group: ENGINE_GROUPS.group_name
    log:
        R.log("engine", "{group}-{model}"),
    conda:
        "../../envs/dyafdb.yml"
    threads: ENGINE_GROUPS.engine_resource("cpus", 1)
    resources:
        gpu=ENGINE_GROUPS.engine_resource("gpus", 0),
        mem_mb=ENGINE_GROUPS.engine_resource("mem_mb", 2000),
        runtime=ENGINE_GROUPS.engine_runtime,
        # one SLURM job has one partition and GPU model: its record jobs'
        **RECORDING.engine_site_resources(SITE_PARTITION, SITE_GPU_PARTITION, SITE_ACCOUNT, SITE_GPU_MODEL),
    # Snakemake checks a consumer's inputs, service outputs too, within --latency-wait of its start,
    # and a model takes longer to load: an empty placeholder stands at the socket path from the start
    # (record jobs wait until it listens, DYAFDB_ENGINES_WAIT_S) and the engine replaces it once loaded.
    shell:
        'mkdir -p "$(dirname {output.sock:q})" && rm -f {output.sock:q} && touch {output.sock:q}'
        " && exec {params.argv} > {log:q} 2>&1"


rule record:
    input:
        scenario=RECORDING.scenario_file,
        **RECORDING.engine_inputs,
    output:
        # The recording's folder (audio.wav, text.jsonl, garble.json, meta.json) replaces the old one
        # in one step (dyafdb.record.recording.publish), so meta.json, complete only with the rest,
        # stands for all four: every declared file costs the plan about 0.2 ms per job, and listing
        # one instead of four made the main suite's dry-run ~0.7 of its CPU time (bench/bench_dryrun.py).
        meta=R.recording_file("{conversation}", "meta.json"),
    params:
        spec=RECORDING.params,
        engines=RECORDING.engine_env,
    log:
        R.conversation_log("record", "{conversation}"),
    benchmark:
        R.conversation_benchmark("record", "{conversation}")
    # Every path of the rule sits in the conversation's shard (dyafdb.paths): {shard} must be the
    # scenario id that {conversation} starts with, so no other shard can claim a conversation.
    wildcard_constraints:
        shard=SHARD_PATTERN,
        conversation=CONVERSATION_IN_SHARD,
    conda:
        "../../envs/dyafdb.yml"
    # in a node group: the engines' group, so that SLURM gets engines and conversations as one job
    group: RECORDING.group
    threads: ENGINE_GROUPS.record_share("cpus", 1)
    resources:
        gpu=ENGINE_GROUPS.record_share("gpus", 0),
        mem_mb=ENGINE_GROUPS.record_share("mem_mb", 2000),
        runtime=ENGINE_GROUPS.record_share("runtime_min", 10, max),
        **RECORDING.site_resources(SITE_PARTITION, SITE_GPU_PARTITION, SITE_ACCOUNT, SITE_GPU_MODEL),
    shell:
        # Constant strings and wildcards only: a param function would cost every one of the 7,560
        # jobs a call while Snakemake plans. `record` puts the conversation in its shard of --out.
        "{params.engines} dyafdb record --id {wildcards.conversation}"
        f" --out {shlex.quote(R.recordings)}"
        f" --log-dir {shlex.quote(R.worker_log_dir('{wildcards.conversation}'))} --no-progress > {{log:q}} 2>&1"


# No final target of its own: every recording is upstream of measures.tsv (a final target), and
# listing 7,560 recordings in `rule all` again would cost the plan as much as a rule per conversation.
