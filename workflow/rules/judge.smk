# The LLM judge, batched per (judge, archetype, question): editing one prompt template under
# judge.prompts_dir reruns only that question's jobs (and what reads them); replies are cached on
# disk, so a batch rerun because one transcript changed asks only about that conversation.

from dyafdb.judge.inputs import JudgeInputs

JUDGING = JudgeInputs(config, CONVERSATIONS, RESULTS)


rule judge:
    input:
        # Stands for the archetype's transcripts: the table is written once every one is.
        scored=SCORING.mechanical_table,
        scenarios=JUDGING.scenarios,
        template=f"{JUDGING.prompts_dir}/{{question}}.txt",
    output:
        JUDGING.output,
    params:
        spec=JUDGING.spec,
    log:
        R.log("judge", "{judge}", "{archetype}", "{question}"),
    benchmark:
        R.benchmark("judge", "{judge}", "{archetype}", "{question}")
    conda:
        "../../envs/dyafdb.yml"
    wildcard_constraints:
        judge=r"[a-z0-9][a-z0-9_-]*",
        archetype=r"T[0-9](-[0-9])?",
        question=r"[a-z_]+",
    threads: JUDGING.threads
    resources:
        mem_mb=JUDGING.mem,
        runtime=240,
        **CPU_SITE,
    shell:
        "dyafdb judge --judge {wildcards.judge} --archetype {wildcards.archetype}"
        " --question {wildcards.question} --out {output:q} > {log:q} 2>&1"


# Final targets too, not only inputs of measures.tsv: Snakemake leaves a missing intermediate file
# missing while everything downstream of it is newer, so a deleted batch (read on its own by the
# viewer) would never come back. A few dozen files; the plan does not notice them.
FINAL_TARGETS.extend(JUDGING.outputs)
