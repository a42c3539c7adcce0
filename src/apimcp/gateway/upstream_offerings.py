"""The prompts, resources and resource templates of an exposition's MCP servers.

Listed as each server listed them when it was imported (the first member to offer a name or URI wins, as
artifacts do), and got or read through that member's backend, so that what every backend call of a request
gets applies (the plan's credentials, the user's, telemetry). A URI that no server listed is read from the
server whose template matches it, within the same bounds as artifacts' templates (`artifacts.resources`).
Built once per snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from apimcp.artifacts.resources import ResourceUnavailable, first_match
from apimcp.artifacts.uri_templates import UriTemplate
from apimcp.backends.base import Failure, McpResult
from apimcp.catalog.model import McpBinding, McpOfferings, Operation, ToolHints
from apimcp.elicitation.broker import CredentialRefused
from apimcp.federation.offerings import prompt_of, prompt_result, read_result, resource_of, template_of
from apimcp.federation.results import BadResult
from apimcp.gateway.member_backends import MemberBackend
from apimcp.protocol import RequestContext
from apimcp.protocol.errors import INTERNAL_ERROR, McpError, ResourceNotFound
from apimcp.protocol.models import GetPromptResult, Page, Prompt, ReadResourceResult, Resource, ResourceTemplate

log = logging.getLogger("apimcp.gateway")
_OBJECT = {"type": "object"}


class UpstreamOfferings:
    def __init__(self, members: Sequence[tuple[McpOfferings, MemberBackend]]) -> None:
        prompts: dict[str, tuple[Prompt, MemberBackend]] = {}
        resources: dict[str, tuple[Resource, MemberBackend]] = {}
        templates: dict[str, tuple[ResourceTemplate, UriTemplate, MemberBackend]] = {}
        for offerings, member in members:
            for raw in offerings.prompts:
                prompts.setdefault(raw["name"], (prompt_of(raw), member))
            for raw in offerings.resources:
                resources.setdefault(raw["uri"], (resource_of(raw), member))
            for raw in offerings.templates:
                try:
                    compiled = UriTemplate(raw["uriTemplate"])
                except ValueError as exc:  # listed by the server: served as a listing, never matched
                    log.warning("an MCP server's resource template cannot be matched: %s", exc)
                    continue
                templates.setdefault(raw["uriTemplate"], (template_of(raw), compiled, member))
        self._prompts = prompts
        self._resources = resources
        self._templates = templates
        self.prompts_page = Page(items=tuple(prompt for prompt, _ in prompts.values()))
        self.resources_page = Page(items=tuple(resource for resource, _ in resources.values()))
        self.templates_page = Page(items=tuple(template for template, _, _ in templates.values()))

    def __bool__(self) -> bool:
        return bool(self._prompts or self._resources or self._templates)

    def has_prompt(self, name: str) -> bool:
        return name in self._prompts

    async def get_prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        _, member = self._prompts[name]
        try:
            return prompt_result(await _request(ctx, member, McpBinding(name, method="prompts/get"), dict(arguments)))
        except (_Unavailable, BadResult) as exc:
            raise McpError(INTERNAL_ERROR, f"The MCP server could not give the prompt {name}: {exc}") from None

    def offers_resources(self) -> bool:
        return bool(self._resources or self._templates)

    async def subscribe(self, ctx: RequestContext, uri: str) -> bool:
        """Ask the server offering `uri` to tell of its changes (False: no server offers it). The gateway's
        session with the server stays subscribed: clients of the exposition share it."""
        listed = self._resources.get(uri)
        member = listed[1] if listed is not None else self._template_member(uri)
        if member is None:
            return False
        try:
            await _request(ctx, member, McpBinding(uri, method="resources/subscribe"), {})
        except _Unavailable as exc:
            raise McpError(INTERNAL_ERROR, f"The MCP server could not subscribe to {uri}: {exc}") from None
        return True

    async def read(self, ctx: RequestContext, uri: str) -> ReadResourceResult | None:
        """The contents of `uri` from the server that lists it (or whose template matches it); None when no
        server of the exposition offers it."""
        listed = self._resources.get(uri)
        member = listed[1] if listed is not None else self._template_member(uri)
        if member is None:
            return None
        try:
            return read_result(await _request(ctx, member, McpBinding(uri, method="resources/read"), {}))
        except _Unavailable as exc:
            if exc.status in (404, 410):
                raise ResourceNotFound(uri) from None
            raise ResourceUnavailable(f"the MCP server could not read it: {exc}") from None
        except BadResult as exc:
            raise ResourceUnavailable(f"the MCP server's answer is not a resource's contents: {exc}") from None

    def _template_member(self, uri: str) -> MemberBackend | None:
        return first_match(((c, m) for _, c, m in self._templates.values()), uri, len(self._templates))


class _Unavailable(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


async def _request(
    ctx: RequestContext, member: MemberBackend, binding: McpBinding, arguments: dict[str, str]
) -> Mapping[str, object]:
    operation = Operation(
        tool_name=binding.method.replace("/", "_"),
        input_schema=_OBJECT,
        binding=binding,
        hints=ToolHints(read_only=True),
    )
    try:
        result = await member.call(ctx, operation, arguments)
    except CredentialRefused as refused:
        raise _Unavailable(str(refused)) from None
    if isinstance(result, Failure):
        raise _Unavailable(result.message, result.status)
    if not isinstance(result, McpResult):
        raise _Unavailable("it answered something other than an MCP result")
    return result.value
