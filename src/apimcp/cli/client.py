"""A small synchronous client of the control plane's REST API, for the CLI.

Errors come back as `ApiError` with the problem details' message and field, so
the CLI can say what was wrong; a control plane that cannot be reached says so
with its URL.
"""

from __future__ import annotations

import json
import mimetypes
import secrets
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apimcp import __version__

TIMEOUT_SECONDS = 120


class ApiError(Exception):
    def __init__(self, message: str, status: int = 0, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


class ControlPlaneClient:
    def __init__(
        self, url: str, token: str | None, *, ca_file: str | None = None, organization: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.organization = organization
        """Where a person's token acts (the `X-Organization` header); None: the token's own organization."""
        self._tls = ssl.create_default_context(cafile=ca_file) if ca_file else None
        """The system's CAs, and `ca_file` (a private CA) when given."""

    def __repr__(self) -> str:
        return f"ControlPlaneClient({self.url!r})"

    def get(self, path: str, **query: str | None) -> Any:
        """The answer to GET `path`; a list answered a page at a time (`X-Total-Count` says more match) is read
        whole, page after page, unless the caller asked for a `limit` or an `offset`."""
        found, total = self._read("GET", self._with_query(path, query), None, None)
        if total is None or not isinstance(found, list) or {"limit", "offset"} & query.keys():
            return found
        while len(found) < total:
            page, _ = self._read("GET", self._with_query(path, {**query, "offset": str(len(found))}), None, None)
            if not isinstance(page, list) or not page:
                break
            found.extend(page)
        return found

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return self._call("POST", path, body=body or {})

    def patch(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._call("PATCH", path, body=body)

    def put(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._call("PUT", path, body=body)

    def delete(self, path: str) -> Any:
        return self._call("DELETE", path)

    def upload(self, path: str, file: Path, fields: Mapping[str, str | None], content: bytes | None = None) -> Any:
        """POST `file` (or `content` under its name) as multipart/form-data with the non-empty `fields`."""
        if content is None:
            try:
                content = file.read_bytes()
            except OSError as exc:
                raise ApiError(f"cannot read {file}: {exc.strerror}") from None
        boundary = "apimcp-" + secrets.token_hex(12)
        parts = []
        for name, value in fields.items():
            if value:
                parts.append(
                    f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
                )
        media = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        filename = file.name.replace('"', "")
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            f"Content-Type: {media}\r\n\r\n".encode()
            + content
            + b"\r\n"
        )
        parts.append(f"--{boundary}--\r\n".encode())
        return self._send("POST", path, b"".join(parts), f"multipart/form-data; boundary={boundary}")

    @staticmethod
    def _with_query(path: str, query: Mapping[str, str | None] | None) -> str:
        present = {k: v for k, v in (query or {}).items() if v is not None}
        return f"{path}?{urllib.parse.urlencode(present)}" if present else path

    def _call(self, method: str, path: str, *, query: Mapping[str, str | None] | None = None, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        return self._send(method, self._with_query(path, query), data, "application/json" if data is not None else None)

    def _send(self, method: str, path: str, data: bytes | None, content_type: str | None) -> Any:
        return self._read(method, path, data, content_type)[0]

    def get_slowly(self, path: str, seconds: float) -> Any:
        """The answer to GET `path`, which the control plane may take up to `seconds` to make (a report)."""
        return self._read("GET", path, None, None, seconds)[0]

    def _read(
        self, method: str, path: str, data: bytes | None, content_type: str | None, seconds: float = TIMEOUT_SECONDS
    ) -> tuple[Any, int | None]:
        """The answer's JSON, and the number of items matched when it is a page of a list (`X-Total-Count`)."""
        request = urllib.request.Request(self.url + "/api/v1" + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", f"apimcp-cli/{__version__}")
        if content_type:
            request.add_header("Content-Type", content_type)
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        if self.organization:
            request.add_header("X-Organization", self.organization)
        try:
            with urllib.request.urlopen(request, timeout=seconds, context=self._tls) as response:
                payload = response.read()
                total = response.headers.get("X-Total-Count")
        except urllib.error.HTTPError as exc:
            raise _problem(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(f"cannot reach the control plane at {self.url}: {reason}") from None
        counted = int(total) if total is not None and total.isdigit() else None
        try:
            return (json.loads(payload) if payload else None), counted
        except ValueError:  # a proxy's or a sign-in page's HTML, say
            raise ApiError(f"the answer of {self.url} is not JSON: is it an apimcp control plane?") from None


def _problem(error: urllib.error.HTTPError) -> ApiError:
    try:
        body = json.loads(error.read() or b"{}")
    except ValueError:
        body = {}
    detail = body.get("detail") if isinstance(body, dict) else None
    field = body.get("field") if isinstance(body, dict) else None
    if not isinstance(detail, str):
        detail = f"HTTP {error.code} {error.reason}"
    return ApiError(detail, error.code, field if isinstance(field, str) else None)
