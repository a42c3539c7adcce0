"""A configuration file's artifact files: checked before serving starts, merged first listed first."""

from __future__ import annotations

from pathlib import Path

import pytest

from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.declared import snapshot_of
from apimcp.gateway.plan import plan_gateway
from tests.control.factories import prompts
from tests.gateway.conftest import ECHO_SPEC

CUSTOM_TOOL = """
apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {name: Echo API, version: "2.1"}
customTools:
  fetch_it:
    description: calls an operation the service lacks
    input: {type: object, properties: {id: {type: string}}}
    tool: no_such_operation
    arguments: {id: "${id}"}
"""


def _plan(tmp_path: Path, *files: str) -> dict[str, object]:
    listed = ", ".join(files)
    text = f"services:\n  echo:\n    openapi: {ECHO_SPEC}\n    backend: http://127.0.0.1:1\n    artifacts: [{listed}]\n"
    return snapshot_of(plan_gateway(parse_config(text, "gateway.yaml", tmp_path)))


def test_files_are_merged_in_the_order_listed_and_the_first_wins(tmp_path: Path) -> None:
    (tmp_path / "first.yaml").write_bytes(prompts("Echo API", "2.1", "hello", "first_only", result="from first"))
    (tmp_path / "second.yaml").write_bytes(prompts("Echo API", "2.1", "hello", result="from second"))
    [exposition] = _plan(tmp_path, "first.yaml", "second.yaml")["expositions"]  # type: ignore[index]
    artifacts = exposition["members"][0]["artifacts"]
    assert [(a["name"], a["kind"]) for a in artifacts] == [("first.yaml", "Prompts"), ("second.yaml", "Prompts")]
    assert artifacts[0]["document"]["prompts"]["hello"]["result"] == "from first"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (CUSTOM_TOOL, "services.echo.artifacts[0]: /customTools/fetch_it/tool: 'no_such_operation' is no operation"),
        (prompts("Other API", "1").decode(), "services.echo.artifacts[0]: /service: the file is for Other API 1"),
        ("kind: Workflows\n", "services.echo.artifacts[0]: /kind:"),
        ("apiVersion: [", "services.echo.artifacts[0]: (document): bad.yaml: not valid"),
    ],
)
def test_a_file_that_does_not_fit_stops_the_configuration_saying_where(
    tmp_path: Path, content: str, expected: str
) -> None:
    (tmp_path / "bad.yaml").write_text(content)
    with pytest.raises(ConfigError) as refused:
        _plan(tmp_path, "bad.yaml")
    assert str(refused.value).startswith("gateway.yaml:")  # the line of the file in `artifacts:`
    assert expected in str(refused.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"services\.echo\.artifacts\[0\]: .*nowhere\.yaml: could not read it"):
        _plan(tmp_path, "nowhere.yaml")
