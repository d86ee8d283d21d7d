#!/usr/bin/env python3
"""Check that two result folders of the same suite hold the same recordings, segments and measures.

    python scripts/compare-results.py results/ci-slurm/slurm results/ci-slurm/local

Exit 0 when every recording (audio bytes, text tokens), segment file and measures.tsv row matches.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(a: Path, b: Path) -> int:
    from dyafdb.paths import Results

    ra, rb = Results(str(a)), Results(str(b))
    problems: list[str] = []
    recs_a, recs_b = ra.recorded(), rb.recorded()
    if recs_a != recs_b:
        problems.append(f"different recordings: {set(recs_a) ^ set(recs_b)}")
    for cid in sorted(set(recs_a) & set(recs_b)):
        for name in ("audio.wav", "text.jsonl"):
            if Path(ra.recording_file(cid, name)).read_bytes() != Path(rb.recording_file(cid, name)).read_bytes():
                problems.append(f"{cid}/{name} differs")
        seg_a = json.loads(Path(ra.segments(cid)).read_text())
        seg_b = json.loads(Path(rb.segments(cid)).read_text())
        if seg_a != seg_b:
            problems.append(f"{ra.segments(cid)} differs")
    rows_a = sorted(Path(ra.measures_table).read_text().splitlines())
    rows_b = sorted(Path(rb.measures_table).read_text().splitlines())
    if rows_a != rows_b:
        diff = sorted(set(rows_a) ^ set(rows_b))[:5]
        problems.append(f"measures.tsv differs ({len(set(rows_a) ^ set(rows_b))} rows), e.g. {diff}")
    for p in problems:
        print("MISMATCH:", p)
    print(f"compared {len(recs_a)} recordings: {'identical' if not problems else f'{len(problems)} mismatches'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
