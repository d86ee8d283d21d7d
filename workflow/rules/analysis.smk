# Analysis: per-run tables per archetype -> one rule per table and per figure -> the HTML report.
# A table reads only the archetypes it needs, so editing one judge prompt (one archetype's judge
# jobs) recomputes that archetype's runs and the tables that read it, nothing else.
# `snakemake --report report.html` builds Snakemake's report from the same outputs and captions.
from dyafdb.analysis import columns as AC
from dyafdb.analysis.workflow import AnalysisPlan

ANALYSIS_PLAN = AnalysisPlan(config, CONVERSATIONS, RESULTS)
ALL_RUNS = ANALYSIS_PLAN.all_runs
MAIN_RUNS = ANALYSIS_PLAN.runs_of(ANALYSIS_PLAN.main_tasks)


wildcard_constraints:
    task=r"T[1-4](-[1-4])?",
    metric=r"[a-z_]+",


rule analysis_runs:
    input:
        ANALYSIS_PLAN.archetype_files,
    output:
        R.analysis_runs("{task}"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_judge", "second_judge"),
    log:
        R.log("analysis", "runs_{task}"),
    benchmark:
        R.benchmark("analysis", "runs_{task}")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=2000,
        runtime=10,
        **CPU_SITE,
    shell:
        "dyafdb analysis runs {params.cfg} --archetype {wildcards.task} --out {output} > {log} 2>&1"


rule analysis_matrix:
    input:
        lambda wildcards: R.analysis_runs(wildcards.task),
    output:
        tsv=R.analysis_table("score_{task}"),
        html=report(
            R.analysis_table("score_{task}", "html"),
            caption="../report/score.rst",
            category="Task scores",
            subcategory="{task}",
        ),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s"),
    log:
        R.log("analysis", "score_{task}"),
    benchmark:
        R.benchmark("analysis", "score_{task}")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis matrix {params.cfg} --runs {input} --task {wildcards.task}"
        " --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_turntaking:
    input:
        MAIN_RUNS,
    output:
        tsv=R.analysis_table("turntaking_{metric}"),
        html=report(
            R.analysis_table("turntaking_{metric}", "html"),
            caption="../report/turntaking.rst",
            category="Turn-taking",
            subcategory="{metric}",
        ),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s"),
    log:
        R.log("analysis", "turntaking_{metric}"),
    benchmark:
        R.benchmark("analysis", "turntaking_{metric}")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis turntaking {params.cfg} --runs {input} --metric {wildcards.metric}"
        " --out {output.tsv} --html {output.html} > {log} 2>&1"


# Audio health (dyafdb.score.health), measured in every archetype: one matrix per measure and the
# per-model averages; their variance decomposition is in the variance table (kind health).
rule analysis_health:
    input:
        ALL_RUNS,
    output:
        tsv=R.analysis_table("health_{metric}"),
        html=report(
            R.analysis_table("health_{metric}", "html"),
            caption="../report/health.rst",
            category="Audio health",
            subcategory="{metric}",
        ),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s"),
    log:
        R.log("analysis", "health_{metric}"),
    benchmark:
        R.benchmark("analysis", "health_{metric}")
    conda:
        "../../envs/dyafdb.yml"
    wildcard_constraints:
        metric="|".join(AC.HEALTH),
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis health {params.cfg} --runs {input} --metric {wildcards.metric}"
        " --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_health_models:
    input:
        ALL_RUNS,
    output:
        tsv=R.analysis_table("health_models"),
        html=report(R.analysis_table("health_models", "html"), caption="../report/health.rst", category="Audio health"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s"),
    log:
        R.log("analysis", "health_models"),
    benchmark:
        R.benchmark("analysis", "health_models")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis health-models {params.cfg} --runs {input} --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_variance:
    input:
        ALL_RUNS,
    output:
        tsv=R.analysis_table("variance"),
        html=report(R.analysis_table("variance", "html"), caption="../report/variance.rst", category="Variance"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s", "bootstrap", "seed"),
    log:
        R.log("analysis", "variance"),
    benchmark:
        R.benchmark("analysis", "variance")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=2000,
        runtime=15,
        **CPU_SITE,
    shell:
        "dyafdb analysis variance {params.cfg} --runs {input} --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_timing:
    input:
        ANALYSIS_PLAN.runs_of(["T1-1", "T1-2", "T4-2"]),
    output:
        tsv=R.analysis_table("timing"),
        curves=R.analysis_table("timing_curves"),
        html=report(R.analysis_table("timing", "html"), caption="../report/timing.rst", category="Role timing"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s", "timing_archetypes", "ci"),
    log:
        R.log("analysis", "timing"),
    benchmark:
        R.benchmark("analysis", "timing")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis timing {params.cfg} --runs {input} --out {output.tsv} --curves {output.curves}"
        " --html {output.html} > {log} 2>&1"


rule analysis_action_success:
    input:
        ANALYSIS_PLAN.runs_of(["T2", "T3-2", "T4-2"]),
    output:
        tsv=R.analysis_table("action_success"),
        html=report(
            R.analysis_table("action_success", "html"),
            caption="../report/action_success.rst",
            category="Action x success",
        ),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s"),
    log:
        R.log("analysis", "action_success"),
    benchmark:
        R.benchmark("analysis", "action_success")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis action-success {params.cfg} --runs {input} --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_windows:
    input:
        MAIN_RUNS,
    output:
        tsv=R.analysis_table("windows"),
        html=report(R.analysis_table("windows", "html"), caption="../report/windows.rst", category="Time windows"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("windows_s", "bootstrap", "seed", "ci"),
    log:
        R.log("analysis", "windows"),
    benchmark:
        R.benchmark("analysis", "windows")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=10,
        **CPU_SITE,
    shell:
        "dyafdb analysis windows {params.cfg} --runs {input} --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_balance:
    input:
        ANALYSIS_PLAN.runs_of(AC.BALANCE_TASKS),
    output:
        tsv=R.analysis_table("balance"),
        html=report(R.analysis_table("balance", "html"), caption="../report/balance.rst", category="Game balance"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s", "bootstrap", "seed", "ci"),
    log:
        R.log("analysis", "balance"),
    benchmark:
        R.benchmark("analysis", "balance")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis balance {params.cfg} --runs {input} --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_agreement:
    input:
        measures=R.measures_table,
        human=ANALYSIS_PLAN.human_labels(),
    output:
        tsv=R.analysis_table("agreement"),
        html=report(R.analysis_table("agreement", "html"), caption="../report/agreement.rst", category="Judge agreement"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s", "main_judge", "second_judge", "human_labels"),
    log:
        R.log("analysis", "agreement"),
    benchmark:
        R.benchmark("analysis", "agreement")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=2000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis agreement {params.cfg} --measures {input.measures} --out {output.tsv}"
        " --html {output.html} > {log} 2>&1"


rule analysis_profiles:
    input:
        MAIN_RUNS,
    output:
        tsv=R.analysis_table("profiles"),
        html=report(R.analysis_table("profiles", "html"), caption="../report/profiles.rst", category="Profiles"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s", "timing_archetypes", "ci"),
    log:
        R.log("analysis", "profiles"),
    benchmark:
        R.benchmark("analysis", "profiles")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis profiles {params.cfg} --runs {input} --out {output.tsv} --html {output.html} > {log} 2>&1"


rule analysis_rating:
    input:
        ALL_RUNS,
    output:
        tsv=R.analysis_table("leaderboard"),
        effects=R.analysis_table("rating_effects"),
        html=report(R.analysis_table("leaderboard", "html"), caption="../report/leaderboard.rst", category="Rating"),
    params:
        cfg=CONFIG_ARGS,
        settings=ANALYSIS_PLAN.settings(
            "main_suite",
            "main_window_s",
            "bootstrap",
            "seed",
            "ci",
            "reference_models",
            "anchor_model",
            "anchor_rating",
            "rating_scale",
            "contested",
        ),
    log:
        R.log("analysis", "rating"),
    benchmark:
        R.benchmark("analysis", "rating")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=2000,
        runtime=15,
        **CPU_SITE,
    shell:
        "dyafdb analysis rating {params.cfg} --runs {input} --out {output.tsv} --effects {output.effects}"
        " --html {output.html} > {log} 2>&1"


rule analysis_versions:
    output:
        versions=report(R.analysis_file("versions.tsv"), caption="../report/versions.rst", category="Provenance"),
        config=report(R.analysis_file("config.yaml"), caption="../report/config.rst", category="Provenance"),
    params:
        cfg=CONFIG_ARGS,
        settings=json.dumps(config, sort_keys=True, default=str),
    log:
        R.log("analysis", "versions"),
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=500,
        runtime=2,
        **CPU_SITE,
    shell:
        "dyafdb analysis versions {params.cfg} --out {output.versions} --config-out {output.config} > {log} 2>&1"


# ---------------------------------------------------------------- figures (each from its table)


for _name, (_kind, _inputs, _category) in ANALYSIS_PLAN.figures().items():

    rule:
        name:
            f"figure_{_name}"
        input:
            _inputs,
        output:
            **{
                ext: report(path, caption=f"../report/{_name}.rst", category=_category) if ext == "png" else path
                for ext, path in ANALYSIS_PLAN.figure_files(_name).items()
            },
        params:
            cfg=CONFIG_ARGS,
            kind=_kind,
            prefix=lambda wildcards, output: os.path.splitext(output.png)[0],
            settings=ANALYSIS_PLAN.settings("figure_formats", "dpi"),
        log:
            R.log("analysis", f"figure_{_name}"),
        benchmark:
            R.benchmark("analysis", f"figure_{_name}")
        conda:
            "../../envs/dyafdb.yml"
        resources:
            mem_mb=1000,
            runtime=5,
            **CPU_SITE,
        shell:
            "dyafdb analysis figure {params.kind} {params.cfg} --input {input} --out-prefix {params.prefix} > {log} 2>&1"


# ---------------------------------------------------------------- the report


rule analysis_report:
    input:
        tables=ANALYSIS_PLAN.tables_html(),
        figures=ANALYSIS_PLAN.figures_png(),
        others=ANALYSIS_PLAN.figures_other(),
        captions=AnalysisPlan.captions(workflow.basedir),
        versions=R.analysis_file("versions.tsv"),
        config=R.analysis_file("config.yaml"),
    output:
        R.report,
    params:
        cfg=CONFIG_ARGS,
        captions=lambda wildcards, input: os.path.dirname(input.captions[0]) if input.captions else "",
    log:
        R.log("analysis", "report"),
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis report {params.cfg} --tables {input.tables} --figures {input.figures} --captions {params.captions}"
        " --versions {input.versions} --config-file {input.config} --out {output} > {log} 2>&1"


FINAL_TARGETS.append(R.report)
