"""A small JSON-schema checker for tools described by a plain schema rather than a pydantic model.

It covers what tool arguments use in practice: ``type`` (object, string, integer, number, boolean,
array, null, or a list of them), ``properties``, ``required``, ``additionalProperties: false``,
``enum``, ``minimum``/``maximum``, ``minLength``/``maxLength``, ``items``, ``minItems``/``maxItems``.
Other keywords are accepted and ignored. Problems are reported as ``path: what is wrong`` lines that a
model can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES = {"object", "string", "integer", "number", "boolean", "array", "null"}


def check_schema(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot describe tool arguments, or ``None`` when it can."""
    if not isinstance(schema, Mapping):
        return "must be a JSON schema object"
    if schema.get("type") != "object":
        return 'must have "type": "object" at the top level'
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        return '"properties" must be an object'
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return '"required" must be a list of property names'
    for name, sub in props.items():
        if not isinstance(sub, Mapping):
            return f"property {name!r} must be a schema object"
        kind = sub.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
        unknown = [k for k in kinds if k not in _TYPES]
        if unknown:
            return f"property {name!r} has unknown type {unknown[0]!r}"
    return None


def validate(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Every way ``value`` breaks ``schema``; empty when it fits."""
    where = path or "arguments"
    problems: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            return [f"{where}: expected {' or '.join(kinds)}, got {_type_name(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: must be one of {schema['enum']!r}")
    if isinstance(value, bool):
        return problems
    if isinstance(value, int | float):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where}: must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where}: must be <= {schema['maximum']}")
    elif isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{where}: must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where}: must have at most {schema['maxLength']} characters")
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{where}: must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where}: must have at most {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                problems.extend(validate(items, item, f"{where}[{i}]"))
    elif isinstance(value, Mapping):
        props: Mapping[str, Any] = schema.get("properties", {})
        problems.extend(
            f"{_join(path, name)}: required but missing"
            for name in schema.get("required", [])
            if name not in value
        )
        for name, item in value.items():
            sub = props.get(name)
            if sub is None:
                if schema.get("additionalProperties") is False:
                    known = ", ".join(props) or "none"
                    problems.append(f"{_join(path, name)}: unknown argument (known: {known})")
                continue
            problems.extend(validate(sub, item, _join(path, name)))
    return problems


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _is_type(value: Any, kind: str) -> bool:
    match kind:
        case "object":
            return isinstance(value, Mapping)
        case "string":
            return isinstance(value, str)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "boolean":
            return isinstance(value, bool)
        case "array":
            return isinstance(value, list | tuple)
        case "null":
            return value is None
    return False


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return {str: "string", int: "integer", float: "number"}.get(type(value), type(value).__name__)
