"""Every file under the results folder, named once.

The rules files and the stage code both ask this module, so a path is spelled in one place: the
rules with wildcards (``Results(RESULTS).segments("{conversation}")`` is the score rule's output
pattern), the stages with real ids (``results_of(config, root).segments(cid)``). Each method returns
a string, which Snakemake takes as it is and the stages wrap in ``Path``.

Logs and benchmarks live under the results folder too, so two configs with different
``results_dir`` never write over each other's logs.

Every per-conversation file sits one folder down, in its conversation's *shard*
(:func:`shard_of`): ``recordings/<shard>/<id>/``, ``segments/<shard>/<id>.json``,
``logs/record/<shard>/<id>.log``, ... A folder with one entry per conversation would hold 7,560
entries for the main suite and 40,000-80,000 for the scaled ones, which network file systems
(NFS, Lustre) list slowly and lock as one. The shard is the scenario id, the part of the id before
the first ``__``: per scenario, not per archetype, because an archetype's folder still grows with
the design (1,080 conversations per archetype in the main suite, 5,760 at 4 models x 3 windows),
while a scenario's holds its pairings x openers x repetitions x windows (54 in the main suite,
288 at that scale) and the top level holds the scenarios (140 in the main suite, 180 with
every archetype). An id without ``__`` (a recording made by hand) is its own shard.

The rules pass the wildcard ``"{conversation}"`` and get ``"{shard}"`` in its place (and
``"{wildcards.shard}"`` for ``"{wildcards.conversation}"`` in a shell command), so a rule's
output, log and benchmark carry the same two wildcards; :data:`SHARD_PATTERN` and
:data:`CONVERSATION_IN_SHARD` are their constraints, which let a path match only when its shard
is its conversation's (every per-conversation pattern has ``{shard}/{conversation}``). A results
folder written before the shards (:func:`flat_layout_entries`) is moved into them by
``dyafdb reshard``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

# The workflow's {shard}: a scenario id (schemas/scenario.schema.yaml), and in a path only where
# the next part is a conversation id that starts with it. Snakemake checks a wildcard's constraint
# alone (where the lookahead's `$` lets it pass) and inside the whole path's pattern (where it
# does not), and compiles each constraint alone, so the check cannot refer to the {conversation}
# group: it repeats the shard's own group instead (capitalised: Snakemake reads a lower-case
# `<name>` in a path as a path variable). A job Snakemake found from a concrete path lists that
# group as one more wildcard, `Shard`, equal to `shard`; nothing reads it.
SHARD_PATTERN = r"(?P<Shard>[a-z0-9]+(?:-[a-z0-9]+)*)(?=$|/(?P=Shard)__)"
# The workflow's {conversation} in a shard's folder: a design id, scenario id then "__" and the rest.
CONVERSATION_IN_SHARD = r"[a-z0-9]+(?:-[a-z0-9]+)*__[a-z0-9._-]+"
# The wildcards the rules pass for a conversation, and what its shard is in their place.
_WILDCARD_SHARDS = {"{conversation}": "{shard}", "{wildcards.conversation}": "{wildcards.shard}"}
# The rules that run once per conversation: their logs and benchmarks are sharded too.
CONVERSATION_RULES = ("record", "score")
# What to do about results in the layout before the shards (said by preflight and status).
FLAT_LAYOUT_FIX = ("move them into their shard folders with `dyafdb reshard` and the run's --config "
                   "(`--dry-run` lists them first); else the workflow records and scores them all again")


def shard_of(conversation: str) -> str:
    """The sub-folder a conversation's files live in: its scenario id (see the module's docstring)."""
    wildcard = _WILDCARD_SHARDS.get(conversation)
    return wildcard if wildcard is not None else conversation.split("__", 1)[0]


def sharded(folder: str, conversation: str, suffix: str = "") -> str:
    """``<folder>/<shard>/<conversation><suffix>``: the one place a per-conversation path is made."""
    return f"{folder}/{shard_of(conversation)}/{conversation}{suffix}"


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
        return sharded(self._join("recordings"), conversation)

    def recording_file(self, conversation: str, name: str) -> str:
        return f"{self.recording(conversation)}/{name}"

    def recorded(self) -> list[str]:
        """The ids of the recording folders there are, in every shard (staging folders aside)."""
        return sorted(p.name for p in Path(self.recordings).glob("*/*") if p.is_dir() and not p.name.startswith(".")
                      and not p.parent.name.startswith("."))

    # score
    def segments(self, conversation: str) -> str:
        return sharded(self._join("segments"), conversation, ".json")

    def transcript_txt(self, conversation: str) -> str:
        return sharded(self._join("transcripts"), conversation, ".txt")

    def transcript_json(self, conversation: str) -> str:
        return sharded(self._join("transcripts"), conversation, ".json")

    def measures_json(self, conversation: str) -> str:
        """A conversation's mechanical measures (turn-taking, occupancy, leak)."""
        return sharded(self._join("measures"), conversation, ".json")

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
        """A rule's log: ``log("judge", "{judge}", "{archetype}", "{question}")`` ->
        <results>/logs/judge/{judge}/{archetype}/{question}.log (per conversation: :meth:`conversation_log`)."""
        return self._join("logs", *parts[:-1], f"{parts[-1]}.log")

    def log_dir(self, *parts: str) -> str:
        return self._join("logs", *parts)

    def benchmark(self, *parts: str) -> str:
        return self._join("benchmarks", *parts[:-1], f"{parts[-1]}.tsv")

    def benchmark_dir(self, *parts: str) -> str:
        """A rule's benchmark folder: ``benchmark_dir("record")`` holds every record job's timings
        (one level down, in shards: :meth:`conversation_benchmarks` lists them)."""
        return self._join("benchmarks", *parts)

    def conversation_log(self, rule: str, conversation: str) -> str:
        """The log of a per-conversation rule's job: <results>/logs/<rule>/<shard>/<id>.log."""
        return sharded(self.log_dir(rule), conversation, ".log")

    def conversation_benchmark(self, rule: str, conversation: str) -> str:
        return sharded(self.benchmark_dir(rule), conversation, ".tsv")

    def worker_log_dir(self, conversation: str) -> str:
        """Where a record job's agent workers write their stderr."""
        return sharded(self.log_dir("workers"), conversation)

    def conversation_benchmarks(self, rule: str) -> Iterator[Path]:
        """Every benchmark file a per-conversation rule has written so far."""
        return Path(self.benchmark_dir(rule)).glob("*/*.tsv")

    def judge_batches(self) -> Iterator[Path]:
        """Every judge batch on disk (``judge/<judge>/<archetype>/<question>.jsonl``)."""
        return Path(self._join("judge")).glob("*/*/*.jsonl")

    def shards(self, kind: str) -> list[str]:
        """The shard folders on disk under ``recordings`` or ``measures`` (for what is there, not planned)."""
        try:
            return sorted(e.name for e in os.scandir(self._join(kind)) if e.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return []

    def shard_folder(self, kind: str, shard: str) -> str:
        return self._join(kind, shard)

    def conversation_folders(self) -> dict[str, tuple[str, ...]]:
        """Every folder whose entries are per conversation, with the endings after the id ("" for a
        folder per conversation): what :func:`flat_layout_entries` looks in."""
        folders = {self._join("recordings"): ("",), self._join("segments"): (".json",),
                   self._join("transcripts"): (".txt", ".json"), self._join("measures"): (".json",),
                   self.log_dir("workers"): ("",)}
        for rule in CONVERSATION_RULES:
            folders[self.log_dir(rule)] = (".log",)
            folders[self.benchmark_dir(rule)] = (".tsv",)
        return folders


def flat_layout_entries(results: Results) -> Iterator[tuple[Path, str]]:
    """Each per-conversation file or folder still where the layout before the shards put it (directly
    in its folder, ``recordings/<id>/``), with its conversation id. In the sharded layout these folders
    hold only shard folders, and a shard folder holds no file directly; hidden entries (staging
    folders of a recording in progress) are not results."""
    for folder, endings in results.conversation_folders().items():
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                # a shard never holds "__"; only a folder named by hand needs a look inside
                if "" in endings and ("__" in entry.name or _holds_a_file(entry.path)):
                    yield Path(entry.path), entry.name
            else:
                for ending in endings:
                    if ending and entry.name.endswith(ending):
                        yield Path(entry.path), entry.name[: -len(ending)]
                        break


def _holds_a_file(folder: str) -> bool:
    try:
        return any(e.is_file(follow_symlinks=False) and not e.name.startswith(".") for e in os.scandir(folder))
    except OSError:
        return False


def results_of(config: Mapping[str, Any], root: Path | str = ".") -> Results:
    """The results folder a config names, under ``root`` (the project root scenarios_dir is relative to)."""
    from dyafdb.schema_check import schema_default  # a leaf too; imported when a path is first resolved

    results_dir = config.get("results_dir", schema_default("config", "results_dir"))
    return Results(str(Path(root) / results_dir))
