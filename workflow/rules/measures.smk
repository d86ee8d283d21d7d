# Every measure in one long table, results/scores/measures.tsv: the per-archetype mechanical tables
# plus every judge batch.
rule measures_table:
    input:
        mechanical=SCORING.mechanical_tables,
        judge=JUDGING.outputs,
    output:
        R.measures_table,
    log:
        R.log("measures_table"),
    benchmark:
        R.benchmark("measures_table")
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=2000,
        runtime=30,
        **CPU_SITE,
    shell:
        "dyafdb measures --mechanical {input.mechanical:q} --out {output:q} > {log:q} 2>&1"


FINAL_TARGETS.append(R.measures_table)
