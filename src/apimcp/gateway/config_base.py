"""What every part of a gateway configuration is built from: strict models, and secrets named by environment
variable."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ConfigError(Exception):
    """A configuration that cannot be used; the message names file, line and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvRef(_Strict):
    env: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="the environment variable holding the value")

    @model_validator(mode="before")
    @classmethod
    def _not_literal(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError("secrets are not written in the file: name an environment variable, {env: NAME}")
        return value

    def value(self) -> str:
        value = os.environ.get(self.env)
        if value is None:
            raise ConfigError(f"the environment variable {self.env} is not set")
        return value
