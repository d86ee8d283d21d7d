"""Engines are declared like adapters (``@engine("name")`` on the engine class, or entry point group
``dyafdb.engines``); which adapters have one, and the engine a model's engine job builds, derive from
those declarations."""

from __future__ import annotations

import textwrap

import pytest

import plugins
from dyafdb.agents import registry
from dyafdb.declarations import group
from dyafdb.errors import InputError

LAB = textwrap.dedent('''
    """A lab's own engine (in its own package)."""
    from dyafdb.agents.engine.models import NullEngine


    class LabEngine(NullEngine):
        pass
''')


def test_the_shipped_engines_are_declared_on_their_classes():
    from dyafdb.agents.engine.models import ENGINES, NullEngine

    assert {"null", "moshi", "personaplex", "minicpmo", "raon"} <= set(registry.engines())
    assert ENGINES == registry.engines() and ENGINES["null"] == "dyafdb.agents.engine.models:NullEngine"
    assert NullEngine.engine_name == "null"


def test_an_installed_package_registers_an_engine(tmp_path, monkeypatch):
    from dyafdb.agents.engine.models import make_engine

    with pytest.raises(InputError, match="adapter 'labtalker' has no engine"):
        make_engine("labtalker", {}, "talker", 2)
    plugins.install(tmp_path / "site", monkeypatch, "lab-engine", {"lab_engine": LAB},
                    {group("engine"): {"labtalker": "lab_engine:LabEngine"}})
    try:
        engine = make_engine("labtalker", {}, "talker", 2)
        assert type(engine).__name__ == "LabEngine" and engine.capacity == 2
    finally:
        plugins.forget()
