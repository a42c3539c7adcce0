"""Services and operations, as importers produce them and backends call them.

Nothing here does I/O or knows a wire protocol. An Operation carries what an
MCP client sees (tool name, schemas, hints) and a binding: everything a backend
needs to turn tool arguments into a call, decided once at import time so that
the request path only looks things up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ParameterLocation = Literal["path", "query", "header", "cookie"]
ParameterStyle = Literal["matrix", "label", "simple", "form", "spaceDelimited", "pipeDelimited", "deepObject"]
BodyKind = Literal["json", "form", "multipart", "text", "binary"]
ServiceKind = Literal["rest", "graphql", "grpc", "mcp"]
GraphQLOperationType = Literal["query", "mutation"]


@dataclass(frozen=True, slots=True)
class ServerVariable:
    default: str
    enum: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServerTemplate:
    url: str
    variables: Mapping[str, ServerVariable] = field(default_factory=dict)

    def resolve(self, values: Mapping[str, str] | None = None) -> str:
        url = self.url
        for name, variable in self.variables.items():
            url = url.replace("{" + name + "}", (values or {}).get(name, variable.default))
        return url


@dataclass(frozen=True, slots=True)
class ParameterBinding:
    """Where one tool argument goes in the HTTP request, and how it is serialised."""

    argument: str
    """The tool argument's name (the parameter's name, unless renamed to avoid a collision)."""
    name: str
    """The parameter's name on the wire."""
    location: ParameterLocation
    style: ParameterStyle
    explode: bool
    allow_reserved: bool = False
    content_type: str | None = None
    """Set when the parameter is described by `content` (its value is serialised as that media type)."""


@dataclass(frozen=True, slots=True)
class BodyBinding:
    """How tool arguments become the request body."""

    media_type: str
    kind: BodyKind
    argument: str | None
    """The single argument holding the whole body, or None when body fields are tool arguments."""
    fields: tuple[str, ...] = ()
    """Tool arguments that are body fields (when `argument` is None)."""
    extra_fields: bool = False
    """Whether arguments not otherwise bound also go into the body (additionalProperties)."""
    binary_fields: frozenset[str] = frozenset()
    """Multipart or form fields carrying file content (base64 or data: URL arguments)."""
    field_media_types: Mapping[str, str] = field(default_factory=dict)
    """Declared media types of multipart parts (OpenAPI `encoding.<field>.contentType`)."""
    required: bool = False


@dataclass(frozen=True, slots=True)
class RestBinding:
    method: str
    """Upper-case HTTP method."""
    path: str
    """The path template, e.g. /pets/{petId}."""
    parameters: tuple[ParameterBinding, ...] = ()
    body: BodyBinding | None = None
    accept: tuple[str, ...] = ()
    """Response media types the operation declares, preferred first."""
    servers: tuple[ServerTemplate, ...] = ()
    """Path- or operation-level servers, which replace the service's servers for this operation."""


@dataclass(frozen=True, slots=True)
class GraphQLBinding:
    """One root field of a GraphQL schema, called with a document generated at import time.

    Tool arguments are the field's arguments and are always sent as variables of
    that document, never written into its text.
    """

    operation_type: GraphQLOperationType
    root_field: str
    """The root field, which is also the key of its value in the response's `data`."""
    document: str
    operation_name: str
    variables: Mapping[str, str] = field(default_factory=dict)
    """GraphQL type of each variable (`String!`, `[ID!]`...), by argument name."""


@dataclass(frozen=True, slots=True)
class GrpcBinding:
    """One method of a gRPC service; message types are named in the service's descriptor set."""

    service: str
    """The service's full name, `package.Service`."""
    method: str
    input_type: str
    """Full name of the request message."""
    output_type: str
    client_streaming: bool = False
    server_streaming: bool = False

    @property
    def path(self) -> str:
        """The method as it appears on the wire: `/package.Service/Method`."""
        return f"/{self.service}/{self.method}"


