"""The role each REST route requires, in one table, checked by one dependency (`auth.user`).

Every route under /api/v1 is declared here (a test walks the application's routes to keep it so); a route missing
from the table is refused to everyone. `viewer` routes read, `editor` routes change what an organization serves,
`admin` routes hand out access (tokens, gateway keys, members, invitations) or decide where secrets go and what
every plan enforces. Beyond a route's role, some changes need an admin wherever they are made (attaching secrets
to a plan, `domain.plans.check_secret_use`): those checks stay with the change.

Paths are as routers declare them, without the /api/v1 prefix.
"""

from __future__ import annotations

from starlette.requests import Request

from apimcp.control.domain.tokens import ADMIN, EDITOR, VIEWER
from apimcp.control.errors import Forbidden

GATEWAY = "gateway"
"""A gateway token (`auth.gateway`): the /gateway/* routes only."""
OPERATOR = "operator"
"""The server's admin token, $APIMCP_ADMIN_TOKEN (`auth.admin`): organizations."""
INVITED = "invitation"
"""An invitation's code, with or without a person's token (`auth.person`)."""
SIGNING_IN = "signing-in"
"""Anyone, before they have a token: the steps of single sign-on (`auth.signing_in`)."""

_HISTORY = {
    **{("GET", f"/{kind}/{{object_id}}/{tail}"): VIEWER
       for kind in ("services", "artifacts", "plans", "expositions", "secrets", "templates")
       for tail in ("versions", "versions/{number}", "diff")},
    **{("POST", f"/{kind}/{{object_id}}/versions/{{number}}/restore"): EDITOR for kind in ("plans", "expositions")},
}  # fmt: skip

REQUIRED: dict[tuple[str, str], str] = {
    # services, their operations and artifacts
    ("POST", "/services"): EDITOR,
    ("GET", "/services"): VIEWER,
    ("GET", "/services/{service_id}"): VIEWER,
    ("DELETE", "/services/{service_id}"): EDITOR,
    ("GET", "/services/{service_id}/operations"): VIEWER,
    ("GET", "/services/{service_id}/changes"): VIEWER,
    ("POST", "/services/{service_id}/changes/accept"): ADMIN,
    ("DELETE", "/services/{service_id}/changes"): ADMIN,
    ("GET", "/services/{service_id}/artifacts"): VIEWER,
    ("POST", "/services/{service_id}/artifacts"): EDITOR,
    ("POST", "/services/{service_id}/artifacts/from-url"): EDITOR,
    ("DELETE", "/artifacts/{artifact_id}"): EDITOR,
    ("GET", "/artifact-schemas/{kind}"): VIEWER,
    # plans
    ("POST", "/plans"): EDITOR,
    ("POST", "/plans/preview"): EDITOR,
    ("GET", "/plans"): VIEWER,
    ("GET", "/plans/{plan_id}"): VIEWER,
    ("PATCH", "/plans/{plan_id}"): EDITOR,
    ("POST", "/plans/{plan_id}/policy-test"): EDITOR,
    ("POST", "/plans/{plan_id}/api-key"): EDITOR,
    ("POST", "/plans/{plan_id}/duplicate"): EDITOR,
    ("DELETE", "/plans/{plan_id}"): EDITOR,
    # gateway groups, gateways, expositions
    ("POST", "/gateway-groups"): EDITOR,
    ("GET", "/gateway-groups"): VIEWER,
    ("GET", "/gateway-groups/{group_id}"): VIEWER,
    ("PATCH", "/gateway-groups/{group_id}"): EDITOR,
    ("DELETE", "/gateway-groups/{group_id}"): EDITOR,
    ("GET", "/gateways"): VIEWER,
    ("POST", "/expositions"): EDITOR,
    ("GET", "/expositions"): VIEWER,
    ("GET", "/expositions/{exposition_id}"): VIEWER,
    ("PATCH", "/expositions/{exposition_id}"): EDITOR,
    ("POST", "/expositions/{exposition_id}/duplicate"): EDITOR,
    ("DELETE", "/expositions/{exposition_id}"): EDITOR,
    ("GET", "/expositions/{exposition_id}/discovery"): VIEWER,
    ("GET", "/export"): VIEWER,
    # secrets (their values are never answered)
    ("POST", "/secrets"): EDITOR,
    ("GET", "/secrets"): VIEWER,
    ("GET", "/secrets/{secret_id}"): VIEWER,
    ("PUT", "/secrets/{secret_id}/values"): EDITOR,
    ("DELETE", "/secrets/{secret_id}"): EDITOR,
    # access
    ("POST", "/tokens"): ADMIN,
    ("GET", "/tokens"): VIEWER,
    ("DELETE", "/tokens/{token_id}"): ADMIN,
    ("POST", "/gateway-keys"): ADMIN,
    ("GET", "/gateway-keys"): VIEWER,
    ("DELETE", "/gateway-keys/{key_id}"): ADMIN,
    ("GET", "/organization"): VIEWER,
    ("PUT", "/organization/policies"): ADMIN,
    ("POST", "/organizations"): OPERATOR,
    ("GET", "/organization/quotas"): VIEWER,
    ("PUT", "/organization/quotas"): ADMIN,
    # plan templates
    ("POST", "/templates"): EDITOR,
    ("GET", "/templates"): VIEWER,
    ("GET", "/templates/{template_id}"): VIEWER,
    ("PATCH", "/templates/{template_id}"): EDITOR,
    ("DELETE", "/templates/{template_id}"): EDITOR,
    # people
    ("GET", "/me"): VIEWER,
    ("GET", "/members"): VIEWER,
    ("PATCH", "/members/{user_id}"): ADMIN,
    ("DELETE", "/members/{user_id}"): ADMIN,
    ("POST", "/invitations"): ADMIN,
    ("GET", "/invitations"): VIEWER,
    ("DELETE", "/invitations/{invitation_id}"): ADMIN,
    ("POST", "/invitations/accept"): INVITED,
    # single sign-on
    ("GET", "/sso"): SIGNING_IN,
    ("GET", "/sso/start"): SIGNING_IN,
    ("GET", "/sso/callback"): SIGNING_IN,
    ("POST", "/sso/session"): SIGNING_IN,
    # what gateways report and fetch
    ("POST", "/gateway/snapshot"): GATEWAY,
    ("GET", "/gateway/changes"): GATEWAY,
    ("POST", "/gateway/audit"): GATEWAY,
    ("POST", "/gateway/upstream-changed"): GATEWAY,
    ("POST", "/gateway/upstreams"): GATEWAY,
    ("POST", "/gateway/traffic"): GATEWAY,
    ("POST", "/gateway/approvals"): GATEWAY,
    # what the organization's traffic, audit trail and history say
    ("GET", "/audit"): VIEWER,
    ("GET", "/traffic"): VIEWER,
    ("GET", "/history"): VIEWER,
    **_HISTORY,
    # calls a policy rule sends to an administrator
    ("GET", "/approvals"): VIEWER,
    ("POST", "/approvals/{approval_id}/approve"): ADMIN,
    ("POST", "/approvals/{approval_id}/refuse"): ADMIN,
}


def route_key(request: Request) -> tuple[str, str]:
    """The matched route's method and declared path (as `REQUIRED` keys them)."""
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    return request.method, path if isinstance(path, str) else request.url.path


def required(request: Request) -> str:
    """The role the request's route requires; Forbidden when it declares none (so nothing is open by mistake)."""
    method, path = route_key(request)
    needed = REQUIRED.get((method, path))
    if needed is None:
        raise Forbidden(f"{method} {path} declares no role: no one may call it")
    return needed
