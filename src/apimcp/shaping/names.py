"""How a function is named to another process: `module:qualname`, found there by importing its module."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def name_of(function: Callable[..., Any]) -> str:
    return f"{function.__module__}:{function.__qualname__}"


def named(name: str) -> Any:
    """The function (or any module-level object) `name_of` named."""
    module, _, qualname = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found
