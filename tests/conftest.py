import gc
from collections.abc import Iterator

import pytest

from apimcp.telemetry import OFF, install


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _private_homes(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's apimcp data or CLI context (subprocesses inherit this too)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("APIMCP_HOME", str(home / "data"))
    monkeypatch.setenv("APIMCP_CONFIG", str(home / "config" / "context.json"))
    for variable in (
        "APIMCP_URL",
        "APIMCP_TOKEN",
        "APIMCP_SECRET_KEYS",
        "APIMCP_DATABASE_URL",
        "APIMCP_ADMIN_TOKEN",
        "APIMCP_SSO_ISSUER",
        "APIMCP_SSO_CLIENT_ID",
        "APIMCP_SSO_CLIENT_SECRET",
        "APIMCP_SSO_REDIRECT_URI",
    ):
        monkeypatch.delenv(variable, raising=False)


_COLLECTOR_THRESHOLDS = gc.get_threshold()


@pytest.fixture(autouse=True)
def _collector_thresholds_after_each_test() -> Iterator[None]:
    """A server run in-process settles memory and raises the collector's thresholds (`servers.lifecycle`); the
    tests after it run with the interpreter's own."""
    yield
    gc.set_threshold(*_COLLECTOR_THRESHOLDS)


@pytest.fixture(autouse=True)
def _telemetry_off_after_each_test() -> Iterator[None]:
    """A server command run in-process installs the process's telemetry; no test leaves it to the next."""
    yield
    install(OFF)
