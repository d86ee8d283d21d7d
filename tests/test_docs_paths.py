"""Every repository path README.md and docs/ name exists: a moved module or test leaves no stale pointer.

A path is a word in backticks, or a Markdown link target, that starts with one of the repository's
top-level folders. `<placeholder>` parts match any one path component, `{a,b}` lists expand, and a
glob matches when it matches something; a link elsewhere in docs/ may be relative to its file.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from conftest import REPO

ROOTS = ("src", "tests", "bench", "scripts", "config", "workflow", "docs", "profiles", "scenarios")
DOCS = [REPO / "README.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").rglob("*.md"))]
CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A path ends where prose punctuation or a test selector starts.
TAIL = re.compile(r"(::\S*|[.,;:)]+)$")
# Paths in another project's repository that a document cites as its source, by document.
UPSTREAM = {"docs/models.md": {"config/duplex_infer.yaml"}}  # Raon-Speech's sampling settings


def _expand(word: str) -> list[str]:
    """`{a,b}` alternatives, one level of braces at a time."""
    m = re.search(r"\{([^{}]*)\}", word)
    if not m or "," not in m[1]:
        return [word]
    return list(itertools.chain.from_iterable(_expand(word[:m.start()] + alt + word[m.end():]) for alt in m[1].split(",")))


def _exists(path: str, base: Path) -> bool:
    pattern = re.sub(r"<[^<>]*>", "*", path)
    if any(c in pattern for c in "*?["):
        return any(base.glob(pattern.rstrip("/")))
    return (base / pattern).exists()


def _named_paths(doc: Path) -> list[tuple[str, Path]]:
    """(path as written, folder it is relative to) for every path the document names."""
    text = doc.read_text(encoding="utf-8")
    found: list[tuple[str, Path]] = []
    for span in CODE.findall(text):
        for word in span.split():
            word = TAIL.sub("", word.strip("'\"("))
            if word.split("/", 1)[0] in ROOTS and "/" in word:
                found.append((word, REPO))
    for target in LINK.findall(text):
        target = target.split("#", 1)[0]
        if not target or "://" in target or target.startswith("mailto:"):
            continue
        base = REPO if target.split("/", 1)[0] in ROOTS else doc.parent
        found.append((target, base))
    return found


def test_the_scan_finds_the_paths_it_should():
    # The scan itself, on paths this repository is known to have and not to have.
    assert _exists("tests/<stage>/", REPO) and _exists("workflow/rules/common/config.smk", REPO)
    assert all(_exists(p, REPO) for p in _expand("workflow/rules/{score,record}.smk"))
    assert not _exists("tests/agents/no_such_test.py", REPO)
    readme = dict(_named_paths(REPO / "README.md"))
    assert "tests/test_layers.py" in readme and "docs/engines.md" in readme


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_path_named_in_the_docs_exists(doc):
    upstream = UPSTREAM.get(str(doc.relative_to(REPO)), set())
    missing = sorted({written for written, base in _named_paths(doc)
                      if written not in upstream and not all(_exists(p, base) for p in _expand(written))})
    assert not missing, f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"


def _readme_layout() -> tuple[list[str], set[str]]:
    """The README's stage order (`name/` < `name/` ...) and its shared leaves (`name.py`, `name/` for a leaf package), from its
    package bullet (the one that starts "`src/dyafdb/`:")."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    bullet = text.split("- `src/dyafdb/`:", 1)[1].split("\n- ", 1)[0]
    order, leaves = bullet.split("Shared leaves:", 1)
    while re.search(r"\([^()]*\)", order):  # what a stage holds is in parentheses, nested at times
        order = re.sub(r"\([^()]*\)", "", order)
    return re.findall(r"`(\w+)/`", order.split(":", 1)[1]), set(re.findall(r"`(\w+)(?:\.py|/)`", leaves))


def test_the_readme_lists_the_stages_in_layer_order_and_every_shared_leaf():
    from test_layers import STAGES

    stages, leaves = _readme_layout()
    assert stages == list(STAGES), "README's stage order differs from tests/test_layers.py STAGES"
    package = REPO / "src" / "dyafdb"
    modules = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__", "cli"}
    modules |= {p.parent.name for p in package.glob("*/__init__.py")} - set(STAGES) - {"commands"}
    assert leaves == modules, f"README's shared leaves differ from src/dyafdb/*.py and leaf packages: {sorted(leaves ^ modules)}"
