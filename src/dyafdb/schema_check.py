"""JSON-schema validation with messages a user can act on: file, field, bad value, what is allowed."""

from __future__ import annotations

import copy
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dyafdb.errors import InputError


# libyaml's loader parses the 180 scenario files about ten times faster than the pure-Python one;
# every job that builds the design table reads them all.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """One mapping gives a key twice: YAML forbids it, PyYAML would keep the last value silently."""

    def __init__(self, key: Any, line: int, first_line: int):
        super().__init__(None, None, f"key {key!r} appears twice in one mapping (line {first_line} and line {line})")
        self.key, self.line, self.first_line = key, line, first_line


class StrictLoader(_FAST_LOADER):  # type: ignore[misc, valid-type]
    """The fast safe loader, refusing duplicate keys (``window_s: 4`` then ``window_s: 30``).

    Only the parse tree's mapping is checked, so libyaml still does the parsing; merge keys (``<<``)
    may still be overridden by the mapping's own keys, as YAML intends."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise DuplicateKeyError(key, key_node.start_mark.line + 1, seen[key])
            except TypeError:
                continue  # an unhashable key: the base class names it
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


YAML_LOADER = StrictLoader


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    text = resources.files("dyafdb").joinpath("schemas", f"{name}.schema.yaml").read_text()
    return yaml.safe_load(text)


def field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def describe(error: jsonschema.ValidationError) -> str:
    """One line: which field, which value, what is allowed."""
    where = field_path(error)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        return f"unknown key {', '.join(repr(e) for e in extra)} in {where}; allowed keys: {', '.join(allowed)}"
    if error.validator == "enum":
        return f"{where} = {error.instance!r} is not allowed; choose one of: {', '.join(map(repr, schema['enum']))}"
    if error.validator == "const":
        return f"{where} = {error.instance!r}; it must be {schema['const']!r}"
    if error.validator in ("anyOf", "oneOf"):
        choices = [v for branch in schema.get(error.validator, []) if isinstance(branch, dict) for v in branch.get("enum", [])]
        listed = f" (built-in: {', '.join(map(str, choices))})" if choices else ""
        return f"{where} = {error.instance!r} is not allowed: {schema.get('description', error.message)}{listed}"
    if error.validator == "required":
        return f"{where}: {error.message}"
    desc = schema.get("description")
    hint = f" ({desc})" if desc else ""
    return f"{where} = {error.instance!r}: {error.message}{hint}"


def fill_defaults(data: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """``data`` with every ``default:`` of ``schema`` filled in where the key is missing (recursively).

    The schemas are the one place defaults are written: an absent object that has a ``default`` is
    created from it and then filled in turn, so ``bridge: {}`` and no ``bridge`` at all read the same.
    Only ``properties``, ``additionalProperties`` (maps such as ``models``), ``items`` and ``$ref``
    are followed; a branch of ``anyOf``/``oneOf`` is never guessed.
    """
    root = root if root is not None else schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = root["$defs"][ref.split("/")[-1]]
    if isinstance(data, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in data and isinstance(sub, dict) and "default" in sub:
                data[key] = copy.deepcopy(sub["default"])
            if key in data and isinstance(sub, dict):
                data[key] = fill_defaults(data[key], sub, root)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in data:
                if key not in (schema.get("properties") or {}):
                    data[key] = fill_defaults(data[key], extra, root)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [fill_defaults(item, schema["items"], root) for item in data]
    return data


def schema_default(schema_name: str, *keys: str) -> Any:
    """The default the schema gives at ``keys`` (e.g. ``("properties", "vad")`` paths are implied):
    ``schema_default("config", "vad", "start_rms")``; an entry of a map is any name, e.g.
    ``schema_default("config", "models", "<model>", "worker", "step_timeout_s")``. For code that must
    name a default outside a validated config (a section the config leaves out, a raw config)."""
    node: Any = load_schema(schema_name)
    root = node
    for key in keys:
        ref = node.get("$ref") if isinstance(node, dict) else None
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = root["$defs"][ref.split("/")[-1]]
        properties = node.get("properties") or {}
        node = properties[key] if key in properties else node["additionalProperties"]
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and "default" not in node:
        node = root["$defs"][ref.split("/")[-1]]
    return copy.deepcopy(node["default"])


def model_default(*keys: str) -> Any:
    """A model entry's default, ``models.<name>.<keys>``: ``model_default("worker", "step_timeout_s")``."""
    return schema_default("config", "models", "<model>", *keys)


DECLARED = "x-declared"


