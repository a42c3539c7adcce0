"""Secrets, tokens and organizations."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response, status

from apimcp.control.api.auth import DbSession, Plane, UserCaller, admin
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import (
    IssuedOrganization,
    IssuedToken,
    OrganizationInput,
    OrganizationView,
    PoliciesInput,
    SecretInput,
    SecretRotation,
    SecretView,
    TokenInput,
    TokenView,
    view,
)
from apimcp.control.domain import orgs, policy_checks, secrets, tokens
from apimcp.control.domain.common import get_owned
from apimcp.control.models import Organization, Secret

router = APIRouter()


def secret_view(secret: Secret) -> SecretView:
    return view(SecretView, secret, key_id=secrets.key_id(secret))


@router.post("/secrets", response_model=SecretView, status_code=status.HTTP_201_CREATED, tags=["secrets"])
def create_secret(body: SecretInput, caller: UserCaller, session: DbSession, plane: Plane) -> SecretView:
    secret = secrets.create(
        session,
        plane.keys,
        caller.organization_id,
        body.name,
        body.kind,
        body.fields,
        body.values,
        body.description,
        limits=plane.limits,
    )
    return secret_view(secret)


@router.get("/secrets", response_model=list[SecretView], tags=["secrets"])
def list_secrets(
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    kind: Annotated[str | None, Query(max_length=40, description="only the secrets of this kind")] = None,
) -> list[SecretView]:
    """The organization's secrets by name (never their values); `q` searches name, kind, description and public
    fields."""
    found = (s for s in secrets.listed(session, caller.organization_id) if kind is None or s.kind == kind)
    return [secret_view(s) for s in page.of(found, response, lambda s: (s.name, s.kind, s.description, s.fields))]


@router.get("/secrets/{secret_id}", response_model=SecretView, tags=["secrets"])
def get_secret(secret_id: str, caller: UserCaller, session: DbSession) -> SecretView:
    return secret_view(get_owned(session, Secret, caller.organization_id, secret_id, "secret"))


@router.put("/secrets/{secret_id}/values", response_model=SecretView, tags=["secrets"])
def rotate_secret(
    secret_id: str, body: SecretRotation, caller: UserCaller, session: DbSession, plane: Plane
) -> SecretView:
    """Replace the secret's values (its metadata stays); gateways use the new values at once."""
    return secret_view(
        secrets.rotate(session, plane.keys, caller.organization_id, secret_id, body.values, limits=plane.limits)
    )


@router.delete("/secrets/{secret_id}", status_code=204, tags=["secrets"])
def delete_secret(secret_id: str, caller: UserCaller, session: DbSession) -> None:
    secrets.delete(session, caller.organization_id, secret_id)


@router.post("/tokens", response_model=IssuedToken, status_code=201, tags=["tokens"])
def issue_token(body: TokenInput, caller: UserCaller, session: DbSession) -> IssuedToken:
    """Issue a token (an admin): for a service account (default: one named as the token), or bound to a member
    (`user_id`), when it acts with at most the person's role and dies with the membership."""
    record, value = tokens.issue(
        session,
        caller.organization_id,
        body.name,
        body.kind,
        body.valid_days,
        by=caller,
        user_id=body.user_id,
        service_account=body.service_account,
    )
    return view(IssuedToken, record, token=value)


@router.get("/tokens", response_model=list[TokenView], tags=["tokens"])
def list_tokens(
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    kind: Annotated[
        Literal["admin", "user", "viewer", "gateway"] | None, Query(description="only the tokens of this kind")
    ] = None,
) -> list[TokenView]:
    """The organization's API tokens (never their values); `q` searches name, kind and first characters."""
    found = (t for t in tokens.listed(session, caller.organization_id) if kind is None or t.kind == kind)
    return [TokenView.model_validate(t) for t in page.of(found, response, lambda t: (t.name, t.kind, t.prefix))]


@router.delete("/tokens/{token_id}", response_model=TokenView, tags=["tokens"])
def revoke_token(token_id: str, caller: UserCaller, session: DbSession) -> TokenView:
    """Revoke a token at once (an admin)."""
    return TokenView.model_validate(tokens.revoke(session, caller.organization_id, token_id, by=caller))


@router.get("/organization", response_model=OrganizationView, tags=["organizations"])
def current_organization(caller: UserCaller, session: DbSession) -> OrganizationView:
    return OrganizationView.model_validate(session.get(Organization, caller.organization_id))


@router.put("/organization/policies", response_model=OrganizationView, tags=["organizations"])
def set_policies(body: PoliciesInput, caller: UserCaller, session: DbSession) -> OrganizationView:
    """Replace the rules applied to every call of every plan, before each plan's own (an admin token)."""
    return OrganizationView.model_validate(policy_checks.set_organization_policies(session, caller, body.policies))


@router.post(
    "/organizations", response_model=IssuedOrganization, status_code=201, tags=["organizations"],
    dependencies=[Depends(admin)],
)  # fmt: skip
def create_organization(body: OrganizationInput, session: DbSession) -> IssuedOrganization:
    """Create an organization and its first admin token (the server's admin token required)."""
    organization = orgs.create(session, body.name)
    _, value = tokens.issue(session, organization.id, "owner", tokens.ADMIN)
    return IssuedOrganization.model_validate(
        {**OrganizationView.model_validate(organization).model_dump(), "token": value}
    )
