"""What a `file://` resource may name: a plain path on the exposition's backend, and nothing else.

`file:///guides/readme.md` is read with a GET of the backend's base URL followed by `/guides/readme.md`.
Whatever follows `file://` is appended to that URL, so it must be a path that keeps the backend's
origin and stays under its base path: it starts with one `/` (a host, `@userinfo` or `.suffix` after
`file://` would become part of the backend's authority), and, read once or several times
percent-decoded (servers and proxies decode), it still starts with one `/`, holds no `.` or `..`
segment, no backslash (WHATWG parsers read it as `/`) and no control character. Servers find dot
segments where the path's text has none, so those are refused too: a segment that is `..` once its
`;parameters` are removed (Tomcat and Spring read `/docs/..;/x` as `/x`), one made of dots and spaces only
(Windows servers drop trailing dots and spaces: `.. ` is `..`), one that NFKC normalization makes a dot
segment (two fullwidth full stops, U+FF0E, which servers that normalize Unicode read as `..`; the whole
path is checked once normalized, so a fullwidth solidus or reverse solidus counts as what it becomes), and
IIS's `%u002e` escapes. A percent-encoded slash or backslash (`%2F`, `%5C`) is refused as well: servers
differ on whether it ends a segment, so the path the backend walks is not the one checked here. The query,
if any, is the backend's business: it is sent as written, encoded where it must be.

The same rule is applied when a file is attached (to static URIs), when a template's expansion is read,
and by the loader before any request is made.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

__all__ = ["FILE_SCHEME", "file_path", "file_path_problem", "file_template_problem"]

FILE_SCHEME = "file://"
_DECODINGS = 3
"""How many times a path is percent-decoded and checked again; one still encoded after that is refused."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENCODED_SEPARATOR = re.compile(r"%(?:2f|5c)", re.IGNORECASE)
_IIS_ESCAPE = re.compile(r"%u[0-9a-f]{4}", re.IGNORECASE)
_DOTS_AND_SPACES = re.compile(r"[. ]*\.[. ]*")


def file_path(uri: str) -> str | None:
    """What follows `file://` in `uri` (`file:///guides/a.md` → `/guides/a.md`), else None."""
    return uri[len(FILE_SCHEME) :] if uri[: len(FILE_SCHEME)].lower() == FILE_SCHEME else None


def file_path_problem(path: str) -> str | None:
    """Why `path` (what follows `file://`) cannot be read on the backend, or None when it is a plain path."""
    if not path.startswith("/"):
        return "a file:// URI names a path on the backend: write file:///path (nothing may come between file:// and /)"
    if _CONTROL.search(path):
        return "a file:// URI holds no control character"
    text = path.split("#", 1)[0].split("?", 1)[0]
    encoded_separator = False
    for decodings in range(_DECODINGS + 1):
        problem = _plain_path_problem(text)
        if problem is not None:
            return problem if decodings == 0 else f"{problem} (once percent-decoded)"
        encoded_separator = encoded_separator or _ENCODED_SEPARATOR.search(text) is not None
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    else:
        return f"the path of a file:// URI is percent-encoded more than {_DECODINGS} times over"
    if encoded_separator:  # after the rest, so that what a decoded path would do is what is said
        return (
            "the path of a file:// URI holds no percent-encoded / or \\ (%2F, %5C): servers differ on whether it "
            "ends a segment"
        )
    return None


def _plain_path_problem(path: str, normalized: bool = False) -> str | None:
    if path.startswith("//"):
        return "the path of a file:// URI starts with one /: // would begin another host"
    if "\\" in path:
        return "the path of a file:// URI holds no backslash"
    if _CONTROL.search(path):
        return "the path of a file:// URI holds no control character"
    if _IIS_ESCAPE.search(path):
        return "the path of a file:// URI holds no %u escape: IIS decodes %u002e as ."
    for segment in path.split("/"):
        bare = segment.split(";", 1)[0]  # Tomcat and Spring read `..;x` as `..`
        if bare in {".", ".."}:
            return "the path of a file:// URI has no . or .. segment: it stays under the backend's base path"
        if _DOTS_AND_SPACES.fullmatch(bare):
            return "the path of a file:// URI has no segment of dots and spaces only: some servers read it as .."
    folded = path if normalized else unicodedata.normalize("NFKC", path)
    if folded != path:
        if folded.count("/") != path.count("/"):
            return "the path of a file:// URI holds no character that NFKC normalization makes / (U+FF0F, fullwidth)"
        problem = _plain_path_problem(folded, normalized=True)
        if problem is not None:
            return f"{problem} (once NFKC-normalized, as some servers do: U+FF0E, a fullwidth full stop, becomes .)"
    return None


def file_template_problem(uri_template: str) -> str | None:
    """Why a `file://` URI template cannot be served, or None: its expansions must begin with a path, so the
    template writes the `/` after `file://` itself (`file://{+rest}` would let a client choose the host)."""
    path = file_path(uri_template)
    if path is None or path.startswith("/"):
        return None
    return "a file:// template starts with file:/// so that every URI it matches is a path on the backend"
