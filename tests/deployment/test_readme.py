"""The README's lifecycle walkthrough, run command by command (ports moved to free ones)."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

from tests.deployment.harness import wait_until
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
