"""Jobs the shaping tests send to the pool's processes (importable there: the child gets this process's path)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any


def echo(args: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    return {"args": args, "pid": os.getpid()}, [blob[::-1] for blob in blobs]


def sleep(args: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    time.sleep(float(args["seconds"]))
    return {}, []


def die(args: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def fail(args: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    raise KeyError("a secret key from the content")
