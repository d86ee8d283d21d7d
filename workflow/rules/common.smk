import functools
import hashlib
import json
import os
import shlex
from pathlib import Path

from dyafdb.config import config_overrides, validate_config
from dyafdb.suite.design import build_design
from dyafdb.record.garble import garble_params

CONFIG_FILES = [str(p) for p in (workflow.overwrite_configfiles or ["config/config.yaml"])]
# Validate before planning anything: a typo stops here with the key, the value and what is allowed.
config.update(validate_config(dict(config), ", ".join(CONFIG_FILES)))

RESULTS = config["results_dir"]
SCENARIOS = config["scenarios_dir"]
# Every command re-reads the same config files, so a job computes exactly what the plan computed.
CONFIG_ARGS = " ".join(f"--config {shlex.quote(p)}" for p in CONFIG_FILES)
# Snakemake folds the --configfile contents into its overrides too; pass on only what `--config
# key=value` really changed, or every job's params would carry the whole config and any edit would
# rerun everything, recordings included.
CLI_OVERRIDES = config_overrides(CONFIG_FILES, workflow.config_settings.overwrite_config or {})
if CLI_OVERRIDES:
    CONFIG_ARGS = f"{CONFIG_ARGS} --override-json {shlex.quote(json.dumps(CLI_OVERRIDES, sort_keys=True))}"

# Lint prefers the literal `dyafdb` and `params: cfg=CONFIG_ARGS` in shell commands; kept for older rules.
DYAFDB = "dyafdb"

CONVERSATIONS = {row.conversation_id: row for row in build_design(config)}
CONVERSATION_IDS = sorted(CONVERSATIONS)

def site_resources(kind):
    """SLURM partition/account (and GPU model for record jobs) from the environment or config `slurm:`.

    Kept out of the rules' own numbers so one workflow serves every cluster; empty on a laptop.
    """
    slurm = config.get("slurm") or {}
    env = os.environ
    partition = env.get("DYAFDB_SLURM_PARTITION") or slurm.get("partition")
    if kind == "gpu":
        partition = env.get("DYAFDB_SLURM_GPU_PARTITION") or slurm.get("gpu_partition") or partition
    out = {}
    if partition:
        out["slurm_partition"] = partition
    account = env.get("DYAFDB_SLURM_ACCOUNT") or slurm.get("account")
    if account:
        out["slurm_account"] = account
    gpu_model = env.get("DYAFDB_SLURM_GPU_MODEL") or slurm.get("gpu_model")
    if kind == "gpu" and gpu_model:
        out["gpu_model"] = gpu_model
    return out


CPU_SITE = site_resources("cpu")
GPU_SITE = site_resources("gpu")

# Rules files append their final outputs here; `rule all` reads it lazily, after every include.
FINAL_TARGETS = []


wildcard_constraints:
    conversation=r"[a-z0-9][a-z0-9._-]*",


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
    """What a recording depends on besides its scenario: the two models' settings, the bridge and,
    for conversations with a checked model only, the garble watcher (a threshold change re-records
    just those)."""
    row = conversation(wildcards)
    return _record_digest(row.model_a, row.model_b, garble_params(config, row))


@functools.lru_cache(maxsize=None)
def _record_digest(model_a, model_b, garble):
    spec = {
        "models": {m: model_spec(m) for m in (model_a, model_b)},
        "bridge": {"lead_in_s": config["bridge"]["lead_in_s"]},
    }
    if garble:
        spec["garble"] = garble
    # A digest, not the JSON: short in job metadata, and no braces for Snakemake to read as wildcards.
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def recording_meta(wildcards):
    return f"{RESULTS}/recordings/{wildcards.conversation}/meta.json"


def record_resource(key, default, combine=sum):
    def get(wildcards):
        values = [model_spec(m).get("resources", {}).get(key, default) for m in pair_models(wildcards)]
        return combine(values)

    return get
