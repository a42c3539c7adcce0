"""Backend secrets: named, typed, sealed with AES-GCM, and never shown again once stored.

Each kind has public fields (kept in clear, shown by the API) and secret values
(sealed, bound to their row so a sealed value copied elsewhere does not open).
Only snapshot building opens them, to hand gateways what they call backends with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.backends.credentials import ApiKey, Basic, Bearer, Credentials, header_problem, name_problem, place
from apimcp.backends.secret_refs import has_reference, reference_problem
from apimcp.backends.tls import TlsSettings, client_context
from apimcp.control import changes
from apimcp.control.crypto import KeySet, token_key_id
from apimcp.control.domain.common import check_name, get_owned
from apimcp.control.errors import Conflict, Invalid
from apimcp.control.ids import new_id
from apimcp.control.limits import ApiLimits
from apimcp.control.models import Organization, Plan, PlanSecret, PlanTemplate, Secret
from apimcp.control.secret_kinds import KINDS, LOCATIONS


def _associated(organization_id: str, secret_id: str) -> bytes:
    return f"org:{organization_id}/secret:{secret_id}".encode()


def _seal(keys: KeySet, organization_id: str, secret_id: str, values: Mapping[str, str]) -> bytes:
    return keys.encrypt_text(orjson.dumps(values).decode(), associated_data=_associated(organization_id, secret_id))


def _check_sizes(kind: str, fields: Mapping[str, Any], values: Mapping[str, Any], limits: ApiLimits) -> None:
    """Every text of a secret within its limit: PEM texts for tls secrets, token-like values for the others."""
    limit = limits.max_pem_bytes if kind == "tls" else limits.max_secret_value_bytes
    for where, given in (("fields", fields), ("values", values)):
        for name, value in given.items():
            texts = value if isinstance(value, list) else [value]
            size = sum(len(text.encode()) for text in texts if isinstance(text, str))
            if size > limit:
                what = "a PEM text" if kind == "tls" else "a secret value"
                raise Invalid(f"{where}.{name} has {size} bytes; {what} may have at most {limit}",
                              field=f"{where}.{name}")  # fmt: skip


def _check(
    kind: str, fields: Mapping[str, Any], values: Mapping[str, Any], limits: ApiLimits, organization: str
) -> tuple[dict[str, Any], dict[str, str]]:
    if kind not in KINDS:
        raise Invalid(f"a secret kind is one of {', '.join(KINDS)}", field="kind")
    _check_sizes(kind, fields, values, limits)
    public, secret = KINDS[kind]
    for given, allowed, where in ((fields, public, "fields"), (values, secret, "values")):
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise Invalid(f"{kind} secrets have no {', '.join(unknown)}", field=f"{where}.{unknown[0]}")
        for name, required in allowed.items():
            if required and not given.get(name):
                raise Invalid(f"{kind} secrets need {name}", field=f"{where}.{name}")
    _check_shapes(fields)
    clean_fields = dict(fields)
    if kind == "user_oauth":
        _check_user_oauth(clean_fields, values)
    if kind == "api_key":
        clean_fields.setdefault("location", "header")
        if clean_fields["location"] not in LOCATIONS:
            raise Invalid(f"an API key goes in one of {', '.join(LOCATIONS)}", field="fields.location")
        _check_api_key_name(clean_fields)
    if "scopes" in public:
        scopes = clean_fields.get("scopes", [])
        if isinstance(scopes, str):
            scopes = scopes.replace(",", " ").split()
        if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
            raise Invalid("scopes are a list of strings", field="fields.scopes")
        clean_fields["scopes"] = scopes
    for url_field in ("token_url", "authorization_url", "url"):
        given_url = clean_fields.get(url_field) if url_field in public else None
        if given_url is not None and not str(given_url).startswith(("https://", "http://")):
            raise Invalid(f"{url_field} must be an http(s) URL", field=f"fields.{url_field}")
    if "header" in public and clean_fields.get("header") is not None:
        problem = name_problem(str(clean_fields["header"]), "header")
        if problem is not None:
            raise Invalid(problem, field="fields.header")
    if kind == "user_token" and not _SCHEME.fullmatch(str(clean_fields.get("scheme", ""))):
        raise Invalid("the scheme is a word such as Bearer, or empty for the value alone", field="fields.scheme")
    if kind == "tls":
        _check_tls(clean_fields, values)
    for name, value in values.items():
        if not isinstance(value, str):
            raise Invalid("secret values are strings", field=f"values.{name}")
        problem = reference_problem(value, organization)
        if problem is not None:
            raise Invalid(problem, field=f"values.{name}")
        problem = header_problem(value) if kind in _SENT_AS_IS else None
        if problem is not None:
            raise Invalid(f"{name} cannot be sent as is in a header: {problem} (pasted with it?)",
                          field=f"values.{name}")  # fmt: skip
    return clean_fields, {k: str(v) for k, v in values.items()}


_SCHEME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{0,40}")
_SENT_AS_IS = ("bearer", "api_key")
"""Kinds whose values travel verbatim in a header (basic and OAuth client credentials are encoded first)."""


def _check_shapes(fields: Mapping[str, Any]) -> None:
    """Public fields are single values (texts, numbers, booleans), and `scopes` a list of texts: a field holding a
    list or an object could be nested deeper than its JSON can be written back."""
    for name, value in fields.items():
        if name == "scopes" and isinstance(value, list):
            continue  # its items are checked with the scopes
        if isinstance(value, list | dict):
            raise Invalid(f"fields.{name} is a single value (a text), not a list or an object", field=f"fields.{name}")


def _check_user_oauth(fields: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    discover = fields.get("discover", False)
    if not isinstance(discover, bool):
        raise Invalid("discover is true or false", field="fields.discover")
    if discover:
        for name in ("authorization_url", "token_url", "resource"):
            if fields.get(name):
                raise Invalid(f"{name} is the MCP server's own when discover is true", field=f"fields.{name}")
        if values.get("client_secret"):  # the token endpoint is whichever the server names: no secret goes there
            raise Invalid("a discovered authorization server gets no client_secret", field="values.client_secret")
        return
    for name in ("authorization_url", "token_url", "client_id"):
        if not fields.get(name):
            raise Invalid(f"user_oauth secrets need {name}, or discover: true (MCP services)", field=f"fields.{name}")


def _check_api_key_name(fields: Mapping[str, Any]) -> None:
    name = fields.get("name")
    if not isinstance(name, str):
        raise Invalid("an API key's name is a string", field="fields.name")
    problem = name_problem(name, fields.get("location", "header"))
    if problem is not None:
        raise Invalid(problem, field="fields.name")


def _check_tls(fields: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    if not fields.get("ca") and not values.get("certificate"):
        raise Invalid("tls secrets need a ca, a certificate (with its private_key), or both", field="fields.ca")
    if bool(values.get("certificate")) != bool(values.get("private_key")):
        raise Invalid("a client certificate needs its private_key, and a private_key its certificate",
                      field="values.private_key" if values.get("certificate") else "values.certificate")  # fmt: skip
    for where, given in (("fields", fields), ("values", values)):
        for name, value in given.items():
            if value and (not isinstance(value, str) or "-----BEGIN " not in value):
                raise Invalid(f"{name} must be PEM text (-----BEGIN ...)", field=f"{where}.{name}")
    ca, certificate, key = fields.get("ca"), values.get("certificate"), values.get("private_key")
    try:  # what a gateway will do with them, so that a bad certificate is refused here, not there
        client_context(TlsSettings(ca.encode() if ca else None, certificate.encode() if certificate else None,
                                   key.encode() if key else None))  # fmt: skip
    except ValueError as exc:
        raise Invalid(str(exc), field="fields.ca" if "CA" in str(exc) else "values.certificate") from exc


def create(
    session: Session,
    keys: KeySet,
    organization_id: str,
    name: str,
    kind: str,
    fields: Mapping[str, Any],
    values: Mapping[str, Any],
    description: str | None = None,
    limits: ApiLimits | None = None,
) -> Secret:
    check_name(name)
    if session.scalar(select(Secret).where(Secret.organization_id == organization_id, Secret.name == name)):
        raise Conflict(f"secret {name!r} already exists", field="name")
    organization = _organization_name(session, organization_id)
    clean_fields, clean_values = _check(kind, fields, values, limits or ApiLimits(), organization)
    secret_id = new_id()
    sealed = _seal(keys, organization_id, secret_id, clean_values)
    secret = Secret(
        id=secret_id,
        organization_id=organization_id,
        name=name,
        kind=kind,
        description=description,
        fields=clean_fields,
        sealed=sealed.decode("ascii"),
    )
    session.add(secret)
    session.flush()
    return secret


def rotate(
    session: Session,
    keys: KeySet,
    organization_id: str,
    secret_id: str,
    values: Mapping[str, Any],
    limits: ApiLimits | None = None,
) -> Secret:
    """Replace a secret's values (e.g. a new token); plans using it pick it up on their next snapshot."""
    secret = get_owned(session, Secret, organization_id, secret_id, "secret")
    organization = _organization_name(session, organization_id)
    _, clean_values = _check(secret.kind, secret.fields, values, limits or ApiLimits(), organization)
    sealed = _seal(keys, organization_id, secret.id, clean_values)
    secret.sealed = sealed.decode("ascii")
    session.flush()  # sets updated_at, so that the answer shows what a read will
    changes.record(session, organization_id, "secret", secret.id)
    return secret


