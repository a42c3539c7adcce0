"""The MCP revisions apimcp speaks, and every fact that differs between them.

Revisions are an enumerated set, not an ordered scalar: an unknown string is
never "newer" than a known one. Each revision carries the facts the engine and
the dialect functions branch on, so that version checks read as feature checks
(`revision.audio_content`) rather than date comparisons scattered in the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Era(Enum):
    """How a client establishes context with the server."""

    SESSION = "session"  # initialize handshake + MCP-Session-Id (2024-11-05 ... 2025-11-25)
    STATELESS = "stateless"  # per-request _meta envelope, server/discover (2026-07-28)


@dataclass(frozen=True, slots=True)
class Revision:
    """One protocol revision and the wire features it defines."""

    version: str
    era: Era
    rank: int
    accepts_batches: bool
    audio_content: bool
    tool_annotations: bool
    structured_output: bool
    """structuredContent, outputSchema, title fields, resource links and elicitation."""
    icons: bool
    url_elicitation: bool
    """URL-mode elicitation (and, in the session era, the -32042 error)."""
    any_structured_content: bool
    """structuredContent may be any JSON value and outputSchema any schema."""
    progress_message: bool
    completions_capability: bool
    resource_not_found_code: int

    def at_least(self, other: Revision) -> bool:
        return self.rank >= other.rank

    @property
    def resumable_streams(self) -> bool:
        """SSE event ids and Last-Event-ID resumption (session revisions from 2025-03-26 on)."""
        return self.era is Era.SESSION and self.rank >= 1

    @property
    def tasks(self) -> bool:
        """2025-11-25 experimental tasks: the `task` param of tools/call and the tasks/* methods."""
        return self.era is Era.SESSION and self.rank >= 3

    def __str__(self) -> str:
        return self.version


V2024_11_05 = Revision(
    "2024-11-05", Era.SESSION, 0, accepts_batches=False, audio_content=False, tool_annotations=False,
    structured_output=False, icons=False, url_elicitation=False, any_structured_content=False,
    progress_message=False, completions_capability=False, resource_not_found_code=-32002,
)  # fmt: skip
V2025_03_26 = Revision(
    "2025-03-26", Era.SESSION, 1, accepts_batches=True, audio_content=True, tool_annotations=True,
    structured_output=False, icons=False, url_elicitation=False, any_structured_content=False,
    progress_message=True, completions_capability=True, resource_not_found_code=-32002,
)  # fmt: skip
V2025_06_18 = Revision(
    "2025-06-18", Era.SESSION, 2, accepts_batches=False, audio_content=True, tool_annotations=True,
    structured_output=True, icons=False, url_elicitation=False, any_structured_content=False,
    progress_message=True, completions_capability=True, resource_not_found_code=-32002,
)  # fmt: skip
V2025_11_25 = Revision(
    "2025-11-25", Era.SESSION, 3, accepts_batches=False, audio_content=True, tool_annotations=True,
    structured_output=True, icons=True, url_elicitation=True, any_structured_content=False,
    progress_message=True, completions_capability=True, resource_not_found_code=-32002,
)  # fmt: skip
V2026_07_28 = Revision(
    "2026-07-28", Era.STATELESS, 4, accepts_batches=False, audio_content=True, tool_annotations=True,
    structured_output=True, icons=True, url_elicitation=True, any_structured_content=True,
    progress_message=True, completions_capability=True, resource_not_found_code=-32602,
)  # fmt: skip

ALL_REVISIONS: tuple[Revision, ...] = (V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28)
SESSION_REVISIONS: tuple[Revision, ...] = tuple(r for r in ALL_REVISIONS if r.era is Era.SESSION)
STATELESS_REVISIONS: tuple[Revision, ...] = tuple(r for r in ALL_REVISIONS if r.era is Era.STATELESS)
LATEST_SESSION_REVISION = SESSION_REVISIONS[-1]
LATEST_REVISION = ALL_REVISIONS[-1]

# A session-era request without MCP-Protocol-Version predates the header (2025-06-18).
ASSUMED_REVISION_WITHOUT_HEADER = V2025_03_26

_BY_VERSION = {r.version: r for r in ALL_REVISIONS}


def find_revision(version: object) -> Revision | None:
    """The revision named by `version`, or None when it is not one apimcp speaks."""
    if isinstance(version, str):
        return _BY_VERSION.get(version)
    return None


def supported_versions() -> list[str]:
    """Every version string apimcp accepts, newest first (as advertised to clients)."""
    return [r.version for r in reversed(ALL_REVISIONS)]
