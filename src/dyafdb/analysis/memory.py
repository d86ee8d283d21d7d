"""Memory the analysis jobs that read the whole corpus declare, from the number of conversations.

A fixed figure is either far too much for the demo or too little for the paper's optional suites
(the agreement table reaches 1.3-1.4 GB at 40,000 conversations; a SLURM job that outgrows its
`mem_mb` is killed). Each job's peak grows linearly with the conversations it reads: measured by
bench/bench_analysis_memory.py (a fresh process per job, as the workflow runs it; BENCHMARKS.md,
"Analysis memory"), declared here with a margin for pandas' transient copies.
"""

from __future__ import annotations

# job -> (intercept MB, MB per 1,000 conversations it reads): the line through the measured peaks at
# 7,560 and 15,120 conversations in the corpus, rounded up. One archetype's per-run table: 315 MB at
# 1,080 of its conversations, 615 MB at 2,160; the agreement table: 391 MB at 7,560, 615 MB at
# 15,120 (so 1.35 GB at 40,000, as the issue measured).
MEASURED: dict[str, tuple[float, float]] = {
    "runs": (20.0, 280.0),
    "agreement": (170.0, 30.0),
}
MARGIN = 1.5  # measured peak -> declared: room for a larger judge table or another pandas version
FLOOR_MB = 2000  # what these jobs declared before; the paper's main suite and smaller keep it


def declared_mem_mb(job: str, conversations: int) -> int:
    """The `mem_mb` a job reading `conversations` conversations declares (a multiple of 100 MB)."""
    base, per_thousand = MEASURED[job]
    need = MARGIN * (base + per_thousand * conversations / 1000)
    return max(FLOOR_MB, int(-(-need // 100) * 100))
