"""What huge requests cost a running `apimcp control-plane`, measured from /proc.

The finding: the control plane read a 300 MB body before checking the token
(+840 MB RSS). Now a body, a chunked body, an upload and a header of hundreds of
megabytes are refused early and the process's peak memory barely moves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import Background, free_port
from tests.support.raw_http import chunked, exchange, request_head

MiB = 1024 * 1024


def _peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


def _megabytes(count: int) -> Iterator[bytes]:
    piece = b"x" * (256 * 1024)
    for _ in range(count * 4):
        yield piece


def test_a_300_mb_body_costs_the_control_plane_no_memory(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "data"
    plane = Background(tmp_path / "plane.log", "control-plane", "--port", str(port), "--data-dir", str(data))
    try:
        plane.wait_for_http(f"http://127.0.0.1:{port}/api/v1/openapi.json")
        token = (data / "bootstrap-token").read_text().strip()
        before = _peak_rss_mib(plane.process.pid)
        json_head = {"Content-Type": "application/json"}

        declared = request_head("POST", "/api/v1/secrets", {**json_head, "Content-Length": str(300 * MiB)})
        assert exchange("127.0.0.1", port, declared, _megabytes(300)).status == 413

        streamed = request_head("POST", "/api/v1/tokens", {**json_head, "Transfer-Encoding": "chunked",
                                                           "Authorization": f"Bearer {token}"})  # fmt: skip
        assert exchange("127.0.0.1", port, streamed, chunked(_megabytes(300))).status == 413

        boundary = "b0undary"
        upload = request_head("POST", "/api/v1/services", {
            "Content-Type": f"multipart/form-data; boundary={boundary}", "Transfer-Encoding": "chunked",
            "Authorization": f"Bearer {token}"})  # fmt: skip
        opening = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.yaml"\r\n'
                   "Content-Type: application/yaml\r\n\r\n").encode()  # fmt: skip
        assert exchange("127.0.0.1", port, upload, chunked([opening, *_megabytes(300)])).status == 413

        header = b"GET /api/v1/organization HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
        assert exchange("127.0.0.1", port, header, _megabytes(100)).status == 431

        growth = _peak_rss_mib(plane.process.pid) - before
        assert growth < 40, f"peak RSS grew by {growth:.0f} MiB"
        healthy = exchange("127.0.0.1", port, request_head("GET", "/api/v1/organization",
                                                           {"Authorization": f"Bearer {token}"}))  # fmt: skip
        assert healthy.status == 200
    finally:
        plane.stop()
    assert "Traceback" not in plane.output()