@dataclass(frozen=True, slots=True)
class McpBinding:
    """One request to an upstream MCP server: a tool called by its upstream name (the gateway may serve it
    renamed); the gateway also reads the server's prompts (`prompts/get`) and resources (`resources/read`) so."""

    name: str
    """The tool's or prompt's name upstream, or the resource's URI."""
    digest: str = ""
    """sha256 of the definition as the upstream listed it when imported (`federation.definitions`)."""
    method: str = "tools/call"


@dataclass(frozen=True, slots=True)
class McpOfferings:
    """What an MCP server offers besides tools, as it listed them when imported (each checked and bounded by
    `federation.definitions`): served as they are, read through the server."""

    prompts: tuple[Mapping[str, Any], ...] = ()
    resources: tuple[Mapping[str, Any], ...] = ()
    templates: tuple[Mapping[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.prompts or self.resources or self.templates)


Binding = RestBinding | GraphQLBinding | GrpcBinding | McpBinding


@dataclass(frozen=True, slots=True)
class ToolHints:
    """MCP tool annotations derived from the operation."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = True


@dataclass(frozen=True, slots=True)
class Operation:
    tool_name: str
    input_schema: Mapping[str, Any]
    binding: Binding
    title: str | None = None
    description: str | None = None
    output_schema: Mapping[str, Any] | None = None
    hints: ToolHints = field(default_factory=ToolHints)
    operation_id: str | None = None
    tags: tuple[str, ...] = ()
    deprecated: bool = False

    @property
    def signature(self) -> str:
        """How users may refer to an operation besides its tool name: `METHOD /path` for REST,
        `query field` or `mutation field` for GraphQL, `package.Service/Method` for gRPC, `tool name` for an
        upstream MCP server's tool."""
        binding = self.binding
        if isinstance(binding, RestBinding):
            return f"{binding.method} {binding.path}"
        if isinstance(binding, GraphQLBinding):
            return f"{binding.operation_type} {binding.root_field}"
        if isinstance(binding, McpBinding):
            return f"tool {binding.name}" if binding.method == "tools/call" else f"{binding.method} {binding.name}"
        return f"{binding.service}/{binding.method}"


@dataclass(frozen=True, slots=True)
class DescriptionWarning:
    """Something an importer repaired or left out because the description is invalid or says more than
    apimcp can carry, told to whoever imports it (never shown to MCP clients)."""

    location: str
    """Where in the description: a JSON pointer (`/paths/~1pets/get/parameters/0/schema/pattern`),
    preceded by the document's location and `#` when the problem lies in another document."""
    problem: str
    """What is wrong and what was done about it."""
    operation: str | None = None
    """The operation concerned (`GET /pets`); for a shared definition, the first operation that uses it."""

    def __str__(self) -> str:
        where = f"{self.operation}: {self.location}" if self.operation else self.location
        return f"{where}: {self.problem}"


@dataclass(frozen=True, slots=True)
class Service:
    name: str
    version: str
    operations: tuple[Operation, ...]
    description: str | None = None
    servers: tuple[ServerTemplate, ...] = ()
    source: str | None = None
    """Where the description came from (path or URL), for messages."""
    kind: ServiceKind = "rest"
    """Which backend calls the operations (every binding is of the matching type)."""
    descriptors: bytes | None = None
    """For gRPC: a serialized `google.protobuf.FileDescriptorSet` holding every message type the
    operations name, from which the gateway builds its message classes."""
    warnings: tuple[DescriptionWarning, ...] = ()
    """What the importer repaired or left out, for the person importing the description."""
    offerings: McpOfferings = field(default_factory=McpOfferings)
    """An MCP server's prompts, resources and resource templates (nothing for other kinds)."""

    def operation(self, tool_name: str) -> Operation | None:
        return next((op for op in self.operations if op.tool_name == tool_name), None)
