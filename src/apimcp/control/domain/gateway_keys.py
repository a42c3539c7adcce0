"""Gateway keys: the public halves of the key pairs gateways hold; snapshot secrets are sealed to them.

An admin registers a key (the CLI makes the pair and keeps the private half in a
file); a gateway names its key when it asks for a snapshot, and gets one only if
that key is registered in its organization and not revoked. Revoking a key
records a change, so every gateway asks again at once and the one holding it is
refused from then on.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.domain.common import check_name, get_owned
from apimcp.control.domain.tokens import Caller, require_admin
from apimcp.control.errors import Conflict, Forbidden, Invalid
from apimcp.control.models import GatewayKey, utcnow
from apimcp.sealing.keys import GatewayPublicKey
from apimcp.sealing.snapshots import SUITE

HOW_TO_REGISTER = (
    "an admin registers one with `apimcp gateway-key create NAME --out FILE` and the gateway starts with "
    "--key-file FILE"
)


def _public_key(text: str) -> GatewayPublicKey:
    try:
        key = GatewayPublicKey.from_text(text)
        SUITE.encrypt(b"", key.key, info=b"apimcp key check")  # refuses keys no secret can be sealed to
    except ValueError as exc:
        raise Invalid(str(exc) if "base64url" in str(exc) else "not a usable X25519 public key",
                      field="public_key") from None  # fmt: skip
    return key


def register(session: Session, caller: Caller, name: str, public_key: str) -> GatewayKey:
    require_admin(caller, "registering a gateway key")
    check_name(name)
    key = _public_key(public_key)
    same_key = session.scalar(
        select(GatewayKey).where(
            GatewayKey.organization_id == caller.organization_id, GatewayKey.public_key == key.text
        )
    )
    if same_key is not None:
        if same_key.revoked_at is not None:
            raise Conflict("this key was revoked and cannot be registered again: make a new one", field="public_key")
        raise Conflict(f"this key is already registered as {same_key.name!r}", field="public_key")
    if any(k.name == name and k.revoked_at is None for k in listed(session, caller.organization_id)):
        raise Conflict(f"gateway key {name!r} already exists", field="name")
    record = GatewayKey(
        organization_id=caller.organization_id, name=name, public_key=key.text, fingerprint=key.fingerprint
    )
    session.add(record)
    session.flush()
    return record


def listed(session: Session, organization_id: str) -> list[GatewayKey]:
    return list(
        session.scalars(select(GatewayKey).where(GatewayKey.organization_id == organization_id).order_by(GatewayKey.id))
    )


def revoke(session: Session, caller: Caller, key_id: str) -> GatewayKey:
    """Revoke a key at once: gateways holding it get no snapshot any more (what they already hold, they keep)."""
    require_admin(caller, "revoking a gateway key")
    record = get_owned(session, GatewayKey, caller.organization_id, key_id, "gateway key")
    if record.revoked_at is None:
        record.revoked_at = utcnow()
        changes.record(session, caller.organization_id, "gateway_key", record.id)
    return record


def recipient(session: Session, organization_id: str, organization: str, public_key: str | None) -> GatewayPublicKey:
    """The key to seal a gateway's snapshot to: the one it names, if registered and not revoked here."""
    if not public_key:
        raise Forbidden(
            f"a gateway must name its key (public_key) to receive snapshots: {HOW_TO_REGISTER}", field="public_key"
        )
    try:
        key = GatewayPublicKey.from_text(public_key)
    except ValueError as exc:
        raise Invalid(str(exc), field="public_key") from None
    record = session.scalar(
        select(GatewayKey).where(GatewayKey.organization_id == organization_id, GatewayKey.public_key == key.text)
    )
    if record is None:
        raise Forbidden(
            f"gateway key {key.fingerprint} is not registered in organization {organization}: {HOW_TO_REGISTER}",
            field="public_key",
        )
    if record.revoked_at is not None:
        raise Forbidden(
            f"gateway key {record.name!r} ({key.fingerprint}) was revoked; {HOW_TO_REGISTER}", field="public_key"
        )
    return key
