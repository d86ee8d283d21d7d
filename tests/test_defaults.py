"""Defaults are written once, in the schemas: every config read in the source is checked against them.

An AST walk of src/dyafdb finds (1) every dataclass field default, (2) every ``.get("key", default)``
and ``.get("key") or default``, and (3) every function parameter's and command-line option's default. Where the key (or field) is a setting of a config schema, a literal
default in the code is a second place for the number: it restates the schema's (and drifts when the
schema changes) or contradicts it (then the code and the docs disagree), or it is a default the
schema does not have. Code reads the validated config (the validator fills every default in) or,
where it needs a default outside a config, :func:`dyafdb.schema_check.schema_default`.

A dataclass that holds a config section is mapped to its schema node below; its defaults are then
also compared by value with that node's. A dataclass or a mapping that merely shares a name with a
setting is listed in NOT_CONFIG with why.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import REPO
from dyafdb.schema_check import fill_defaults, load_schema

PACKAGE = REPO / "src" / "dyafdb"
SCHEMAS = sorted(p.name.removesuffix(".schema.yaml") for p in (PACKAGE / "schemas").glob("config*.schema.yaml"))

# Dataclasses that hold a config section -> the schema nodes their fields come from (first match wins).
SECTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "dyafdb.score.vad:VadParams": (("config", "vad"),),
    "dyafdb.score.transcript:TranscriptParams": (("config", "transcript"),),
    "dyafdb.score.turntaking:TurnTakingParams": (("config-turntaking",),),
    "dyafdb.score.health.measure:HealthParams": (("config-health",), ("config-garble",)),
    "dyafdb.record.garble:GarbleSettings": (("config-garble",),),
    "dyafdb.analysis.settings:Settings": (("config-analysis",), ("config",)),
    "dyafdb.viewer.settings:ViewerSettings": (("config-viewer",), ("config-viewer", "annotation")),
    "dyafdb.judge.settings:JudgeSettings": (("config-judge",),),
    "dyafdb.judge.settings:JudgeSpec": (("config-judge", "$defs", "judge"), ("config-judge",), ("config",)),
    "dyafdb.llm.base:RetryPolicy": (("config-judge",),),
    "dyafdb.llm.base:ModelSpec": (("config-judge", "$defs", "judge"), ("config-judge",)),
    "dyafdb.llm.text_backends:TextModel": (("config-text_pairing", "$defs", "model"),),
}

# Dataclasses whose fields share a name with a setting but hold no config (why).
NOT_CONFIG: dict[str, str] = {
    "dyafdb.agents.base:AgentInfo": "what an agent reports about itself (model: its own model id)",
    "dyafdb.analysis.bundles:Merged": "what a merged results bundle holds (conversations: how many)",
    "dyafdb.analysis.registry:TableSpec": "a table's declaration (mem_mb: the job's declared memory)",
    "dyafdb.judge.runner:Usage": "counts of one judge job (questions asked)",
    "dyafdb.llm.base:Request": "one request (seed: the caller's, per request)",
    "dyafdb.llm.base:Reply": "one reply (batch: whether it came through a batch)",
    "dyafdb.suite.plan:JudgeAsk": "the cost projection's per-judge figures, filled from the judge settings",
    "dyafdb.viewer.site:BuildSummary": "counts of one viewer build",
}

# `.get(key, literal)` on a mapping that is not a config setting with a default, by file and key (why).
NOT_CONFIG_GETS: dict[tuple[str, str], str] = {
    ("src/dyafdb/agents/raon.py", "step_timeout_s"): "the adapter's own params (a gateway's step), not models.<m>.worker",
    ("src/dyafdb/agents/raon.py", "startup_timeout_s"): "the gateway's spec in the adapter's params, not models.<m>.worker",
    ("src/dyafdb/record/recording.py", "command"): "the text a report shows when a worker's command is unknown",
    ("src/dyafdb/analysis/bundles.py", "conversations"): "a bundle's results.json count, not the viewer's sample",
    ("src/dyafdb/share/check.py", "answers"): "a bundle check's counts, not the analysis section",
    ("src/dyafdb/analysis/settings.py", "main_suite"): "no schema default: the suite named main, else the first (it depends on the suites)",
}


# Function parameters and command-line options named like a setting that are not that setting (why).
NOT_CONFIG_PARAMETERS: dict[tuple[str, str, str], str] = {
    ("src/dyafdb/agents/cascade/models.py", "get_models", "threads"): "the CPU agent's own threads, not a judge's or text model's",
    ("src/dyafdb/score/health/dnsmos.py", "_session", "threads"): "DNSMOS's ONNX session threads (health.asr_threads is Whisper's)",
    ("src/dyafdb/share/bundle.py", "collect", "audio"): "a bundle's audio (none, preview, full), not the viewer's codec",
    ("src/dyafdb/share/bundle.py", "write_bundle", "audio"): "a bundle's audio (none, preview, full), not the viewer's codec",
    ("src/dyafdb/analysis/variance.py", "decompose_file", "cross_play_only"): "`dyafdb analysis variance-cells`'s flag for a cells file outside any config",
    ("src/dyafdb/llm/anthropic_api.py", "_reply", "batch"): "whether one reply came through a batch",
    ("src/dyafdb/record/bridge.py", "run_bridge", "progress"): "the bridge as a library prints nothing unless asked; the recorder passes bridge.progress",
}


def _schema_node(path: tuple[str, ...]) -> dict[str, Any]:
    root: Any = load_schema(path[0])
    node = root
    for key in path[1:]:
        node = node[key] if key == "$defs" or "properties" not in node else node["properties"][key]
        ref = node.get("$ref") if isinstance(node, dict) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = root["$defs"][ref.split("/")[-1]]
    return node


@lru_cache(maxsize=None)
def settings(with_default: bool = False) -> frozenset[str]:
    """Every setting name of every config schema, at any depth (only those with a default)."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            names.update(k for k, v in (node.get("properties") or {}).items()
                         if isinstance(v, dict) and (not with_default or "default" in v))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for name in SCHEMAS:
        walk(load_schema(name))
    return frozenset(names)


