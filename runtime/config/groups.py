"""``[groups]``: the groups the bot lives in.

By default it lives in every group its accounts have joined. ``allow``, when not empty, limits it to
those groups; ``deny`` takes groups out. A group is its number on the platform, the same group for
every account. ``/enable`` and ``/disable`` override both for one chat, and that survives restarts
(:mod:`runtime.groups` holds the rule).
"""

from __future__ import annotations

from pydantic import field_validator, model_validator

from runtime.config._base import Section


def _group_ids(values: object) -> tuple[str, ...]:
    if not isinstance(values, list | tuple):
        raise ValueError("a list of group numbers, like [123456, 654321]")
    ids: list[str] = []
    for value in values:
        text = str(value).strip()
        if isinstance(value, bool) or not isinstance(value, int | str) or not text.isdigit():
            raise ValueError(f"a group is its number, like 123456 (got {value!r})")
        ids.append(text)
    return tuple(dict.fromkeys(ids))


class GroupsConfig(Section):
    # Group numbers; empty: every group.
    allow: tuple[str, ...] = ()
    # Group numbers the bot does not live in.
    deny: tuple[str, ...] = ()

    @field_validator("allow", "deny", mode="before")
    @classmethod
    def _numbers(cls, values: object) -> tuple[str, ...]:
        return _group_ids(values)

    @model_validator(mode="after")
    def _apart(self) -> GroupsConfig:
        both = sorted(set(self.allow) & set(self.deny))
        if both:
            raise ValueError(f"groups.allow and groups.deny both list {', '.join(both)}")
        return self
