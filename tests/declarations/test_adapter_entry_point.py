"""A lab's own installed package registers an adapter through entry point group ``dyafdb.adapters``,
without editing this repository: the config schema accepts its name, the plan counts its runs and
make_agent builds it; validating and planning never import its module (it may need a model stack)."""

from __future__ import annotations

import sys
import textwrap

import pytest

import plugins
from conftest import scripted_config, write_suite
from dyafdb.agents import registry
from dyafdb.config import validate_config
from dyafdb.declarations import group
from dyafdb.errors import InputError

LAB = textwrap.dedent('''
    """A lab's own adapter (in its own package; imported only where a model runs)."""
    from dyafdb.agents.null import NullAgent


    class LabAgent(NullAgent):
        pass
''')


@pytest.fixture
def lab_adapter(tmp_path, monkeypatch):
    plugins.install(tmp_path / "site", monkeypatch, "lab-agent", {"lab_agent": LAB},
                    {group("adapter"): {"labtalker": "lab_agent:LabAgent"}})
    yield
    plugins.forget()


def test_an_installed_package_registers_an_adapter(tmp_path, lab_adapter, capsys):
    from dyafdb.cli import main
    from dyafdb.suite.design import build_design

    assert registry.adapters()["labtalker"] == "lab_agent:LabAgent"
    write_suite(tmp_path)
    cfg = scripted_config()
    cfg["models"]["talker"] = {"adapter": "labtalker"}
    cfg["scenarios_dir"] = str(tmp_path / "scenarios")
    merged = validate_config(cfg, "cfg.yaml")
    assert len(build_design(merged)) > 0
    import yaml

    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["plan", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path)]) == 0
    assert "lab_agent" not in sys.modules  # validated and planned from the entry point's text alone
    agent = registry.make_agent("labtalker", {}, "talker")
    assert type(agent).__name__ == "LabAgent" and agent.model_name == "talker"


def test_without_the_package_the_name_is_refused():
    cfg = scripted_config()
    cfg["models"]["talker"] = {"adapter": "labtalker"}
    with pytest.raises(InputError, match="models.talker.adapter"):
        validate_config(cfg, "cfg.yaml")


def test_a_name_taken_twice_is_refused_naming_both(tmp_path, monkeypatch):
    plugins.install(tmp_path / "site", monkeypatch, "lab-agent", {"lab_agent": LAB},
                    {group("adapter"): {"null": "lab_agent:LabAgent"}})
    try:
        with pytest.raises(InputError, match=r"@adapter\('null'\) is declared twice: .*null\.py.*lab-agent"):
            registry.adapters()
    finally:
        plugins.forget()
