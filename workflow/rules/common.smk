import functools
import json
import os
import shlex
from pathlib import Path

from dyafdb.config import CONFIG_ENV, OVERRIDES_ENV, config_overrides, validate_config
from snakemake.exceptions import WorkflowError
from dyafdb.paths import Results
from dyafdb.suite.design import build_design
from dyafdb.suite.ids import ID_PATTERN
from dyafdb.record.spec import inputs_digest, model_digests, recording_inputs

CONFIG_FILES = [str(p) for p in (workflow.overwrite_configfiles or ["config/config.yaml"])]
# Validate before planning anything: a typo stops here with the key, the value and what is allowed.
config.update(validate_config(dict(config), ", ".join(CONFIG_FILES)))

RESULTS = config["results_dir"]
# Every results path (logs and benchmarks included) comes from dyafdb.paths.
R = Results(RESULTS)
SCENARIOS = config["scenarios_dir"]
# Every job re-reads the same config files, so it computes exactly what the plan computed. They
# reach the jobs through the environment (dyafdb.config.CONFIG_ENV), never through a rule's params
# or shell command: Snakemake reruns a job when either changes, and a path would make a copied
# config or a moved checkout re-record the whole suite. What a job's output depends on is in its
# params as content (record: dyafdb.record.spec; score, judge, analysis: their settings).
os.environ[CONFIG_ENV] = os.pathsep.join(str(Path(p).resolve()) for p in CONFIG_FILES)
# Snakemake folds the --configfile contents into its overrides too; pass on only what `--config
# key=value` really changed.
CLI_OVERRIDES = config_overrides(CONFIG_FILES, workflow.config_settings.overwrite_config or {})
if CLI_OVERRIDES:
    os.environ[OVERRIDES_ENV] = json.dumps(CLI_OVERRIDES, sort_keys=True)
else:
    os.environ.pop(OVERRIDES_ENV, None)

CONVERSATIONS = {row.conversation_id: row for row in build_design(config)}
CONVERSATION_IDS = sorted(CONVERSATIONS)

def _site(env_name, key):
    return os.environ.get(env_name) or (config.get("slurm") or {}).get(key)


# SLURM site settings (README "Running on a SLURM cluster"), from the environment or config `slurm:`.
# Every rule that leaves the submitting host adds CPU_SITE (or record's RECORD_SITE) to its
# resources: the executor plugin reads only the `slurm_partition` and `slurm_account` resources, and
# without an account it guesses one from sacct. Empty on a laptop, so one workflow serves every site.
SITE_PARTITION = _site("DYAFDB_SLURM_PARTITION", "partition")
SITE_GPU_PARTITION = _site("DYAFDB_SLURM_GPU_PARTITION", "gpu_partition") or SITE_PARTITION
SITE_ACCOUNT = _site("DYAFDB_SLURM_ACCOUNT", "account")
SITE_GPU_MODEL = _site("DYAFDB_SLURM_GPU_MODEL", "gpu_model")
CPU_SITE = {k: v for k, v in (("slurm_partition", SITE_PARTITION), ("slurm_account", SITE_ACCOUNT)) if v}


@functools.lru_cache(maxsize=None)
def _pair_gpus(model_a, model_b):
    """GPUs of a record job and the GPU model to ask for: the site's, else one both models declare."""
    declared = [model_spec(m).get("resources", {}) for m in (model_a, model_b)]
    gpus = sum(int(r.get("gpus", 0)) for r in declared)
    models = {r["gpu_model"] for r in declared if r.get("gpus") and r.get("gpu_model")}
    gpu_model = SITE_GPU_MODEL or (models.pop() if len(models) == 1 else None)
    return gpus, gpu_model


def _record_gpus(wildcards):
    return _pair_gpus(*pair_models(wildcards))


