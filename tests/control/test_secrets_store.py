"""Backend secrets sealed in the database: at rest, rotation, key rotation, validation (SQLite and PostgreSQL)."""

from __future__ import annotations

import secrets as random
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from apimcp.control import changes, setup
from apimcp.control.crypto import KeySet, SecretDecryptionError
from apimcp.control.domain import plans, secrets
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import Secret
from apimcp.control.plane import ControlPlane
from tests.control.factories import dump_all_rows, import_echo, new_org

OLD_KEY = bytes(range(32))
NEW_KEY = bytes(range(50, 82))


def _plaintext() -> str:
    return "plain-" + random.token_hex(16)


def _create(
    plane: ControlPlane,
    organization_id: str,
    name: str = "backend",
    kind: str = "bearer",
    fields: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    keys: KeySet | None = None,
) -> Secret:
    with plane.session() as session:
        return secrets.create(
            session, keys or plane.keys, organization_id, name, kind, fields or {}, values or {"token": _plaintext()}
        )


def _stored(plane: ControlPlane, secret_id: str) -> Secret:
    with plane.session() as session:
        secret = session.get(Secret, secret_id)
        assert secret is not None
        return secret


def test_a_secret_is_encrypted_at_rest(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    password = _plaintext()
    secret = _create(plane, organization_id, kind="basic", fields={"username": "robot"}, values={"password": password})
    with plane.session() as session:
        raw = session.execute(text("SELECT * FROM secrets")).mappings().one()
        everything = dump_all_rows(session)
    assert raw["id"] == secret.id
    assert raw["sealed"].startswith(f"v1:{plane.keys.current_kid}:")
    assert password not in raw["sealed"]
    assert password not in str(dict(raw))
    assert password not in everything
    assert "robot" in everything  # public fields stay readable, so the dump does show row contents
    assert secrets.reveal(plane.keys, _stored(plane, secret.id)) == {"password": password}


def test_public_fields_are_kept_and_normalised(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    api_key = _create(plane, organization_id, "key", "api_key", {"name": "X-Api-Key"}, {"value": "v"})
    oauth = _create(
        plane,
        organization_id,
        "oauth",
        "oauth_client_credentials",
        {"token_url": "https://login.example/token", "client_id": "app", "scopes": "read, write admin"},
        {"client_secret": "cs"},
    )
    assert _stored(plane, api_key.id).fields == {"name": "X-Api-Key", "location": "header"}
    stored = _stored(plane, oauth.id)
    assert stored.fields == {"token_url": "https://login.example/token", "client_id": "app",
                             "scopes": ["read", "write", "admin"]}  # fmt: skip
    assert secrets.reveal(plane.keys, stored) == {"client_secret": "cs"}


def test_a_sealed_value_does_not_open_on_another_row(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    first = _create(plane, organization_id, "first")
    second = _create(plane, organization_id, "second")
    with plane.session() as session:
        session.execute(
            text("UPDATE secrets SET sealed = :sealed WHERE id = :id"), {"sealed": first.sealed, "id": second.id}
        )
    with pytest.raises(SecretDecryptionError):
        secrets.reveal(plane.keys, _stored(plane, second.id))


def test_rotating_a_secret_replaces_its_values_and_is_a_change(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    old, new = _plaintext(), _plaintext()
    secret = _create(plane, organization_id, values={"token": old})
    with plane.session() as session:
        before = changes.latest(session, organization_id)
    with plane.session() as session:
        secrets.rotate(session, plane.keys, organization_id, secret.id, {"token": new})
    stored = _stored(plane, secret.id)
    assert stored.sealed != secret.sealed
    assert secrets.reveal(plane.keys, stored) == {"token": new}
    with plane.session() as session:
        assert changes.latest(session, organization_id) > before
        assert old not in dump_all_rows(session)
        assert new not in dump_all_rows(session)


def test_a_rotation_is_validated_like_a_creation(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    secret = _create(plane, organization_id, values={"token": "kept"})
    with pytest.raises(Invalid) as caught, plane.session() as session:
        secrets.rotate(session, plane.keys, organization_id, secret.id, {"password": "x"})
    assert caught.value.field == "values.password"
    assert secrets.reveal(plane.keys, _stored(plane, secret.id)) == {"token": "kept"}


def test_key_rotation_reseals_every_secret(plane: ControlPlane) -> None:
    old_keys = KeySet([("old", OLD_KEY)])
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    first = _create(plane, acme, values={"token": "one"}, keys=old_keys)
    second = _create(plane, globex, values={"token": "two"}, keys=old_keys)
    assert secrets.key_id(first) == "old"

    rotated = KeySet([("new", NEW_KEY), ("old", OLD_KEY)])
    with plane.session() as session:
        assert secrets.reencrypt_all(session, rotated) == 2
    with plane.session() as session:
        assert secrets.reencrypt_all(session, rotated) == 0  # nothing left under the old key

    new_only = KeySet([("new", NEW_KEY)])
    for secret, value in ((first, "one"), (second, "two")):
        stored = _stored(plane, secret.id)
        assert secrets.key_id(stored) == "new"
        assert stored.sealed != secret.sealed
        assert secrets.reveal(rotated, stored) == {"token": value}
        assert secrets.reveal(new_only, stored) == {"token": value}  # the old key can now be dropped
        with pytest.raises(SecretDecryptionError):
            secrets.reveal(old_keys, stored)


def test_a_key_set_without_the_sealing_key_cannot_open_a_secret(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    secret = _create(plane, organization_id, keys=KeySet([("old", OLD_KEY)]))
    stranger = KeySet([("new", NEW_KEY)])
    with pytest.raises(SecretDecryptionError, match="unknown key id"):
        secrets.reveal(stranger, _stored(plane, secret.id))
    impostor = KeySet([("old", NEW_KEY)])  # the right name on the wrong key
    with pytest.raises(SecretDecryptionError, match="failed authentication"):
        secrets.reveal(impostor, _stored(plane, secret.id))


def test_opening_the_plane_reseals_under_the_newest_key(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_keys = KeySet([("old", OLD_KEY)])
    monkeypatch.setenv(setup.SECRET_KEYS_VARIABLE, old_keys.to_env_value())
    plane = setup.open_plane(tmp_path, database_url)
    try:
        organization_id = new_org(plane, "acme")
        secret = _create(plane, organization_id, values={"token": "t"})
        assert secrets.key_id(secret) == "old"
    finally:
        plane.store.dispose()

    rotated = KeySet([("new", NEW_KEY), ("old", OLD_KEY)])
    monkeypatch.setenv(setup.SECRET_KEYS_VARIABLE, rotated.to_env_value())
    plane = setup.open_plane(tmp_path, database_url)
    try:
        assert plane.keys.kids == ("new", "old")
        stored = _stored(plane, secret.id)
        assert secrets.key_id(stored) == "new"
        assert secrets.reveal(KeySet([("new", NEW_KEY)]), stored) == {"token": "t"}
    finally:
        plane.store.dispose()


INVALID_SECRETS: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("password", {}, {"token": "t"}, "kind"),
    ("bearer", {}, {}, "values.token"),
    ("bearer", {}, {"token": ""}, "values.token"),
    ("bearer", {}, {"token": "t", "extra": "x"}, "values.extra"),
    ("bearer", {"username": "u"}, {"token": "t"}, "fields.username"),
    ("bearer", {}, {"token": 42}, "values.token"),
    ("basic", {}, {"password": "p"}, "fields.username"),
    ("basic", {"username": "u"}, {}, "values.password"),
    ("api_key", {"location": "header"}, {"value": "v"}, "fields.name"),
    ("api_key", {"name": "k", "location": "body"}, {"value": "v"}, "fields.location"),
    ("oauth_client_credentials", {"client_id": "c"}, {"client_secret": "s"}, "fields.token_url"),
    ("oauth_client_credentials", {"token_url": "ftp://x", "client_id": "c"}, {"client_secret": "s"},
     "fields.token_url"),
    ("oauth_client_credentials", {"token_url": "https://x", "client_id": "c", "scopes": [1]},
     {"client_secret": "s"}, "fields.scopes"),
    ("oauth_client_credentials", {"token_url": "https://x", "client_id": "c"}, {}, "values.client_secret"),
]  # fmt: skip


def test_validation_errors_name_the_field(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    for kind, fields, values, field in INVALID_SECRETS:
        with pytest.raises(Invalid) as caught, plane.session() as session:
            secrets.create(session, plane.keys, organization_id, "backend", kind, fields, values)
        assert (caught.value.status, caught.value.field) == (422, field), (kind, fields, values)
    with plane.session() as session:
        assert secrets.listed(session, organization_id) == []


def test_a_secret_name_is_unique_per_organization(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    _create(plane, acme, "backend")
    with pytest.raises(Conflict) as caught:
        _create(plane, acme, "backend")
    assert caught.value.field == "name"
    _create(plane, globex, "backend")
    with plane.session() as session:
        assert [s.name for s in secrets.listed(session, acme)] == ["backend"]
        assert [s.name for s in secrets.listed(session, globex)] == ["backend"]


def test_a_secret_used_by_a_plan_cannot_be_deleted(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    service_id = import_echo(plane, organization_id).service.id
    secret = _create(plane, organization_id)
    with plane.session() as session:
        plan, _ = plans.create(session, organization_id, service_id, "main", {"secret_id": secret.id})
    with pytest.raises(Conflict) as caught, plane.session() as session:
        secrets.delete(session, organization_id, secret.id)
    assert "main" in caught.value.detail
    with pytest.raises(IntegrityError), plane.session() as session:  # the database refuses it too
        session.execute(text("DELETE FROM secrets WHERE id = :id"), {"id": secret.id})
    with plane.session() as session:
        plans.delete(session, organization_id, plan.id)
    with plane.session() as session:
        secrets.delete(session, organization_id, secret.id)
    with plane.session() as session:
        assert secrets.listed(session, organization_id) == []


def test_another_organizations_secret_is_not_found(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    secret = _create(plane, acme, values={"token": "mine"})
    with pytest.raises(NotFound), plane.session() as session:
        secrets.rotate(session, plane.keys, globex, secret.id, {"token": "theirs"})
    with pytest.raises(NotFound), plane.session() as session:
        secrets.delete(session, globex, secret.id)
    assert secrets.reveal(plane.keys, _stored(plane, secret.id)) == {"token": "mine"}


@pytest.mark.parametrize(
    ("kind", "fields", "values", "field"),
    [
        ("bearer", {}, {"token": "abc123\n"}, "values.token"),
        ("api_key", {"name": "X-Key"}, {"value": "k\r\nX-Injected: 1"}, "values.value"),
        ("api_key", {"name": "X-Key", "location": "cookie"}, {"value": "k\x00k"}, "values.value"),
    ],
)
def test_a_secret_value_with_a_line_break_failed_only_at_call_time(
    plane: ControlPlane, kind: str, fields: dict[str, Any], values: dict[str, Any], field: str
) -> None:
    """A token pasted with its newline used to be stored, then every call failed; it is refused where given."""
    organization_id = new_org(plane, "acme")
    with pytest.raises(Invalid) as refused:
        _create(plane, organization_id, kind=kind, fields=fields, values=values)
    assert refused.value.field == field
    assert "control character" in str(refused.value)
    tab = _create(plane, organization_id, name="tabbed", values={"token": "a\tb-is-fine"})
    assert tab.kind == "bearer"
