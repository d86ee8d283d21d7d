"""Every file under the results folder, named once.

The rules files and the stage code both ask this module, so a path is spelled in one place: the
rules with wildcards (``Results(RESULTS).segments("{conversation}")`` is the score rule's output
pattern), the stages with real ids (``results_of(config, root).segments(cid)``). Each method returns
a string, which Snakemake takes as it is and the stages wrap in ``Path``.

Logs and benchmarks live under the results folder too, so two configs with different
``results_dir`` never write over each other's logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


@dataclass(frozen=True)
class Results:
    root: str

    def _join(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    # suite
    @property
    def design(self) -> str:
        return self._join("design", "conversations.tsv")

    # record
    @property
    def recordings(self) -> str:
        return self._join("recordings")

    def recording(self, conversation: str) -> str:
        """A conversation's folder: audio.wav, text.jsonl, meta.json, garble.json (dyafdb.record.recording)."""
        return self._join("recordings", conversation)

    def recording_file(self, conversation: str, name: str) -> str:
        return self._join("recordings", conversation, name)

    # score
    def segments(self, conversation: str) -> str:
        return self._join("segments", f"{conversation}.json")

    def transcript_txt(self, conversation: str) -> str:
        return self._join("transcripts", f"{conversation}.txt")

    def transcript_json(self, conversation: str) -> str:
        return self._join("transcripts", f"{conversation}.json")

    def measures_json(self, conversation: str) -> str:
        """A conversation's mechanical measures (turn-taking, occupancy, leak)."""
        return self._join("measures", f"{conversation}.json")

    def mechanical_table(self, archetype: str) -> str:
        """One archetype's mechanical measures in measures.tsv's long format."""
        return self._join("scores", "mechanical", f"{archetype}.tsv")

    # judge
    def judge_output(self, judge: str, archetype: str, question: str) -> str:
        return self._join("judge", judge, archetype, f"{question}.jsonl")

    @property
    def judge_cache(self) -> str:
        return self._join("judge", "cache")

    # measures
    @property
    def measures_table(self) -> str:
        return self._join("scores", "measures.tsv")

    # text pairing
    def text_conversations(self, archetype: str) -> str:
        return self._join("text_pairing", "conversations", f"{archetype}.jsonl")

    def text_measures(self, archetype: str) -> str:
        return self._join("text_pairing", "measures", f"{archetype}.tsv")

    # analysis
    @property
    def analysis(self) -> str:
        return self._join("analysis")

    def analysis_file(self, name: str) -> str:
        """A file at the top of the analysis folder: versions.tsv, config.yaml."""
        return self._join("analysis", name)

    def analysis_runs(self, archetype: str) -> str:
        return self._join("analysis", "runs", f"{archetype}.tsv")

    def analysis_table(self, name: str, ext: str = "tsv") -> str:
        return self._join("analysis", "tables", f"{name}.{ext}")

    def figure(self, name: str, ext: str) -> str:
        return self._join("analysis", "figures", f"{name}.{ext}")

    @property
    def report(self) -> str:
        return self._join("analysis", "report.html")

    # viewer
    @property
    def site(self) -> str:
        return self._join("site")

    @property
    def annotation_site(self) -> str:
        return self._join("annotation-site")

    # every stage
    def log(self, *parts: str) -> str:
        """A rule's log: ``log("score", "{conversation}")`` -> <results>/logs/score/{conversation}.log."""
        return self._join("logs", *parts[:-1], f"{parts[-1]}.log")

    def log_dir(self, *parts: str) -> str:
        return self._join("logs", *parts)

    def benchmark(self, *parts: str) -> str:
        return self._join("benchmarks", *parts[:-1], f"{parts[-1]}.tsv")

    def benchmark_dir(self, *parts: str) -> str:
        """A rule's benchmark folder: ``benchmark_dir("record")`` holds every record job's timings."""
        return self._join("benchmarks", *parts)


def results_of(config: Mapping[str, Any], root: Path | str = ".") -> Results:
    """The results folder a config names, under ``root`` (the project root scenarios_dir is relative to)."""
    results_dir = config.get("results_dir", "results")
    return Results(str(Path(root) / results_dir))
