"""Gateway keys: registered and revoked by admins, listed by anyone of the organization."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import GatewayKeyInput, GatewayKeyView
from apimcp.control.domain import gateway_keys

router = APIRouter(prefix="/gateway-keys", tags=["gateway keys"])


@router.post("", response_model=GatewayKeyView, status_code=status.HTTP_201_CREATED)
def register_gateway_key(body: GatewayKeyInput, caller: UserCaller, session: DbSession) -> GatewayKeyView:
    """Register the public half of a gateway key pair (admin token required); snapshots are sealed to it."""
    return GatewayKeyView.model_validate(gateway_keys.register(session, caller, body.name, body.public_key))


@router.get("", response_model=list[GatewayKeyView])
def list_gateway_keys(
    caller: UserCaller, session: DbSession, page: ListPage, response: Response
) -> list[GatewayKeyView]:
    """The organization's gateway keys, revoked ones too; `q` searches name, fingerprint and public key."""
    found = gateway_keys.listed(session, caller.organization_id)
    listed = page.of(found, response, lambda k: (k.name, k.fingerprint, k.public_key))
    return [GatewayKeyView.model_validate(k) for k in listed]


@router.delete("/{key_id}", response_model=GatewayKeyView)
def revoke_gateway_key(key_id: str, caller: UserCaller, session: DbSession) -> GatewayKeyView:
    """Revoke a gateway key at once (admin token required): gateways holding it get no snapshot any more."""
    return GatewayKeyView.model_validate(gateway_keys.revoke(session, caller, key_id))