def with_declared(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each ``{x-declared: <kind>}`` node given ``enum:`` the names declared of that
    kind (dyafdb.declarations: judge questions, adapters ...), read at validation time from the
    source, so no id list is kept in a schema and a new declaration is allowed at once."""
    from dyafdb.declarations import names

    def fill(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: fill(v) for k, v in node.items()}
            if DECLARED in node:
                out["enum"] = names(node[DECLARED])
            return out
        return [fill(v) for v in node] if isinstance(node, list) else node

    return fill(schema)


def validate(data: Any, schema_name: str, source: str | Path, schema: dict[str, Any] | None = None) -> None:
    """Raise :class:`InputError` listing every problem in ``data``, each naming its field."""
    check_expanded_size(data, source)  # before anything walks it: the walk itself would not end
    validator = jsonschema.Draft202012Validator(with_declared(schema or load_schema(schema_name)))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    problems = [describe(e) for e in _leaf_errors(errors)] + non_finite_numbers(data)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise InputError(f"{source}: invalid {schema_name}:\n{lines}")


# ----------------------------------------------------------------------------- values no schema bounds
#
# JSON schema's number type takes NaN and infinity (python-jsonschema compares them without
# complaint: nan > 3600 is false), and YAML writes them as .nan and .inf; and YAML aliases let a
# few lines stand for millions of values, shared while loaded but copied out by every json.dumps,
# digest or job parameter downstream. Both are checked here, for every validated document.

MAX_YAML_BYTES = 16 * 1024 * 1024
MAX_EXPANDED_VALUES = 1_000_000
MAX_DEPTH = 100


def non_finite_numbers(data: Any, where: str = "") -> list[str]:
    """One message per NaN or infinite float anywhere in ``data`` (free-form ``params`` included)."""
    out: list[str] = []
    if isinstance(data, float) and not math.isfinite(data):
        out.append(f"{where or '(top level)'} = {data!r}: not a finite number (.nan and .inf are refused); "
                   "write a number")
    elif isinstance(data, dict):
        for key, value in data.items():
            out += non_finite_numbers(value, f"{where}.{key}" if where else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += non_finite_numbers(value, f"{where}.{i}" if where else str(i))
    return out


def check_expanded_size(data: Any, source: str | Path) -> None:
    """Refuse a document that stands for more than MAX_EXPANDED_VALUES values once its aliases (or
    shared references, as another YAML loader hands them over) are written out, or that nests
    deeper than MAX_DEPTH. Sizes are counted once per shared object, so the check is linear in
    what was parsed, not in what it expands to."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        if id(node) in sizes:
            return sizes[id(node)]
        if depth > MAX_DEPTH:
            raise InputError(f"{source}: nested deeper than {MAX_DEPTH} levels; fix: flatten the structure")
        children = node.values() if isinstance(node, dict) else node
        sizes[id(node)] = total = 1 + sum(size(child, depth + 1) for child in children)
        return total

    total = size(data, 0)
    if total <= MAX_EXPANDED_VALUES:
        return
    # name the deepest field that alone is past the bound: where the aliases nest
    node, path = data, []
    while True:
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []
        big = [(k, v) for k, v in items if size(v, 0) > MAX_EXPANDED_VALUES]
        if not big:
            break
        key, node = big[0]
        path.append(str(key))
    field = ".".join(path) or "(top level)"
    raise InputError(f"{source}: {field} expands to {total:,} values through YAML aliases (&name / *name), more "
                     f"than the {MAX_EXPANDED_VALUES:,} a config or scenario may hold; fix: write the values out "
                     "once instead of nesting aliases of aliases")


def _leaf_errors(errors: list[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    """Expand the ``allOf``/``if`` wrappers so the message points at the real field."""
    out: list[jsonschema.ValidationError] = []
    for e in errors:
        if e.context and e.validator == "allOf":
            out.extend(_leaf_errors(list(e.context)))
        else:
            out.append(e)
    return out


def read_yaml(path: Path) -> Any:
    """A YAML file (UTF-8, as YAML itself requires); a problem is an InputError naming the file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    if len(data) > MAX_YAML_BYTES:
        raise InputError(f"{path}: {len(data):,} bytes, more than the {MAX_YAML_BYTES:,} a config or scenario file "
                         "may hold; fix: check that -c names the config, not a data file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line} holds a byte that is not UTF-8 (0x{data[exc.start]:02x}, {exc.reason}); "
                         "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)") from None
    try:
        loaded = yaml.load(text, Loader=YAML_LOADER)
    except DuplicateKeyError as exc:
        raise InputError(f"{path}: line {exc.line}: key {exc.key!r} appears twice in one mapping (first on line "
                         f"{exc.first_line}); delete the one you do not mean (nothing is read from a file that "
                         "gives a key twice)") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from None
    check_expanded_size(loaded, path)
    return loaded
