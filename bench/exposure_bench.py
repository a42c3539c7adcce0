"""What a model reads and writes to do multi-step tasks on GitHub's API, in each listing mode, beside FastMCP.

    python -m bench.exposure_bench [--tasks prs,compare,...] [--record DIR] [--spec PATH] [--verbatim-examples]

It needs the `bench` extra (FastMCP), pydantic-monty (FastMCP's sandbox) and bpe-openai (tokens); with the `search`
extra apimcp's searches rank by meaning too. A run takes about two minutes, most of it waiting for both servers.

A mock GitHub (`bench/example_backend.py`: every operation answers its description's example) serves as the backend
of two MCP servers built from the same description (npm `@octokit/openapi`, 1,223 operations):

- `apimcp serve` with three expositions of the service: every tool; `tool_search: true` (`search_tools`,
  `describe_tools`, `call_tool`); `code_mode: on` (`search_tools`, `describe_tools`, `execute_code`, JavaScript);
- FastMCP 4.2.3, `FastMCP.from_openapi` with `transforms=[CodeMode()]` (`search`, `get_schema`, `execute`, Python in
  pydantic-monty), served over Streamable HTTP.

Each task (`TASKS`) is what a person asks an agent, scripted by hand once per mode as a model would do it: in every
tool mode it calls the tools directly; in search mode it makes the task's searches (five hits each), describes the
tools it will call in one `describe_tools`, then calls them with `call_tool`; in code mode it makes the same searches
and description, then sends one program that makes the calls (in parallel where it can) and returns only the small
summary asked for; in FastMCP's code mode the same searches (`limit: 5`, the default detail) and one `get_schema` of
the same tools, then one Python program. Arguments that depend on earlier answers (PR numbers, a release's tag) come
from what the mock answers. A search whose five hits lack the tool the model is after is made again with twenty
hits (one more round trip); a tool not found even then is flagged, and used anyway.

Counted per task and mode, as the model's context sees them:

- read: the listing's tool definitions (name, description and inputSchema of each tool, as a client hands them to a
  model; JSON, once per task) and the text content of every tool result, exactly as received;
- written: each call's tool name and arguments (compact JSON; programs included);
- round trips: `tools/call`s, one model turn each (a model that emits parallel calls in one turn makes fewer);
- input over turns: what the model is given again at every turn (the listing and everything read and written
  before it), summed over the turns and the final answer's: the input tokens an API bills.

Tokens are o200k_base's (`bpe_openai`, which ships its vocabulary); a listing is tokenized tool by tool (pieces of
over a million characters cannot be encoded at once), which may differ from the whole by a token a tool. The MCP
requests are raw HTTP (httpx2), one 2025-11-25 session per endpoint. Every mode's answer must carry the same facts
as the direct calls' answer; a mismatch is printed and the run exits with status 1. `--record DIR` writes each
task's exchanges (requests and result texts) as JSON.

apimcp's search ranks by words and meanings once its tools' vectors are built (about 50 s of one core after start,
`docs/toolsearch.md`); the run waits until the searches of both expositions change from their first (lexical)
ranking and says which ranking it used.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from bench.harness import ROOT, free_port, stop, wait_for_port

SPEC = ROOT / "tools" / "node" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
VERSION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
SEARCH_LIMIT = 5
RETRY_LIMIT = 20
MEANING_PROBES = ("who am I logged in as",)
"""Besides the tasks' queries: a request in other words, whose ranking the model changes."""
FASTMCP_MODE = "FastMCP code mode"
MODES = ("every tool", "search", "code mode", FASTMCP_MODE)

Call = Callable[[str, dict[str, Any]], Any]
"""A tool's name and arguments (apimcp's names) -> its answer, parsed: how a task's script makes a call."""


# --- the tasks -------------------------------------------------------------------------------------------------

PR_REPOS = (("octocat", "Hello-World"), ("octocat", "Spoon-Knife"), ("github", "linguist"))


def prs_script(call: Call) -> Any:
    lists = {
        f"{owner}/{repo}": call("pulls_list", {"owner": owner, "repo": repo, "state": "open"})
        for owner, repo in PR_REPOS
    }
    prs = [
        {"repo": repo, "number": pull["number"], "title": pull["title"], "author": pull["user"]["login"]}
        for repo, pulls in lists.items()
        for pull in pulls
    ]
    for pr in prs:
        owner, repo = pr["repo"].split("/")
        arguments = {"owner": owner, "repo": repo, "pull_number": pr["number"]}
        pr["review_comments"] = len(call("pulls_list_review_comments", arguments))
    return prs


