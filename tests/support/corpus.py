"""Where the shared corpus of real API descriptions lives (outside this repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path | None:
    candidates = [os.environ.get("APIMCP_CORPUS"), _REPO.parent / "shared" / "corpus", "/work/shared/corpus"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def corpus_path(*parts: str) -> Path:
    """A path inside the corpus; the test is skipped, saying why, when the corpus is absent."""
    base = corpus_dir()
    if base is None:
        pytest.skip("the API corpus is not here: set APIMCP_CORPUS to its folder (shared/corpus)")
    return base.joinpath(*parts)
