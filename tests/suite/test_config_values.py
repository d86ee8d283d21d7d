"""Values the schema must not let through: non-finite numbers, numbers past any sensible range,
windows whose ids the id pattern refuses, and YAML whose aliases expand without bound."""

from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path

import pytest
import yaml

from conftest import scripted_config, write_suite
from dyafdb.config import validate_config
from dyafdb.errors import InputError
from dyafdb.schema_check import load_schema, read_yaml
from dyafdb.suite.design import build_design, conversation_id
from dyafdb.suite.ids import ID_PATTERN

SCHEMAS = sorted(e.name[: -len(".schema.yaml")] for e in resources.files("dyafdb").joinpath("schemas").iterdir()
                 if e.name.endswith(".schema.yaml"))


def numeric_nodes(node, where="") -> list[tuple[str, dict]]:
    found = []
    if isinstance(node, dict):
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if {"number", "integer"} & set(types):
            found.append((where, node))
        for key, sub in node.items():
            found += numeric_nodes(sub, f"{where}/{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            found += numeric_nodes(sub, f"{where}/{i}")
    return found


@pytest.mark.parametrize("schema", SCHEMAS)
def test_every_number_in_the_schemas_has_a_range(schema):
    nodes = numeric_nodes(load_schema(schema))
    open_ended = [w for w, n in nodes if not ({"maximum", "exclusiveMaximum", "enum", "const"} & set(n))]
    assert open_ended == [], f"{schema}: numbers without a maximum: {open_ended}"


def config_with(**changes) -> dict:
    config = scripted_config()
    for dotted, value in changes.items():
        node = config
        *head, last = dotted.split("__")
        for key in head:
            node = node.setdefault(key, {})
        node[last] = value
    return config


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("field", ["suites__t__window_s", "bridge__lead_in_s", "models__talker__params__gain",
                                   "judge__timeout_s", "analysis__anchor_rating", "vad__start_rms"])
def test_non_finite_numbers_are_refused_naming_the_field(field, value):
    with pytest.raises(InputError) as err:
        validate_config(config_with(**{field: value}), "c.yaml")
    assert field.split("__")[-1] in str(err.value) and "finite" in str(err.value), str(err.value)


def test_a_nan_window_in_yaml_stops_suite_design_in_one_line(tmp_path, capsys):
    from dyafdb.cli import main

    write_suite(tmp_path)
    text = yaml.safe_dump(scripted_config()).replace("window_s: 4.0", "window_s: .nan")
    assert ".nan" in text
    (tmp_path / "c.yaml").write_text(text)
    rc = main(["suite", "design", "-c", str(tmp_path / "c.yaml"), "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "suites.t.window_s" in err and "finite" in err and "Traceback" not in err, err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("window", [None, 3599.99, 1234.5678, 0.001, 1e-05, 59.999999])
def test_every_window_the_schema_accepts_makes_ids_the_pattern_accepts(window, tmp_path):
    top = load_schema("config")["$defs"]["suite"]["properties"]["window_s"]
    window = window if window is not None else top["maximum"]
    assert re.fullmatch(ID_PATTERN, conversation_id("t1-1-x-01", "m", "n", "a", 1, window)), window
    write_suite(tmp_path)
    config = validate_config(config_with(suites__t__window_s=window, bridge__lead_in_s=0.0), "c.yaml")
    for row in build_design(config, tmp_path):
        assert re.fullmatch(ID_PATTERN, row.conversation_id), row.conversation_id


@pytest.mark.parametrize("window", [1.0e9, 1e6, 86401])
def test_a_window_past_the_range_is_refused_before_any_id_is_made(window):
    with pytest.raises(InputError, match=r"suites\.t\.window_s"):
        validate_config(config_with(suites__t__window_s=window), "c.yaml")


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines)


def bomb_config(tmp_path: Path) -> Path:
    text = yaml.safe_dump(scripted_config())
    bomb = alias_bomb()
    body = "\n".join("      " + line for line in bomb.splitlines())
    text = text.replace("    params:\n", "    params:\n      laughs:\n" + "\n".join("  " + l for l in body.splitlines()) + "\n", 1)
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    return path


@pytest.mark.timeout(60)
def test_a_yaml_alias_bomb_is_refused_naming_the_file(tmp_path, capsys):
    from dyafdb.cli import main

    path = bomb_config(tmp_path)
    with pytest.raises(InputError, match="alias") as err:
        read_yaml(path)
    assert str(path) in str(err.value)
    write_suite(tmp_path)
    rc = main(["suite", "design", "-c", str(path), "--root", str(tmp_path)])
    line = capsys.readouterr().err
    assert rc == 2 and str(path) in line and "alias" in line, line


@pytest.mark.timeout(60)
def test_shared_structures_past_the_bound_are_refused_in_validation():
    """What Snakemake's own YAML loader hands the workflow: the aliases already resolved to shared objects."""
    laughs: list = ["lol"]
    for _ in range(9):
        laughs = [laughs] * 9
    config = config_with(models__talker__params__laughs=laughs)
    with pytest.raises(InputError, match="models.talker.params"):
        validate_config(config, "c.yaml")


def test_aliases_of_ordinary_size_still_load(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {x: 1, y: [1, 2, 3]}\none: *b\ntwo: *b\n")
    assert read_yaml(path)["two"] == {"x": 1, "y": [1, 2, 3]}


def test_the_shipped_configs_are_far_inside_the_bounds():
    root = Path(__file__).resolve().parents[2]
    for name in ("config.yaml", "demo.yaml"):
        validate_config(read_yaml(root / "config" / name), name)
