# Every measure in one long table, results/scores/measures.tsv: the per-archetype mechanical tables
# plus every judge batch.
rule measures_table:
    input:
        mechanical=SCORING.mechanical_tables,
        judge=JUDGE_OUTPUTS,
    output:
        f"{RESULTS}/scores/measures.tsv",
    params:
        cfg=CONFIG_ARGS,
    log:
        "logs/measures_table.log",
    benchmark:
        "benchmarks/measures_table.tsv"
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=2000,
        runtime=30,
        **CPU_SITE,
    shell:
        "dyafdb measures {params.cfg} --mechanical {input.mechanical} --out {output} > {log} 2>&1"


FINAL_TARGETS.append(f"{RESULTS}/scores/measures.tsv")
