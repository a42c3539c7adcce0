"""API and gateway tokens: shown once, kept as SHA-256 hashes, refused when expired, revoked or misused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from apimcp.control.domain import tokens
from apimcp.control.errors import Invalid, NotFound, Unauthorized
from apimcp.control.models import ApiToken, utcnow
from apimcp.control.plane import ControlPlane
from tests.control.factories import dump_all_rows, new_org, sha256


def _utc(moment: datetime | None) -> datetime:
    """SQLite hands datetimes back naive; they are UTC."""
    assert moment is not None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _issue(plane: ControlPlane, organization_id: str, kind: str = "user", **kwargs: int) -> tuple[ApiToken, str]:
    with plane.session() as session:
        return tokens.issue(session, organization_id, f"{kind}-token", kind, **kwargs)


def _refusal(plane: ControlPlane, value: str, kinds: tuple[str, ...] = ("user",)) -> Unauthorized:
    with pytest.raises(Unauthorized) as caught, plane.session() as session:
        tokens.authenticate(session, value, kinds)
    assert caught.value.status == 401
    return caught.value


def test_only_the_hash_of_a_token_is_stored(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id)
    assert value.startswith("apimcp_user_")
    assert len(value) > 40
    with plane.session() as session:
        rows = session.execute(text("SELECT * FROM api_tokens")).mappings().all()
        everything = dump_all_rows(session)
    assert len(rows) == 1
    row = rows[0]
    assert row["id"] == record.id
    assert row["token_hash"] == sha256(value.encode())
    assert row["prefix"] == value[:16]
    assert row["kind"] == "user"
    assert row["name"] == "user-token"
    assert all(value not in str(column) for column in row.values())
    assert value not in everything
    assert value[16:] not in everything  # not even the random part past the shown prefix


def test_each_token_has_its_own_value(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    (first, one), (second, two) = _issue(plane, organization_id), _issue(plane, organization_id)
    assert one != two
    assert first.token_hash != second.token_hash


def test_a_valid_token_authenticates_as_its_organization(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id)
    assert record.last_used_at is None
    with plane.session() as session:
        caller = tokens.authenticate(session, value)
    assert caller == tokens.Caller(organization_id, "acme", record.id, "user")
    with plane.session() as session:
        used = session.get(ApiToken, record.id)
        assert used is not None
        assert used.last_used_at is not None


def test_last_use_is_recorded_coarsely(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id)
    recent = (utcnow() - timedelta(seconds=10)).replace(microsecond=0)
    with plane.session() as session:
        row = session.get(ApiToken, record.id)
        assert row is not None
        row.last_used_at = recent
    with plane.session() as session:
        tokens.authenticate(session, value)
    with plane.session() as session:
        row = session.get(ApiToken, record.id)
        assert row is not None
        assert _utc(row.last_used_at) == recent
        row.last_used_at = recent - timedelta(minutes=5)
    with plane.session() as session:
        tokens.authenticate(session, value)
    with plane.session() as session:
        row = session.get(ApiToken, record.id)
        assert row is not None
        assert _utc(row.last_used_at) > recent


def test_an_unknown_token_is_refused(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    _, value = _issue(plane, organization_id)
    assert "unknown" in _refusal(plane, value + "x").detail
    assert "unknown" in _refusal(plane, "").detail


def test_an_expired_token_is_refused(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id, valid_days=1)
    assert record.expires_at is not None
    assert timedelta(hours=23) < record.expires_at - utcnow() <= timedelta(days=1)
    with plane.session() as session:
        assert tokens.authenticate(session, value).token_id == record.id
    with plane.session() as session:
        row = session.get(ApiToken, record.id)
        assert row is not None
        row.expires_at = utcnow() - timedelta(seconds=1)
    assert "expired" in _refusal(plane, value).detail


def test_a_token_without_expiry_stays_valid(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id)
    assert record.expires_at is None
    with plane.session() as session:
        assert tokens.authenticate(session, value).token_id == record.id


def test_a_revoked_token_is_refused(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id)
    with plane.session() as session:
        revoked = tokens.revoke(session, organization_id, record.id)
    assert revoked.revoked_at is not None
    first_revocation = revoked.revoked_at
    assert "revoked" in _refusal(plane, value).detail
    with plane.session() as session:  # revoking again keeps the first revocation time
        assert _utc(tokens.revoke(session, organization_id, record.id).revoked_at) == first_revocation


def test_a_gateway_token_is_refused_on_the_user_path(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    record, value = _issue(plane, organization_id, kind="gateway")
    assert value.startswith("apimcp_gateway_")
    assert "gateway token cannot be used" in _refusal(plane, value).detail
    with plane.session() as session:
        caller = tokens.authenticate(session, value, ("gateway",))
    assert (caller.kind, caller.token_id, caller.organization_id) == ("gateway", record.id, organization_id)


def test_a_user_token_is_refused_on_the_gateway_path(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    _, value = _issue(plane, organization_id)
    assert "user token cannot be used" in _refusal(plane, value, ("gateway",)).detail


def test_tokens_are_scoped_to_their_organization(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    acme_token, acme_value = _issue(plane, acme)
    globex_token, globex_value = _issue(plane, globex)
    with plane.session() as session:
        assert tokens.authenticate(session, acme_value).organization == "acme"
        assert tokens.authenticate(session, globex_value).organization == "globex"
        assert [t.id for t in tokens.listed(session, acme)] == [acme_token.id]
        assert [t.id for t in tokens.listed(session, globex)] == [globex_token.id]
    with pytest.raises(NotFound), plane.session() as session:
        tokens.revoke(session, globex, acme_token.id)
    with plane.session() as session:  # the failed revocation changed nothing
        assert tokens.authenticate(session, acme_value).token_id == acme_token.id


def test_invalid_token_requests_are_refused(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    cases: list[tuple[str, str, int | None, str]] = [
        ("t", "root", None, "kind"),
        ("  ", "user", None, "name"),
        ("t", "user", 0, "valid_days"),
        ("t", "user", 3651, "valid_days"),
    ]
    for name, kind, valid_days, field in cases:
        with pytest.raises(Invalid) as caught, plane.session() as session:
            tokens.issue(session, organization_id, name, kind, valid_days)
        assert caught.value.field == field, (name, kind, valid_days)
    with plane.session() as session:
        assert tokens.listed(session, organization_id) == []
        tokens.issue(session, organization_id, "longest", "user", 3650)
