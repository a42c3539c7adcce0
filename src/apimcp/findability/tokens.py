"""Counting the tokens a model reads: OpenAI's o200k_base, from the `bpe-openai` package, which ships the
vocabulary (MIT; the `tokens` extra). Without it, reports give bytes only."""

from __future__ import annotations

import threading
import warnings
from typing import Any, Protocol

ENCODING = "o200k_base"
CHUNK_CHARS = 50_000


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class _Bpe:
    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding
        self.name = ENCODING

    def count(self, text: str) -> int:
        """Tokens of `text`, counted in pieces of `CHUNK_CHARS` at most, cut after a space or a comma (the encoder
        refuses long inputs): a cut may split what would be one token, so a long text counts a token or so more
        per piece than the model would."""
        total, start = 0, 0
        while start < len(text):
            end = min(start + CHUNK_CHARS, len(text))
            if end < len(text):
                cut = max(text.rfind(" ", start, end), text.rfind(",", start, end))
                end = cut + 1 if cut > start else end
            total += len(self._encoding.encode(text[start:end], disallowed_special=()))
            start = end
        return total


_lock = threading.Lock()
_counter: list[TokenCounter | None] = []


def counter() -> TokenCounter | None:
    """The process's token counter (loaded once: about a second), or None without the `tokens` extra."""
    with _lock:
        if not _counter:
            with warnings.catch_warnings():  # it reads its files with a deprecated importlib.resources call
                warnings.simplefilter("ignore", DeprecationWarning)
                try:
                    import bpe_openai  # noqa: PLC0415 - optional, and heavy to load (its tables: a second)
                except ImportError:
                    _counter.append(None)
                else:
                    encoding = bpe_openai.get_encoding(ENCODING)
                    encoding.encode("its tables load on first use")
                    _counter.append(_Bpe(encoding))
        return _counter[0]
