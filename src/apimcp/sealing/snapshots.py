"""The secrets of a snapshot, sealed to a gateway key with HPKE (RFC 9180), and opened by the gateway.

Secrets live in three places: the `values` of each credential object of a member
(`credentials` is one object or a list of them), the member's `backend_tls`, and the
`values` of the exposition's introspection client (`inbound.introspection`, sealed
under its first member's plan). Each is replaced by ``{"sealed": "hpke1.<fingerprint>.<data>"}``,
where data is HPKE's encapsulated key followed by the ciphertext of the JSON it
replaces (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, base mode), in
unpadded base64url. HPKE's `info` binds each ciphertext to its place: the
organization, the exposition, the plan and the path within the member, so a
sealed value moved elsewhere does not open. Sealing draws a fresh key each time:
sealed values differ between snapshots even when the secrets did not change.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke

from apimcp.sealing.keys import GatewayKey, GatewayPublicKey

SUITE = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.AES_256_GCM)
VERSION = "hpke1"
SEALED = "sealed"


class SealError(ValueError):
    """A sealed secret that cannot be opened (wrong key, altered, moved, or no key at all); it names the place,
    never the value."""


def is_sealed(value: object) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get(SEALED), str)


def _info(organization: str, exposition_id: str, plan: str, path: str) -> bytes:
    return "\x00".join(("apimcp snapshot secret", VERSION, organization, exposition_id, plan, path)).encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


Transform = Callable[[str, str, Any], Any]
"""What to do with the secrets at one place: (plan, path within the member, value) -> new value."""


def _with_secrets(exposition: Mapping[str, Any], transform: Transform) -> dict[str, Any]:
    """A copy of `exposition` whose secret places went through `transform`."""
    changed = {**exposition, "members": [_member_with(member, transform) for member in exposition["members"]]}
    inbound = exposition.get("inbound")
    introspection = inbound.get("introspection") if isinstance(inbound, Mapping) else None
    if isinstance(inbound, Mapping) and isinstance(introspection, Mapping) and "values" in introspection:
        members = exposition["members"]
        plan = str(members[0].get("plan", "")) if members else ""
        values = transform(plan, "inbound/introspection/values", introspection["values"])
        changed["inbound"] = {**inbound, "introspection": {**introspection, "values": values}}
    return changed


def _member_with(member: Mapping[str, Any], transform: Transform) -> dict[str, Any]:
    plan = str(member.get("plan", ""))
    changed = dict(member)
    credentials = member.get("credentials")
    if isinstance(credentials, list):
        changed["credentials"] = [
            _credential_with(credential, plan, f"credentials/{index}", transform)
            for index, credential in enumerate(credentials)
        ]
    elif credentials is not None:
        changed["credentials"] = _credential_with(credentials, plan, "credentials", transform)
    if member.get("backend_tls"):
        changed["backend_tls"] = transform(plan, "backend_tls", member["backend_tls"])
    return changed


def _credential_with(credential: Any, plan: str, path: str, transform: Transform) -> Any:
    if not isinstance(credential, Mapping) or "values" not in credential:
        return credential
    return {**credential, "values": transform(plan, f"{path}/values", credential["values"])}


def seal_exposition(exposition: Mapping[str, Any], key: GatewayPublicKey) -> dict[str, Any]:
    """A copy of `exposition` whose secrets only the holder of `key`'s private half can read."""

    def seal(plan: str, path: str, value: Any) -> dict[str, str]:
        info = _info(exposition["organization"], exposition["id"], plan, path)
        data = SUITE.encrypt(orjson.dumps(value), key.key, info=info)
        return {SEALED: f"{VERSION}.{key.fingerprint}.{_b64(data)}"}

    return _with_secrets(exposition, seal)


def has_sealed(exposition: Mapping[str, Any]) -> bool:
    found = False

    def look(plan: str, path: str, value: Any) -> Any:
        nonlocal found
        found = found or is_sealed(value)
        return value

    _with_secrets(exposition, look)
    return found


def open_exposition(exposition: Mapping[str, Any], key: GatewayKey | None) -> Mapping[str, Any]:
    """`exposition` with its sealed secrets opened by `key` (as is when nothing in it is sealed).

    SealError names the exposition and the place when a sealed value does not open.
    """
    if not has_sealed(exposition):
        return exposition

    def open_(plan: str, path: str, value: Any) -> Any:
        if not is_sealed(value):
            return value
        where = f"exposition {exposition['id']} ({path} of plan {plan})"
        if key is None:
            raise SealError(f"{where} is sealed and this gateway holds no key to open it")
        version, _, rest = value[SEALED].partition(".")
        fingerprint, _, data = rest.partition(".")
        if version != VERSION or not data:
            raise SealError(f"{where}: not a sealed value this gateway reads (expected {VERSION})")
        if fingerprint != key.public.fingerprint:
            raise SealError(f"{where} is sealed to key {fingerprint}; this gateway holds key {key.public.fingerprint}")
        info = _info(exposition["organization"], exposition["id"], plan, path)
        try:
            ciphertext = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
            plain = SUITE.decrypt(ciphertext, key.private_key, info=info)
        except (InvalidTag, ValueError, binascii.Error):
            raise SealError(f"{where} does not open: it was altered or sealed for another place") from None
        opened = orjson.loads(plain)
        if not isinstance(opened, dict):
            raise SealError(f"{where} opens to something other than an object")
        return opened

    return _with_secrets(exposition, open_)
