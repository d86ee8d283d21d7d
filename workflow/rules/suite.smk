rule design:
    input:
        scenarios=sorted({f"{SCENARIOS}/{r.archetype}/{r.scenario}.yaml" for r in CONVERSATIONS.values()}),
    output:
        R.design,
    log:
        R.log("design"),
    conda:
        "../../envs/dyafdb.yml"
    resources:
        mem_mb=1000,
        runtime=5,
        **CPU_SITE,
    shell:
        "dyafdb suite design --out {output:q} > {log:q} 2>&1"


FINAL_TARGETS.append(R.design)
