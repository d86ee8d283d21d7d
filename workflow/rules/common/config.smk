# The run's config, its design and its final targets: what every other rules file reads.
import json
import os
from pathlib import Path

from dyafdb.config import CONFIG_ENV, OVERRIDES_ENV, config_overrides, validate_config
from dyafdb.paths import Results
from dyafdb.suite.design import build_design
from dyafdb.suite.ids import ID_PATTERN

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

# Rules files append their final outputs here; `rule all` reads it lazily, after every include.
FINAL_TARGETS = []


wildcard_constraints:
    conversation=ID_PATTERN,


def final_targets(wildcards):
    return FINAL_TARGETS


# Outputs deleted (or lost) after something was made from them: Snakemake would never notice them,
# so they become final targets and are made again with everything after them (dyafdb.verify.state).
# Only the submitting process plans; a job's own Snakemake (on a cluster node) skips the scan.
if workflow.is_main_process:
    from dyafdb.verify.state import replan_targets

    FINAL_TARGETS.extend(replan_targets(R, CONVERSATIONS.values()))
