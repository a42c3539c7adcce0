"""Opening a control plane: its database, its secret keys, its first token.

Keys come from `APIMCP_SECRET_KEYS` (`kid:base64key,...`, newest first) when set,
else from a key file in the data directory, created on first start (mode 0600).
At every start, secrets sealed under an older key are sealed again under the
newest one, so retiring a key is: add a new one first, restart, then drop it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from apimcp.control.crypto import KeySet
from apimcp.control.domain import orgs, secrets
from apimcp.control.import_pool import ImportCapacity, ImportPool
from apimcp.control.limits import ApiLimits
from apimcp.control.plane import ControlPlane
from apimcp.control.store import open_store, sqlite_url
from apimcp.importers.openapi import SchemaLimits
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import FetchLimits
from apimcp.safety.yaml_loading import YamlLimits
from apimcp.sso.settings import from_environment

log = logging.getLogger("apimcp.control")
SECRET_KEYS_VARIABLE = "APIMCP_SECRET_KEYS"
KEY_FILE = "secret-keys"
BOOTSTRAP_TOKEN_FILE = "bootstrap-token"


def load_keys(data_dir: Path) -> KeySet:
    configured = os.environ.get(SECRET_KEYS_VARIABLE)
    if configured:
        try:
            return KeySet.from_env_value(configured)
        except ValueError as exc:
            raise ValueError(f"{SECRET_KEYS_VARIABLE}: {exc}") from None
    return KeySet.load_or_create(data_dir / KEY_FILE)


def open_plane(
    data_dir: Path,
    database_url: str | None = None,
    limits: ApiLimits | None = None,
    *,
    fetch_policy: AddressPolicy | None = None,
    fetch_limits: FetchLimits | None = None,
    yaml_limits: YamlLimits | None = None,
    schema_limits: SchemaLimits | None = None,
    import_capacity: ImportCapacity | None = None,
) -> ControlPlane:
    """The control plane on `database_url` (default: SQLite in `data_dir`), schema migrated; imports by URL
    reach what `fetch_policy` allows (default: public addresses only); people sign in through the OpenID provider
    `APIMCP_SSO_ISSUER` names, when it does (`sso.settings`)."""
    sso = from_environment(os.environ)
    keys = load_keys(data_dir)
    store = open_store(database_url or sqlite_url(data_dir))
    with store.session() as session:
        resealed = secrets.reencrypt_all(session, keys)
    if resealed:
        log.info("sealed %d secrets again under key %s", resealed, keys.current_kid)
    return ControlPlane(
        store,
        keys,
        limits=limits or ApiLimits(),
        fetch_policy=fetch_policy or AddressPolicy(),
        fetch_limits=fetch_limits or FetchLimits(),
        yaml_limits=yaml_limits or YamlLimits(),
        schema_limits=schema_limits or SchemaLimits(),
        imports=ImportPool(import_capacity or ImportCapacity()),
        sso=sso,
    )


def bootstrap(plane: ControlPlane, data_dir: Path) -> tuple[str, Path] | None:
    """On a control plane without tokens: the `default` organization and a first admin token.

    The token is written to a file only its owner can read, never to the log; returns it and the file.
    """
    with plane.session() as session:
        created = orgs.bootstrap(session)
    if created is None:
        return None
    _, token = created
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / BOOTSTRAP_TOKEN_FILE
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    return token, path