PRS_JS = """\
const repos = [["octocat", "Hello-World"], ["octocat", "Spoon-Knife"], ["github", "linguist"]];
const lists = await Promise.all(repos.map(([owner, repo]) => tools.pulls_list({owner, repo, state: "open"})));
const prs = lists.flatMap((pulls, i) => pulls.map((p) => ({
  repo: repos[i].join("/"), number: p.number, title: p.title, author: p.user.login,
})));
const comments = await Promise.all(prs.map((p) => {
  const [owner, repo] = p.repo.split("/");
  return tools.pulls_list_review_comments({owner, repo, pull_number: p.number});
}));
return prs.map((p, i) => ({...p, review_comments: comments[i].length}));
"""

PRS_PY = """\
import asyncio

repos = [("octocat", "Hello-World"), ("octocat", "Spoon-Knife"), ("github", "linguist")]
lists = await asyncio.gather(*[
    call_tool("pullslist", {"owner": owner, "repo": repo, "state": "open"}) for owner, repo in repos
])
prs = [
    {"repo": f"{owner}/{repo}", "number": p["number"], "title": p["title"], "author": p["user"]["login"]}
    for (owner, repo), pulls in zip(repos, lists)
    for p in pulls["result"]
]
comments = await asyncio.gather(*[
    call_tool("pullslist_review_comments", {
        "owner": p["repo"].split("/")[0], "repo": p["repo"].split("/")[1], "pull_number": p["number"],
    })
    for p in prs
])
return [{**p, "review_comments": len(c["result"])} for p, c in zip(prs, comments)]
"""

COMPARE_REPOS = PR_REPOS


def compare_script(call: Call) -> Any:
    facts = {}
    for owner, repo in COMPARE_REPOS:
        found = call("repos_get", {"owner": owner, "repo": repo})
        facts[f"{owner}/{repo}"] = {
            "stars": found["stargazers_count"],
            "forks": found["forks_count"],
            "open_issues": found["open_issues_count"],
        }
    return facts


COMPARE_JS = """\
const repos = [["octocat", "Hello-World"], ["octocat", "Spoon-Knife"], ["github", "linguist"]];
const found = await Promise.all(repos.map(([owner, repo]) => tools.repos_get({owner, repo})));
return Object.fromEntries(found.map((r, i) => [repos[i].join("/"), {
  stars: r.stargazers_count, forks: r.forks_count, open_issues: r.open_issues_count,
}]));
"""

COMPARE_PY = """\
import asyncio

repos = [("octocat", "Hello-World"), ("octocat", "Spoon-Knife"), ("github", "linguist")]
found = await asyncio.gather(*[call_tool("reposget", {"owner": owner, "repo": repo}) for owner, repo in repos])
return {
    f"{owner}/{repo}": {
        "stars": r["stargazers_count"], "forks": r["forks_count"], "open_issues": r["open_issues_count"],
    }
    for (owner, repo), r in zip(repos, found)
}
"""


def release_script(call: Call) -> Any:
    where = {"owner": "octocat", "repo": "Hello-World"}
    release = call("repos_get_latest_release", where)
    commit = call("repos_get_commit", {**where, "ref": release["tag_name"]})
    status = call("repos_get_combined_status_for_ref", {**where, "ref": release["tag_name"]})
    return {
        "tag": release["tag_name"],
        "assets": [{"name": a["name"], "size": a["size"], "downloads": a["download_count"]} for a in release["assets"]],
        "commit": {
            "sha": commit["sha"],
            "author": commit["commit"]["author"]["name"],
            "message": commit["commit"]["message"].split("\n")[0],
        },
        "ci": status["state"],
    }


RELEASE_JS = """\
const where = {owner: "octocat", repo: "Hello-World"};
const release = await tools.repos_get_latest_release(where);
const [commit, status] = await Promise.all([
  tools.repos_get_commit({...where, ref: release.tag_name}),
  tools.repos_get_combined_status_for_ref({...where, ref: release.tag_name}),
]);
return {
  tag: release.tag_name,
  assets: release.assets.map((a) => ({name: a.name, size: a.size, downloads: a.download_count})),
  commit: {sha: commit.sha, author: commit.commit.author.name, message: commit.commit.message.split("\\n")[0]},
  ci: status.state,
};
"""

