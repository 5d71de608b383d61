"""config/starter.toml is the file a new operator starts from (``GREYWIND_CONFIG=config/starter.toml``).

It must load with the real loader (which refuses unknown keys and bad values, so loading proves every
key in it is real), every value it sets must reach the loaded configuration as written, and its one
model must be usable exactly when its key variable is set, as its comments say.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from runtime.config import GreyWindConfig, load_config
from runtime.llm.router import ModelRouter
from tests.test_design_citations import FOREIGN
from tests.test_shipped_config import schema_keys

STARTER = Path(__file__).resolve().parent.parent / "config" / "starter.toml"


def _leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value for every value the file writes (arrays of tables by index)."""
    if isinstance(data, dict):
        flat: dict[str, Any] = {}
        for key, value in data.items():
            flat.update(_leaves(value, f"{prefix}{key}."))
        return flat
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        flat = {}
        for index, item in enumerate(data):
            flat.update(_leaves(item, f"{prefix}{index}."))
        return flat
    return {prefix.rstrip("."): data}


def _loaded(config: GreyWindConfig, dotted: str) -> Any:
    node: Any = config.model_dump(mode="json")
    for part in dotted.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def test_the_starter_loads_and_sets_the_persona_a_model_and_a_budget() -> None:
    config = load_config(STARTER)
    defaults = GreyWindConfig()
    assert config.persona.name.strip()
    assert config.persona.role.strip()
    assert config.persona.role != defaults.persona.role
    (provider,) = config.models.providers
    assert "chat" in provider.roles
    assert provider.api_key_env == "DEEPSEEK_API_KEY"
    assert provider.base_url.startswith("https://")
    assert config.budget.min_interval_ms != defaults.budget.min_interval_ms
    assert config.budget.max_per_window != defaults.budget.max_per_window


def test_every_value_in_the_starter_is_taken_as_written() -> None:
    written = _leaves(tomllib.loads(STARTER.read_text(encoding="utf-8")))
    config = load_config(STARTER)
    assert len(written) >= 8
    differing = {
        key: (value, _loaded(config, key))
        for key, value in written.items()
        if _loaded(config, key) != (list(value) if isinstance(value, tuple) else value)
    }
    assert not differing, f"starter values the loader changed (written, loaded): {differing}"


def test_the_starter_is_short_and_keeps_the_key_out_of_the_file() -> None:
    text = STARTER.read_text(encoding="utf-8")
    assert 10 <= len(text.splitlines()) <= 20
    assert "api_key =" not in text
    assert "sk-" not in text


def test_the_starters_model_is_usable_once_its_key_variable_is_set() -> None:
    models = load_config(STARTER).models
    without = ModelRouter(models, env={})
    assert not without.configured
    assert without.problem is not None
    assert "DEEPSEEK_API_KEY" in without.problem
    with_key = ModelRouter(models, env={"DEEPSEEK_API_KEY": "sk-test"})
    assert with_key.configured
    assert [p.name for p in with_key.providers] == ["deepseek"]


# -- the Chinese operator docs ------------------------------------------------------------------------

ROOT = STARTER.parent.parent
CONFIG_ZH = ROOT / "docs" / "CONFIG.zh-CN.md"
OPERATOR_DOCS_ZH = (ROOT / "README.zh-CN.md", CONFIG_ZH)


def _zh_sections(doc: str) -> dict[str, str]:
    """Table name (``persona``, ``budget.forced``, ``models.providers[]``) -> the text of every
    ``### `[table]`…`` subsection about it; a table may be split over several groups."""
    sections: dict[str, str] = {}
    pattern = r"^### `\[(\[?)([a-z_.]+)\]?\]`[^\n]*$(.*?)(?=^##|\Z)"
    for match in re.finditer(pattern, doc, re.MULTILINE | re.DOTALL):
        table = match.group(2) + ("[]" if match.group(1) else "")
        sections[table] = sections.get(table, "") + match.group(3)
    return sections


def test_the_chinese_config_guide_has_a_row_for_every_key_and_none_for_a_key_that_does_not_exist() -> None:
    sections = _zh_sections(CONFIG_ZH.read_text(encoding="utf-8"))
    keys = {key for key, _ in schema_keys(GreyWindConfig) if key != "models.providers"}
    missing = []
    for key in sorted(keys):
        table, leaf = key.rsplit(".", 1)  # models.providers[].name -> models.providers[], name
        if f"| `{leaf}` |" not in sections.get(table, ""):
            missing.append(key)
    assert not missing, f"keys docs/CONFIG.zh-CN.md does not explain: {missing}"
    unknown = [
        f"{table}.{leaf}"
        for table, text in sections.items()
        for leaf in re.findall(r"^\| `([a-z_0-9]+)` \|", text, re.MULTILINE)
        if f"{table}.{leaf}" not in keys
    ]
    assert not unknown, f"docs/CONFIG.zh-CN.md explains keys the schema does not have: {unknown}"


def test_the_chinese_docs_link_only_to_files_in_the_repository_and_cite_no_outside_documents() -> None:
    for doc in OPERATOR_DOCS_ZH:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            assert (doc.parent / target).exists(), f"{doc.name} links to a missing file: {target}"
        cited = [m.group(0) for m in FOREIGN.finditer(text)]
        assert not cited, f"{doc.name} cites documents that are not in the repository: {cited}"
        assert "GREYWIND_CONFIG=config/starter.toml" in text
