"""Helpers every domain module uses: names, ownership checks."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from apimcp.control.errors import Invalid, NotFound

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
T = TypeVar("T")


def check_name(name: str, field: str = "name") -> str:
    if not NAME.fullmatch(name):
        raise Invalid("a name is 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit", field=field)
    return name


def get_owned(session: Session, model: type[T], organization_id: str, object_id: str, what: str) -> T:
    """The object with this id in this organization; NotFound otherwise (never "forbidden": ids do not leak)."""
    found: Any = session.get(model, object_id)
    if found is None or found.organization_id != organization_id:
        raise NotFound(f"no {what} {object_id!r}")
    return found  # type: ignore[no-any-return]