RELEASE_PY = """\
import asyncio

where = {"owner": "octocat", "repo": "Hello-World"}
release = await call_tool("reposget_latest_release", where)
commit, status = await asyncio.gather(
    call_tool("reposget_commit", {**where, "ref": release["tag_name"]}),
    call_tool("reposget_combined_status_for_ref", {**where, "ref": release["tag_name"]}),
)
return {
    "tag": release["tag_name"],
    "assets": [{"name": a["name"], "size": a["size"], "downloads": a["download_count"]} for a in release["assets"]],
    "commit": {
        "sha": commit["sha"],
        "author": commit["commit"]["author"]["name"],
        "message": commit["commit"]["message"].split("\\n")[0],
    },
    "ci": status["state"],
}
"""


def branch_script(call: Call) -> Any:
    found = call("repos_get", {"owner": "octocat", "repo": "Hello-World"})
    return {"default_branch": found["default_branch"], "license": (found.get("license") or {}).get("spdx_id")}


BRANCH_JS = """\
const r = await tools.repos_get({owner: "octocat", repo: "Hello-World"});
return {default_branch: r.default_branch, license: r.license?.spdx_id ?? null};
"""

BRANCH_PY = """\
r = await call_tool("reposget", {"owner": "octocat", "repo": "Hello-World"})
return {"default_branch": r["default_branch"], "license": (r.get("license") or {}).get("spdx_id")}
"""


def scanning_script(call: Call) -> Any:
    where = {"owner": "octocat", "repo": "Hello-World"}
    facts = []
    for alert in call("code_scanning_list_alerts_for_repo", {**where, "state": "open"}):
        instances = call("code_scanning_list_alert_instances", {**where, "alert_number": alert["number"]})
        facts.append(
            {
                "number": alert["number"],
                "rule": alert["rule"]["id"],
                "severity": alert["rule"]["severity"],
                "paths": sorted({i["location"]["path"] for i in instances}),
            }
        )
    return facts


SCANNING_JS = """\
const where = {owner: "octocat", repo: "Hello-World"};
const alerts = await tools.code_scanning_list_alerts_for_repo({...where, state: "open"});
const instances = await Promise.all(
  alerts.map((a) => tools.code_scanning_list_alert_instances({...where, alert_number: a.number})),
);
return alerts.map((a, i) => ({
  number: a.number, rule: a.rule.id, severity: a.rule.severity,
  paths: [...new Set(instances[i].map((x) => x.location.path))].sort(),
}));
"""

SCANNING_PY = """\
import asyncio

where = {"owner": "octocat", "repo": "Hello-World"}
alerts = (await call_tool("code_scanninglist_alerts_for_repo", {**where, "state": "open"}))["result"]
instances = await asyncio.gather(*[
    call_tool("code_scanninglist_alert_instances", {**where, "alert_number": a["number"]}) for a in alerts
])
return [
    {
        "number": a["number"], "rule": a["rule"]["id"], "severity": a["rule"]["severity"],
        "paths": sorted({x["location"]["path"] for x in found["result"]}),
    }
    for a, found in zip(alerts, instances)
]
"""


def dependabot_script(call: Call) -> Any:
    alerts = call("dependabot_list_alerts_for_repo", {"owner": "octocat", "repo": "Hello-World", "state": "open"})
    return [
        {
            "number": a["number"],
            "package": a["dependency"]["package"]["name"],
            "severity": a["security_advisory"]["severity"],
            "patched": (a["security_vulnerability"].get("first_patched_version") or {}).get("identifier"),
        }
        for a in alerts
    ]


DEPENDABOT_JS = """\
const alerts = await tools.dependabot_list_alerts_for_repo({owner: "octocat", repo: "Hello-World", state: "open"});
return alerts.map((a) => ({
  number: a.number, package: a.dependency.package.name, severity: a.security_advisory.severity,
  patched: a.security_vulnerability.first_patched_version?.identifier ?? null,
}));
"""

DEPENDABOT_PY = """\
alerts = await call_tool("dependabotlist_alerts_for_repo", {"owner": "octocat", "repo": "Hello-World", "state": "open"})
return [
    {
        "number": a["number"], "package": a["dependency"]["package"]["name"],
        "severity": a["security_advisory"]["severity"],
        "patched": (a["security_vulnerability"].get("first_patched_version") or {}).get("identifier"),
    }
    for a in alerts["result"]
]
"""


@dataclass(frozen=True)
class Task:
    key: str
    ask: str
    searches: tuple[tuple[str, str], ...]
    """Each query the model makes, and the tool (apimcp's name) it is after."""
    script: Callable[[Call], Any]
    """The calls made one by one (every tool and search modes), and the facts of the answer."""
    javascript: str
    python: str

    @property
    def tools(self) -> list[str]:
        return list(dict.fromkeys(tool for _, tool in self.searches))


