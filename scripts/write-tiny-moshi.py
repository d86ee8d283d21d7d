"""Write the tests' tiny random Moshi checkpoint (kyutai's layout) into a folder; nothing is downloaded.

    python scripts/write-tiny-moshi.py results/ci-slurm-engines/moshi-tiny

The checkpoint comes from tests/standins/moshi_tiny.py (moshi 0.2.13's own classes, shrunk); the
`moshi` adapter loads it with params {checkpoint_dir: FOLDER, device: cpu, dtype: float32}.
scripts/ci-slurm.sh records with it through SLURM engine node groups (config/ci-slurm-engines.yaml).
A folder that already holds a checkpoint is left alone (the same seed writes the same weights).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "standins"))

import moshi_tiny  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if (args.folder / "config.json").exists():
        print(f"tiny Moshi checkpoint already in {args.folder}")
        return 0
    # Written next to the folder and renamed, so a killed run never leaves a half checkpoint behind.
    tmp = args.folder.with_name(args.folder.name + ".partial")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    moshi_tiny.write_moshi_checkpoint(tmp, seed=args.seed)
    tmp.rename(args.folder)
    print(f"tiny Moshi checkpoint written to {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
