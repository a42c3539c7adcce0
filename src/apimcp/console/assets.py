"""The console's files, read once from the package: a fixed table, so nothing outside it can ever be served."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
}
INDEX = "index.html"


@dataclass(frozen=True, slots=True)
class Asset:
    path: str
    """Relative to the console's root, with `/` separators (`screens/plans.js`)."""
    content: bytes
    media_type: str
    etag: str


def _walk(folder: Traversable, prefix: str) -> list[tuple[str, Traversable]]:
    found: list[tuple[str, Traversable]] = []
    for entry in folder.iterdir():
        name = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.extend(_walk(entry, f"{name}/"))
        elif entry.is_file():
            found.append((name, entry))
    return found


def asset(path: str, content: bytes, media_type: str) -> Asset:
    return Asset(path, content, media_type, '"' + hashlib.sha256(content).hexdigest()[:32] + '"')


def load_assets() -> dict[str, Asset]:
    """Every file of `static/` with a known media type, keyed by its path; the index also under ``""``."""
    table: dict[str, Asset] = {}
    for path, entry in _walk(files("apimcp.console") / "static", ""):
        suffix = path[path.rfind(".") :] if "." in path else ""
        media_type = MEDIA_TYPES.get(suffix)
        if media_type is None:
            continue
        table[path] = asset(path, entry.read_bytes(), media_type)
    if INDEX not in table:
        raise RuntimeError("the console's static/index.html is missing from the package")
    table[""] = table[INDEX]
    return table