TASKS = (
    Task(
        "prs",
        "Summarize the open pull requests of octocat/Hello-World, octocat/Spoon-Knife and github/linguist: "
        "each one's number, title, author and number of review comments.",
        (("list pull requests in a repository", "pulls_list"),
         ("list review comments on a pull request", "pulls_list_review_comments")),
        prs_script, PRS_JS, PRS_PY,
    ),
    Task(
        "compare",
        "Compare the stars, forks and open issues of octocat/Hello-World, octocat/Spoon-Knife and github/linguist.",
        (("get a repository", "repos_get"),),
        compare_script, COMPARE_JS, COMPARE_PY,
    ),
    Task(
        "release",
        "What's in the latest release of octocat/Hello-World: its assets, the commit it was tagged from, and "
        "whether CI passed on that commit?",
        (("get the latest release", "repos_get_latest_release"),
         ("get a commit", "repos_get_commit"),
         ("get the CI status of a commit", "repos_get_combined_status_for_ref")),
        release_script, RELEASE_JS, RELEASE_PY,
    ),
    Task(
        "branch",
        "What is the default branch of octocat/Hello-World, and its license?",
        (("get a repository", "repos_get"),),
        branch_script, BRANCH_JS, BRANCH_PY,
    ),
    Task(
        "scanning",
        "List the open code scanning alerts of octocat/Hello-World: rule, severity and the files where each occurs.",
        (("list code scanning alerts for a repository", "code_scanning_list_alerts_for_repo"),
         ("list instances of a code scanning alert", "code_scanning_list_alert_instances")),
        scanning_script, SCANNING_JS, SCANNING_PY,
    ),
    Task(
        "dependabot",
        "Which Dependabot alerts are open on octocat/Hello-World: package, severity and the version that fixes it?",
        (("list dependabot alerts for a repository", "dependabot_list_alerts_for_repo"),),
        dependabot_script, DEPENDABOT_JS, DEPENDABOT_PY,
    ),
)  # fmt: skip

FASTMCP_NAMES = {
    "pulls_list": "pullslist",
    "pulls_list_review_comments": "pullslist_review_comments",
    "repos_get": "reposget",
    "repos_get_latest_release": "reposget_latest_release",
    "repos_get_commit": "reposget_commit",
    "repos_get_combined_status_for_ref": "reposget_combined_status_for_ref",
    "code_scanning_list_alerts_for_repo": "code_scanninglist_alerts_for_repo",
    "code_scanning_list_alert_instances": "code_scanninglist_alert_instances",
    "dependabot_list_alerts_for_repo": "dependabotlist_alerts_for_repo",
}
"""FastMCP names a tool by its operationId without the `/` (`pulls/list` -> `pullslist`); apimcp with `_`."""


# --- MCP over HTTP ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    text: str
    """The text content of the result, as received (its text blocks joined by newlines)."""
    is_error: bool


