"""Compiling `.proto` files in-process with the protoc bundled in grpcio-tools.

No protoc binary and no generated code: protoc writes a FileDescriptorSet (with
imports and source comments) to a temporary file, which is all the importer and
the backend need. protoc reports errors on file descriptor 2, so they are
captured by pointing that descriptor at a temporary file for the duration of the
call; a lock keeps two compilations (or two threads' stderr) from mixing.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

from apimcp.importers.errors import SpecError

# What protoc writes names a .proto file (`a.proto:3:1: ...`, `a.proto: File not found.`, `Import "a.proto" ...`).
_PROTOC_LINE = re.compile(r"\.proto\b")
_LOCK = threading.Lock()
_MAX_ERROR_CHARS = 4000


def well_known_types_dir() -> str:
    """grpcio-tools' copy of google/protobuf/*.proto (Timestamp, Duration, Struct...)."""
    return str(resources.files("grpc_tools") / "_proto")


def proto_name(path: str, include_paths: Sequence[str]) -> tuple[str, list[str]]:
    """The name protoc knows `path` by (relative to the first include path holding it), and the include
    paths to use: the given ones, then the file's own folder when no include path holds it."""
    file = Path(path).resolve()
    paths = [str(Path(p).resolve()) for p in include_paths]
    for include in paths:
        if file.is_relative_to(include):
            return file.relative_to(include).as_posix(), paths
    return file.name, [*paths, str(file.parent)]


def compile_protos(files: Sequence[str], include_paths: Sequence[str]) -> bytes:
    """A serialized FileDescriptorSet of `files` and everything they import, with source info (comments). The
    well-known types are always importable.

    `files` are names relative to an include path (`shop/v1/shop.proto`), or paths on disk inside one, which
    protoc names after the first include path holding them: list the root of the import tree before the
    file's own folder so that the file keeps the name its importers use."""
    if not files:
        raise SpecError("no .proto file to compile")
    with tempfile.TemporaryDirectory(prefix="apimcp-protoc-") as scratch:
        out = Path(scratch) / "descriptors.pb"
        errors = Path(scratch) / "errors.txt"
        args = ["protoc", *(f"--proto_path={p}" for p in include_paths), f"--proto_path={well_known_types_dir()}"]
        args += [f"--descriptor_set_out={out}", "--include_imports", "--include_source_info", *files]
        with _LOCK:
            status = _run_capturing_stderr(args, errors)
        text = _protoc_lines(errors.read_bytes())
        if status != 0 or not out.exists():
            source = files[0] if len(files) == 1 else ", ".join(files)
            message = _tidy(text, scratch) or f"protoc failed with status {status}"
            raise SpecError(f"the .proto files do not compile:\n{message}", source=source)
        return out.read_bytes()


def _run_capturing_stderr(args: list[str], errors: Path) -> int:
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with errors.open("wb") as sink:
            os.dup2(sink.fileno(), 2)
            try:
                return int(protoc.main(args))
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _protoc_lines(captured: bytes) -> str:
    """protoc's messages among what fd 2 received while it ran. The redirection is process-wide, so other
    threads may have written there too (logs of other requests): their lines go back to the real stderr,
    never into an error message."""
    mine: list[str] = []
    others: list[str] = []
    for line in captured.decode("utf-8", "replace").splitlines(keepends=True):
        (mine if _PROTOC_LINE.search(line) else others).append(line)
    if others:
        os.write(2, "".join(others).encode())
    return "".join(mine).strip()


def _tidy(text: str, scratch: str) -> str:
    """protoc's messages, without the temporary folder's name, shortened when endless."""
    text = text.replace(scratch + os.sep, "")
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "…"
