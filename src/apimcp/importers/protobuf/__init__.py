"""Importing gRPC services: `.proto` files, binary descriptor sets, or server reflection of a live endpoint.

`.proto` files are compiled in-process (no protoc on the machine, no generated
code). The Service carries the descriptor set its operations need, from which
the gRPC backend builds its message classes.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from apimcp.catalog.model import ServerTemplate, Service
from apimcp.importers.errors import SpecError
from apimcp.importers.protobuf.compile import compile_protos, proto_name
from apimcp.importers.protobuf.descriptors import SourceIndex, build_pool, closure, parse_descriptor_set
from apimcp.importers.protobuf.operations import operations
from apimcp.importers.protobuf.reflection import internal_service, is_reflection_url, reflect
from apimcp.safety.fetch import Fetcher

__all__ = ["compile_protos", "import_protobuf", "looks_like_descriptor_set", "looks_like_protobuf"]

_VERSION = re.compile(r"^v\d+((alpha|beta)\d*)?$")
_STANDARD = ("grpc.health.",)
"""Services servers offer beside their API (the standard health service): imported when named, never
chosen for you."""
_PROTO_LINE = re.compile(
    rb"""^\s*(?:(?:syntax|edition)\s*=\s*["']|package\s+[\w.]+\s*;|import\s+(?:public\s+|weak\s+)?["']"""
    rb"""|(?:message|service|enum)\s+\w+\s*\{)""",
    re.MULTILINE,
)


def looks_like_protobuf(content: bytes) -> bool:
    """Whether `content` reads as .proto source (a syntax, package, import, message, service or enum line)."""
    if b"\0" in content[:4096]:
        return False
    return _PROTO_LINE.search(content[:65536]) is not None


def looks_like_descriptor_set(content: bytes) -> bool:
    """Whether `content` is a binary FileDescriptorSet holding at least one .proto file."""
    files = descriptor_pb2.FileDescriptorSet()
    try:
        files.ParseFromString(content)
    except DecodeError:
        return False
    return bool(files.file) and all(f.name.endswith(".proto") for f in files.file)


def import_protobuf(
    source: str,
    *,
    content: bytes | None = None,
    include_paths: Sequence[str] = (),
    extra_files: Mapping[str, bytes] | None = None,
    service: str | None = None,
    name: str | None = None,
    version: str | None = None,
    tool_prefix: str = "",
    timeout_seconds: float = 30.0,
    metadata: Sequence[tuple[str, str]] = (),
    fetcher: Fetcher | None = None,
) -> Service:
    """A gRPC service from `source`: a .proto file, a descriptor set file, or grpc(s)://host:port for reflection.

    With `content`, `source` only names it: .proto text (whose imports `extra_files` may supply, by import
    path) or a binary descriptor set. The service is the one the file declares, or the one `service` names.
    Reflection reaches only hosts `fetcher`'s policy allows (default: public addresses only) and receives at
    most its `limits.max_bytes`.
    """
    servers: tuple[ServerTemplate, ...] = ()
    if content is None and is_reflection_url(source):
        files, declared = reflect(source, timeout_seconds, metadata, fetcher)
        servers = (ServerTemplate(source),)
    else:
        data = content if content is not None else _read(source)
        if looks_like_descriptor_set(data):  # first: a descriptor set's source info may hold .proto-like lines
            files = parse_descriptor_set(data, source)
            declared = _declared_in_roots(files)
        elif looks_like_protobuf(data):
            files, main = _compile(source, data, content is not None, include_paths, extra_files or {})
            declared = [f"{_prefix(f.package)}{s.name}" for f in files.file if f.name == main for s in f.service]
        else:
            raise SpecError("neither .proto source nor a binary protobuf FileDescriptorSet", source=source)
    pool = build_pool(files, source)
    if service and not any(service in (s, s.rsplit(".", 1)[-1]) for s in declared):
        declared = _all_services(files, declared)  # a service named explicitly may live in an imported file
    chosen = pool.FindServiceByName(_choose(declared, service, source))
    package = chosen.file.package
    last = package.rsplit(".", 1)[-1]
    index = SourceIndex.of(files)
    return Service(
        name=name or chosen.full_name,
        version=version or (last if _VERSION.fullmatch(last) else "0"),
        operations=operations(chosen, index, tool_prefix),
        description=index.comments.get(chosen.full_name),
        servers=servers,
        source=source,
        kind="grpc",
        descriptors=closure(files, [chosen.file.name]),
    )


def _declared_in_roots(files: descriptor_pb2.FileDescriptorSet) -> list[str]:
    """Services of a descriptor set: those of the files nothing else imports (the files that were compiled, as
    opposed to their imports, e.g. google/longrunning), else all; the reflection service never."""
    imported = {d for f in files.file for d in f.dependency}
    every = [(f.name, f"{_prefix(f.package)}{s.name}") for f in files.file for s in f.service]
    every = [(file, name) for file, name in every if not internal_service(name)]
    roots = [name for file, name in every if file not in imported]
    return roots or [name for _, name in every]


def _all_services(files: descriptor_pb2.FileDescriptorSet, first: list[str]) -> list[str]:
    every = [f"{_prefix(f.package)}{s.name}" for f in files.file for s in f.service]
    return [*first, *(name for name in every if name not in first and not internal_service(name))]


def _prefix(package: str) -> str:
    return f"{package}." if package else ""


def _read(source: str) -> bytes:
    try:
        return Path(source).read_bytes()
    except FileNotFoundError as exc:
        raise SpecError("no such file", source=source) from exc
    except OSError as exc:
        raise SpecError(f"cannot be read ({exc.strerror or type(exc).__name__})", source=source) from exc


def _compile(
    source: str, data: bytes, uploaded: bool, include_paths: Sequence[str], extra_files: Mapping[str, bytes]
) -> tuple[descriptor_pb2.FileDescriptorSet, str]:
    """The compiled descriptor set, and the name protoc gave the main file."""
    if not uploaded and not extra_files:
        main, paths = proto_name(source, include_paths)
        return parse_descriptor_set(compile_protos([main], paths), source), main
    with tempfile.TemporaryDirectory(prefix="apimcp-proto-") as folder:
        main = _upload_name(source) if uploaded else PurePosixPath(Path(source).name).as_posix()
        _write(Path(folder), main, data)
        for path, text in extra_files.items():
            if path != main:
                _write(Path(folder), _checked(path, source), text)
        paths = [folder, *(str(Path(p).resolve()) for p in include_paths)]
        if not uploaded:
            paths.append(str(Path(source).resolve().parent))
        try:
            compiled = compile_protos([main], paths)
        except SpecError as exc:  # the scratch folder is ours, not the user's: keep it out of the message
            raise SpecError(exc.message.replace(folder + os.sep, "").replace(folder, "."), source=source) from None
        return parse_descriptor_set(compiled, source), main


def _upload_name(source: str) -> str:
    """The import path an uploaded main file gets: its own relative path when it has a clean one, else its name."""
    path = PurePosixPath(source.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        return path.name or "main.proto"
    return path.as_posix()


def _checked(path: str, source: str) -> str:
    clean = PurePosixPath(path.replace("\\", "/"))
    if clean.is_absolute() or ".." in clean.parts or not clean.parts or not clean.name.endswith(".proto"):
        raise SpecError(f"extra file {path!r} must be a relative .proto path such as common/types.proto", source=source)
    return clean.as_posix()


def _write(folder: Path, name: str, data: bytes) -> None:
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _standard(name: str) -> bool:
    return name.startswith(_STANDARD)


def _choose(declared: list[str], wanted: str | None, source: str) -> str:
    if wanted:
        matches = [s for s in declared if wanted in (s, s.rsplit(".", 1)[-1])]
        if len(matches) == 1:
            return matches[0]
        listing = ", ".join(declared) or "none"
        if matches:
            raise SpecError(
                f"several services are called {wanted!r} ({', '.join(matches)}): give the full name", source=source
            )
        raise SpecError(f"there is no service {wanted!r}; the services are: {listing}", source=source)
    own = [s for s in declared if not _standard(s)]
    if len(own) == 1:
        return own[0]
    if not own and declared:
        raise SpecError(
            f"offers no service of its own, only the standard {', '.join(declared)}: name it to import it",
            source=source,
        )
    if not own:
        raise SpecError("declares no service", source=source)
    raise SpecError(f"declares several services ({', '.join(own)}): choose one by name", source=source)
