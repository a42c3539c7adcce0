"""Reading a file that holds key material: a regular file that only its owner may read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_KEY_FILE_BYTES = 64 * 1024


def read_private(path: Path, what: str) -> bytes:
    """The content of `path` (at most 64 KiB); ValueError naming `what` when it is not a regular file or when,
    on POSIX, its group or others may read it. OSError propagates."""
    with path.open("rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{what} {path} is not a regular file")
        if os.name == "posix" and info.st_mode & 0o077:
            raise ValueError(
                f"{what} {path} has mode {stat.S_IMODE(info.st_mode):04o}: group and others must have no access "
                f"to it (chmod 600 {path})"
            )
        return file.read(MAX_KEY_FILE_BYTES)
