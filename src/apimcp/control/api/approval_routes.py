"""Approvals by an administrator: gateways submit the calls a policy rule sends to an admin (`approver: admin`) and
read what was decided; admins list the requests and approve or refuse them (`control.domain.approvals`)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from apimcp.control.api.auth import DbSession, GatewayCaller, UserCaller
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import Input, Timestamp
from apimcp.control.domain import approvals, people
from apimcp.control.domain.tokens import Caller

router = APIRouter(tags=["approvals"])

Status = Literal["pending", "approved", "refused", "used"]
StatusFilter = Literal["pending", "approved", "refused", "used", "all"]
_LENGTHS = approvals.MAX_LENGTHS


class ApprovalSubmission(Input):
    """A call waiting for an admin, as the gateway asks about it."""

    exposition: str = Field(min_length=1, max_length=_LENGTHS["exposition"], description="the exposition's id")
    tool: str = Field(min_length=1, max_length=_LENGTHS["tool"])
    digest: str = Field(min_length=1, max_length=_LENGTHS["digest"], description="the digest of the call's arguments")
    caller: str = Field(
        min_length=1, max_length=_LENGTHS["caller"], description="who made the call (issuer and subject, or anonymous)"
    )
    question: str = Field(max_length=_LENGTHS["question"], description="what the admin is asked")
    lifetime: float = Field(
        strict=True,
        ge=approvals.MIN_LIFETIME,
        le=approvals.MAX_LIFETIME,
        description="seconds a new request waits for a decision",
    )


class ApprovalAnswer(BaseModel):
    id: str
    status: Literal["pending", "approved", "refused"]
    expires_in: float = Field(description="seconds the request has left")


class ApprovalView(BaseModel):
    id: str
    exposition: str = Field(description="the exposition's id")
    exposition_name: str | None
    tool: str
    caller: str
    question: str
    status: Status
    expired: bool
    created_at: Timestamp
    expires_at: Timestamp
    decided_by: str | None = Field(description="the admin who decided: their e-mail, or a service account's token")
    decided_at: Timestamp | None


@router.post("/gateway/approvals", response_model=ApprovalAnswer)
def submit_approval(body: ApprovalSubmission, caller: GatewayCaller, session: DbSession) -> ApprovalAnswer:
    """What an admin decided of a call: pending (a new request is made the first time), approved (once: the approval
    is used by this answer) or refused; the exposition must be the gateway's organization's."""
    answer = approvals.submit(session, caller.organization_id, body.model_dump())
    return ApprovalAnswer.model_validate(answer)


def _text(item: ApprovalView) -> list[object]:
    return [item.id, item.exposition, item.exposition_name, item.tool, item.caller, item.question, item.decided_by]


@router.get("/approvals", response_model=list[ApprovalView])
def list_approvals(
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    status: Annotated[
        StatusFilter, Query(description="pending (the default: those still waiting), approved, refused, used, or all")
    ] = "pending",
) -> list[ApprovalView]:
    """The organization's approval requests with this status, newest first (`q` searches tool, caller, question,
    exposition and who decided)."""
    found = approvals.listed(session, caller.organization_id, None if status == "all" else status)
    return page.of([ApprovalView.model_validate(item) for item in found], response, _text)


def _decided(approval_id: str, approve: bool, caller: Caller, session: Session) -> ApprovalView:
    decided = approvals.decide(session, caller.organization_id, approval_id, approve, people.who(caller))
    return ApprovalView.model_validate(decided)


@router.post("/approvals/{approval_id}/approve", response_model=ApprovalView)
def approve(approval_id: str, caller: UserCaller, session: DbSession) -> ApprovalView:
    """Approve a pending request (an admin): the call it stands for goes through once, when the caller makes it
    again before the request expires."""
    return _decided(approval_id, True, caller, session)


@router.post("/approvals/{approval_id}/refuse", response_model=ApprovalView)
def refuse(approval_id: str, caller: UserCaller, session: DbSession) -> ApprovalView:
    """Refuse a pending request (an admin): the call is refused until the request expires."""
    return _decided(approval_id, False, caller, session)
