"""Secret references: `${env:NAME}` in a secret's value, resolved by the gateway when it calls.

The control plane stores the reference and never sees the value, which stays on the gateway hosts (in their
environment). A value may hold several references and text around them (`Bearer ${env:A}-${env:B}`). Only
the `env` scheme exists, and only for variables named after the secret's organization,
`APIMCP_SECRET_<organization>__<NAME>`: a gateway may serve several organizations, and none may read the
gateway's own configuration (its token, its keys) or another organization's variables by naming them. In the
organization part, `_`, `-` and `.` are written `_u`, `_d` and `_p`, so that no organization's prefix begins
another's (`acme` -> `APIMCP_SECRET_acme__`, `acme-eu` -> `APIMCP_SECRET_acme_deu__`). Anything else, or a
variable the gateway does not have, fails with a message naming the reference, never a value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_-]*):([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PREFIX = "APIMCP_SECRET_"
_ESCAPES = {"_": "_u", "-": "_d", ".": "_p"}


def prefix_of(organization: str) -> str:
    """What the variables an organization's secrets may name begin with."""
    return PREFIX + "".join(_ESCAPES.get(c, c) for c in organization) + "__"


class UnresolvedReference(Exception):
    """A reference the gateway cannot resolve; the message names it."""


def has_reference(value: str) -> bool:
    return "${" in value and _REFERENCE.search(value) is not None


def reference_problem(value: str, organization: str) -> str | None:
    """Why the references in `value`, a secret of `organization`, can never resolve, or None."""
    for match in _REFERENCE.finditer(value):
        scheme, name = match.groups()
        if scheme != "env":
            return f"${{{scheme}:…}} is not a secret reference apimcp knows: only ${{env:NAME}} is"
        if not _ENV_NAME.fullmatch(name):
            return f"${{env:{name}}} does not name an environment variable"
        prefix = prefix_of(organization)
        if not name.startswith(prefix) or name == prefix:
            return f"${{env:{name}}}: this organization's secrets may name variables called {prefix}…, and only those"
    return None


def resolve(value: str, environ: Mapping[str, str] | None = None) -> str:
    """`value` with its references replaced by what they name."""
    source = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        scheme, name = match.groups()
        if scheme != "env" or not name.startswith(PREFIX):
            raise UnresolvedReference(f"${{{scheme}:{name}}} is not a secret reference this gateway resolves")
        found = source.get(name)
        if found is None:
            raise UnresolvedReference(f"the secret refers to ${{env:{name}}}, which is not set on this gateway")
        return found

    return _REFERENCE.sub(replace, value)