# A record job whose two models need no GPU is a CPU job: CPU partition, no GPU model (the plugin
# would otherwise ask for --gpus=<model>:0). None leaves a resource unset.
RECORD_SITE = {
    **({"slurm_account": SITE_ACCOUNT} if SITE_ACCOUNT else {}),
    "slurm_partition": lambda wc: (SITE_GPU_PARTITION if _record_gpus(wc)[0] else SITE_PARTITION) or None,
    "gpu_model": lambda wc: _record_gpus(wc)[1] if _record_gpus(wc)[0] else None,
}
# Snakemake calls a resource function for each of the 7,560 record jobs while it plans: where the
# answer is the same for every job (one partition, or none; no GPU model anywhere), it is a constant.
if SITE_GPU_PARTITION == SITE_PARTITION:
    RECORD_SITE["slurm_partition"] = SITE_PARTITION
if not SITE_GPU_MODEL and not any(m.get("resources", {}).get("gpu_model") for m in config["models"].values()):
    del RECORD_SITE["gpu_model"]
RECORD_SITE = {k: v for k, v in RECORD_SITE.items() if v is not None}


def preflight_planned_jobs():
    """Stop before the first job when a planned job is bound to fail: the key of each judge the run
    will call and one cheap request to its endpoint (reachable, key accepted, model known; skipped
    with DYAFDB_OFFLINE=1 on a node without network), the same request for the text pairing's models
    when it is planned, the weights and worker of each model it will record, room for its recordings
    (`dyafdb plan --check` runs every check; this runs those the planned jobs need)."""
    from dyafdb.commands._preflight import (failed, far_side_checks, format_checks, judge_key_checks, model_checks,
                                            offline_from_env, results_checks)
    from dyafdb.suite.plan import RECORDING_BYTES_PER_S

    jobs = list(workflow.dag.needrun_jobs())
    recordings = [CONVERSATIONS[j.wildcards.conversation] for j in jobs if j.rule.name == "record"]
    judges = {j.wildcards.judge for j in jobs if j.rule.name == "judge"}
    text_models = ()
    if any(j.rule.name in ("text_pair_generate", "text_pair_score") for j in jobs):
        from dyafdb.text_pairing.pairing import main_judge_name, text_settings

        ts = text_settings(config)
        if any(j.rule.name == "text_pair_score" for j in jobs):
            judges.add(main_judge_name(config, ts))
        if any(j.rule.name == "text_pair_generate" for j in jobs):
            text_models = ts.pairing
    judges = sorted(judges)
    checks = judge_key_checks(config, judges) if judges else []
    if judges or text_models:
        checks += far_side_checks(config, judges, offline=offline_from_env(), text_models=text_models)
    if recordings:
        checks += model_checks(config, {m for r in recordings for m in (r.model_a, r.model_b)})
        lead_in = float(config["bridge"]["lead_in_s"])
        checks += results_checks(config, sum((r.window_s + lead_in) * RECORDING_BYTES_PER_S for r in recordings))
    if failed(checks):
        raise WorkflowError(f"preflight failed, nothing was started:\n{format_checks(checks)}")


def record_run():
    """<results>/run.json: the config files (and --config overrides) this run was made with, so
    `dyafdb status|summary|verify --results <results>` read the same config (dyafdb.config.RUN_RECORD)."""
    from dyafdb.config import RUN_RECORD, run_record
    from dyafdb.fileio import write_json_atomic

    write_json_atomic(Path(RESULTS) / RUN_RECORD, run_record(CONFIG_FILES, CLI_OVERRIDES, Path.cwd(), config))


def print_run_summary():
    """The end of a successful run: counts, judge cost, headline scores and where to look, printed
    and written to <results>/summary.md (`dyafdb summary` writes the same by hand)."""
    from dyafdb.analysis.run_summary import write_summary

    path, text = write_summary(config, Path("."), list(CONVERSATIONS.values()))
    print(f"\n{text}\n(written to {path})")


# Rules files append their final outputs here; `rule all` reads it lazily, after every include.
FINAL_TARGETS = []


