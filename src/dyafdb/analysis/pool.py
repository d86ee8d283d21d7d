"""Several analysis jobs per process (analysis.jobs_per_process, which workflow/rules/analysis.smk
hands to :meth:`ANALYSIS.share_in_workflow`): the shared processes of dyafdb.procpool, for
`dyafdb analysis`.

An analysis job (a per-run table, a product, a figure, the report) does a few tens of milliseconds
of work after about a second of imports (pandas, scipy, matplotlib, seaborn); a run has dozens of
them. A shared process imports once and answers each job with `dyafdb`'s own entry point, as the
job's own process would.

A job's outputs must not depend on the jobs its process served before. What an analysis command
leaves behind in its process, and what :func:`fresh_state` does about it:

- matplotlib's rcParams (each figure sets seaborn's theme over them) and pyplot's open figures (a
  figure that failed half-way stays open): put back as the rc file left them at import, which is
  what a fresh process draws with, and closed.
- Python's "warn once per place" memory: forgotten, so a job's log shows the warnings its own
  process would print.
- lru caches: those an analysis command fills (dyafdb.analysis.registry, dyafdb.declarations, the
  schemas, the rubric's questions, text normalisation) are keyed by arguments whose answer depends
  only on the package's own source, never on a file of the run; every file a job reads (config,
  tables, run record, bundles) is read again by each job. tests/analysis/test_analysis_pool.py
  lists the caches a chain of analysis jobs fills, so a new one keyed by a path fails there.
- numpy: every bootstrap draws from its own generator seeded by analysis.seed; no global state.
- os.environ and the working folder are the job's own (dyafdb.procpool.serve sets them).
"""

from __future__ import annotations

import sys
import warnings

from dyafdb.procpool import SharedProcesses

ANALYSIS = SharedProcesses(stage="analysis", env="DYAFDB_ANALYSIS_PER_PROCESS", verb="analysed", unit="job")


def fresh_state() -> None:
    """Undo what an earlier job of this process may have left behind (see the module's docstring);
    nothing to do in a process of its own, where none of it has been imported yet."""
    mpl = sys.modules.get("matplotlib")
    if mpl is not None:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:
            pyplot.close("all")
        mpl.rc_file_defaults()  # as at import; the backend (Agg) stays
    warnings.onceregistry.clear()
    mutated = getattr(warnings, "_filters_mutated", None)  # each module's registry is cleared on its next warning
    if mutated is not None:
        mutated()
