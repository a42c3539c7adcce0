"""The organization's quotas: how many expositions, gateway groups and gateways it may have, with what it uses."""

from __future__ import annotations

from fastapi import APIRouter

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.api.views import QuotasInput, QuotasView
from apimcp.control.domain import quotas

router = APIRouter(tags=["organizations"])


@router.get("/organization/quotas", response_model=QuotasView)
def show_quotas(caller: UserCaller, session: DbSession) -> QuotasView:
    """Each quota (`limit`, null: no limit) and how many the organization has (`used`)."""
    return QuotasView.model_validate(quotas.shown(session, caller.organization_id))


@router.put("/organization/quotas", response_model=QuotasView)
def set_quotas(body: QuotasInput, caller: UserCaller, session: DbSession) -> QuotasView:
    """Set the quotas given (a whole number, or null for no limit; one left out stays as it is): an admin
    (`roles.REQUIRED`). A quota below what is in use removes nothing; it refuses the next one (429)."""
    values = body.model_dump(exclude_unset=True)
    return QuotasView.model_validate(quotas.set_limits(session, caller.organization_id, values))
