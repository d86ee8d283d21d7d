# Analysis: per-run tables per archetype -> one rule per table and per figure -> the HTML report.
# A table reads only the archetypes it needs, so editing one judge prompt (one archetype's judge
# jobs) recomputes that archetype's runs and the tables that read it, nothing else.
# `snakemake --report report.html` builds Snakemake's report from the same outputs and captions.
from dyafdb.analysis.memory import declared_mem_mb
from dyafdb.analysis.registry import TableSpec
from dyafdb.analysis.inputs import AnalysisInputs
from dyafdb.analysis.pool import ANALYSIS

ANALYSIS_PLAN = AnalysisInputs(config, CONVERSATIONS, RESULTS)
# Analysis jobs hand their command line to analysis processes that serve several in turn (pandas,
# matplotlib and seaborn imported once per process, not per job; dyafdb.analysis.pool). Through the
# environment, like the config files: neither the shell command nor the params change, so no job reruns.
ANALYSIS.share_in_workflow(config["analysis"]["jobs_per_process"])
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
        settings=ANALYSIS_PLAN.runs_settings(),
    log:
        R.log("analysis", "runs_{task}"),
    benchmark:
        R.benchmark("analysis", "runs_{task}")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        # Grows with the archetype's conversations (dyafdb.analysis.memory, measured).
        mem_mb=lambda wildcards: declared_mem_mb("runs", len(ANALYSIS_PLAN.by_archetype.get(wildcards.task, ()))),
        runtime=10,
        **CPU_SITE,
    shell:
        "dyafdb analysis runs --archetype {wildcards.task} --out {output:q} > {log:q} 2>&1"


# One rule per declared table (@table in dyafdb.analysis.products; dyafdb.analysis.registry): its
# per-run tables in, its TSV (and HTML for the report) out. Audio health (dyafdb.score.health) is
# measured in every archetype: one matrix per measure and the per-model averages; their variance
# decomposition is in the variance table (kind health).
for _table in ANALYSIS_PLAN.generated_tables():

    rule:
        name:
            _table.rule_name
        input:
            ANALYSIS_PLAN.table_runs(_table),
        output:
            tsv=R.analysis_table(_table.stem),
            **{_key: R.analysis_table(_stem) for _key, _stem in _table.outputs.items()},
            html=report(
                R.analysis_table(_table.stem, "html"),
                caption=f"../report/{_table.caption}",
                category=_table.category,
                subcategory=_table.subcategory or None,
            ),
        params:
            settings=ANALYSIS_PLAN.settings(*_table.settings),
            product=_table.name,
            options=_table.command_options,
        log:
            R.log("analysis", _table.log),
        benchmark:
            R.benchmark("analysis", _table.log)
        conda:
            "../../envs/dyafdb.yml"
        wildcard_constraints:
            **({_table.wildcard: "|".join(_table.values(ANALYSIS_PLAN.tasks))} if _table.constrain else {}),
        resources:
            mem_mb=_table.mem_mb,
            runtime=_table.runtime,
            **CPU_SITE,
        shell:
            TableSpec.SHELL


rule analysis_agreement:
    input:
        measures=R.measures_table,
        human=ANALYSIS_PLAN.human_labels(),
        annotation_key=ANALYSIS_PLAN.annotation_keys(),
    output:
        tsv=R.analysis_table("agreement"),
        html=report(R.analysis_table("agreement", "html"), caption="../report/agreement.rst", category="Judge agreement"),
    params:
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s", "main_judge", "second_judge", "human_labels"),
    log:
        R.log("analysis", "agreement"),
    benchmark:
        R.benchmark("analysis", "agreement")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=declared_mem_mb("agreement", len(CONVERSATIONS)),
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb analysis agreement --measures {input.measures:q} --out {output.tsv:q}"
        " --html {output.html:q} > {log:q} 2>&1"


rule analysis_versions:
    output:
        versions=report(R.analysis_file("versions.tsv"), caption="../report/versions.rst", category="Provenance"),
        config=report(R.analysis_file("config.yaml"), caption="../report/config.rst", category="Provenance"),
    params:
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
        "dyafdb analysis versions --out {output.versions:q} --config-out {output.config:q} > {log:q} 2>&1"


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
            "dyafdb analysis figure {params.kind} --input {input:q} --out-prefix {params.prefix:q} > {log:q} 2>&1"


# ---------------------------------------------------------------- the report


rule analysis_report:
    input:
        tables=ANALYSIS_PLAN.tables_html(),
        figures=ANALYSIS_PLAN.figures_png(),
        others=ANALYSIS_PLAN.figures_other(),
        captions=AnalysisInputs.captions(workflow.basedir),
        versions=R.analysis_file("versions.tsv"),
        config=R.analysis_file("config.yaml"),
    output:
        R.report,
    params:
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
        "dyafdb analysis report --tables {input.tables:q} --figures {input.figures:q} --captions {params.captions:q}"
        " --versions {input.versions:q} --config-file {input.config:q} --out {output:q} > {log:q} 2>&1"


FINAL_TARGETS.append(R.report)
