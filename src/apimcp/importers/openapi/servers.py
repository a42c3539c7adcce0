"""`servers` entries (document, path or operation level) as catalog ServerTemplates."""

from __future__ import annotations

from typing import Any

from apimcp.catalog.model import ServerTemplate, ServerVariable


def parse_servers(raw: Any) -> tuple[ServerTemplate, ...]:
    if not isinstance(raw, list):
        return ()
    servers = []
    for server in raw:
        if not isinstance(server, dict) or not isinstance(server.get("url"), str):
            continue
        variables = {}
        raw_variables = server.get("variables")
        for name, variable in (raw_variables if isinstance(raw_variables, dict) else {}).items():
            if isinstance(variable, dict) and variable.get("default") is not None:
                enum = tuple(str(v) for v in variable.get("enum", ()) if v is not None)
                variables[name] = ServerVariable(default=str(variable["default"]), enum=enum)
        servers.append(ServerTemplate(url=server["url"], variables=variables))
    return tuple(servers)
