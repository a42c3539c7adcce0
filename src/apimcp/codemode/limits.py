"""What one code-mode program may use (`APIMCP_CODE_MODE_*`); memory and stack are the scripts' own."""

from __future__ import annotations

from dataclasses import dataclass, replace

from apimcp.artifacts.scripting import ScriptLimits


@dataclass(frozen=True, slots=True)
class CodeModeLimits:
    """A program's wall-clock time (from the moment it is asked for), its tool calls, the size of its code and of
    each JSON text it hands over (its result, and the arguments of each call)."""

    timeout_seconds: float = 30.0
    max_calls: int = 100
    max_result_bytes: int = 2**20
    max_code_bytes: int = 100_000

    def __post_init__(self) -> None:
        if not self.timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive, not {self.timeout_seconds}")
        for name in ("max_calls", "max_result_bytes", "max_code_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")

    def for_runs(self, scripts: ScriptLimits) -> ScriptLimits:
        """The limits of a program's run in the scripts' runner: its memory and stack are theirs."""
        return replace(
            scripts,
            timeout_seconds=self.timeout_seconds,
            max_calls=self.max_calls,
            max_result_bytes=self.max_result_bytes,
        )


DEFAULT_LIMITS = CodeModeLimits()
