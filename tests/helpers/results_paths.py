"""The results folder of a test project (``<root>/results``, the configs' default), named by
dyafdb.paths like the stages name it: tests never spell a per-conversation path by hand."""

from __future__ import annotations

from pathlib import Path

from dyafdb.paths import Results

# What Snakemake targets are relative to (the project folder a test runs the workflow in).
RESULTS = Results("results")


def results_at(root: Path | str) -> Results:
    return Results(str(Path(root) / "results"))
