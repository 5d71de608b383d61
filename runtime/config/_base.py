"""The base every config section derives from: unknown keys are refused, values are validated."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A config table. Every key has a default; unknown keys are errors naming the key."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
