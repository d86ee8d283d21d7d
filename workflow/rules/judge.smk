# The LLM judge, batched per (judge, archetype, question): editing one prompt template under
# judge.prompts_dir reruns only that question's jobs (and the table); replies are cached on disk,
# so a batch rerun for one changed transcript asks only for that conversation.
# Then every measure goes into one long table, results/scores/measures.tsv.
from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.settings import judge_settings

JUDGE = judge_settings(config)
JUDGE_PLAN = judge_plan(sorted({row.archetype for row in CONVERSATIONS.values()}))
JUDGE_OUTPUTS = [f"{RESULTS}/judge/{j}/{a}/{q}.jsonl" for j in JUDGE.run for a, q in JUDGE_PLAN]


def archetype_ids(archetype):
    return [c for c in CONVERSATION_IDS if CONVERSATIONS[c].archetype == archetype]


def judge_transcripts(wildcards):
    ids = archetype_ids(wildcards.archetype)
    return [f"{RESULTS}/transcripts/{c}.{ext}" for c in ids for ext in ("txt", "json")]


def judge_scenarios(wildcards):
    rows = [CONVERSATIONS[c] for c in archetype_ids(wildcards.archetype)]
    return sorted({f"{SCENARIOS}/{r.archetype}/{r.scenario}.yaml" for r in rows})


def judge_spec(wildcards):
    """What a judge batch depends on besides its inputs: that judge's backend, model and retry policy."""
    spec = JUDGE.judge(wildcards.judge)
    return json.dumps(
        {"spec": {k: v for k, v in vars(spec).items() if k not in ("concurrency", "batch_poll_s")},
         "label_retries": JUDGE.label_retries},
        sort_keys=True,
        default=str,
    )


def judge_mem(wildcards):
    return 2000 if JUDGE.judge(wildcards.judge).backend == "llamacpp" else 1000


def judge_threads(wildcards):
    spec = JUDGE.judge(wildcards.judge)
    return spec.threads if spec.backend == "llamacpp" else 1


rule judge:
    input:
        transcripts=judge_transcripts,
        scenarios=judge_scenarios,
        template=f"{JUDGE.prompts_dir}/{{question}}.txt",
    output:
        f"{RESULTS}/judge/{{judge}}/{{archetype}}/{{question}}.jsonl",
    params:
        cfg=CONFIG_ARGS,
        spec=judge_spec,
    log:
        "logs/judge/{judge}/{archetype}/{question}.log",
    benchmark:
        "benchmarks/judge/{judge}/{archetype}/{question}.tsv"
    conda:
        "../../envs/dyafdb.yml"
    wildcard_constraints:
        judge=r"[a-z0-9][a-z0-9_-]*",
        archetype=r"T[0-9](-[0-9])?",
        question=r"[a-z_]+",
    threads: judge_threads
    resources:
        mem_mb=judge_mem,
        runtime=240,
    shell:
        "dyafdb judge {params.cfg} --judge {wildcards.judge} --archetype {wildcards.archetype}"
        " --question {wildcards.question} --out {output} > {log} 2>&1"


rule measures_table:
    input:
        measures=expand(f"{RESULTS}/measures/{{c}}.json", c=CONVERSATION_IDS),
        meta=expand(f"{RESULTS}/recordings/{{c}}/meta.json", c=CONVERSATION_IDS),
        garble=expand(f"{RESULTS}/recordings/{{c}}/garble.json", c=CONVERSATION_IDS),
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
    shell:
        "dyafdb measures {params.cfg} --out {output} > {log} 2>&1"


FINAL_TARGETS.append(f"{RESULTS}/scores/measures.tsv")
