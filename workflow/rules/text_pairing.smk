# The text-only pairing (Appendix E): the same scenarios played as text by the judge's LLM, scored
# by the same questions, and Table 9 comparing it with the spoken runs. What each rule reads is
# dyafdb.text_pairing.inputs; its archetypes are text_pairing.archetypes (dyafdb.text_pairing.archetypes).

from dyafdb.text_pairing.inputs import TextPairingInputs

TEXT_PAIRING = TextPairingInputs(config, CONVERSATIONS, RESULTS)


rule text_pair_generate:
    input:
        scenarios=TEXT_PAIRING.scenarios,
    output:
        R.text_conversations("{task}"),
    params:
        settings=TEXT_PAIRING.settings(),
    log:
        R.log("text_pairing", "generate_{task}"),
    benchmark:
        R.benchmark("text_pairing", "generate_{task}")
    conda:
        "../../envs/dyafdb.yml"
    threads: TEXT_PAIRING.generate_threads
    resources:
        mem_mb=2000,
        runtime=120,
        **CPU_SITE,
    shell:
        "dyafdb text-pairing generate --archetype {wildcards.task} --out {output:q} > {log:q} 2>&1"


rule text_pair_score:
    input:
        conversations=R.text_conversations("{task}"),
        templates=TEXT_PAIRING.judge_templates,
    output:
        R.text_measures("{task}"),
    params:
        judge=TEXT_PAIRING.judge(),
    log:
        R.log("text_pairing", "score_{task}"),
    benchmark:
        R.benchmark("text_pairing", "score_{task}")
    conda:
        "../../envs/dyafdb.yml"
    threads: TEXT_PAIRING.judge_threads
    resources:
        mem_mb=2000,
        runtime=120,
        **CPU_SITE,
    shell:
        "dyafdb text-pairing score --conversations {input.conversations:q} --out {output:q} > {log:q} 2>&1"


rule text_pair_table:
    input:
        runs=TEXT_PAIRING.speech_runs,
        text=TEXT_PAIRING.measures,
    output:
        tsv=R.analysis_table("text_pairing"),
        html=report(R.analysis_table("text_pairing", "html"), caption="../report/text_pairing.rst", category="Text pairing"),
    params:
        settings=ANALYSIS_PLAN.settings("main_suite", "main_window_s"),
    log:
        R.log("analysis", "text_pairing"),
    benchmark:
        R.benchmark("analysis", "text_pairing")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb text-pairing table --runs {input.runs:q} --text-measures {input.text:q}"
        " --out {output.tsv:q} --html {output.html:q} > {log:q} 2>&1"
