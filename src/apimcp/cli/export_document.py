"""An organization's export (`GET /api/v1/export`) as the files of a gateway configuration `apimcp apply` takes.

`apimcp.yaml` names one service per plan (the plan's name is the key, as `apimcp apply` names plans after keys),
with the description and artifact files it refers to under `services/<service>/`. The file is written so that
applying it to an empty organization and exporting that gives the same bytes back: every name is written as
`apimcp apply` would make it again (exposition names in lower case, per-user credentials without the `<key>-`
apply puts before them, a plan's credentials in the order apply makes them), defaults are left out, and each
secret value is named by an environment variable derived from the key, never written. Plan templates are written
under `templates:`, as the control plane keeps their settings. What a configuration file
cannot say (a TLS secret, an exposition on another gateway group, an inbound API key...) is left out and said in
`notes`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from apimcp.auth.settings import parse_oauth
from apimcp.ratelimit.policy import SCOPES, RateLimit, RateLimitError, parse_rate, parse_rate_limits

CONFIG_FILE = "apimcp.yaml"
_KEY_LENGTH = 64  # a configuration's service and exposition names
_STATIC = ("bearer", "basic", "api_key")
_PER_USER = ("user_token", "user_oauth", "oauth_token_exchange")
_EXPOSITION_DEFAULTS: dict[str, Any] = {
    "output_schemas": True, "cache": {}, "audit": False, "rate_limit": None, "tasks": None, "tool_search": False,
    "code_mode": "off", "policies": None, "guardrails": None, "resilience": None,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Variable:
    """An environment variable the configuration names for a secret value."""

    name: str
    secret: str
    """The secret it stands for, as the exported organization names it."""
    value: str
    """Which of its values (token, password, value, client_secret)."""


@dataclass(slots=True)
class Export:
    files: dict[str, bytes] = field(default_factory=dict)
    """Path relative to the export's folder (`/`-separated, inside it) -> content."""
    variables: list[Variable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What the configuration leaves out, one sentence each."""


def _safe(text: str, fallback: str, lower: bool = False) -> str:
    """A file or key name of letters, digits, '.', '_' and '-', starting with a letter or digit (never '..')."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text.lower() if lower else text)
    slug = re.sub(r"^[^A-Za-z0-9]+", "", slug)[:_KEY_LENGTH]
    return slug or fallback


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate, number = name[: _KEY_LENGTH - len(suffix)] + suffix, number + 1
    taken.add(candidate)
    return candidate


class _Dumper(yaml.SafeDumper):
    """Every value written where it is used: no anchors and aliases (the expositions of one plan repeat its
    settings), which configuration files limit."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _rate_limits(stored: Mapping[str, Any]) -> dict[str, str | dict[str, Any]]:
    """A plan's limits as a configuration writes them (`100/s`, `20/s, burst=40`), or as a mapping when the text
    would not read back the same (a period of 0.5 s)."""
    limits = parse_rate_limits(stored)
    written: dict[str, str | dict[str, Any]] = {}
    for scope in SCOPES:
        limit = getattr(limits, scope)
        if limit is not None:
            written[scope] = str(limit) if _reads_back(str(limit), limit) else limit.as_json()
    return written


def _reads_back(text: str, limit: RateLimit) -> bool:
    try:
        return parse_rate(text) == limit
    except RateLimitError:
        return False


def _oauth(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A plan's OAuth settings without what the defaults give again."""
    defaults = parse_oauth({"issuers": stored["issuers"]}).public()
    return {key: value for key, value in stored.items() if key == "issuers" or value != defaults.get(key)}


def exposition_name(name: str) -> str:
    """An exposition's name as `apimcp apply` makes it from a configuration's key."""
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower())