def _organization_name(session: Session, organization_id: str) -> str:
    organization = session.get(Organization, organization_id)
    return organization.name if organization is not None else ""


def reveal(keys: KeySet, secret: Secret) -> dict[str, str]:
    """The secret values; for snapshot building only."""
    plain = keys.decrypt_text(secret.sealed, associated_data=_associated(secret.organization_id, secret.id))
    values: dict[str, str] = orjson.loads(plain)
    return values


def import_headers(session: Session, keys: KeySet, organization_id: str, secret_id: str) -> dict[str, str]:
    """The request headers a secret stands for, to read a description behind authentication."""
    secret = get_owned(session, Secret, organization_id, secret_id, "secret")
    values = reveal(keys, secret)
    if any(has_reference(value) for value in values.values()):
        raise Invalid(
            f"secret {secret.name!r} refers to the environment of the gateways (${{env:…}}): the control plane "
            "does not resolve it, so it cannot read a description with it",
            field="secret_id",
        )
    credentials: Credentials | None = None
    if secret.kind == "bearer":
        credentials = Bearer(values["token"])
    elif secret.kind == "basic":
        credentials = Basic(secret.fields["username"], values["password"])
    elif secret.kind == "api_key" and secret.fields.get("location", "header") != "query":
        credentials = ApiKey(secret.fields["name"], values["value"], secret.fields.get("location", "header"))
    if credentials is not None:
        return place(credentials).headers_with_cookies()
    raise Invalid(
        f"a {secret.kind} secret{' in the query' if secret.kind == 'api_key' else ''} cannot be used to read a "
        "description: use a bearer, basic, or header or cookie api_key secret",
        field="secret_id",
    )


