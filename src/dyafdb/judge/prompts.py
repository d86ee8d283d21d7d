"""Prompt templates: one file per question under ``judge.prompts_dir`` (``config/judge/``).

A template is the whole user message. ``{name}`` placeholders are filled from the scenario and
the anonymised transcript (see each question in :mod:`dyafdb.judge.rubric` for the names it
offers); filling is a single pass, so braces inside a transcript are never read as placeholders.
A template that uses a name its question does not offer stops the run before any API call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from dyafdb.judge.rubric import Question
from dyafdb.errors import InputError

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def template_path(prompts_dir: Path, question: Question) -> Path:
    return Path(prompts_dir) / f"{question.id}.txt"


def load_template(prompts_dir: Path, question: Question) -> str:
    path = template_path(prompts_dir, question)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: prompt template for question {question.id} not found; "
                         f"copy it from the project's config/judge/ or set judge.prompts_dir") from None
    allowed = question.placeholder_names()
    unknown = sorted(set(_PLACEHOLDER.findall(text)) - allowed)
    if unknown:
        raise InputError(f"{path}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
                         f"question {question.id} offers {', '.join('{' + a + '}' for a in sorted(allowed))}")
    if "{transcript}" not in text:
        raise InputError(f"{path}: the template never shows the transcript; add {{transcript}}")
    return text


def render(template: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