class _Builder:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.out = Export()
        self.secrets = {s["id"]: s for s in data["secrets"]}
        self.variables: set[str] = set()

    def note(self, text: str) -> None:
        self.out.notes.append(text)

    def env(self, secret: Mapping[str, Any], value: str, *parts: str) -> dict[str, str]:
        """`{env: NAME}` for one value of a secret, NAME made of `parts` (unique in the export)."""
        base = re.sub(r"[^A-Z0-9]+", "_", "_".join(parts).upper()).strip("_") or "SECRET"
        if base[0].isdigit():
            base = f"S_{base}"
        name, number = base, 2
        while name in self.variables:
            name, number = f"{base}_{number}", number + 1
        self.variables.add(name)
        self.out.variables.append(Variable(name, secret["name"], value))
        return {"env": name}

    # --- services -----------------------------------------------------------------------------------------

    def service_files(self, service: Mapping[str, Any], folder: str) -> tuple[str | None, dict[str, str]]:
        """Write the description and artifacts of a service; its description's path, and its artifacts' paths by
        name."""
        description = None
        if service["format"] is not None:
            description = f"{folder}/description.{service['format']}"
            self.out.files[description] = base64.b64decode(service["content"])
        paths: dict[str, str] = {}
        taken: set[str] = set()
        for artifact in service["artifacts"]:
            name = _unique(_safe(artifact["name"], "artifact"), taken)
            paths[artifact["name"]] = f"{folder}/artifacts/{name}"
            self.out.files[paths[artifact["name"]]] = base64.b64decode(artifact["content"])
        return description, paths

    def source(self, service: Mapping[str, Any], description: str | None) -> dict[str, Any]:
        kind = service["kind"]
        if description is not None:
            return {kind: description}
        if "***" in (service["source"] or ""):  # the control plane shows a URL's query values masked
            self.note(f"service {service['name']!r}: its URL's query values are masked ({service['source']}): "
                      "write them in before applying")  # fmt: skip
        if kind == "graphql":
            return {"graphql": service["source"], "introspect": True}
        return {kind: service["source"]}  # an MCP server's URL, a gRPC server asked by reflection

    def credentials(self, key: str, plan: Mapping[str, Any]) -> list[dict[str, Any]]:
        listed = [self.secrets[i] for i in plan["secret_ids"] if i in self.secrets]
        static = [self.static(key, s) for s in listed if s["kind"] in _STATIC]  # in the order apply makes them
        clients = [self.client(key, s) for s in listed if s["kind"] == "oauth_client_credentials"]
        per_user = [self.per_user(key, s) for s in listed if s["kind"] in _PER_USER]
        return static + clients + per_user

    def client(self, key: str, secret: Mapping[str, Any]) -> dict[str, Any]:
        fields = secret["fields"]
        written: dict[str, Any] = {"type": "oauth_client_credentials", "token_url": fields["token_url"],
                                   "client_id": fields["client_id"]}  # fmt: skip
        if fields.get("scopes"):
            written["scopes"] = fields["scopes"]
        if fields.get("audience"):
            written["audience"] = fields["audience"]
        written["client_secret"] = self.env(secret, "client_secret", key, "client_secret")
        return written

    def static(self, key: str, secret: Mapping[str, Any]) -> dict[str, Any]:
        fields = secret["fields"]
        if secret["kind"] == "bearer":
            return {"type": "bearer", "token": self.env(secret, "token", key, "token")}
        if secret["kind"] == "basic":
            return {"type": "basic", "username": fields["username"],
                    "password": self.env(secret, "password", key, "password")}  # fmt: skip
        written: dict[str, Any] = {"type": "api_key", "name": fields["name"]}
        if fields.get("location", "header") != "header":
            written["in"] = fields["location"]
        written["value"] = self.env(secret, "value", key, fields["name"])
        return written

    def per_user(self, key: str, secret: Mapping[str, Any]) -> dict[str, Any]:
        fields, kind = secret["fields"], secret["kind"]
        name = secret["name"].removeprefix(f"{key}-") or secret["name"]  # apply names it `<key>-<name>`
        written: dict[str, Any] = {"type": "token_exchange" if kind == "oauth_token_exchange" else kind, "name": name}
        if kind == "user_token":
            keys: tuple[str, ...] = ("header", "scheme", "message")
            defaults: dict[str, Any] = {"header": "Authorization", "scheme": "Bearer"}
        elif kind == "user_oauth":
            keys = ("authorization_url", "token_url", "client_id", "scopes", "resource", "header", "message")
            defaults = {"header": "Authorization", "scopes": []}
        else:
            keys = ("token_url", "client_id", "audience", "resource", "scopes", "header")
            defaults = {"header": "Authorization", "scopes": []}
            dropped = [f for f in ("subject_token_type", "requested_token_type") if fields.get(f)]
            if dropped:
                self.note(f"secret {secret['name']!r}: {', '.join(dropped)} cannot be written in a configuration "
                          "file and is left out")  # fmt: skip
        for field_name in keys:
            value = fields.get(field_name)
            if value not in (None, "") and value != defaults.get(field_name):
                written[field_name] = value
        if "client_secret" in secret["values"]:
            written["client_secret"] = self.env(secret, "client_secret", key, name, "client_secret")
        return written

    def service(self, key: str, plan: Mapping[str, Any], service: Mapping[str, Any], files: tuple[str | None,
                dict[str, str]]) -> dict[str, Any]:  # fmt: skip
        description, artifact_paths = files
        written = {**self.source(service, description), "name": service["name"], "version": service["version"]}
        if service.get("grpc_service"):
            written["service"] = service["grpc_service"]
        if plan["backend_endpoint"] is not None:
            written["backend"] = plan["backend_endpoint"]
        if plan["fallback_endpoints"]:
            written["fallbacks"] = list(plan["fallback_endpoints"])
        if plan.get("read_only_tools") is not None:
            written["read_only_tools"] = list(plan["read_only_tools"])
        if plan["backend_timeout_ms"] != 30_000:
            seconds = plan["backend_timeout_ms"] / 1000
            written["timeout"] = int(seconds) if seconds.is_integer() else seconds
        for name in ("tool_prefix", "include", "exclude"):
            if plan[name]:
                written[name] = plan[name]
        credentials = self.credentials(key, plan)
        if credentials:
            written["credentials"] = credentials
        if plan["header_policy"] is not None:
            written["header_policy"] = plan["header_policy"]
        chosen = set(plan["artifacts"] or artifact_paths)  # none selected: all of them
        if chosen:  # in the service's order of attachment, which decides what wins between artifacts
            written["artifacts"] = [path for name, path in artifact_paths.items() if name in chosen]
        if plan["tls_secret_id"]:
            self.note(f"plan {plan['name']!r}: its TLS secret is left out (a configuration file names certificate "
                      "files, and secret values are never exported): attach it again after applying")  # fmt: skip
        for name, what in (("description", "its description"), ("trust_changes", "trusting its MCP server's changes")):
            if plan[name]:
                self.note(f"plan {plan['name']!r}: {what} cannot be written in a configuration file and is left out")
        return written

    # --- expositions --------------------------------------------------------------------------------------

    def settings(self, key: str, plan: Mapping[str, Any]) -> dict[str, Any]:
        """What a plan sets that a configuration writes on each of its expositions (defaults left out)."""
        written = {name: plan[name] for name, default in _EXPOSITION_DEFAULTS.items() if plan[name] != default}
        if "rate_limit" in written:
            written["rate_limit"] = _rate_limits(written["rate_limit"])
        inbound = plan["inbound"]
        if inbound.get("mode") == "oauth":
            auth: dict[str, Any] = {"oauth": _oauth(inbound["oauth"])}
            introspection = self.secrets.get(inbound.get("introspection_secret_id") or "")
            if introspection is not None:
                auth["introspection"] = {
                    "url": introspection["fields"]["url"],
                    "client_id": introspection["fields"]["client_id"],
                    "client_secret": self.env(introspection, "client_secret", key, "introspection", "client_secret"),
                }
            written["auth"] = auth
        elif inbound.get("mode") == "api_key":
            self.note(f"plan {plan['name']!r} takes an inbound API key, which is never exported: after applying, run "
                      f"`apimcp plan update {key} --inbound api_key` (it makes a new key)")  # fmt: skip
        return written

    def build(self) -> Export:
        services = {s["id"]: s for s in self.data["services"]}
        order = {service_id: index for index, service_id in enumerate(services)}  # by name and version
        plans = sorted(self.data["plans"], key=lambda p: (order[p["service_id"]], p["name"]))
        keys: dict[str, str] = {}
        taken: set[str] = set()
        for plan in plans:
            keys[plan["id"]] = _unique(_safe(plan["name"], "plan"), taken)
            if keys[plan["id"]] != plan["name"]:  # too long, characters a key cannot hold, or a name taken twice
                self.note(f"plan {plan['name']!r} is written as {keys[plan['id']]!r}: applied, that is its name")
        folders: dict[str, tuple[str | None, dict[str, str]]] = {}
        folder_names: set[str] = set()
        written_services: dict[str, Any] = {}
        for plan in plans:
            service = services[plan["service_id"]]
            if service["id"] not in folders:
                folder = _unique(_safe(f"{service['name']}-{service['version']}", "service", lower=True), folder_names)
                folders[service["id"]] = self.service_files(service, f"services/{folder}")
            written_services[keys[plan["id"]]] = self.service(keys[plan["id"]], plan, service, folders[service["id"]])
        for service in self.data["services"]:
            if service["id"] not in folders:
                self.note(f"service {service['name']} {service['version']} has no plan and is left out "
                          "(`apimcp apply` makes a plan for every service it names)")  # fmt: skip
        expositions = self.expositions(plans, keys)
        document: dict[str, Any] = {}
        if self.data["policies"]:
            document["policies"] = self.data["policies"]
        templates = self.templates()
        if templates:
            document["templates"] = templates
        document["services"] = written_services
        if expositions:
            document["expositions"] = expositions
        elif plans:
            self.note("the organization has no exposition; `apimcp apply` makes one for each service of a file "
                      "that names none")  # fmt: skip
        text = yaml.dump(
            document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
        )
        self.out.files = {CONFIG_FILE: text.encode(), **self.out.files}
        return self.out

    def templates(self) -> dict[str, Any]:
        """The plan templates by name: their description and settings as the control plane keeps them (which
        `POST /templates` takes again), less an introspection secret (a configuration names none for templates)."""
        written: dict[str, Any] = {}
        for template in self.data.get("templates", []):
            settings = dict(template["settings"])
            if settings.pop("introspection_secret_id", None) is not None:
                self.note(f"template {template['name']!r} checks opaque tokens with an introspection secret, which "
                          "a configuration file cannot name: set it again with `apimcp template update`")  # fmt: skip
            entry: dict[str, Any] = {"description": template["description"]} if template["description"] else {}
            written[template["name"]] = {**entry, "settings": settings}
        return written

    def expositions(self, plans: list[dict[str, Any]], keys: Mapping[str, str]) -> dict[str, Any]:
        by_plan = {plan["id"]: plan for plan in plans}
        listed = [e for e in self.data["expositions"] if e["plan_id"] in by_plan]
        taken: set[str] = set()
        names: dict[str, str] = {}
        for exposition in sorted(listed, key=lambda e: (e["name"] is None, e["name"] or "", e["id"])):
            given = exposition["name"] or keys[exposition["plan_id"]]
            names[exposition["id"]] = _unique(_safe(exposition_name(given), "exposition", lower=True), taken)
            if exposition["name"] and names[exposition["id"]] != exposition["name"]:
                self.note(f"exposition {exposition['name']!r} is written as {names[exposition['id']]!r}: applied, "
                          "that is its name")  # fmt: skip
            if exposition["group"] != "default":
                where = f"exposition {names[exposition['id']]!r} is on gateway group {exposition['group']!r}"
                self.note(f"{where}; `apimcp apply` puts expositions on the default group, or the one --group names")
        written: dict[str, Any] = {}
        ordered = sorted(listed, key=lambda e: names[e["id"]])
        exposed = list(dict.fromkeys(e["plan_id"] for e in ordered))
        settings = {plan_id: self.settings(keys[plan_id], by_plan[plan_id]) for plan_id in exposed}
        for exposition in ordered:
            written[names[exposition["id"]]] = {"services": [keys[exposition["plan_id"]]],
                                                **settings[exposition["plan_id"]]}  # fmt: skip
        for plan in plans:
            if plan["id"] not in exposed and any(plan[n] != d for n, d in _EXPOSITION_DEFAULTS.items()):
                self.note(f"plan {plan['name']!r} has no exposition: its exposition settings (cache hints, limits, "
                          "policies...) have nowhere to go in a configuration file and are left out")  # fmt: skip
        return written


def build_export(data: Mapping[str, Any]) -> Export:
    """The files of the configuration that makes `data` (an organization's export) again."""
    return _Builder(data).build()
