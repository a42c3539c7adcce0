"""People: who is calling (`/me`), an organization's members, and invitations."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from apimcp.control.api.auth import DbSession, PersonOrNone, UserCaller
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import (
    AcceptedView,
    AcceptInput,
    InvitationInput,
    InvitationView,
    IssuedInvitation,
    MembershipView,
    MemberView,
    MeView,
    RoleInput,
    UserView,
    view,
)
from apimcp.control.domain import people
from apimcp.control.models import ApiToken, User

router = APIRouter(tags=["people"])


def member_view(found: people.Member) -> MemberView:
    return MemberView(
        user=UserView.model_validate(found.user), role=found.membership.role, since=found.membership.created_at
    )


@router.get("/me", response_model=MeView)
def me(caller: UserCaller, session: DbSession) -> MeView:
    """Who this token stands for, where it acts and with which role, and the person's organizations."""
    token = session.get(ApiToken, caller.token_id)
    user = session.get(User, caller.user_id) if caller.user_id is not None else None
    joined = people.memberships(session, user.id) if user is not None else []
    return MeView(
        user=UserView.model_validate(user) if user is not None else None,
        service_account=token.service_account if token is not None else None,
        token_id=caller.token_id,
        token_kind=caller.kind,
        organization_id=caller.organization_id,
        organization=caller.organization,
        role=caller.role,
        memberships=[MembershipView(organization_id=o.id, organization=o.name, role=m.role) for m, o in joined],
    )


@router.get("/members", response_model=list[MemberView])
def list_members(caller: UserCaller, session: DbSession, page: ListPage, response: Response) -> list[MemberView]:
    """The organization's people and their roles (a page of them; `q` searches e-mail, name and role)."""
    found = (member_view(m) for m in people.members(session, caller.organization_id))
    return page.of(found, response, lambda m: (m.user.email, m.user.display_name, m.role))


@router.patch("/members/{user_id}", response_model=MemberView)
def change_role(user_id: str, body: RoleInput, caller: UserCaller, session: DbSession) -> MemberView:
    """Give a member another role: their tokens act with it at once."""
    return member_view(people.set_role(session, caller.organization_id, user_id, body.role))


@router.delete("/members/{user_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_member(user_id: str, caller: UserCaller, session: DbSession) -> None:
    """End a membership: the person's tokens of this organization are revoked at once."""
    people.remove(session, caller.organization_id, user_id)


@router.post("/invitations", response_model=IssuedInvitation, status_code=status.HTTP_201_CREATED)
def invite(body: InvitationInput, caller: UserCaller, session: DbSession) -> IssuedInvitation:
    """Invite an e-mail address with a role; the answer holds the one-time code, shown this once."""
    invitation, code = people.invite(
        session, caller.organization_id, body.email, body.role, by=caller, valid_days=body.valid_days
    )
    return view(IssuedInvitation, invitation, code=code)


@router.get("/invitations", response_model=list[InvitationView])
def list_invitations(
    caller: UserCaller, session: DbSession, page: ListPage, response: Response
) -> list[InvitationView]:
    """The invitations not accepted yet, never their codes (a page of them; `q` searches e-mail and role)."""
    found = people.pending(session, caller.organization_id)
    return [InvitationView.model_validate(i) for i in page.of(found, response, lambda i: (i.email, i.role))]


@router.delete("/invitations/{invitation_id}", status_code=status.HTTP_204_NO_CONTENT)
def withdraw_invitation(invitation_id: str, caller: UserCaller, session: DbSession) -> None:
    """Withdraw an invitation not accepted yet: its code no longer works."""
    people.withdraw(session, caller.organization_id, invitation_id)


@router.post("/invitations/accept", response_model=AcceptedView)
def accept_invitation(body: AcceptInput, signed_in: PersonOrNone, session: DbSession) -> AcceptedView:
    """Join the organization an invitation names, with its role, once. A signed-in person (a token bound to them,
    whose e-mail is the invitation's) joins as themselves; the code alone makes a new person of the invitation's
    e-mail and answers their first token, shown this once."""
    accepted = people.accept(session, body.code, signed_in, body.display_name)
    token = people.signed_in(session, accepted.user, accepted.organization.id) if accepted.new_person else None
    return AcceptedView(
        user=UserView.model_validate(accepted.user),
        organization_id=accepted.organization.id,
        organization=accepted.organization.name,
        role=accepted.membership.role,
        token=token,
    )
