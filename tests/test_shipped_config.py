"""The shipped config/greywind.toml is the reference of every key: it must not fall behind the schema.

Each key the schema accepts appears in the file, with its default value. Keys that TOML cannot write
(a default of None) and the provider tables (none by default) appear as commented examples; those
examples, uncommented, must be valid too.
"""

from __future__ import annotations

import re
import tomllib
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.config import GreyWindConfig, load_config
from runtime.config.mcp import McpServerConfig
from runtime.config.models import ProviderConfig

SHIPPED = Path(__file__).resolve().parent.parent / "config" / "greywind.toml"

# Keys whose shipped value may differ from the code's default, each with the reason. Empty today:
# the shipped file is exactly the defaults, written out.
INTENDED_DIFFERENCES: dict[str, str] = {}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds directly or as the item of a tuple/list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def schema_keys(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, bool]]:
    """Every leaf key as a dotted path, and whether it sits in an array of tables (``a.b[].c``)."""
    for name, field in model.model_fields.items():
        inner = _model_in(field.annotation)
        if inner is None:
            yield prefix + name, "[]" in prefix
        elif isinstance(field.annotation, type):
            yield from schema_keys(inner, f"{prefix}{name}.")
        else:
            yield from schema_keys(inner, f"{prefix}{name}[].")


def _lookup(data: Mapping[str, Any], dotted: str) -> bool:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _section_text(text: str, dotted: str) -> str:
    """The lines of the table that holds ``dotted``, from its header to the next header."""
    table = dotted.rsplit(".", 1)[0]
    match = re.search(rf"^\[{re.escape(table)}\]\s*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        flat: dict[str, Any] = {}
        for key, value in data.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): data}


def provider_examples(text: str) -> list[dict[str, Any]]:
    """The commented ``[[models.providers]]`` examples, uncommented and parsed: each runs from its
    ``# [[models.providers]]`` line through the ``# key = value`` lines that follow it."""
    examples: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# [[models.providers]]"):
            examples.append(["[[models.providers]]"])
            inside = True
        elif inside and re.match(r"^#\s*\w+\s*=", stripped):
            examples[-1].append(stripped.removeprefix("#").strip())
        else:
            inside = False
    return [tomllib.loads("\n".join(lines))["models"]["providers"][0] for lines in examples]


def mcp_examples(text: str) -> list[dict[str, Any]]:
    """The commented ``[[mcp.servers]]`` examples, uncommented and parsed (as provider_examples)."""
    examples: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# [[mcp.servers]]"):
            examples.append(["[[mcp.servers]]"])
            inside = True
        elif inside and re.match(r"^#\s*\w+\s*=", stripped):
            examples[-1].append(stripped.removeprefix("#").strip())
        else:
            inside = False
    return [tomllib.loads("\n".join(lines))["mcp"]["servers"][0] for lines in examples]


def _default_of(dotted: str) -> Any:
    node: Any = GreyWindConfig()
    for part in dotted.split("."):
        node = getattr(node, part, None)
    return node


@pytest.fixture(scope="module")
def text() -> str:
    return SHIPPED.read_text(encoding="utf-8")


def test_the_shipped_file_loads_with_the_persona_of_seed_000() -> None:
    config = load_config(SHIPPED)
    assert config.persona.name == "灰风"
    assert config.persona.role == "高效的个人AI助手"
    assert config.persona.speaking_style == "简洁直接，不废话"


def test_every_key_of_the_schema_appears_in_the_shipped_file(text: str) -> None:
    data = tomllib.loads(text)
    missing = []
    for key, in_array in schema_keys(GreyWindConfig):
        if in_array:
            continue  # the provider examples are checked below
        if _lookup(data, key):
            continue
        leaf = key.rsplit(".", 1)[1]
        default = _default_of(key)
        commented = re.search(rf"^#\s*{re.escape(leaf)}\s*=", _section_text(text, key), re.MULTILINE)
        # A key left unset is fine only when TOML cannot spell its default (None) or it is the
        # array of provider tables, and it is shown as a commented example in its table.
        if commented and default is None:
            continue
        if key == "models.providers" and "# [[models.providers]]" in text:
            continue
        if key == "mcp.servers" and "# [[mcp.servers]]" in text:
            continue
        missing.append(key)
    assert not missing, f"keys the schema accepts but config/greywind.toml does not show: {missing}"


def test_the_provider_examples_are_valid_and_show_every_provider_key(text: str) -> None:
    examples = provider_examples(text)
    names = {example["name"] for example in examples}
    assert {"deepseek", "qwen", "vllm", "ollama"} <= names
    shown: set[str] = set()
    for example in examples:
        ProviderConfig.model_validate(example)
        shown.update(example)
    provider_keys = {
        key.rsplit(".", 1)[1]
        for key, in_array in schema_keys(GreyWindConfig)
        if in_array and key.startswith("models.providers[]")
    }
    assert provider_keys == set(ProviderConfig.model_fields)
    assert provider_keys <= shown, f"provider keys no example shows: {sorted(provider_keys - shown)}"


def test_the_mcp_server_examples_are_valid_disabled_and_show_every_server_key(text: str) -> None:
    examples = mcp_examples(text)
    assert len(examples) == 2
    shown: set[str] = set()
    for example in examples:
        server = McpServerConfig.model_validate(example)
        assert not server.enabled
        shown.update(example)
    assert shown == set(McpServerConfig.model_fields)


def test_the_shipped_values_are_the_defaults() -> None:
    shipped = _flatten(load_config(SHIPPED).model_dump(mode="json"))
    defaults = _flatten(GreyWindConfig().model_dump(mode="json"))
    assert shipped.keys() == defaults.keys()
    differing = {key: (shipped[key], defaults[key]) for key in defaults if shipped[key] != defaults[key]}
    unexplained = {key: pair for key, pair in differing.items() if key not in INTENDED_DIFFERENCES}
    assert not unexplained, f"shipped != default (shipped, default), not listed as intended: {unexplained}"
    stale = set(INTENDED_DIFFERENCES) - set(differing)
    assert not stale, f"listed as intended differences but equal to the default now: {sorted(stale)}"


def test_the_walk_sees_nested_tables() -> None:
    keys = {key for key, _ in schema_keys(GreyWindConfig)}
    assert "budget.forced.min_interval_ms" in keys
    assert "memory_injection.injection_strategy.priority" in keys
    assert "models.providers[].api_key_env" in keys
    assert "runtime.temperature" in keys


def test_docs_config_has_a_row_for_every_key() -> None:
    doc = (SHIPPED.parent.parent / "docs" / "CONFIG.md").read_text(encoding="utf-8")
    missing = []
    for key, in_array in schema_keys(GreyWindConfig):
        table, leaf = key.rsplit(".", 1)
        heading = f"[[{key.split('[]')[0]}]]" if in_array else f"[{table}]"
        match = re.search(rf"^## `{re.escape(heading)}`$(.*?)(?=^## |\Z)", doc, re.MULTILINE | re.DOTALL)
        if key in ("models.providers", "mcp.servers") or (match and f"| `{leaf}` |" in match.group(1)):
            continue
        missing.append(key)
    assert not missing, f"keys docs/CONFIG.md does not explain: {missing}"
