"""What shaping large values off the event loop may cost (`APIMCP_SHAPING_*`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

DEFAULT_LARGE_FROM_BYTES: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class ShapingLimits:
    large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES
    """JSON answers and script results at least this large are never parsed on the event loop: they travel as
    bytes, and what needs their value runs in a shaping process. Smaller ones (a few ms to parse) are parsed
    where they arrive, as before."""
    workers: int = 2
    """Shaping processes; each runs one job at a time."""
    max_waiting: int = 32
    """Jobs waiting for a process; more are refused at once (the call gets an error result saying so)."""
    job_seconds: float = 30.0
    """A job's time, waiting included; past it the call gets an error result and a running job's process is
    killed (and replaced for the next job)."""

    def __post_init__(self) -> None:
        if self.large_from_bytes < 1 or self.workers < 1:
            raise ValueError("large_from_bytes and workers must be at least 1")
        if self.max_waiting < 0:
            raise ValueError(f"max_waiting must not be negative, not {self.max_waiting}")
        if not self.job_seconds > 0:
            raise ValueError(f"job_seconds must be positive, not {self.job_seconds}")