class Session:
    """One 2025-11-25 session with a Streamable HTTP endpoint; answers as JSON or as an SSE stream."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx2.Client(timeout=180)
        self.headers = {"Accept": ACCEPT}
        self.next_id = 0
        params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "exposure", "version": "1"}}
        response = self.client.post(url, json=self._message("initialize", params), headers=self.headers)
        response.raise_for_status()
        self._answer(response, self.next_id)
        self.headers = {"Accept": ACCEPT, "MCP-Protocol-Version": VERSION}
        if "mcp-session-id" in response.headers:
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.client.post(url, json=notification, headers=self.headers).raise_for_status()

    def _message(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    @staticmethod
    def _answer(response: httpx2.Response, wanted: int) -> dict[str, Any]:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            messages = []
            for event in response.text.replace("\r\n", "\n").split("\n\n"):
                data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
                if data:
                    messages.append(json.loads(data))
        else:
            messages = [response.json()]
        for message in messages:
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"JSON-RPC error: {message['error']}")
                return dict(message["result"])
        raise RuntimeError(f"no answer to request {wanted}: {response.text[:500]}")

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = self._message(method, params)
        response = self.client.post(self.url, json=message, headers=self.headers)
        response.raise_for_status()
        return self._answer(response, message["id"])

    def list_tools(self) -> tuple[list[dict[str, Any]], int]:
        """The tools, and the bytes of the `tools/list` answers that carried them (as sent: JSON or SSE)."""
        tools: list[dict[str, Any]] = []
        sent = 0
        cursor: str | None = None
        while True:
            message = self._message("tools/list", {"cursor": cursor} if cursor else {})
            response = self.client.post(self.url, json=message, headers=self.headers)
            response.raise_for_status()
            sent += len(response.content)
            page = self._answer(response, message["id"])
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                return tools, sent

    def call(self, name: str, arguments: dict[str, Any]) -> Result:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        texts = [block["text"] for block in result.get("content", []) if block.get("type") == "text"]
        return Result("\n".join(texts), bool(result.get("isError")))

    def close(self) -> None:
        self.client.close()


# --- counting --------------------------------------------------------------------------------------------------


class Tokens:
    """o200k_base token counts (bpe_openai encodes under a million characters and 200,000 tokens at a time)."""

    PIECE = 100_000

    def __init__(self) -> None:
        import bpe_openai  # noqa: PLC0415 - a bench extra, loaded once

        self.encoding = bpe_openai.get_encoding("o200k_base")

    def count(self, text: str) -> int:
        total = 0
        start = 0
        while start < len(text):
            end = min(len(text), start + self.PIECE)
            if end < len(text):  # cut after a comma or a space, where a token ends anyway
                cut = max(text.rfind(",", start, end), text.rfind(" ", start, end))
                end = cut + 1 if cut > start else end
            total += len(self.encoding.encode_ordinary(text[start:end]))
            start = end
        return total


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Listing:
    tools: int
    bytes: int
    tokens: int
    sent: int
    """The bytes of `tools/list` itself (every field, output schemas included), which no model reads."""

    @classmethod
    def of(cls, tools: Sequence[dict[str, Any]], sent: int, tokens: Tokens) -> Listing:
        """The definitions a client hands a model: name, description and inputSchema of each tool, as JSON."""
        pieces = []
        for tool in tools:
            definition = {"name": tool["name"]}
            if tool.get("description"):
                definition["description"] = tool["description"]
            definition["inputSchema"] = tool["inputSchema"]
            pieces.append(compact(definition))
        text_pieces = [("[" if i == 0 else ",") + piece for i, piece in enumerate(pieces)] + ["]"]
        return cls(
            len(tools),
            sum(len(piece.encode()) for piece in text_pieces),
            sum(tokens.count(piece) for piece in text_pieces),
            sent,
        )


@dataclass
class Turn:
    tool: str
    arguments: dict[str, Any]
    result: Result
    written_bytes: int
    written_tokens: int
    read_bytes: int
    read_tokens: int


@dataclass
class Run:
    mode: str
    listing: Listing
    tokens: Tokens
    turns: list[Turn] = field(default_factory=list)
    answer: Any = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def call(self, session: Session, tool: str, arguments: dict[str, Any]) -> Result:
        result = session.call(tool, arguments)
        written = tool + compact(arguments)
        self.turns.append(
            Turn(
                tool, arguments, result,
                len(written.encode()), self.tokens.count(tool) + self.tokens.count(compact(arguments)),
                len(result.text.encode()), self.tokens.count(result.text),
            )
        )  # fmt: skip
        if result.is_error:
            self.notes.append(f"{tool} answered an error: {result.text[:300]}")
        return result

    @property
    def round_trips(self) -> int:
        return len(self.turns)

    @property
    def read_bytes(self) -> int:
        return self.listing.bytes + sum(turn.read_bytes for turn in self.turns)

    @property
    def read_tokens(self) -> int:
        return self.listing.tokens + sum(turn.read_tokens for turn in self.turns)

    @property
    def written_tokens(self) -> int:
        return sum(turn.written_tokens for turn in self.turns)

    @property
    def input_over_turns(self) -> int:
        """The context given again at each turn (every call's, and the final answer's), summed."""
        context = self.listing.tokens
        total = 0
        for turn in self.turns:
            total += context
            context += turn.written_tokens + turn.read_tokens
        return total + context


# --- the modes -------------------------------------------------------------------------------------------------


def parse(result: Result) -> Any:
    if result.is_error:
        raise RuntimeError(f"a call failed: {result.text[:500]}")
    return json.loads(result.text)


def apimcp_hits(result: Result) -> list[str]:
    return [hit["name"] for hit in json.loads(result.text)["tools"]]


_FASTMCP_HIT = re.compile(r"^- ([A-Za-z0-9_\-]+)(?::|$)", re.MULTILINE)


def fastmcp_hits(result: Result) -> list[str]:
    """The names of FastMCP's brief hits (`- name: description`, a description may span lines)."""
    return _FASTMCP_HIT.findall(result.text)


def search(
    run: Run,
    session: Session,
    task: Task,
    tool: str,
    hits: Callable[[Result], list[str]],
    name: Callable[[str], str],
) -> None:
    for query, wanted in task.searches:
        found = hits(run.call(session, tool, {"query": query, "limit": SEARCH_LIMIT}))
        if name(wanted) in found:
            continue
        run.notes.append(f"search {query!r}: {name(wanted)} not in the first {SEARCH_LIMIT} ({', '.join(found)})")
        found = hits(run.call(session, tool, {"query": query, "limit": RETRY_LIMIT}))
        if name(wanted) not in found:
            run.notes.append(f"SEARCH MISS {query!r}: {name(wanted)} not in the first {RETRY_LIMIT}; used anyway")


