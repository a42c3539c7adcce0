"""Descriptor sets: loading them into a private pool, and what the pool does not keep.

A private DescriptorPool resolves types (maps, oneofs, json names) but drops
source comments and leaves unregistered options, such as
`google.api.field_behavior`, as unknown fields. Both are read here from the
FileDescriptorProtos themselves and indexed by full name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from apimcp.importers.errors import SpecError

FIELD_BEHAVIOR = 1052
"""`google.api.field_behavior`, an extension of FieldOptions (google/api/field_behavior.proto)."""
FIELD_BEHAVIOR_REQUIRED = 2

# Paths inside a FileDescriptorProto, as SourceCodeInfo numbers them (descriptor.proto field numbers).
_FILE_MESSAGE, _FILE_ENUM, _FILE_SERVICE = 4, 5, 6
_MESSAGE_FIELD, _MESSAGE_NESTED, _MESSAGE_ENUM = 2, 3, 4
_ENUM_VALUE, _SERVICE_METHOD = 2, 2


def parse_descriptor_set(content: bytes, source: str) -> descriptor_pb2.FileDescriptorSet:
    files = descriptor_pb2.FileDescriptorSet()
    try:
        files.ParseFromString(content)
    except DecodeError as exc:
        raise SpecError(f"not a protobuf FileDescriptorSet ({exc})", source=source) from exc
    if not files.file or any(not f.name for f in files.file):
        raise SpecError("not a protobuf FileDescriptorSet (it holds no named file)", source=source)
    return files


def in_dependency_order(
    files: Iterable[descriptor_pb2.FileDescriptorProto],
) -> list[descriptor_pb2.FileDescriptorProto]:
    """Files sorted so that each comes after its imports (a pool only accepts them in that order)."""
    by_name = {f.name: f for f in files}
    ordered: list[descriptor_pb2.FileDescriptorProto] = []
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in done or name not in by_name or name in trail:
            return
        for dependency in by_name[name].dependency:
            visit(dependency, (*trail, name))
        done.add(name)
        ordered.append(by_name[name])

    for name in by_name:
        visit(name, ())
    return ordered


def build_pool(files: descriptor_pb2.FileDescriptorSet, source: str) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    names = {f.name for f in files.file}
    for file in in_dependency_order(files.file):
        missing = [d for d in file.dependency if d not in names]
        if missing:
            raise SpecError(f"{file.name} imports {', '.join(missing)}, which the descriptor set lacks", source=source)
        try:
            pool.Add(file)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{file.name} cannot be loaded: {exc}", source=source) from exc
    return pool


def closure(files: descriptor_pb2.FileDescriptorSet, roots: Sequence[str]) -> bytes:
    """A serialized FileDescriptorSet of the files named in `roots` and all they import, imports first, without
    source info: calls need the types, not the comments (which can be most of the size)."""
    by_name = {f.name: f for f in files.file}
    wanted: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name not in wanted and name in by_name:
            wanted.add(name)
            pending.extend(by_name[name].dependency)
    subset = descriptor_pb2.FileDescriptorSet()
    subset.file.extend(f for f in in_dependency_order(files.file) if f.name in wanted)
    for file in subset.file:
        file.ClearField("source_code_info")
    return subset.SerializeToString()


@dataclass(slots=True)
class SourceIndex:
    """Comments and field behaviors by full name (`pkg.Message`, `pkg.Message.field`, `pkg.Service.Method`,
    `pkg.Enum.VALUE`)."""

    comments: dict[str, str] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    """Fields marked `(google.api.field_behavior) = REQUIRED`."""
    proto3_optional: set[str] = field(default_factory=set)
    """Fields declared `optional` in proto3 (each alone in a synthetic oneof)."""

    @classmethod
    def of(cls, files: descriptor_pb2.FileDescriptorSet) -> SourceIndex:
        index = cls()
        for file in files.file:
            index._add_file(file)
        return index

    def _add_file(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        texts: dict[tuple[int, ...], str] = {}
        for location in file.source_code_info.location:
            text = _comment(location.leading_comments) or _comment(location.trailing_comments)
            if text:
                texts[tuple(location.path)] = text
        prefix = f"{file.package}." if file.package else ""
        names: list[tuple[str, tuple[int, ...]]] = []
        for i, message in enumerate(file.message_type):
            self._add_message(message, prefix, (_FILE_MESSAGE, i), names)
        for i, enum in enumerate(file.enum_type):
            _add_enum(enum, prefix, (_FILE_ENUM, i), names)
        for i, service in enumerate(file.service):
            names.append((prefix + service.name, (_FILE_SERVICE, i)))
            for j, method in enumerate(service.method):
                names.append((f"{prefix}{service.name}.{method.name}", (_FILE_SERVICE, i, _SERVICE_METHOD, j)))
        for name, path in names:
            if path in texts:
                self.comments[name] = texts[path]

    def _add_message(
        self,
        message: descriptor_pb2.DescriptorProto,
        prefix: str,
        path: tuple[int, ...],
        names: list[tuple[str, tuple[int, ...]]],
    ) -> None:
        full = prefix + message.name
        names.append((full, path))
        for i, item in enumerate(message.field):
            names.append((f"{full}.{item.name}", (*path, _MESSAGE_FIELD, i)))
            if FIELD_BEHAVIOR_REQUIRED in _varints(item.options.SerializeToString(), FIELD_BEHAVIOR):
                self.required.add(f"{full}.{item.name}")
            if item.proto3_optional:
                self.proto3_optional.add(f"{full}.{item.name}")
        for i, nested in enumerate(message.nested_type):
            self._add_message(nested, full + ".", (*path, _MESSAGE_NESTED, i), names)
        for i, enum in enumerate(message.enum_type):
            _add_enum(enum, full + ".", (*path, _MESSAGE_ENUM, i), names)


def _add_enum(
    enum: descriptor_pb2.EnumDescriptorProto,
    prefix: str,
    path: tuple[int, ...],
    names: list[tuple[str, tuple[int, ...]]],
) -> None:
    full = prefix + enum.name
    names.append((full, path))
    names.extend((f"{full}.{value.name}", (*path, _ENUM_VALUE, i)) for i, value in enumerate(enum.value))


def _comment(text: str) -> str:
    lines = [line[1:] if line.startswith(" ") else line for line in text.strip("\n").split("\n")]
    return "\n".join(line.rstrip() for line in lines).strip()


def _varints(data: bytes, number: int) -> list[int]:
    """The values of varint field `number` in serialized message `data`, packed or not (other fields skipped)."""
    found: list[int] = []
    position = 0
    try:
        while position < len(data):
            key, position = _varint(data, position)
            wire_type, field_number = key & 7, key >> 3
            if wire_type == 0:
                value, position = _varint(data, position)
                if field_number == number:
                    found.append(value)
            elif wire_type == 2:
                length, position = _varint(data, position)
                end = position + length
                if field_number == number:
                    while position < end:
                        value, position = _varint(data, position)
                        found.append(value)
                position = end
            elif wire_type == 1:
                position += 8
            elif wire_type == 5:
                position += 4
            else:
                return found  # groups never carry options worth reading here
    except IndexError:
        pass
    return found


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