def key_id(secret: Secret) -> str:
    return token_key_id(secret.sealed)


def reencrypt_all(session: Session, keys: KeySet) -> int:
    """Seal every secret under the current key (after adding a key); returns how many changed."""
    count = 0
    for secret in session.scalars(select(Secret)):
        if keys.needs_reencryption(secret.sealed):
            associated = _associated(secret.organization_id, secret.id)
            secret.sealed = keys.reencrypt(secret.sealed, associated_data=associated).decode("ascii")
            count += 1
    return count


def delete(session: Session, organization_id: str, secret_id: str) -> None:
    secret = get_owned(session, Secret, organization_id, secret_id, "secret")
    backend = select(PlanSecret.plan_id).where(PlanSecret.secret_id == secret.id)
    users = set(session.scalars(select(Plan.name).where(Plan.id.in_(backend) | (Plan.tls_secret_id == secret.id))))
    # an introspection secret is named in a plan's inbound settings (JSON), or a template's settings
    owned = session.scalars(select(Plan).where(Plan.organization_id == organization_id))
    users |= {plan.name for plan in owned if (plan.inbound or {}).get("introspection_secret_id") == secret.id}
    if users:
        raise Conflict(f"secret {secret.name!r} is used by plans {', '.join(sorted(users))}")
    templates = session.scalars(select(PlanTemplate).where(PlanTemplate.organization_id == organization_id))
    presets = sorted(t.name for t in templates if (t.settings or {}).get("introspection_secret_id") == secret.id)
    if presets:
        raise Conflict(f"secret {secret.name!r} is used by plan templates {', '.join(presets)}")
    session.delete(secret)


def listed(session: Session, organization_id: str) -> list[Secret]:
    return list(session.scalars(select(Secret).where(Secret.organization_id == organization_id).order_by(Secret.name)))
