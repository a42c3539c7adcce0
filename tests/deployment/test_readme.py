"""The README's lifecycle walkthrough, run command by command (ports moved to free ones)."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from apimcp.cli.main import app
from tests.deployment.harness import wait_until
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, cli, free_port

README = Path(__file__).parents[2] / "README.md"
MARKER = "<!-- walkthrough:"


def walkthrough() -> list[list[str]]:
    """The commands of the README's walkthrough block, as argument lists without the program."""
    text = README.read_text()
    block = text[text.index(MARKER) :]
    block = block[block.index("```bash\n") + 8 :]
    block = block[: block.index("```")]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith(".venv/bin/apimcp ")]


def _succeeds(command: list[str]) -> bool:
    return cli(*command).returncode == 0


def test_the_readme_walkthrough_works(tmp_path: Path) -> None:
    commands = walkthrough()
    assert [c[0] for c in commands] == [
        "serve", "demo-api", "import", "plan", "expo", "tools", "call", "plan",
        "attach", "attach", "attach", "prompt", "read", "call",
    ]  # fmt: skip
    gateway_port, api_port = str(free_port()), str(free_port())

    def moved(argument: str) -> str:
        return re.sub(r":8080\b", f":{gateway_port}", re.sub(r":9000\b", f":{api_port}", argument))

    serve, demo_api, *steps = [[moved(a).replace("9000", api_port) for a in command] for command in commands]
    # the CLI context that `serve` saves on its first start is what the other commands use
    server = Background(tmp_path / "serve.log", *serve, "--port", gateway_port)
    api = Background(tmp_path / "api.log", *demo_api)
    try:
        server.wait_for_http(f"http://127.0.0.1:{gateway_port}/healthz")
        api.wait_for_http(f"http://127.0.0.1:{api_port}/openapi.yaml")
        outputs = []
        first_use = steps.index(next(step for step in steps if step[0] == "prompt"))
        for number, step in enumerate(steps):
            if number == first_use:  # until the attachments reach the gateway
                wait_until(functools.partial(_succeeds, step))
            done = cli(*step)
            assert done.returncode == 0, (step, done.stdout, done.stderr)
            outputs.append(done.stdout)
        imported, planned, exposed, tools, called, _, *attached, prompted, read, scripted = outputs
        assert "Imported service bookshelf 1.0.0 (11 operations)" in imported
        assert "Created plan readers" in planned
        assert f"http://localhost:{gateway_port}/mcp/default/library" in exposed
        assert "get_book" in tools and "get_cover" in tools and "add_book" not in tools  # GET * only
        assert '"title": "Pride and Prejudice"' in called
        assert [line.split()[0] for line in attached] == ["Attached"] * 3
        assert prompted.startswith("[user] ") and "feels curious today" in prompted
        assert '"title": "Pride and Prejudice"' in read
        assert '"book"' in scripted and '"reviews"' in scripted
        endpoint = f"http://localhost:{gateway_port}/mcp/default/library"
        wait_until(lambda: "get_cover" not in cli("tools", endpoint).stdout)
    finally:
        api.stop()
        server.stop()
    assert "First start: organization 'default' created" in server.output()


PETSTORE = """
openapi: 3.0.3
info: {title: Petstore, version: "1.0"}
servers: [{url: "https://petstore.example.com/v1"}]
paths:
  /pets:
    get: {operationId: listPets, tags: [pets], responses: {"200": {description: the pets}}}
    post: {operationId: createPet, tags: [pets], responses: {"201": {description: created}}}
  /pets/{petId}:
    parameters: [{name: petId, in: path, required: true, schema: {type: integer}}]
    get: {operationId: showPetById, tags: [pets], responses: {"200": {description: a pet}}}
    delete: {operationId: deletePet, tags: [pets], responses: {"204": {description: deleted}}}
  /store/inventory:
    get: {operationId: getInventory, tags: [store], responses: {"200": {description: counts}}}
"""


