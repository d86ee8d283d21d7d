"""Preflight: what would stop a run hours in, checked in seconds before the first record job.

Each check names what failed and how to fix it. `dyafdb plan --check` runs them all; the workflow's
`onstart` handler runs those that the planned jobs need (keys of the judges it will call, weights
and workers of the models it will record, room for the recordings it will write).

The far side too (:func:`far_side_checks`): one cheap request per judge the run calls, and per text
model of an enabled text pairing, proves its endpoint answers, its key is accepted and its model
exists (:mod:`dyafdb.llm.probe`). On a node without network, ``--offline`` or ``DYAFDB_OFFLINE=1``
skips those requests and the checks say so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dyafdb.agents.checkpoints import expand, resolve_checkpoint
from dyafdb.errors import InputError
from dyafdb.judge.settings import judge_settings
from dyafdb.llm.base import ModelSpec
from dyafdb.paths import FLAT_LAYOUT_FIX, flat_layout_entries, results_of
from dyafdb.suite.check import check_scenario
from dyafdb.suite.design import Conversation
from dyafdb.suite.scenarios import load_scenario


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge_key_checks(config: Mapping[str, Any], judges: Iterable[str] | None = None, root: Path = Path(".")) -> list[Check]:
    """The API key of each judge the run calls is set (never printed: only the variable's name)."""
    settings = judge_settings(config, root)
    out = []
    for name in (settings.run if judges is None else judges):
        spec = settings.judge(name)
        if spec.backend == "llamacpp" or spec.api_key_env is None:
            out.append(Check(f"judge {name} key", True, f"{spec.backend}: no key needed"))
            continue
        present = bool(os.environ.get(spec.api_key_env, "").strip())
        out.append(Check(f"judge {name} key", present,
                         f"{spec.api_key_env} is {'set' if present else 'not set'} ({spec.backend} {spec.model})",
                         "" if present else f"export {spec.api_key_env}=<your key> before starting the run "
                                            f"(or point judge.judges.{name}.api_key_env at the variable that holds it)"))
    return out


OFFLINE_ENV = "DYAFDB_OFFLINE"


def offline_from_env() -> bool:
    """``DYAFDB_OFFLINE`` set to anything but empty, 0, false or no: skip the far side's checks."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def _key_is_set(spec: ModelSpec) -> bool:
    return spec.backend == "llamacpp" or spec.api_key_env is None or bool(os.environ.get(spec.api_key_env, "").strip())


def far_side_checks(config: Mapping[str, Any], judges: Iterable[str] | None = None, root: Path = Path("."),
                    offline: bool = False, text_models: Iterable[str] | None = None) -> list[Check]:
    """One probe per judge the run calls (``judges``, default ``judge.run``) and per text model
    (``text_models``, default the pairing's two when ``text_pairing.enabled``): endpoint, key and model.
    A judge whose key is not set is left to its key check; ``offline`` probes nothing and says so."""
    from dyafdb.llm.probe import probe_models
    from dyafdb.llm.text_backends import model_spec as text_model_spec
    from dyafdb.text_pairing.pairing import text_settings

    settings = judge_settings(config, root)
    # A judge whose key is not set fails its key check; a text model has none, its probe names the key.
    specs = [s for s in (settings.judge(name).model_spec() for name in (settings.run if judges is None else judges))
             if _key_is_set(s)]
    if text_models is None:
        ts = text_settings(config) if (config.get("text_pairing") or {}).get("enabled") else None
        text_models = ts.pairing if ts is not None else ()
    if text_models:
        models = text_settings(config).models
        specs += [text_model_spec(models[name]) for name in text_models]
    names = [f"{s.kind} {s.name} endpoint" for s in specs]
    if offline:
        return [Check(name, True, f"not probed: offline (--offline or {OFFLINE_ENV}=1); {s.backend} {s.model} "
                                  "unchecked until its first call") for name, s in zip(names, specs)]
    probes = probe_models(specs, settings.probe_timeout_s, "judge.probe_timeout_s")
    return [Check(name, p.ok, p.detail, p.fix) for name, p in zip(names, probes)]


def _conda_envs() -> set[str] | None:
    try:
        out = subprocess.run(["conda", "env", "list", "--json"], capture_output=True, text=True, timeout=60, check=True)
        return {Path(p).name for p in json.loads(out.stdout).get("envs", [])} | {"base"}
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _worker_check(model: str, spec: Mapping[str, Any]) -> Check:
    command = list((spec.get("worker") or {}).get("command") or [sys.executable, "-m", "dyafdb.agents.worker"])
    exe = shutil.which(command[0])
    name = f"model {model} worker"
    if exe is None:
        return Check(name, False, f"worker command {command[0]!r} is not on PATH",
                     f"install it or fix models.{model}.worker.command (docs/models.md)")
    if Path(command[0]).name == "conda" and "-n" in command[:-1]:
        env = command[command.index("-n") + 1]
        envs = _conda_envs()
        if envs is not None and env not in envs:
            return Check(name, False, f"conda environment {env!r} does not exist",
                         f"create it: conda env create -n {env} -f envs/{spec.get('adapter')}.yml (README 'Real models')")
    gateway_cwd = ((spec.get("params") or {}).get("gateway") or {}).get("cwd")
    if gateway_cwd and not expand(gateway_cwd).is_dir():
        return Check(name, False, f"gateway folder {expand(gateway_cwd)} does not exist",
                     f"clone the model's server there or fix models.{model}.params.gateway.cwd")
    return Check(name, True, f"{' '.join(command[:4])} ... resolves to {exe}")


def model_checks(config: Mapping[str, Any], models: Iterable[str]) -> list[Check]:
    """Each model's weights are on local disk and its worker command resolves."""
    out = []
    for model in sorted(set(models)):
        spec = config["models"][model]
        params = spec.get("params") or {}
        if params.get("checkpoint_dir") or params.get("hf_repo"):
            try:
                folder = resolve_checkpoint(dict(params), model)
                out.append(Check(f"model {model} weights", True, str(folder)))
            except InputError as exc:
                out.append(Check(f"model {model} weights", False, str(exc).split(". ")[0],
                                 str(exc).split(". ", 1)[1] if ". " in str(exc) else "see docs/models.md"))
        out += _adapter_checks(model, spec)
        if spec.get("adapter") == "raon":
            out += _raon_checks(config, model, params)
        if not config["bridge"].get("in_process"):
            out.append(_worker_check(model, spec))
    return out


def _adapter_checks(model: str, spec: Mapping[str, Any]) -> list[Check]:
    """What the adapter itself says is missing to load (``missing_weights``: a reference voice, a code
    checkout at the pinned commit, a gateway checkout), beyond the checkpoint folder existing: found
    here, not hours later inside a GPU job."""
    from dyafdb.agents.registry import adapter_class

    try:
        declared = getattr(adapter_class(str(spec["adapter"])), "missing_weights", None)
    except InputError as exc:
        return [Check(f"model {model} adapter", False, str(exc), "see docs/adding-a-model.md")]
    if declared is None:
        return []
    problems = declared(dict(spec.get("params") or {}), model)
    return [Check(f"model {model} files", not problems, "; ".join(problems) if problems else "everything the adapter loads is on disk",
                  "put each file named above in place (docs/models.md)" if problems else "")]


def _raon_checks(config: Mapping[str, Any], model: str, params: Mapping[str, Any]) -> list[Check]:
    """Raon's voice encoder on local disk (else the demo gateway runs with no speaker offline), and no
    self-play that would start two Ray heads on one node (issue 28, items 3 and 4)."""
    from dyafdb.agents.raon import ecapa_location, ecapa_problem, self_play_problem

    out = []
    if str(params.get("variant", "demo")) == "demo" and str(params.get("speaker_mode", "default")) != "none":
        problem = ecapa_problem(dict(params), model)
        root, model_id, _ = ecapa_location(dict(params))
        out.append(Check(f"model {model} voice", problem is None, problem[0] if problem else
                         f"speaker encoder {model_id} in {root / model_id.replace('/', '_')}", problem[1] if problem else ""))
    problem = self_play_problem(dict(config), model)
    out.append(Check(f"model {model} self-play", problem is None, problem[0] if problem else
                     "no self-play starts two Ray heads on one node", problem[1] if problem else ""))
    return out


def suite_checks(config: Mapping[str, Any], rows: Sequence[Conversation], root: Path = Path(".")) -> list[Check]:
    """Every scenario the design uses passes the suite rules (`dyafdb suite check`)."""
    scenarios = sorted({(r.archetype, r.scenario) for r in rows})
    problems = []
    for archetype, scenario in scenarios:
        path = Path(root) / config["scenarios_dir"] / archetype / f"{scenario}.yaml"
        try:
            problems += [str(p) for p in check_scenario(load_scenario(path))]
        except InputError as exc:
            problems.append(str(exc))
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        return [Check("scenario suite", False, f"{len(problems)} problem(s): {shown}",
                      f"run `dyafdb suite check --root {config['scenarios_dir']}` and fix each file")]
    return [Check("scenario suite", True, f"{len(scenarios)} scenarios pass the suite rules")]


def results_checks(config: Mapping[str, Any], need_bytes: float, root: Path = Path(".")) -> list[Check]:
    """The results folder can be written and has room for what the run will write."""
    results = Path(root) / config["results_dir"]
    try:
        results.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=results, prefix=".preflight-"):
            pass
    except OSError as exc:
        return [Check("results folder", False, f"{results} is not writable ({exc.strerror or exc})",
                      "set results_dir to a folder you can write, or fix its permissions")]
    free = shutil.disk_usage(results).free
    ok = free >= need_bytes
    flat = sum(1 for _ in flat_layout_entries(results_of(config, root)))
    return [Check("results folder", ok, f"{results}: {free / 1e9:,.1f} GB free, the plan needs {need_bytes / 1e9:,.1f} GB",
                  "" if ok else "free space there or set results_dir to a larger disk (recordings are 192 kB per second)"),
            Check("results layout", not flat, f"{flat:,} per-conversation results in the old flat layout (recordings/<id>/, "
                  "segments/<id>.json, ...)" if flat else "every per-conversation result in its shard folder",
                  FLAT_LAYOUT_FIX if flat else "")]


def failed(checks: Iterable[Check]) -> list[Check]:
    return [c for c in checks if not c.ok]


def format_checks(checks: Sequence[Check]) -> str:
    lines = []
    for c in checks:
        lines.append(f"  {'ok    ' if c.ok else 'FAILED'} {c.name}: {c.detail}")
        if not c.ok and c.fix:
            lines.append(f"         fix: {c.fix}")
    bad = failed(checks)
    lines.append(f"preflight: {len(checks) - len(bad)} of {len(checks)} checks pass"
                 + (f"; {len(bad)} failed: {', '.join(c.name for c in bad)}" if bad else ""))
    return "\n".join(lines)