wildcard_constraints:
    conversation=ID_PATTERN,


def final_targets(wildcards):
    return FINAL_TARGETS


def conversation(wildcards):
    return CONVERSATIONS[wildcards.conversation]


def scenario_file(wildcards):
    row = conversation(wildcards)
    return f"{SCENARIOS}/{row.archetype}/{row.scenario}.yaml"


def model_spec(name):
    return config["models"][name]


def pair_models(wildcards):
    row = conversation(wildcards)
    return [row.model_a, row.model_b]


def record_params(wildcards):
    """What a recording is made from, as one digest (dyafdb.record.spec: its design row, its two
    models' entries, its scenario's content, the lead-in, the garble watcher's settings where a
    model is checked); meta.json records the same digest, so the plan and the files agree."""
    return inputs_digest(recording_inputs(config, conversation(wildcards), models=MODEL_DIGESTS))


MODEL_DIGESTS = model_digests(config)


def start_local_engines():
    """A local run starts one engine per model with an `engine` section that its planned record jobs
    use, all at once, before the first job; record jobs then join them (dyafdb.agents.engine.launch).
    Cluster runs keep per-job workers."""
    if not workflow.local_exec:
        return
    from dyafdb.agents.engine.launch import LOCAL_ENGINES

    # Conversations in engine node groups (--groups engine=...) join their group's engines instead.
    grouped = ENGINE_GROUPS.groups()[0]
    rows = [CONVERSATIONS[j.wildcards.conversation] for j in workflow.dag.needrun_jobs()
            if j.rule.name == "record" and j.wildcards.conversation not in grouped]
    started = LOCAL_ENGINES.start(config, {m for r in rows for m in (r.model_a, r.model_b)},
                                  log_dir=Path(R.log_dir("engines")))
    if started:
        import sys

        print(f"engines up for {', '.join(started)}", file=sys.stderr)


def fix_callable_signatures():
    """Remember the signature of every function the rules hand to Snakemake.

    Snakemake asks `inspect.signature` of each input, params and resource function (and of its own
    Resource.evaluate, twice per resource) for every job it plans, about 40 us a call: 15 calls a
    record job, 235,000 for the main suite. A signature never changes, so it is computed once here
    and stored where Snakemake looks first (the attribute `snakemake.common.overwrite_function_params`
    sets). Nothing else changes: the same functions get the same arguments.
    """
    import inspect

    from snakemake.common import FUNC_OVERWRITE_PARAMS_ATTR
    from snakemake.resources import Resource

    def fix(func):
        target = getattr(func, "__func__", func)  # a bound method reads its attributes from the function
        if callable(func) and not hasattr(target, FUNC_OVERWRITE_PARAMS_ATTR):
            try:
                setattr(target, FUNC_OVERWRITE_PARAMS_ATTR, inspect.signature(func).parameters)
            except (TypeError, ValueError, AttributeError):
                pass  # a builtin without a signature, or an object that takes no attributes

    fix(Resource(name="probe", value=lambda wildcards: 0).evaluate)
    for step in workflow.rules:
        for item in [*step.input, *step.params]:
            fix(getattr(getattr(item, "_file", None), "callable", None) or getattr(item, "callable", None) or item)
        for res in (step.resources or {}).values():
            fix(getattr(res, "_evaluator", None))
        # the record rule's engine node group; the `group` property reads None while rules load
        fix(getattr(step, "_group", None))


def stop_local_engines():
    from dyafdb.agents.engine.launch import LOCAL_ENGINES

    LOCAL_ENGINES.stop()


# Outputs deleted (or lost) after something was made from them: Snakemake would never notice them,
# so they become final targets and are made again with everything after them (dyafdb.verify.state).
# Only the submitting process plans; a job's own Snakemake (on a cluster node) skips the scan.
if workflow.is_main_process:
    from dyafdb.verify.state import replan_targets

    FINAL_TARGETS.extend(replan_targets(R, CONVERSATIONS.values()))
