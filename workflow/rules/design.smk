rule design:
    input:
        scenarios=expand(
            "{dir}/{archetype}/{scenario}.yaml",
            zip,
            dir=[SCENARIOS] * len({(r.archetype, r.scenario) for r in CONVERSATIONS.values()}),
            archetype=[a for a, s in sorted({(r.archetype, r.scenario) for r in CONVERSATIONS.values()})],
            scenario=[s for a, s in sorted({(r.archetype, r.scenario) for r in CONVERSATIONS.values()})],
        ),
    output:
        f"{RESULTS}/design/conversations.tsv",
    log:
        "logs/design.log",
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "{DYAFDB} design {CONFIG_ARGS} --out {output} > {log} 2>&1"


FINAL_TARGETS.append(f"{RESULTS}/design/conversations.tsv")
