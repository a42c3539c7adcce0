"""The console's files as the control plane serves them: a fixed table, strict headers, package data in the wheel."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from apimcp.console.assets import load_assets
from apimcp.console.headers import ConsoleHeaders, content_security_policy, gateway_origin, security_headers
from apimcp.console.routes import console_router
from apimcp.control.secret_kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "apimcp" / "console" / "static"


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(console_router(["https://gw.example.com:8443/mcp"]))
    return TestClient(app)


def test_the_index_is_served_with_a_strict_policy(client: TestClient) -> None:
    response = client.get("/console/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "connect-src 'self' https://gw.example.com:8443;" in policy
    assert "unsafe" not in policy
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_console_without_its_slash_redirects(client: TestClient) -> None:
    response = client.get("/console", follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == "/console/"


def test_modules_are_javascript_and_unchanged_files_are_not_sent_again(client: TestClient) -> None:
    response = client.get("/console/screens/tryit.js")
    assert response.headers["content-type"] == "text/javascript; charset=utf-8"
    again = client.get("/console/screens/tryit.js", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


@pytest.mark.parametrize("path", ["/console/", "/console/console.css", "/console/screens/tryit.js"])
def test_head_of_a_console_page_answers_as_get_without_a_body(client: TestClient, path: str) -> None:
    got = client.get(path)
    head = client.head(path)
    assert (head.status_code, head.content) == (200, b"")
    for name in ("content-type", "content-length", "etag", "content-security-policy", "x-frame-options"):
        assert head.headers[name] == got.headers[name], name
    assert client.head(path, headers={"If-None-Match": got.headers["etag"]}).status_code == 304
    redirected = client.head("/console", follow_redirects=False)
    assert (redirected.status_code, redirected.headers["location"]) == (308, "/console/")


@pytest.mark.parametrize("path", ["nope.js", "..%2F..%2Fpyproject.toml", "static/index.html", "screens/", "assets.py"])
def test_only_the_console_files_are_served(client: TestClient, path: str) -> None:
    response = client.get(f"/console/{path}")
    assert response.status_code == 404
    assert response.text.startswith("No console page at")
    assert "content-security-policy" in response.headers


def test_a_gateway_origin_that_could_widen_the_policy_is_refused() -> None:
    assert gateway_origin("https://GW.example.com/mcp/x") == "https://gw.example.com"
    for bad in ("ftp://gw.example.com", "https://gw.example.com;script-src *", "https://user:pw@gw", "gw.example.com"):
        with pytest.raises(ValueError, match="console gateway"):
            content_security_policy([bad])


def test_the_secret_kinds_the_console_offers_are_the_control_planes() -> None:
    shipped = json.loads((STATIC / "secret-kinds.json").read_text())
    assert shipped == {kind: {"fields": public, "values": sealed} for kind, (public, sealed) in KINDS.items()}


def test_no_script_builds_markup_from_text_or_runs_text_as_code() -> None:
    scripts = sorted(STATIC.rglob("*.js"))
    assert len(scripts) >= 10
    for script in scripts:
        text = script.read_text()
        for risky in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert risky not in text, f"{script.name} uses {risky}"
    html = (STATIC / "index.html").read_text()
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="main.js">']
    assert " on" not in re.sub(r"<noscript>.*?</noscript>", "", html, flags=re.S).split("<body>")[1].split(">")[0]


def test_the_named_gateways_are_served_for_the_page_to_default_to(client: TestClient) -> None:
    assert client.get("/console/gateways.json").json() == {"gateways": ["https://gw.example.com:8443"]}
    app = FastAPI()
    app.include_router(console_router())
    assert TestClient(app).get("/console/gateways.json").json() == {"gateways": []}


def test_every_shipped_file_is_in_the_table() -> None:
    table = load_assets()
    on_disk = {str(p.relative_to(STATIC)) for p in STATIC.rglob("*") if p.is_file()}
    assert on_disk == set(table) - {""}


def test_the_wheel_ships_the_console() -> None:
    """hatchling puts every file under the package in the wheel (checked by building it: `pip wheel .` lists
    apimcp/console/static/...); nothing in pyproject may leave the console's files out."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    assert build["targets"]["wheel"]["packages"] == ["src/apimcp"]
    assert "exclude" not in build and "exclude" not in build["targets"]["wheel"]
    assert STATIC.is_relative_to(ROOT / "src" / "apimcp")


def test_every_screen_has_a_link_and_every_link_a_screen() -> None:
    html = (STATIC / "index.html").read_text()
    links = re.findall(r'<a href="#/([a-z]+)">', html)
    main = (STATIC / "main.js").read_text()
    table = re.search(r"const SCREENS = \{([^}]*)\};", main)
    assert table is not None
    names = [entry.split(":")[0].strip() for entry in table.group(1).split(",")]
    assert links == names
    for name in ("access", "audit"):
        assert (STATIC / "screens" / f"{name}.js").is_file()


@pytest.mark.parametrize(("method", "path"), [("POST", "/console/"), ("PUT", "/console/x"), ("OPTIONS", "/console/")])
def test_answers_the_framework_makes_under_console_carry_its_headers_too(method: str, path: str) -> None:
    """The finding: a 405 (or the request limits' 431) under /console/ came without the console's headers."""
    app = FastAPI()
    app.include_router(console_router(["https://gw.example.com:8443/mcp"]))
    app.add_middleware(ConsoleHeaders, headers=security_headers(["https://gw.example.com:8443/mcp"]))
    response = TestClient(app).request(method, path)
    assert response.status_code == 405
    assert response.headers["content-security-policy"] == content_security_policy(["https://gw.example.com:8443"])
    assert response.headers["x-frame-options"] == "DENY" and response.headers["x-content-type-options"] == "nosniff"
    page = TestClient(app).get("/console/")
    assert [name for name, _ in page.headers.multi_items()].count("content-security-policy") == 1  # not twice
