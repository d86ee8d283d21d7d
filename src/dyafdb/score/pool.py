"""Several conversations per scoring process (score.conversations_per_process), one score job per
conversation in the plan: the shared processes of dyafdb.procpool, for `dyafdb score`.

Most of a score job's CPU time is the process itself: the imports and the audio-health models
(Whisper tiny.en, DNSMOS), loaded again by every job; a shared process loads them once.
"""

from __future__ import annotations

from dyafdb.procpool import SharedProcesses

SCORE = SharedProcesses(stage="score", env="DYAFDB_SCORE_PER_PROCESS", verb="scored")
# The number of conversations one scoring process serves; set by the workflow (workflow/rules/score.smk).
POOL_ENV = SCORE.env
per_process = SCORE.per_process
pool_setting = SCORE.setting
pool_dir = SCORE.folder
score_in_pool = SCORE.run
