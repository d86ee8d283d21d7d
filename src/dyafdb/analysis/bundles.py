"""Results bundles as the analysis reads them: one archive a lab sends (docs/formats.md, "Results
bundle"), opened without unpacking, its settings fingerprint, and its measures put beside a local run.

The writer, the checker and `dyafdb compare` live in the share stage (dyafdb.share); what the
analysis itself needs to merge a bundle (issue 27, item 4) lives here, because an earlier stage
never imports a later one: reading members, the fingerprint that says whether two runs were made
with the same scenarios and scoring settings, and the measures rows.

A fingerprint is two maps of digests: ``scenarios`` (scenario id -> digest of its YAML file) and
``settings`` (a named group of scoring settings -> digest of its values). Two runs may be put side
by side when both maps agree; a difference is named by its key, so a refusal says which prompt,
which section or which scenario differs, and `dyafdb compare --accept NAME` can let one through.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

from dyafdb.errors import InputError
from dyafdb.provenance import digest_files, digest_json
from dyafdb.schema_check import schema_default

FORMAT = "dyafdb-bundle/1"
RESULTS_JSON = "results.json"
# The adapter of a model entered from a bundle (with_bundle_models): it was recorded elsewhere.
BUNDLE_ADAPTER = "bundle"
# A bundle is a project root: its results folder under results/ (the layout of dyafdb.paths), the
# scenario files the run used under scenarios/, the judge prompts under prompts/.
RESULTS_DIR = "results"
MEASURES = "results/scores/measures.tsv"
DESIGN = "results/design/conversations.tsv"
# Config sections whose values decide a measure once the recording exists (the score, measures and
# health stages, and the garble verdict that makes a side a failure).
SCORING_SECTIONS = ("vad", "transcript", "turntaking", "measures", "health", "garble")
# Analysis keys that change a number; the rest (figure formats, dpi, where the labels, keys and
# bundles are) change how it is shown, and reference_models / anchor_model name models of one run.
ANALYSIS_KEYS = ("main_window_s", "bootstrap", "seed", "ci", "main_judge", "second_judge", "answers", "windows_s",
                 "timing_archetypes", "contested", "anchor_rating", "rating_scale")
# Judge keys that say how a call is made (speed, retries, prices, where the server is), not what the
# judge answers; the rest of the judge section (models, sampling, tokens) is part of the fingerprint.
JUDGE_TRANSPORT = ("prompts_dir", "cache_dir", "concurrency", "max_retries", "backoff_s", "max_backoff_s", "timeout_s",
                   "probe_timeout_s", "base_url", "api_key_env", "batch", "batch_poll_s", "batch_discount",
                   "price_input_per_mtok", "price_output_per_mtok", "threads", "model_path")


class Bundle:
    """A results bundle (.tar.gz or .zip) read in place: members by their path inside it."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not self.path.is_file():
            raise InputError(f"{self.path}: no such bundle file; fix: pass the archive `dyafdb bundle -o FILE` wrote")
        self._members: dict[str, bytes] | None = None

    def _load(self) -> dict[str, bytes]:
        if self._members is not None:
            return self._members
        members: dict[str, bytes] = {}
        try:
            if zipfile.is_zipfile(self.path):
                with zipfile.ZipFile(self.path) as zf:
                    for info in zf.infolist():
                        if not info.is_dir():
                            members[_member_name(self.path, info.filename)] = zf.read(info)
            else:
                with tarfile.open(self.path, "r:*") as tf:
                    for info in tf.getmembers():
                        if info.isfile():
                            fh = tf.extractfile(info)
                            members[_member_name(self.path, info.name)] = fh.read() if fh else b""
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
            if isinstance(exc, OSError) and not isinstance(exc, (EOFError,)) and getattr(exc, "errno", None):
                raise
            raise InputError(f"{self.path}: not a readable .tar.gz or .zip bundle ({exc}); fix: write it again with "
                             "`dyafdb bundle -o FILE`") from None
        self._members = members
        return members

    def member_text(self, name: str) -> str | None:
        """One member as text, or None when the bundle lacks it; read without loading the others
        (the workflow calls this while it plans, and a bundle with audio is large)."""
        if self._members is not None:
            return self.text(name) if name in self._members else None
        try:
            if zipfile.is_zipfile(self.path):
                with zipfile.ZipFile(self.path) as zf:
                    found = [i for i in zf.infolist() if not i.is_dir() and _member_name(self.path, i.filename) == name]
                    data = zf.read(found[0]) if found else None
            else:
                data = None
                with tarfile.open(self.path, "r:*") as tf:
                    for info in tf:
                        if info.isfile() and _member_name(self.path, info.name) == name:
                            fh = tf.extractfile(info)
                            data = fh.read() if fh else b""
                            break
        except (tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
            raise InputError(f"{self.path}: not a readable .tar.gz or .zip bundle ({exc}); fix: write it again with "
                             "`dyafdb bundle -o FILE`") from None
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: {name} is not UTF-8 text (byte {exc.start}); the bundle is damaged") from None

    def names(self) -> list[str]:
        return sorted(self._load())

    def has(self, name: str) -> bool:
        return name in self._load()

    def read(self, name: str) -> bytes:
        try:
            return self._load()[name]
        except KeyError:
            raise InputError(f"{self.path}: the bundle has no {name}; fix: write it again with `dyafdb bundle`") from None

    def text(self, name: str) -> str:
        try:
            return self.read(name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: {name} is not UTF-8 text (byte {exc.start}); the bundle is damaged") from None

    def results(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.text(RESULTS_JSON))
        except ValueError as exc:
            raise InputError(f"{self.path}: {RESULTS_JSON} is not JSON ({exc}); the bundle is damaged") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{self.path}: {RESULTS_JSON} is not a {FORMAT} document (format "
                             f"{doc.get('format') if isinstance(doc, dict) else None!r}); fix: write it with `dyafdb bundle`")
        return doc

    def extract(self, dest: Path, names: Iterable[str] | None = None) -> Path:
        """Write the members (all, or ``names``) under ``dest`` as files, paths as in the bundle."""
        dest = Path(dest)
        members = self._load()
        for name in (names if names is not None else members):
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(members[name])
        return dest


def _member_name(archive: Path, name: str) -> str:
    """A member's path, refused when it would leave the folder it is unpacked into."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise InputError(f"{archive}: member {name!r} is an absolute path or climbs out of the bundle; "
                         "a bundle holds relative paths only; fix: write it again with `dyafdb bundle`")
    return str(path)


# ---------------------------------------------------------------- fingerprint


def design_scenarios(design_tsv: str) -> dict[str, str]:
    """scenario id -> archetype, from a design table's text (results/design/conversations.tsv)."""
    lines = [line.split("\t") for line in design_tsv.splitlines() if line.strip()]
    if not lines:
        return {}
    head = lines[0]
    try:
        s, a = head.index("scenario"), head.index("archetype")
    except ValueError:
        raise InputError("design table lacks the scenario or archetype column; fix: write it with `dyafdb suite design`") from None
    return {row[s]: row[a] for row in lines[1:] if len(row) > max(s, a)}


def fingerprint(config: Mapping[str, Any], root: Path | str, scenarios: Mapping[str, str],
                prompts_dir: Path | str | None = None) -> dict[str, dict[str, str]]:
    """The digests two runs must share to be put side by side (module docstring).

    ``scenarios`` maps each scenario id the run used to its archetype; ``prompts_dir`` is the judge's
    prompt folder (default: the config's, under ``root``)."""
    from dyafdb.judge.settings import judge_settings

    root = Path(root)
    scen = {}
    for sid, arch in sorted(scenarios.items()):
        path = root / str(config["scenarios_dir"]) / arch / f"{sid}.yaml"
        scen[sid] = digest_files([path]) if path.is_file() else "missing"
    settings = {f"score.{s}": digest_json(config.get(s) or {}) for s in SCORING_SECTIONS}
    analysis = config.get("analysis") or {}
    settings["analysis"] = digest_json({k: analysis.get(k) for k in ANALYSIS_KEYS})
    settings["demo_quality"] = digest_json(bool(config.get("demo_quality", schema_default("config", "demo_quality"))))
    judge = {k: v for k, v in (config.get("judge") or {}).items() if k not in JUDGE_TRANSPORT and k != "judges"}
    judges = judge_settings(dict(config), root)
    settings["judge.models"] = digest_json({
        "section": judge,
        "judges": {name: {k: v for k, v in ((config.get("judge") or {}).get("judges") or {}).get(name, {}).items()
                          if k not in JUDGE_TRANSPORT} | {"model": spec.model, "backend": spec.backend}
                   for name, spec in judges.judges.items() if name in judges.run},
        "main": judges.main_judge})
    folder = Path(prompts_dir) if prompts_dir is not None else judges.prompts_dir
    for prompt in sorted(folder.glob("*.txt")) if folder.is_dir() else []:
        settings[f"judge.prompt.{prompt.stem}"] = digest_files([prompt])
    return {"scenarios": scen, "settings": settings}


def differences(a: Mapping[str, Mapping[str, str]], b: Mapping[str, Mapping[str, str]],
                within: bool = False) -> dict[str, str]:
    """Each named difference of two fingerprints -> why, in words.

    Names: ``scenarios`` (a scenario in one run only, or the same id with other content) and each
    settings key. With ``within`` only what ``b`` holds must be in ``a`` and equal (a bundle merged
    into a larger run)."""
    out: dict[str, str] = {}
    sa, sb = dict(a.get("scenarios") or {}), dict(b.get("scenarios") or {})
    changed = sorted(k for k in set(sa) & set(sb) if sa[k] != sb[k])
    only_a = [] if within else sorted(set(sa) - set(sb))
    only_b = sorted(set(sb) - set(sa))
    parts = []
    if changed:
        parts.append(f"{len(changed)} scenario(s) differ in content ({', '.join(changed[:5])})")
    if only_a:
        parts.append(f"{len(only_a)} only in the first ({', '.join(only_a[:5])})")
    if only_b:
        parts.append(f"{len(only_b)} only in the {'bundle' if within else 'second'} ({', '.join(only_b[:5])})")
    if parts:
        out["scenarios"] = "; ".join(parts)
    ga, gb = dict(a.get("settings") or {}), dict(b.get("settings") or {})
    for key in sorted(set(ga) | set(gb)):
        if ga.get(key) != gb.get(key):
            if key not in ga or key not in gb:
                out[key] = f"present in the {'first' if key in ga else ('bundle' if within else 'second')} run only"
            else:
                out[key] = f"digest {ga[key]} against {gb[key]}"
    return out


def describe_differences(diffs: Mapping[str, str]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in diffs.items())


# ---------------------------------------------------------------- merging into a local run


@dataclass
class Merged:
    """What a bundle added to a local run: its models, labels and conversations (for the report)."""

    path: str
    models: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    conversations: int = 0
    code: dict[str, Any] = field(default_factory=dict)
    # archetypes the bundle holds that this run's design has no suite for (a cross-play-only suite
    # one local model cannot make): their tables read the bundle's conversations alone (the report says so)
    bundle_only: list[str] = field(default_factory=list)


def bundle_paths(config: Mapping[str, Any], root: Path | str) -> list[Path]:
    """The bundles a config merges: ``analysis.bundles``, relative to the project root."""
    return [Path(root) / p for p in ((config.get("analysis") or {}).get("bundles") or [])]


def bundle_archetypes(config: Mapping[str, Any], root: Path | str) -> dict[str, list[str]]:
    """archetype -> the conversation ids the configured bundles hold of it (their design tables).

    The analysis plans its tables for the union of these archetypes and the local design's, so a
    bundle's conversations of an archetype no local suite holds (a cross-play-only suite, which one
    local model cannot make) fill that archetype's tables as a full run's would."""
    out: dict[str, set[str]] = {}
    for path in bundle_paths(config, root):
        if not path.is_file():
            continue  # an input of every runs job, so Snakemake names it as missing
        bundle = Bundle(path)
        design = bundle.member_text(DESIGN)
        if design is None:
            continue
        lines = [line.split("\t") for line in design.splitlines() if line.strip()]
        if not lines:
            continue
        head = lines[0]
        try:
            c, a = head.index("conversation_id"), head.index("archetype")
        except ValueError:
            raise InputError(f"{path}: {DESIGN} lacks the conversation_id or archetype column; fix: write the bundle "
                             "again with `dyafdb bundle`") from None
        for row in lines[1:]:
            if len(row) > max(c, a):
                out.setdefault(row[a], set()).add(row[c])
    return {arch: sorted(ids) for arch, ids in sorted(out.items())}


def check_mergeable(bundle: Bundle, config: Mapping[str, Any], root: Path | str) -> dict[str, Any]:
    """The bundle's results.json when it was made with this run's scenarios and scoring settings;
    else an InputError naming the settings that differ."""
    doc = bundle.results()
    # the bundle's scenarios against this project's files of the same ids (a scenario the local design
    # does not use, e.g. of a cross-play-only suite, may still be the same file)
    held = design_scenarios(bundle.text(DESIGN)) if bundle.has(DESIGN) else {}
    diffs = differences(fingerprint(config, root, held), doc.get("fingerprint") or {}, within=True)
    if diffs:
        raise InputError(f"{bundle.path}: cannot merge: made with other scenarios or scoring settings than this run "
                         f"({describe_differences(diffs)}); fix: merge only bundles made with the same scenarios, "
                         "judge prompts, judge models and scoring sections, or rerun them with this config")
    return doc


def bundle_measures(bundle: Bundle) -> "Any":
    """A bundle's measures.tsv as a frame of strings (the columns measures.tsv has)."""
    import pandas as pd

    from dyafdb.analysis.io import read_delimited

    data = bundle.read(MEASURES)
    return read_delimited(io.BytesIO(data), f"{bundle.path}: {MEASURES}", "write the bundle again",
                          dtype=str, keep_default_na=False, na_filter=False) if data else pd.DataFrame()


def merge_bundles(measures: "Any", config: Mapping[str, Any], root: Path | str, archetype: str | None = None) -> "Any":
    """``measures`` (a normalised frame of the local run) with the rows of every configured bundle
    added: those of conversations the local run does not hold (of ``archetype`` when given).

    A conversation in both must be the same recording (its digest); else the merge is refused."""
    import pandas as pd

    from dyafdb.analysis import columns as C
    from dyafdb.analysis.io import normalise_measures

    paths = bundle_paths(config, root)
    if not paths:
        return measures
    frames = [measures]
    local = measures.drop_duplicates(C.CONVERSATION).set_index(C.CONVERSATION)
    local_digest = local["recording"] if "recording" in local else pd.Series(dtype=str)
    for path in paths:
        bundle = Bundle(path)
        check_mergeable(bundle, config, root)
        extra = bundle_measures(bundle)
        if extra.empty:
            continue
        if archetype is not None:
            extra = extra[extra[C.ARCHETYPE] == archetype]
        shared = extra[extra[C.CONVERSATION].isin(local.index)]
        if not shared.empty and "recording" in shared:
            theirs = shared.drop_duplicates(C.CONVERSATION).set_index(C.CONVERSATION)["recording"]
            clash = [c for c, d in theirs.items() if str(local_digest.get(c, d)) != str(d)]
            if clash:
                raise InputError(f"{path}: conversation {clash[0]} is in the local run and the bundle with different "
                                 f"recordings ({len(clash)} such); fix: merge a bundle of other conversations, or "
                                 "leave the local copy out of the run")
        extra = extra[~extra[C.CONVERSATION].isin(local.index)]
        frames.append(normalise_measures(extra.astype(str)))
    merged = pd.concat(frames, ignore_index=True)
    # the order measures.tsv has for one run (by conversation, then as written), so a merge reads as a full run
    return merged.sort_values([C.CONVERSATION], kind="stable").reset_index(drop=True)


def merged_info(config: Mapping[str, Any], root: Path | str) -> list[Merged]:
    """Each configured bundle with the models it adds (those the local config does not have)."""
    out = []
    # a model with_bundle_models entered is the bundle's, not the run's
    local_models = {m for m, spec in (config.get("models") or {}).items() if (spec or {}).get("adapter") != BUNDLE_ADAPTER}
    paths = bundle_paths(config, root)
    if not paths:
        return out
    from dyafdb.suite.design import build_design

    local_tasks = {r.archetype for r in build_design(dict(config), Path(root))}
    for path in paths:
        doc = Bundle(path).results()
        models = [m for m in doc.get("models", {}) if m not in local_models]
        out.append(Merged(path=path.name, models=models,
                          labels={m: (doc["models"][m] or {}).get("label", m) for m in models},
                          conversations=int(doc.get("conversations", 0)), code=doc.get("code") or {},
                          bundle_only=sorted(set(doc.get("tasks") or []) - local_tasks)))
    return out


def with_bundle_models(config: dict[str, Any], root: Path | str) -> dict[str, Any]:
    """The config with each bundle's new models entered under ``models``, labelled as from the bundle,
    so every table and figure names them and marks where they came from (a copy; the TSVs keep ids)."""
    infos = merged_info(config, root)
    if not infos:
        return config
    config = dict(config)
    models = dict(config.get("models") or {})
    for info in infos:
        for m in info.models:
            models[m] = {"adapter": BUNDLE_ADAPTER, "label": f"{info.labels.get(m, m)} [bundle {info.path}]"}
    config["models"] = models
    return config
