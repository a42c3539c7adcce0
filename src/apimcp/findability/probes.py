"""The queries a report searches for each tool: made from its own texts, and paraphrased from its shape.

Kinds, each present only when the tool has what it is made from and when it differs from the kinds before it:

- `title`: the tool's title, else its description's first sentence: what its author called it;
- `description`: its description's first sentence, when the title says something else;
- `name`: the words of its name (`pulls_list_review_comments`: "pulls list review comments");
- `paraphrase`: what it does said from its operation alone, in words of no description: a REST operation's
  method and path (`GET /repos/{owner}/{repo}/pulls`: "list the pulls of a repo"; `DELETE /pets/{id}`: "remove
  one pet"), a GraphQL field ("change: add star"), a gRPC method ("call: get feature");
- `keywords`: the two words of its texts that the exposition's other tools use least: a terse request.

They are not the requests of people who never read the description; a report says how a tool fares on its own
words and on plain ones, and which tools its queries find instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from apimcp.protocol.models import Tool
from apimcp.toolsearch.compact import summary
from apimcp.toolsearch.words import STOPWORDS, words

KINDS: Final = ("title", "description", "name", "paraphrase", "keywords")
MAX_QUERY_CHARS: Final = 200

_IDENTIFIER = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_VERSION = re.compile(r"v?\d+(\.\d+)*|api|rest", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Probe:
    kind: str
    text: str


def name_words(name: str) -> str:
    return " ".join(part.lower() for part in _IDENTIFIER.findall(name))


def signature_of(tool: Tool) -> str | None:
    """`METHOD /path`, `query field` or `Service/Method`, as the gateway's tools carry it in `_meta`."""
    operation = (tool.meta or {}).get("io.apimcp/operation")
    signature = operation.get("signature") if isinstance(operation, Mapping) else None
    return signature if isinstance(signature, str) else None


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def paraphrase(signature: str | None) -> str:
    """What the operation does, said from its signature alone ("" when it says too little)."""
    if not signature:
        return ""
    head, _, rest = signature.partition(" ")
    if head in {"query", "mutation", "subscription"}:
        verb = {"query": "get", "mutation": "change", "subscription": "watch"}[head]
        return f"{verb}: {name_words(rest)}".strip()
    if not rest.startswith("/"):  # gRPC: package.Service/Method
        return f"call: {name_words(signature.rpartition('/')[2])}"
    segments = [segment for segment in rest.strip("/").split("/") if segment and not _VERSION.fullmatch(segment)]
    literal = [segment for segment in segments if not segment.startswith("{")]
    if not literal:
        return ""
    thing = name_words(literal[-1]) or literal[-1]
    owner = name_words(_singular(literal[-2])) if len(literal) > 1 else ""
    one = segments[-1].startswith("{")
    method = head.upper()
    if method == "POST" and owner and segments[-2].startswith("{") and _singular(thing) == thing:
        return f"{thing} {_a(owner)}"  # `POST /pulls/{n}/merge`: not a collection, an action on what it follows
    said = {
        "GET": f"show one {_singular(thing)}" if one else f"list the {thing}",
        "POST": f"add {_a(_singular(thing))}",
        "PUT": f"change the {_singular(thing)}",
        "PATCH": f"change the {_singular(thing)}",
        "DELETE": f"remove the {_singular(thing)}",
    }.get(method, f"{method.lower()} {thing}")
    return f"{said} of {_a(owner)}" if owner and owner != _singular(thing) else said


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _rarest(title: str, name: str, rarity: Callable[[str], float]) -> list[str]:
    """The two words of the title and name (one of each search word, as written first) rarest among the tools."""
    chosen: dict[str, str] = {}
    for raw in _IDENTIFIER.findall(f"{title} {name}"):
        word = raw.lower()
        stemmed = words(word)
        if len(word) > 2 and word not in STOPWORDS and stemmed:
            chosen.setdefault(stemmed[0], word)
    return sorted(chosen.values(), key=lambda word: (-rarity(word), word))[:2]


def probes(tool: Tool, rarity: Callable[[str], float], signature: str | None = None) -> list[Probe]:
    """The queries for `tool`; `rarity(word)` says how rare a word is among the exposition's tools (higher: rarer);
    `signature`: its operation's (default: the one its `_meta` carries)."""
    found: list[Probe] = []
    seen: set[str] = set()

    def add(kind: str, text: str) -> None:
        text = " ".join(text.split())[:MAX_QUERY_CHARS]
        key = text.casefold().rstrip(".")
        if text and key not in seen:
            seen.add(key)
            found.append(Probe(kind, text))

    first = summary(tool.description, tool.title) if tool.description else ""
    add("title", tool.title or first)
    add("description", first)
    add("name", name_words(tool.name))
    add("paraphrase", paraphrase(signature or signature_of(tool)))
    add("keywords", " ".join(_rarest(tool.title or first, tool.name, rarity)))
    return found