def every_tool(run: Run, session: Session, task: Task) -> None:
    run.answer = task.script(lambda tool, arguments: parse(run.call(session, tool, arguments)))


def search_mode(run: Run, session: Session, task: Task) -> None:
    search(run, session, task, "search_tools", apimcp_hits, str)
    run.call(session, "describe_tools", {"names": task.tools})
    run.answer = task.script(
        lambda tool, arguments: parse(run.call(session, "call_tool", {"name": tool, "arguments": arguments}))
    )


def code_mode(run: Run, session: Session, task: Task) -> None:
    search(run, session, task, "search_tools", apimcp_hits, str)
    run.call(session, "describe_tools", {"names": task.tools})
    run.answer = parse(run.call(session, "execute_code", {"code": task.javascript}))


def fastmcp_code_mode(run: Run, session: Session, task: Task) -> None:
    search(run, session, task, "search", fastmcp_hits, FASTMCP_NAMES.__getitem__)
    described = run.call(session, "get_schema", {"tools": [FASTMCP_NAMES[tool] for tool in task.tools]})
    if "Tools not found" in described.text:
        run.notes.append(f"get_schema: {described.text[described.text.index('Tools not found') :][:200]}")
    run.answer = parse(run.call(session, "execute", {"code": task.python}))


PLAYERS: dict[str, Callable[[Run, Session, Task], None]] = {
    "every tool": every_tool,
    "search": search_mode,
    "code mode": code_mode,
    FASTMCP_MODE: fastmcp_code_mode,
}


# --- the servers -----------------------------------------------------------------------------------------------


def gateway_config(spec: Path, backend: str) -> str:
    return (
        "services:\n"
        "  github:\n"
        f"    openapi: {json.dumps(str(spec))}\n"
        f"    backend: {backend}\n"
        "expositions:\n"
        "  every: {services: [github]}\n"
        "  search: {services: [github], tool_search: true}\n"
        "  code: {services: [github], code_mode: on}\n"
    )


def serve_fastmcp(port: int, backend: str, spec: Path) -> None:
    """The FastMCP server (in its own process): GitHub's tools from the description, behind CodeMode."""
    import asyncio  # noqa: PLC0415

    from fastmcp import FastMCP  # noqa: PLC0415 - the bench extra
    from fastmcp.experimental.transforms.code_mode import CodeMode  # noqa: PLC0415

    description = json.loads(spec.read_text())
    client = httpx2.AsyncClient(base_url=backend, timeout=30)
    server = FastMCP.from_openapi(description, client=client, name="GitHub", transforms=[CodeMode()])
    asyncio.run(server.run_http_async(host="127.0.0.1", port=port, show_banner=False, log_level="warning"))


def wait_for_meanings(sessions: dict[str, Session], queries: Sequence[str], seconds: float) -> str:
    """Until every exposition's searches change from their first (lexical) answers: its vectors are built."""
    from apimcp.toolsearch.embedding import available  # noqa: PLC0415

    if not available():
        return "words alone (BM25): the search extra is not installed"

    def answers(session: Session) -> list[list[str]]:
        return [apimcp_hits(session.call("search_tools", {"query": q, "limit": SEARCH_LIMIT})) for q in queries]

    first = {name: answers(session) for name, session in sessions.items()}
    started = time.monotonic()
    waiting = set(sessions)
    while waiting and time.monotonic() - started < seconds:
        time.sleep(2)
        waiting = {name for name in waiting if answers(sessions[name]) == first[name]}
    if waiting:
        return f"UNKNOWN: the searches of {', '.join(sorted(waiting))} did not change in {seconds:.0f} s (lexical?)"
    ready = time.monotonic() - started
    return f"words and meanings (hybrid; the vectors were ready {ready:.0f} s after the first search)"


# --- tables ----------------------------------------------------------------------------------------------------