def example_configuration(folder: Path) -> tuple[Path, list[str]]:
    """The README's configuration file, beside a petstore description of the test's own; the variables it names."""
    text = README.read_text()
    block = text[text.index("(`apimcp serve gateway.yaml`") :]
    block = block[block.index("```yaml\n") + 8 :]
    block = block[: block.index("```")]
    (folder / "petstore.yaml").write_text(PETSTORE)
    (folder / "gateway.yaml").write_text(block)
    return folder / "gateway.yaml", re.findall(r"\{env: ([A-Z_]+)\}", block)


SECRET = "a secret of sixteen bytes or more"


def _where(config: Path, variable: str) -> str:
    """`file:line:column:` of the `{env: VARIABLE}` that names `variable`."""
    for number, line in enumerate(config.read_text().splitlines(), 1):
        if f"{{env: {variable}}}" in line:
            return f"{config}:{number}:{line.index(f'{{env: {variable}}}') + 1}:"
    raise AssertionError(f"{variable} is not in {config}")


def test_the_readme_example_configuration_serves_as_written(tmp_path: Path) -> None:
    """Finding: its `tool_prefix: pets_` with `exclude: [delete_pet]` was refused ("select no operation")."""
    config, variables = example_configuration(tmp_path)
    assert variables == ["PETSTORE_TOKEN", "REQUEST_STATE_KEY"]
    port = free_port()
    server = Background(
        tmp_path / "serve.log", "serve", str(config), "--port", str(port), env=dict.fromkeys(variables, SECRET)
    )
    try:
        server.wait_for_http(f"http://127.0.0.1:{port}/healthz")
        with McpHttp(f"http://127.0.0.1:{port}/mcp/pets") as mcp:
            listed = mcp.modern("tools/list").result
    finally:
        server.stop()
    assert sorted(tool["name"] for tool in listed["tools"]) == [
        "pets_get_inventory",
        "pets_list_pets",
        "pets_show_pet_by_id",
    ]
    assert (listed["ttlMs"], listed["cacheScope"]) == (60000, "public")


def test_the_readme_example_configuration_without_its_variables_is_a_clean_error(tmp_path: Path) -> None:
    """Finding: with APIMCP_STATE_KEY (as it was named) unset, `apimcp serve gateway.yaml` ended in a traceback."""
    config, variables = example_configuration(tmp_path)
    for unset in ([variables[1]], variables):
        given = {name: None if name in unset else SECRET for name in variables}
        done = CliRunner().invoke(app, ["serve", str(config), "--port", str(free_port())], env=given)
        assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output  # no traceback
        lines = done.output.removeprefix("error: ").strip().splitlines()
        expected = {
            "PETSTORE_TOKEN": f"{_where(config, 'PETSTORE_TOKEN')} services.petstore.credentials.token: ",
            "REQUEST_STATE_KEY": f"{_where(config, 'REQUEST_STATE_KEY')} server.request_state_keys[0]: ",
        }
        expected = {name: f"{start}the environment variable {name} is not set" for name, start in expected.items()}
        assert lines == [expected[name] for name in unset]


def python_example() -> str:
    """The README's Python example, the block after its marker."""
    text = README.read_text()
    block = text[text.index("<!-- python example:") :]
    block = block[block.index("```python\n") + 10 :]
    return block[: block.index("```")]


def test_the_readme_python_example_finds_what_the_demo_holds(tmp_path: Path) -> None:
    """Finding: it searched the demo's books for "dune", which they do not hold (an empty result)."""
    port = free_port()
    demo = Background(tmp_path / "demo.log", "demo", "--port", str(port))
    printed: list[tuple[Any, ...]] = []
    try:
        demo.wait_for_http(f"http://127.0.0.1:{port}/healthz")
        code = python_example().replace("localhost:8080", f"localhost:{port}")
        exec(compile(code, "README.md", "exec"), {"print": lambda *values: printed.append(values)})
    finally:
        demo.stop()
    assert len(printed) == 10  # five lines in each era
    for values in printed:
        for value in values:
            assert value, printed
            if isinstance(value, dict):  # a tool's result: whatever it lists holds something
                assert all(item for item in value.values() if isinstance(item, list)), value
    _, tools = printed[0]
    assert {"list_books", "book_with_reviews"} <= set(tools)
    assert [book["author"] for book in printed[1][0]["books"]] == ["Jane Austen", "Jane Austen"]
