"""What every part of a gateway configuration is built from: strict models, and secrets named by environment
variable."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


def env_refs(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], EnvRef]]:
    """Every `{env: NAME}` in a configuration, with where it is (keys as written: `in`, not `location`)."""
    if isinstance(value, EnvRef):
        yield path, value
    elif isinstance(value, BaseModel):
        for name, info in type(value).model_fields.items():
            if not info.exclude:
                yield from env_refs(getattr(value, name), (*path, info.alias or name))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from env_refs(item, (*path, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from env_refs(item, (*path, index))