def table(runs: Sequence[Run], fastmcp: Run | None) -> list[str]:
    lines = [
        "| mode | round trips | read bytes | read tokens | written tokens | read tokens / FastMCP | input over turns |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        ratio = f"{run.read_tokens / fastmcp.read_tokens:,.2f}" if fastmcp and fastmcp.read_tokens else "-"
        lines.append(
            f"| {run.mode} | {run.round_trips} | {run.read_bytes:,} | {run.read_tokens:,} | {run.written_tokens:,} "
            f"| {ratio} | {run.input_over_turns:,} |"
        )
    return lines


@dataclass
class Totals:
    mode: str
    round_trips: int = 0
    read_bytes: int = 0
    read_tokens: int = 0
    written_tokens: int = 0
    input_over_turns: int = 0
    parts: dict[str, int] = field(default_factory=dict)

    def add(self, run: Run) -> None:
        for kind, count in breakdown(run).items():
            self.parts[kind] = self.parts.get(kind, 0) + count
        self.round_trips += run.round_trips
        self.read_bytes += run.read_bytes
        self.read_tokens += run.read_tokens
        self.written_tokens += run.written_tokens
        self.input_over_turns += run.input_over_turns


def totals_table(totals: Sequence[Totals], exclude_listing: dict[str, Listing], tasks: int) -> list[str]:
    fastmcp = next((t for t in totals if t.mode == FASTMCP_MODE), None)
    lines = [
        "| mode | round trips | read bytes | read tokens | written tokens | read tokens / FastMCP "
        "| read tokens without the listings | input over turns |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for total in totals:
        ratio = f"{total.read_tokens / fastmcp.read_tokens:,.2f}" if fastmcp and fastmcp.read_tokens else "-"
        results = total.read_tokens - tasks * exclude_listing[total.mode].tokens
        lines.append(
            f"| {total.mode} | {total.round_trips} | {total.read_bytes:,} | {total.read_tokens:,} "
            f"| {total.written_tokens:,} | {ratio} | {results:,} | {total.input_over_turns:,} |"
        )
    return lines


DISCOVERY = {"search_tools": "searches", "search": "searches", "describe_tools": "schemas", "get_schema": "schemas"}


def breakdown(run: Run) -> dict[str, int]:
    """Read tokens by what they come from: the listing, searches (those made again with more hits apart), schemas,
    results of calls (and programs)."""
    parts = {"listing": run.listing.tokens, "searches": 0, "searches again": 0, "schemas": 0, "results": 0}
    for turn in run.turns:
        kind = DISCOVERY.get(turn.tool, "results")
        if kind == "searches" and turn.arguments.get("limit") == RETRY_LIMIT:
            kind = "searches again"
        parts[kind] += turn.read_tokens
    return parts


def record(directory: Path, task: Task, runs: Iterable[Run]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    transcript = {
        "task": task.key,
        "ask": task.ask,
        "modes": [
            {
                "mode": run.mode,
                "answer": run.answer,
                "notes": run.notes,
                "calls": [
                    {"tool": t.tool, "arguments": t.arguments, "isError": t.result.is_error, "text": t.result.text}
                    for t in run.turns
                ],
            }
            for run in runs
        ],
    }
    (directory / f"{task.key}.json").write_text(json.dumps(transcript, indent=1, ensure_ascii=False) + "\n")


# --- main ------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--tasks", default=",".join(task.key for task in TASKS), help="comma-separated task keys")
    parser.add_argument("--record", type=Path, help="write each task's exchanges there, as JSON")
    parser.add_argument("--verbatim-examples", action="store_true", help="the mock answers examples as written")
    parser.add_argument("--wait-seconds", type=float, default=300, help="for apimcp's vectors, at most")
    parser.add_argument("--fastmcp-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fastmcp_server:
        serve_fastmcp(args.fastmcp_server, args.backend, args.spec)
        return
    chosen = [task for task in TASKS if task.key in args.tasks.split(",")]
    if not chosen:
        raise SystemExit(f"no such task; the tasks are {', '.join(task.key for task in TASKS)}")

    processes: list[subprocess.Popen[bytes]] = []
    sessions: list[Session] = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            backend_port, gateway_port, fastmcp_port = free_port(), free_port(), free_port()
            backend = f"http://127.0.0.1:{backend_port}"
            mock = [
                sys.executable, "-m", "bench.example_backend", "--port", str(backend_port), "--spec", str(args.spec),
            ]  # fmt: skip
            if args.verbatim_examples:
                mock.append("--verbatim")
            processes.append(subprocess.Popen(mock, cwd=ROOT))
            wait_for_port(backend_port, processes[-1], "the mock backend", 60)
            config = Path(scratch) / "gateway.yaml"
            config.write_text(gateway_config(args.spec.resolve(), backend))
            apimcp = str(Path(sys.executable).parent / "apimcp")
            log = (Path(scratch) / "gateway.log").open("wb")
            gateway = [apimcp, "serve", str(config), "--port", str(gateway_port)]
            processes.append(subprocess.Popen(gateway, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
            wait_for_port(gateway_port, processes[-1], "apimcp serve", 120)
            fastmcp = [
                sys.executable, "-m", "bench.exposure_bench", "--fastmcp-server", str(fastmcp_port),
                "--backend", backend, "--spec", str(args.spec),
            ]  # fmt: skip
            processes.append(subprocess.Popen(fastmcp, cwd=ROOT))
            gateway_url = f"http://127.0.0.1:{gateway_port}/mcp"
            endpoints = {
                "every tool": f"{gateway_url}/every",
                "search": f"{gateway_url}/search",
                "code mode": f"{gateway_url}/code",
            }
            by_mode = {mode: Session(url) for mode, url in endpoints.items()}
            sessions.extend(by_mode.values())
            queries = [*dict.fromkeys(q for task in TASKS for q, _ in task.searches), *MEANING_PROBES]
            ranking = wait_for_meanings(
                {"search": by_mode["search"], "code": by_mode["code mode"]}, queries, args.wait_seconds
            )
            wait_for_port(fastmcp_port, processes[-1], "the FastMCP server", 180)
            by_mode[FASTMCP_MODE] = Session(f"http://127.0.0.1:{fastmcp_port}/mcp")
            sessions.append(by_mode[FASTMCP_MODE])
            tokens = Tokens()
            listings = {mode: Listing.of(*session.list_tools(), tokens) for mode, session in by_mode.items()}
            failed = report(chosen, by_mode, listings, tokens, ranking, args.record)
    finally:
        for session in sessions:
            session.close()
        for process in reversed(processes):
            stop(process)
    if failed:
        raise SystemExit(1)


def report(
    tasks: Sequence[Task],
    sessions: dict[str, Session],
    listings: dict[str, Listing],
    tokens: Tokens,
    ranking: str,
    directory: Path | None,
) -> bool:
    """Runs every task in every mode and prints the tables; whether any answer differed or any call failed."""
    print(f"\napimcp search ranking: {ranking}")
    print(f"MCP {VERSION} sessions; tokens: o200k_base (bpe_openai); search hits: {SEARCH_LIMIT}\n")
    print("Listings (name, description, inputSchema of each tool, compact JSON):\n")
    print("| mode | tools | bytes | tokens | `tools/list` as sent, bytes |\n|---|---|---|---|---|")
    for mode, listing in listings.items():
        print(f"| {mode} | {listing.tools:,} | {listing.bytes:,} | {listing.tokens:,} | {listing.sent:,} |")
    failed = False
    totals = [Totals(mode) for mode in MODES]
    for task in tasks:
        runs = []
        for mode in MODES:
            run = Run(mode, listings[mode], tokens)
            started = time.perf_counter()
            try:
                PLAYERS[mode](run, sessions[mode], task)
            except Exception as error:  # reported with the table, not raised: the other modes still run
                run.notes.append(f"FAILED: {type(error).__name__}: {str(error)[:500]}")
            run.seconds = time.perf_counter() - started
            runs.append(run)
        reference = runs[0].answer
        print(f"\n### {task.key}: {task.ask}\n")
        for line in table(runs, runs[-1]):
            print(line)
        for run in runs:
            wrong = compact(run.answer) != compact(reference) or run.answer is None
            failed |= wrong or any(note.startswith("FAILED") for note in run.notes)
            calls = ", ".join(turn.tool for turn in run.turns)
            parts = ", ".join(f"{kind} {count:,}" for kind, count in breakdown(run).items() if count)
            print(f"- {run.mode} ({run.seconds:.1f} s): {calls}; read tokens: {parts}")
            for note in run.notes:
                print(f"  - {note}")
            if wrong:
                print(f"  - !!! MISMATCH with the direct calls' answer: {compact(run.answer)[:400]}")
        print(f"- answer (every mode): {compact(reference)[:600]}")
        for total, run in zip(totals, runs, strict=True):
            total.add(run)
        if directory is not None:
            record(directory, task, runs)
    print(f"\n### Totals over {len(tasks)} tasks\n")
    for line in totals_table(totals, listings, len(tasks)):
        print(line)
    kinds = list(totals[0].parts)
    print(f"\nRead tokens by source, over the {len(tasks)} tasks:\n")
    print(f"| mode | {' | '.join(kinds)} |\n|---|{'---|' * len(kinds)}")
    for total in totals:
        print(f"| {total.mode} | {' | '.join(f'{total.parts[kind]:,}' for kind in kinds)} |")
    if failed:
        print("\n!!! Some answer differed from the direct calls' or some call failed: see above.")
    return failed


if __name__ == "__main__":
    main()
