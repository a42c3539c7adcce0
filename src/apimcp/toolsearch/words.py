"""Words for lexical search: identifiers split (`listForRepo`, `list_for_repo`), lower case, a light
stemming and a few synonyms folded together, so that a query in plain words meets tool names and paths."""

from __future__ import annotations

import re

_SPLIT = re.compile(r"[A-Z]+s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")  # "PRs" is one word
_RUN = re.compile(r"[^\W_]+")
"""Letters and digits of any script, together: an ASCII run is split as identifiers are, another kept whole
(`löschen`, `счёт`), split only where a small letter meets a capital, at digits, and where ASCII meets a script
without capitals (`日本語のAPI`)."""
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "is", "it", "me", "my",
    "of", "on", "or", "please", "show", "that", "the", "this", "to", "use", "using", "via", "want", "what",
    "when", "which", "with", "you", "your", "can", "do", "does",
})  # fmt: skip
SYNONYMS = {
    "repository": "repo", "repositories": "repo", "remove": "delete", "erase": "delete", "fetch": "get",
    "retrieve": "get", "read": "get", "make": "create", "new": "create", "add": "create", "open": "create",
    "modify": "update", "edit": "update", "change": "update", "pr": "pull", "prs": "pull", "merge": "merge",
    "organisation": "org", "organization": "org", "organizations": "org", "orgs": "org", "user": "user",
    "member": "member", "comment": "comment", "gist": "gist", "star": "star", "starred": "star",
    "every": "list", "all": "list", "enumerate": "list", "workflow": "workflow", "action": "action",
    "ci": "workflow", "release": "release", "tag": "tag", "label": "label", "milestone": "milestone",
}  # fmt: skip


def stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2] if not word.endswith("ied") else word[:-3] + "y"
    return word


_AS_WRITTEN = frozenset({"new", "all", "every"})
"""Synonyms that hold for the word as written, not for a stem (`news` is no `new`)."""


def words(text: str) -> list[str]:
    """The search words of `text`, in order (stopwords dropped)."""
    found: list[str] = []
    for raw in _pieces(text):
        word = raw.lower()
        if word in STOPWORDS:
            continue
        word = SYNONYMS.get(word, word)
        stemmed = stem(word)
        found.append(SYNONYMS.get(stemmed, stemmed) if stemmed not in _AS_WRITTEN else stemmed)
    return found


def _pieces(text: str) -> list[str]:
    if text.isascii():
        return _SPLIT.findall(text)
    pieces: list[str] = []
    for run in _RUN.findall(text):
        if run.isascii():
            pieces += _SPLIT.findall(run)
            continue
        start = 0
        for at in range(1, len(run)):
            before, char = run[at - 1], run[at]
            if (
                (before.islower() and char.isupper())
                or before.isdigit() != char.isdigit()
                or (
                    before.isascii() != char.isascii()
                    and not (before.isalpha() and char.isalpha() and _cased(before + char))
                )
            ):
                pieces.append(run[start:at])
                start = at
        pieces.append(run[start:])
    return pieces


def _cased(letters: str) -> bool:
    """Whether every one of `letters` has a capital and a small form (Latin, Greek, Cyrillic...)."""
    return all(letter.lower() != letter.upper() for letter in letters)