def _literal(node: ast.AST | None) -> bool:
    """A value written in the code: a constant or a container of them, or a conditional choosing one
    (``1 if backend == "llamacpp" else ...``); None and empty containers say "not set" and pass."""
    if node is None:
        return False
    if isinstance(node, ast.IfExp):
        return _literal(node.body) or _literal(node.orelse)
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return value not in (None, "", (), [], {})


def _field_default(value: ast.AST) -> ast.AST | None:
    """The expression a field defaults to: ``x = 1``, ``field(default=1)``, ``field(default_factory=lambda: [..])``."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
        kw = {k.arg: k.value for k in value.keywords}
        if "default" in kw:
            return kw["default"]
        factory = kw.get("default_factory")
        return factory.body if isinstance(factory, ast.Lambda) else None
    return value


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def dataclass_defaults() -> Iterator[tuple[str, str, int, ast.AST]]:
    """(module:Class, field, line, default expression) for every dataclass field with a default."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                for st in node.body:
                    if isinstance(st, ast.AnnAssign) and st.value is not None and isinstance(st.target, ast.Name):
                        default = _field_default(st.value)
                        if default is not None:
                            yield f"{_module(path)}:{node.name}", st.target.id, st.lineno, default


def config_gets() -> Iterator[tuple[str, int, str, ast.AST]]:
    """(file, line, key, default) for every ``m.get("key", default)`` and ``m.get("key") or default``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            call, default = None, None
            if isinstance(node, ast.Call) and len(node.args) == 2:
                call, default = node, node.args[1]
            elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and isinstance(node.values[0], ast.Call) \
                    and len(node.values[0].args) == 1:
                call, default = node.values[0], node.values[1]
            if call is None or not (isinstance(call.func, ast.Attribute) and call.func.attr == "get"):
                continue
            key = call.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                yield rel, node.lineno, key.value, default


def parameter_defaults() -> Iterator[tuple[str, int, str, str, ast.AST]]:
    """(file, line, function, parameter, default) for every function parameter with a default, and
    (file, line, "add_argument", option as a setting name, default) for every command-line option's."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                positional = a.posonlyargs + a.args
                pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
                pairs += [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
                for arg, default in pairs:
                    yield rel, node.lineno, node.name, arg.arg, default
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
                option = node.args[0]
                default = next((k.value for k in node.keywords if k.arg == "default"), None)
                if isinstance(option, ast.Constant) and str(option.value).startswith("--") and default is not None:
                    yield rel, node.lineno, "add_argument", str(option.value)[2:].replace("-", "_"), default


def _schema_default(nodes: tuple[tuple[str, ...], ...], name: str) -> tuple[bool, Any]:
    """(whether a node of ``nodes`` has setting ``name``, its default or a marker when it has none)."""
    for path in nodes:
        prop = (_schema_node(path).get("properties") or {}).get(name)
        if isinstance(prop, dict):
            return True, prop.get("default", NO_DEFAULT)
    return False, None


NO_DEFAULT = object()


def _property(nodes: tuple[tuple[str, ...], ...], name: str) -> dict[str, Any]:
    return next(_schema_node(path)["properties"][name] for path in nodes
                if isinstance((_schema_node(path).get("properties") or {}).get(name), dict))


def restated_defaults() -> list[str]:
    out = []
    names = settings()
    with_default = settings(with_default=True)
    for cls, name, line, default in dataclass_defaults():
        where = f"{cls.split(':')[0].replace('.', '/')}.py:{line} {cls.split(':')[1]}.{name}"
        if cls in NOT_CONFIG:
            continue
        if cls in SECTIONS:
            has, schema_value = _schema_default(SECTIONS[cls], name)
            if has and _literal(default):
                if schema_value is NO_DEFAULT:
                    out.append(f"{where} = {ast.unparse(default)}: a default the schema does not have (write it there)")
                else:
                    what = "restates" if ast.literal_eval(default) == schema_value else "contradicts"
                    out.append(f"{where} = {ast.unparse(default)} {what} the schema's ({schema_value!r})")
        elif name in names and _literal(default):
            out.append(f"{where} = {ast.unparse(default)}: a setting's name with a default of its own "
                       "(map the class in SECTIONS, or list it in NOT_CONFIG with why)")
    for rel, line, function, name, default in parameter_defaults():
        if name in with_default and _literal(default) and (rel, function, name) not in NOT_CONFIG_PARAMETERS:
            out.append(f"{rel}:{line} {function}({name}={ast.unparse(default)}): a setting's default written again; "
                       "take the schema's (schema_default) or let the caller pass the config's")
    for rel, line, key, default in config_gets():
        if key in names and _literal(default) and (rel, key) not in NOT_CONFIG_GETS:
            out.append(f"{rel}:{line} .get({key!r}, {ast.unparse(default)}): read the validated config "
                       "(the schema fills the default in) or schema_default")
    return out


def test_no_config_read_restates_a_schema_default():
    found = restated_defaults()
    assert not found, "defaults written outside the schemas:\n" + "\n".join(found)


@pytest.mark.parametrize("cls", sorted(SECTIONS))
def test_a_section_dataclass_defaults_to_the_schema(cls):
    # What a field reads from the schema (schema_default) must be its own setting's default.
    module, name = cls.split(":")
    klass = getattr(importlib.import_module(module), name)
    for f in dataclasses.fields(klass):
        value = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        has, schema_value = _schema_default(SECTIONS[cls], f.name)
        if value is dataclasses.MISSING or value is None or not has or schema_value is NO_DEFAULT:
            continue  # required, "not set", or no setting of that name with a default
        if dataclasses.is_dataclass(value):  # a sub-section's settings (analysis.answers): its filled defaults
            value = dataclasses.asdict(value)
            schema_value = fill_defaults(copy.deepcopy(schema_value), _property(SECTIONS[cls], f.name))
        assert value == schema_value, f"{cls}.{f.name} defaults to {value!r}, its schema to {schema_value!r}"


def test_the_walk_finds_what_it_should(tmp_path, monkeypatch):
    # The scan itself, on a package holding one of each kind of offence and one of each allowed form.
    pkg = tmp_path / "src" / "dyafdb"
    (pkg / "record").mkdir(parents=True)
    (pkg / "record" / "garble.py").write_text(
        "from dataclasses import dataclass, field\n"
        "@dataclass\nclass GarbleSettings:\n"
        "    first_pass_s: float = 30.0\n"                    # restates
        "    rerecordings: int = 3\n"                         # contradicts
        "    cpu_threads: int = schema_default('config-garble', 'cpu_threads')\n"  # fine
        "    model: str | None = None\n"                      # not set: fine
        "@dataclass\nclass Other:\n    beam_size: int = field(default=2)\n"  # unmapped, a setting's name
        "def f(section, beam_size=3, misc=2):\n"                   # a parameter named like a setting
        "    parser.add_argument('--cpu-threads', type=int, default=2)\n"  # an option named like one
        "    return section.get('language', 'en'), section.get('compute_type') or 'int8', section.get('misc', 1)\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    found = restated_defaults()
    assert len(found) == 7, found
    assert any("f(beam_size=3)" in f for f in found) and any("add_argument(cpu_threads=2)" in f for f in found)
    assert any("GarbleSettings.first_pass_s = 30.0 restates" in f for f in found)
    assert any("GarbleSettings.rerecordings = 3 contradicts the schema's (5)" in f for f in found)
    assert any("Other.beam_size = 2: a setting's name" in f for f in found)
    assert any(".get('language', 'en')" in f for f in found) and any(".get('compute_type', 'int8')" in f for f in found)
