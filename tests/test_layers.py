"""The stages form layers: an earlier stage never imports a later one (stages meet through files).

Walks every module's imports with ast, those inside functions included (a lazy import is still an
import: it hid the loop record -> garble -> record once), and fails on each import that points
forward in the pipeline order, or from a shared leaf into any stage.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dyafdb

PACKAGE = Path(dyafdb.__file__).parent

# Pipeline order: a stage may import itself, the leaves and the stages before it.
STAGES = ("suite", "agents", "record", "score", "llm", "judge", "measures", "verify", "text_pairing", "analysis", "viewer",
          "share", "seat")
# Small shared modules every stage may use; they import no stage themselves. `localmodels/` loads the
# local models (llama.cpp, faster-whisper) that the agents, the recorder, score and llm all share.
LEAVES = ("clock", "errors", "config", "schema_check", "fileio", "polyphase", "paths", "wordmatch", "declarations", "provenance",
          "localmodels", "procpool", "__init__")
# The command line sits on top: it may import any stage.
TOP = ("commands", "cli", "__main__")


def _layer(module: str) -> str:
    """'dyafdb.score.inputs' -> 'score'; names outside the package -> ''."""
    parts = module.split(".")
    if parts[0] != "dyafdb":
        return ""
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path, package: Path) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(path: Path) -> bool:
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path, package_dir: Path) -> list[tuple[int, str]]:
    """Every module a file imports (absolute and relative, at any depth), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path, package_dir)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from dyafdb import analysis` imports the stage; `from dyafdb import __version__` the root
            if base == "dyafdb":
                found += [(node.lineno, f"dyafdb.{a.name}" if _is_module(package_dir / a.name) else base)
                          for a in node.names]
            else:
                found.append((node.lineno, base))
    return found


def _allowed(importer: str, imported: str) -> bool:
    if not imported or imported == importer or importer in TOP:
        return True
    if imported in LEAVES:
        return True
    if importer in LEAVES:
        return False  # a leaf importing a stage would drag that stage under every earlier one
    if importer in STAGES and imported in STAGES:
        return STAGES.index(imported) < STAGES.index(importer)
    return False


def violations(package: Path = PACKAGE) -> list[str]:
    out = []
    for path in sorted(package.rglob("*.py")):
        importer = _layer(_module_name(path, package))
        for line, module in _imports(path, package):
            imported = _layer(module)
            if not _allowed(importer, imported):
                out.append(f"{path.relative_to(package.parent)}:{line}: {importer} imports {module}")
    return out


def test_every_module_belongs_to_a_known_layer():
    names = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.is_file() and p.suffix == ".py") or (p / "__init__.py").exists()}
    unknown = sorted(names - set(STAGES) - set(LEAVES) - set(TOP))
    assert not unknown, f"modules outside the layer order (add them to STAGES or LEAVES): {unknown}"


def test_no_stage_imports_a_later_stage():
    found = violations()
    assert not found, "imports against the pipeline order:\n" + "\n".join(found)


def test_the_garble_watcher_does_not_drive_the_recorder():
    # The record-and-check loop lives in record.checked; the watcher (record.garble) is only the
    # checker, so the recorder is never reached through it (once: record -> garble -> AgentPool ->
    # garble -> record_conversation, through lazy imports).
    garble = PACKAGE / "record" / "garble.py"
    imported = {m for _, m in _imports(garble, PACKAGE)}
    assert not imported & {"dyafdb.record.conversation", "dyafdb.record.checked"}, imported


def test_the_walk_sees_lazy_and_relative_imports(tmp_path):
    # The check itself must catch what it is for: an import inside a function, a relative import,
    # and `from dyafdb import <stage>`.
    pkg = tmp_path / "dyafdb"
    for sub in ("record", "judge", "analysis"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "record" / "lazy.py").write_text("def f():\n    from dyafdb.judge import runner\n")
    (pkg / "record" / "rel.py").write_text("from ..analysis import io\n")
    (pkg / "judge" / "ok.py").write_text("from dyafdb.record import lazy\nfrom . import other\n")
    (pkg / "judge" / "root.py").write_text("from dyafdb import analysis\nfrom dyafdb import __version__\n")
    (pkg / "fileio.py").write_text("import dyafdb.record.lazy\n")
    assert violations(pkg) == [
        "dyafdb/fileio.py:1: fileio imports dyafdb.record.lazy",
        "dyafdb/judge/root.py:1: judge imports dyafdb.analysis",
        "dyafdb/record/lazy.py:2: record imports dyafdb.judge",
        "dyafdb/record/rel.py:1: record imports dyafdb.analysis",
    ]


RULES = Path(dyafdb.__file__).parents[2] / "workflow" / "rules"
_RULE_IMPORT = re.compile(r"^\s*(?:from\s+(dyafdb(?:\.\w+)*)\s+import|import\s+(dyafdb(?:\.\w+)*))", re.M)


def rules_violations(rules: Path = RULES) -> list[str]:
    """A stage's rules file (``<stage>.smk``) imports its own stage, the leaves and earlier stages only;
    the files under ``common/`` are the workflow's top, like the command line (config, site, the run's
    hooks: they plan, check and summarise)."""
    out = []
    for path in sorted(rules.rglob("*.smk")):
        importer = path.stem if path.parent == rules and path.stem in STAGES else "commands"
        for found in _RULE_IMPORT.finditer(path.read_text(encoding="utf-8")):
            module = found.group(1) or found.group(2)
            line = path.read_text(encoding="utf-8")[:found.start()].count("\n") + 1
            if not _allowed(importer, _layer(module)):
                out.append(f"workflow/rules/{path.relative_to(rules).as_posix()}:{line}: {importer} imports {module}")
    return out


def test_no_rules_file_imports_a_later_stage():
    found = rules_violations()
    assert not found, "rules files importing against the pipeline order:\n" + "\n".join(found)
    assert {p.stem for p in RULES.glob("*.smk")} <= set(STAGES), "a rules file not named after its stage"
    assert {p.parent for p in RULES.rglob("*.smk")} == {RULES, RULES / "common"}, "rules outside rules/ and rules/common/"


def test_the_rules_walk_sees_lazy_imports(tmp_path):
    (tmp_path / "record.smk").write_text("from dyafdb.record.spec import x\n\ndef f():\n    from dyafdb.analysis.io import y\n")
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "hooks.smk").write_text("from dyafdb.analysis.run_summary import z\n")
    (tmp_path / "common" / "record.smk").write_text("from dyafdb.analysis.io import y\n")  # the top, whatever its name
    assert rules_violations(tmp_path) == ["workflow/rules/record.smk:4: record imports dyafdb.analysis.io"]
