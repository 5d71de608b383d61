"""``[[accounts]]``: several QQ accounts in one process, each layered over the shared defaults.

Each ``[[accounts]]`` table names one account by its QQ number (``id``) and may set, under its own
sub-tables, any key of the sections an account can hold apart (:data:`ACCOUNT_SECTIONS`: its persona,
budgets, attention thresholds, threads, lexicon, scheduling, outbound limit, groups, life)::

    [[accounts]]
    id = 10001
    [accounts.persona]
    name = "小灰"
    [accounts.budget]
    max_per_window = 2

What an account does not set comes from the top-level tables (the shared defaults), which themselves
fall back to the built-in defaults. The layers are *default < account < group*: the group layer is the
per-chat ``/enable`` and ``/disable`` overrides (:mod:`runtime.groups`). :func:`account_config` is the
account's whole configuration; :func:`resolved_values` says of every key where its value came from, as
``/status full`` shows it.

Validation is strict and names the key: an unknown section or key under an account, a bad value (the
account's table checked as the merged section it becomes), an id that is not a QQ number, an account
listed twice. With no ``[[accounts]]`` table the process is one account stack, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

if TYPE_CHECKING:
    from runtime.config.schema import GreyWindConfig

__all__ = [
    "ACCOUNT_OUTBOUND_KEYS",
    "ACCOUNT_SECTIONS",
    "AccountConfig",
    "Origin",
    "ResolvedValue",
    "account_config",
    "account_problems",
    "listed_once",
    "persona_names",
    "resolved_values",
]

#: Of ``[outbound]``, what an account sets apart: its own send rate (retries, timeouts and the
#: restriction circuit's thresholds are the edge's, shared by every account).
ACCOUNT_OUTBOUND_KEYS: tuple[str, ...] = ("max_per_minute", "burst")

#: The sections an account may set apart from the shared defaults (each a top-level table).
ACCOUNT_SECTIONS: tuple[str, ...] = (
    "persona",
    "budget",
    "attention",
    "threads",
    "lexicon",
    "scheduling",
    "outbound",
    "groups",
    "life",
)

Origin = Literal["default", "account", "group"]


class AccountConfig(BaseModel):
    """One ``[[accounts]]`` table: the QQ number and, per section, the keys it sets (validated when
    layered over the shared defaults, see :func:`account_problems`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    persona: dict[str, Any] = Field(default_factory=dict)
    budget: dict[str, Any] = Field(default_factory=dict)
    attention: dict[str, Any] = Field(default_factory=dict)
    threads: dict[str, Any] = Field(default_factory=dict)
    lexicon: dict[str, Any] = Field(default_factory=dict)
    scheduling: dict[str, Any] = Field(default_factory=dict)
    outbound: dict[str, Any] = Field(default_factory=dict)
    groups: dict[str, Any] = Field(default_factory=dict)
    life: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_sections(cls, data: object) -> object:
        if isinstance(data, Mapping):
            other = sorted(str(k) for k in data if k != "id" and k not in ACCOUNT_SECTIONS)
            if other:
                raise ValueError(
                    f"[{', '.join(other)}] cannot be set per account (an account may set: "
                    f"{', '.join(ACCOUNT_SECTIONS)}; everything else is shared)"
                )
        return data

    @field_validator("id", mode="before")
    @classmethod
    def _qq_number(cls, value: object) -> str:
        text = str(value).strip()
        if isinstance(value, bool) or not isinstance(value, int | str) or not text.isdigit():
            raise ValueError("an account is its QQ number, like 10001")
        if text.startswith("0"):
            raise ValueError("a QQ number has no leading zero")
        return text

    def overrides(self) -> dict[str, dict[str, Any]]:
        """Section -> the keys this account sets (the sections it leaves alone are absent)."""
        return {name: getattr(self, name) for name in ACCOUNT_SECTIONS if getattr(self, name)}


def listed_once(accounts: tuple[AccountConfig, ...]) -> tuple[AccountConfig, ...]:
    """``accounts`` when no QQ number is listed twice; else a ValueError naming it."""
    seen: set[str] = set()
    twice: set[str] = set()
    for account in accounts:
        (twice if account.id in seen else seen).add(account.id)
    if twice:
        listed = ", ".join(sorted(twice))
        raise ValueError(f"account {listed} is listed twice; one [[accounts]] table per account")
    return accounts


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = _merge(below, value)
        else:
            merged[key] = value
    return merged


def _layered(config: GreyWindConfig, account: AccountConfig) -> GreyWindConfig:
    update: dict[str, Any] = {"accounts": ()}
    for name, keys in account.overrides().items():
        section = getattr(config, name)
        update[name] = type(section).model_validate(_merge(section.model_dump(), keys))
    return config.model_copy(update=update)


def account_problems(config: GreyWindConfig) -> list[tuple[str, str]]:
    """(dotted key, problem) for every account table that does not layer over ``config``: the keys
    are ``accounts.<id>.<section>.<key>``; empty when all are valid."""
    problems: list[tuple[str, str]] = []
    for account in config.accounts:
        shared = sorted(set(account.outbound) & set(type(config.outbound).model_fields))
        problems.extend(
            (f"accounts.{account.id}.outbound.{key}", f"shared by every account (one sets only {only})")
            for key in shared
            if key not in ACCOUNT_OUTBOUND_KEYS
            for only in [", ".join(ACCOUNT_OUTBOUND_KEYS)]
        )
        for name, keys in account.overrides().items():
            section = getattr(config, name)
            try:
                type(section).model_validate(_merge(section.model_dump(), keys))
            except ValidationError as exc:
                for err in exc.errors():
                    key = ".".join(("accounts", account.id, name, *(str(p) for p in err["loc"])))
                    if err["type"] == "extra_forbidden":
                        problems.append((key, "unknown key"))
                    else:
                        problems.append((key, f"{err['msg']} (got {err.get('input')!r})"))
    return problems


def account_config(config: GreyWindConfig, account: str | None) -> GreyWindConfig:
    """The whole configuration ``account`` runs with: its table over the shared defaults (an account
    without a table, or None: the shared defaults). The result lists no accounts of its own."""
    for entry in config.accounts:
        if entry.id == account:
            return _layered(config, entry)
    return config.model_copy(update={"accounts": ()}) if config.accounts else config


def persona_names(config: GreyWindConfig) -> tuple[str, ...]:
    """Every name the process answers to: the shared persona's and each account's (in order, once)."""
    names = [config.persona.name, *config.persona.aliases]
    for account in config.account_ids():
        persona = account_config(config, account).persona
        names.extend((persona.name, *persona.aliases))
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class ResolvedValue:
    """One key as an account (and chat) sees it, and which layer gave it."""

    key: str  # dotted: "budget.max_per_window", "budget.forced.min_interval_ms"
    value: object
    origin: Origin


def _leaves(prefix: str, data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}"
        if isinstance(value, Mapping):
            out.update(_leaves(dotted, value))
        else:
            out[dotted] = value
    return out


def resolved_values(
    config: GreyWindConfig,
    account: str | None,
    *,
    group: Mapping[str, object] | None = None,
    sections: tuple[str, ...] = ACCOUNT_SECTIONS,
) -> tuple[ResolvedValue, ...]:
    """Every key of ``sections`` as ``account`` sees it, with its origin: ``default`` (the shared
    tables or the built-in defaults), ``account`` (its ``[[accounts]]`` table), ``group`` (``group``:
    dotted key -> the value a chat's own override gives, e.g. ``{"groups.enabled": False}``)."""
    resolved = account_config(config, account)
    own: set[str] = set()
    for entry in config.accounts:
        if entry.id == account:
            for name, keys in entry.overrides().items():
                own.update(_leaves(name, keys))
    values: list[ResolvedValue] = []
    for name in sections:
        for key, value in _leaves(name, getattr(resolved, name).model_dump()).items():
            values.append(ResolvedValue(key, value, "account" if key in own else "default"))
    for key, value in (group or {}).items():
        values.append(ResolvedValue(key, value, "group"))
    return tuple(values)
