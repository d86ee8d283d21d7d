# What runs around the jobs (the Snakefile's onstart, onsuccess and onerror): the preflight, the run
# record, the local engines and the closing summary.
from snakemake.exceptions import WorkflowError


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


def stop_local_engines():
    from dyafdb.agents.engine.launch import LOCAL_ENGINES

    LOCAL_ENGINES.stop()
