"""An exposition's discovery report: how well search finds each of its tools, and what each listing mode costs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from apimcp.control.api.auth import DbSession, Plane, UserCaller
from apimcp.control.api.catalog_routes import in_import_pool
from apimcp.control.domain.discovery import served_tools
from apimcp.control.reports import ReportsBusy
from apimcp.findability.report import ReportError, discovery_report
from apimcp.findability.tokens import counter

router = APIRouter()


@router.get("/expositions/{exposition_id}/discovery", response_model=dict[str, Any], tags=["expositions"])
async def discovery(exposition_id: str, caller: UserCaller, session: DbSession, plane: Plane) -> dict[str, Any]:
    """For every tool the exposition serves, queries made from its own texts (title, description, name) and from
    its shape (a paraphrase of its method and path, its rarest words), searched as `search_tools` searches them:
    recall@1, recall@5 and MRR@10 overall and per kind of query, the tools found least and what was found
    instead, the tool pairs search confuses, and what each listing mode (every tool, search, code mode) costs a
    model's context in bytes and o200k tokens. Made on the import workers (a minute for a thousand tools), one
    at a time (503 while another is made, or while an organization this one kept waiting goes first), and kept
    until the plan or the service changes."""

    def make() -> dict[str, Any]:
        tools = served_tools(session, caller.organization_id, exposition_id)

        def report() -> dict[str, Any]:  # made only when none is kept
            return discovery_report(tools.tools, tools.paths, counter())

        return plane.reports.get(caller.organization_id, (exposition_id, tools.version), report)

    try:
        return await in_import_pool(plane, make)
    except ReportsBusy as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "60"}) from None
    except ReportError as exc:
        raise HTTPException(422, str(exc)) from None
