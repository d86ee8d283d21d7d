"""The safe id pattern: what a conversation id may be made of, wherever one enters.

Ids become file and folder names (``recordings/<shard>/<id>/``, ``measures/<shard>/<id>.json``), SLURM job names
and Snakemake wildcards, so one pattern serves the workflow's wildcard constraint and every command
that takes ``--id``: no ``/``, no leading dot, so an id can never point outside its folder
(``--id ../../x``). The design's ids match it by construction (scenario ids and model names are
restricted by the schemas; ``tests/workflow/test_bad_input.py`` checks). A recording that is not in
the design can still be scored: only the pattern is checked, not membership.
"""

from __future__ import annotations

import re

from dyafdb.errors import InputError

ID_PATTERN = r"[a-z0-9][a-z0-9._-]*"
_ID = re.compile(ID_PATTERN)


def check_id(value: str, source: str = "--id") -> str:
    """``value`` if it is a safe conversation id, else an :class:`InputError` naming ``source``."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise InputError(f"{source} = {value!r} is not a conversation id: ids are lower-case letters, digits and "
                         f"'.', '_', '-', starting with a letter or digit (the pattern {ID_PATTERN}); copy the id "
                         "from `dyafdb suite design` or from the recordings folder")
    return value
