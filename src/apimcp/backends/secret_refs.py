"""Secret references: `${env:NAME}` in a secret's value, resolved by the gateway when it calls.

The control plane stores the reference and never sees the value, which stays on the gateway hosts (in their
environment). A value may hold several references and text around them (`Bearer ${env:A}-${env:B}`). Only
the `env` scheme exists; any other, or a variable the gateway does not have, fails the call with a message
naming the reference, never a value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_-]*):([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UnresolvedReference(Exception):
    """A reference the gateway cannot resolve; the message names it."""


def has_reference(value: str) -> bool:
    return "${" in value and _REFERENCE.search(value) is not None


def reference_problem(value: str) -> str | None:
    """Why the references in `value` can never resolve (an unknown scheme, a malformed name), or None."""
    for match in _REFERENCE.finditer(value):
        scheme, name = match.groups()
        if scheme != "env":
            return f"${{{scheme}:…}} is not a secret reference apimcp knows: only ${{env:NAME}} is"
        if not _ENV_NAME.match(name):
            return f"${{env:{name}}} does not name an environment variable"
    return None


def resolve(value: str, environ: Mapping[str, str] | None = None) -> str:
    """`value` with its references replaced by what they name."""
    source = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        scheme, name = match.groups()
        if scheme != "env":
            raise UnresolvedReference(f"${{{scheme}:{name}}} is not a secret reference this gateway resolves")
        found = source.get(name)
        if found is None:
            raise UnresolvedReference(f"the secret refers to ${{env:{name}}}, which is not set on this gateway")
        return found

    return _REFERENCE.sub(replace, value)
