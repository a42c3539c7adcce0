"""What the CLI tests of a module share: one live control plane (started once per module), and a CLI logged in
to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cli.invoking import log_in
from tests.deployment.harness import Deployment, deployment


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(tmp_path_factory.mktemp("cp") / "data") as running:
        yield running


@pytest.fixture
def logged_in(live: Deployment) -> Deployment:
    return log_in(live)
