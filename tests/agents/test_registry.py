"""Adapters are declared once, with ``@adapter`` on their class; the registry, the config schema's
names and the error messages all derive from those declarations."""

from __future__ import annotations

import pytest

from conftest import scripted_config
from dyafdb.agents import registry
from dyafdb.config import config_schema, validate_config
from dyafdb.errors import InputError
from dyafdb.schema_check import load_schema


def test_every_declared_adapter_resolves_to_its_class():
    found = registry.adapters()
    assert {"null", "scripted", "cascade", "moshi", "personaplex", "minicpmo", "raon"} <= set(found)
    for name in ("null", "scripted"):  # the ones importable without a model stack
        module, cls = found[name].split(":")
        klass = getattr(__import__(module, fromlist=[cls]), cls)
        assert klass.adapter_name == name


def test_schema_names_come_from_the_registry_not_a_hand_kept_list():
    assert load_schema("config")["$defs"]["model"]["properties"]["adapter"]["anyOf"][0]["enum"] == []
    derived = config_schema()["$defs"]["model"]["properties"]["adapter"]["anyOf"][0]["enum"]
    assert derived == registry.adapter_names()


def test_unknown_adapter_is_refused_naming_the_built_ins():
    cfg = scripted_config()
    cfg["models"]["talker"]["adapter"] = "nosuch"
    with pytest.raises(InputError) as err:
        validate_config(cfg, "cfg.yaml")
    message = str(err.value)
    assert "models.talker.adapter" in message
    for name in registry.adapter_names():
        assert name in message


def test_own_class_by_import_path_is_accepted():
    cfg = scripted_config()
    cfg["models"]["talker"]["adapter"] = "mylab.agent:MyAgent"
    validate_config(cfg, "cfg.yaml")
    with pytest.raises(InputError, match="cannot import mylab.agent"):
        registry.make_agent("mylab.agent:MyAgent")
