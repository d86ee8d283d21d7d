"""The ``viewer`` config section with its defaults (schema: schemas/config-viewer.schema.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dyafdb.paths import results_of
from dyafdb.schema_check import fill_defaults, load_schema, schema_default

# The paper's human study (Table 8): 40 T1-1 conversations (both seats) and 60 T1-2 (the holder),
# 140 seats from 100 conversations; the schema's default sample.
PAPER_SAMPLE: dict[str, int] = schema_default("config-viewer", "annotation", "conversations")


@dataclass(frozen=True)
class ViewerSettings:
    out: Path
    audio: str = schema_default("config-viewer", "audio")
    peaks_per_s: int = schema_default("config-viewer", "peaks_per_s")
    build: bool = schema_default("config-viewer", "build")
    annotation: bool = schema_default("config-viewer", "annotation", "enabled")
    sample: Mapping[str, int] = field(default_factory=lambda: dict(PAPER_SAMPLE))
    questions: tuple[str, ...] | None = None  # None: every question of each sampled archetype
    seed: int = schema_default("config-viewer", "annotation", "seed")

    def to_json(self) -> dict[str, Any]:
        """What the site depends on besides its input files (the workflow reruns when it changes)."""
        return {"out": str(self.out), "audio": self.audio, "peaks_per_s": self.peaks_per_s,
                "annotation": self.annotation, "sample": dict(self.sample),
                "questions": list(self.questions) if self.questions is not None else None, "seed": self.seed}


def viewer_settings(config: Mapping[str, Any], root: Path = Path(".")) -> ViewerSettings:
    """Settings from config section ``viewer`` (already schema-checked), defaults filled in."""
    section = fill_defaults(dict(config.get("viewer") or {}), load_schema("config-viewer"))
    ann = fill_defaults(dict(section.get("annotation") or {}), load_schema("config-viewer")["properties"]["annotation"])
    out = Path(root) / section["out"] if section.get("out") else Path(results_of(config, root).site)
    questions = ann.get("questions")
    return ViewerSettings(
        out=out,
        audio=section["audio"],
        peaks_per_s=int(section["peaks_per_s"]),
        build=bool(section["build"]),
        annotation=bool(ann["enabled"]),
        sample=dict(ann["conversations"]),
        questions=tuple(questions) if questions is not None else None,
        seed=int(ann["seed"]),
    )


def settings_with(config: Mapping[str, Any], root: Path, out: Path | None = None, audio: str | None = None,
                  annotation_only: bool = False, no_annotation: bool = False, sample: list[str] | None = None,
                  seed: int | None = None) -> ViewerSettings:
    """The config's viewer settings with the command line's choices over them."""
    import dataclasses

    from dyafdb.errors import InputError
    from dyafdb.viewer.sampler import parse_sample_args

    settings = viewer_settings(config, root)
    changes: dict[str, Any] = {}
    if annotation_only and no_annotation:
        raise InputError("--annotation-only and --no-annotation contradict each other; keep one")
    if annotation_only:
        changes["out"] = out or Path(results_of(config, root).annotation_site)
        if Path(changes["out"]).resolve() == Path(settings.out).resolve():
            raise InputError(f"--annotation-only would overwrite the full site in {settings.out}; give another --out")
    elif out:
        changes["out"] = out
    if audio:
        changes["audio"] = audio
    if no_annotation:
        changes["annotation"] = False
    if sample:
        changes["sample"] = parse_sample_args(sample)
    if seed is not None:
        changes["seed"] = seed
    return dataclasses.replace(settings, **changes)
