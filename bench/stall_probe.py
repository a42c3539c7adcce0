"""Does one client's worst input stall everyone else? A trivial call's latency, alone and beside an attacker.

For each attack scenario (`ATTACKS`), one `apimcp serve` (CPU 0) serves two expositions of
`bench/item_api.yaml`: `plain` (`get_item` answering the small item) and the scenario's own service,
with its artifacts, its backend answer (`bench/answers_backend.py`, CPU 1) and its credentials. Then:

1. the victim: `tools/call get_item` of `plain`, sent at a fixed pace (`--interval` ms) whatever the
   answers do, each latency measured from the moment it was due (a stall delays every call due while it
   lasts, not one), for `--duration` seconds alone, then as long again while
2. the attacker, `bench/script_callers.py` in another process on CPU 1 (`--callers` clients, each calling
   the scenario's request again as soon as it is answered), hammers the gateway.

It prints the victim's p50, p99 and max, alone and beside each attacker, the attacker's calls, and the
gateway's peak resident memory. The issue's goal: the trivial call's p99 stays under 100 ms while the
worst input the gateway accepts runs. A scenario whose configuration the gateway refuses (an artifact
refused when read) says so: its input cannot be used.

    python -m bench.stall_probe [--duration 5] [--rounds 1] [--only NAME ...] [--baseline DIR]

`--baseline DIR` runs every scenario also with the gateway of another checkout (its `src/` and `.venv`),
e.g. the commit before a fix, right before this checkout's in every round, so that both meet the same
machine: the way to see the stall a fix removed on a machine whose load changes.

To add a scenario, add an `Attack` to `ATTACKS`: its artifacts are YAML texts in which `{service}`
names the scenario's service, its backend answer one of `bench/answers_backend.py`'s, and its request
any method and params (a scripted custom tool's `tools/call`, a prompt's `prompts/get`...).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

from bench import harness, script_callers
from bench.gateway_bench import ITEM_SPEC

GOAL_P99_MS = 100.0
VICTIM_TIMEOUT_SECONDS = 60
"""A trivial call not answered by then counts as answered then (a frozen gateway stops nothing here)."""


@dataclass(frozen=True)
class Attack:
    """One worst input: the service it is served by and the request the attacker repeats."""

    name: str
    """Also the service's and the exposition's name."""
    what: str
    answer: str = "small"
    """What the backend answers (`bench/answers_backend.py`): small or big."""
    artifacts: tuple[str, ...] = ()
    """Artifact files as YAML texts; `{service}` is replaced by the service's name."""
    service: str = ""
    """More of the service's configuration, as YAML flow-mapping entries (`credentials: {...}`)."""
    exposition: str = ""
    """The scenario's exposition's configuration, as YAML flow-mapping entries (`code_mode: on`); none: the
    default exposition of its service."""
    method: str = "tools/call"
    params: dict[str, Any] = field(default_factory=lambda: {"name": "get_item", "arguments": {"itemId": 1}})


def filters(spec: str) -> str:
    """A ToolsOutputFilters file giving `get_item` the filter `spec` (a YAML flow mapping)."""
    return (
        "apiVersion: reshapr.io/v1alpha1\nkind: ToolsOutputFilters\n"
        'service: {name: "{service}", version: "1"}\n'
        f"filters:\n  get_item: {spec}\n"
    )


def _doubling(times: int) -> str:
    """Patches doubling the document `times` times without copying from an ancestor (which is refused):
    copy the whole of /s beside it, then gather both halves under a new /s. Four operations per doubling;
    a last test that fails, so the filter fails open and the answer stays small."""
    operations = ["{op: add, path: /s, value: {id: 1, name: widget}}"]
    for _ in range(times):
        operations += [
            "{op: copy, from: /s, path: /t}",
            "{op: add, path: /u, value: {}}",
            "{op: move, from: /s, path: /u/a}",
            "{op: move, from: /t, path: /u/b}",
            "{op: move, from: /u, path: /s}",
        ]
    operations.append("{op: test, path: /absent, value: 1}")
    return filters("{jsonPatches: [" + ", ".join(operations) + "]}")


def _copies_of_the_root(times: int) -> str:
    """Issue 21's freeze: copy the whole document into itself `times` times, then a test that fails."""
    operations = [f'{{op: copy, from: "", path: /x{i}}}' for i in range(times)]
    operations.append("{op: test, path: /absent, value: 1}")
    return filters("{jsonPatches: [" + ", ".join(operations) + "]}")


def script_tool(source: str) -> str:
    """A CustomTools file giving the service a scripted tool `spin` that may call `get_item`."""
    body = "".join(f"      {line}\n" for line in source.splitlines())
    return (
        "apiVersion: reshapr.io/v1alpha1\nkind: CustomTools\n"
        'service: {name: "{service}", version: "1"}\n'
        "customTools:\n  spin:\n    description: the worst script the limits allow\n"
        "    input: {type: object}\n    tools: [{tool: get_item}]\n"
        f"    script: |\n{body}"
    )


def hostile_templates(count: int) -> str:
    """A Resources file of `count` templates whose literals a long URI overlaps everywhere (issue 21's shape)."""
    entries = "".join(f'  "file:///redos/{{a}}{"a" * 200}b{i}{{b}}": {{name: t{i}}}\n' for i in range(count))
    return (
        "apiVersion: reshapr.io/v1alpha1\nkind: Resources\n"
        'service: {name: "{service}", version: "1"}\n'
        f"resourceTemplates:\n{entries}"
    )


SPIN: dict[str, Any] = {"name": "spin", "arguments": {}}


def program(code: str) -> dict[str, Any]:
    """A code-mode program's `tools/call` (`execute_code`)."""
    return {"name": "execute_code", "arguments": {"code": code}}


LONGEST_URI = "file:///redos/" + "a" * (8192 - len("file:///redos/"))
"""As long a URI as `resources/read` takes (8,192 characters), matching no template."""


ATTACKS: tuple[Attack, ...] = (
    Attack("big", "a 5.6 MB answer, no artifacts", answer="big"),
    Attack(
        "big-masked",
        "a 5.6 MB answer from a backend with two credentials (masked)",
        answer="big",
        service="credentials: [{type: bearer, token: {env: STALL_PROBE_TOKEN}}, "
        "{type: api_key, name: X-Key, in: header, value: {env: STALL_PROBE_KEY}}]",
    ),
    Attack("toon", "a 5.6 MB answer, convertToToon", answer="big", artifacts=(filters("{convertToToon: true}"),)),
    Attack(
        "retain-toon",
        "a 5.6 MB answer, jsonRetain through every element, then TOON",
        answer="big",
        artifacts=(filters("{jsonRetain: [/items/id, /items/name, /items/stock/shelf], convertToToon: true}"),),
    ),
    Attack(
        "patch-big",
        "a 5.6 MB answer, one add patch",
        answer="big",
        artifacts=(filters("{jsonPatches: [{op: add, path: /note, value: shaped}]}"),),
    ),
    Attack(
        "patch-doubling",
        "a small answer, 19 doublings by sibling copies (97 operations), then a failing test",
        artifacts=(_doubling(19),),
    ),
    Attack(
        "copy-root",
        "issue 21: 18 copies of the root into itself, then a failing test",
        artifacts=(_copies_of_the_root(18),),
    ),
    Attack(
        "script-loop",
        "a script that loops until its 10 s deadline",
        artifacts=(script_tool("while (true) {}"),),
        params=SPIN,
    ),
    Attack(
        "script-builtin",
        "issue 21: a script stuck in a C built-in that never checks the interrupt (a huge sparse array's join)",
        artifacts=(script_tool("const a = []; a.length = 2 ** 31; return a.join(',');"),),
        params=SPIN,
    ),
    Attack(
        "script-memory",
        "a script that fills its 64 MiB of memory",
        artifacts=(script_tool("const kept = []; while (true) { kept.push('x'.repeat(1 << 16) + kept.length); }"),),
        params=SPIN,
    ),
    Attack(
        "script-result",
        "a script returning a 10 MB result (just under its limit)",
        artifacts=(script_tool("return Array.from({length: 200000}, (_, i) => ({id: i, name: 'item ' + i}));"),),
        params=SPIN,
    ),
    Attack(
        "script-calls",
        "a script making its 50 calls at once",
        artifacts=(
            script_tool(
                "rs.awaitPromises(Array.from({length: 50}, (_, i) => rs.callToolAsync('get_item', {itemId: i})));"
            ),
        ),
        params=SPIN,
    ),
    Attack(
        "program-loop",
        "a code-mode program that loops until its 30 s deadline",
        exposition="code_mode: on",
        params=program("for (;;) {}"),
    ),
    Attack(
        "program-memory",
        "a code-mode program that fills its 64 MiB of memory",
        exposition="code_mode: on",
        params=program("const kept = [];\nfor (;;) kept.push('x'.repeat(1 << 16) + kept.length);"),
    ),
    Attack(
        "program-calls",
        "a code-mode program making its 100 calls at once",
        exposition="code_mode: on",
        params=program("await Promise.all(Array.from({length: 100}, (_, i) => tools.get_item({itemId: i})));"),
    ),
    Attack(
        "template",
        "an 8 KiB URI read against 1,000 templates its text overlaps everywhere",
        artifacts=(hostile_templates(1000),),
        method="resources/read",
        params={"uri": LONGEST_URI},
    ),
)


def write_config(directory: Path, backend: str, attack: Attack) -> Path:
    listed = []
    for index, text in enumerate(attack.artifacts):
        path = directory / f"{attack.name}-{index}.yaml"
        path.write_text(text.replace("{service}", attack.name))
        listed.append(str(path))
    extra = "".join(f", {entry}" for entry in (attack.service,) if entry)
    if listed:
        extra += f", artifacts: [{', '.join(listed)}]"
    config = directory / f"{attack.name}-gateway.yaml"
    config.write_text(
        "services:\n"
        f'  plain: {{openapi: {ITEM_SPEC}, name: plain, version: "1", backend: "{backend}/small"}}\n'
        f'  {attack.name}: {{openapi: {ITEM_SPEC}, name: "{attack.name}", version: "1", '
        f'backend: "{backend}/{attack.answer}"{extra}}}\n'
        + (
            "expositions:\n  plain: {services: [plain]}\n"
            f"  {attack.name}: {{services: [{attack.name}], {attack.exposition}}}\n"
            if attack.exposition
            else ""
        )
    )
    return config


@dataclass(frozen=True)
class Gateway:
    process: subprocess.Popen[bytes]
    base: str

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")


def start_gateway(config: Path, checkout: harness.Checkout, log: Path) -> Gateway | str:
    """The running gateway, or why it did not start (the last lines it wrote)."""
    port = harness.free_port()
    command = [checkout.python, "-m", "apimcp.cli", "serve", str(config), "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(checkout.root / "src"), **SECRETS}
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["taskset", "-c", "0", *command], cwd=checkout.root, stdout=output, stderr=subprocess.STDOUT, env=env
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
            return " / ".join(lines[-2:])[-400:] or f"exited with {process.returncode}"
        try:
            harness.post(f"http://127.0.0.1:{port}/mcp/plain", *_request("tools/call", PLAIN))
            return Gateway(process, f"http://127.0.0.1:{port}")
        except OSError:
            time.sleep(0.2)
    process.kill()
    return "did not start within 60 s"


SECRETS = {"STALL_PROBE_TOKEN": "a-bearer-token-0123", "STALL_PROBE_KEY": "an-api-key-4567"}
"""What `{env: NAME}` credentials of a scenario's service read."""
PLAIN: dict[str, Any] = {"name": "get_item", "arguments": {"itemId": 1}}


def _request(method: str, params: dict[str, Any]) -> tuple[dict[str, object], dict[str, str]]:
    name = params.get("name") if method in ("tools/call", "prompts/get") else params.get("uri")
    return harness.modern_request(method, params, name=name)


async def paced_calls(url: str, interval: float, duration: float) -> list[float]:
    """Latencies (ms) of trivial calls sent every `interval` s, each measured from when it was due."""
    body, headers = _request("tools/call", PLAIN)
    headers = {"Content-Type": "application/json", "Accept": harness.ACCEPT, **headers}
    latencies: list[float] = []

    async def one(session: aiohttp.ClientSession, due: float, request_id: int) -> None:
        sent = orjson.dumps({**body, "id": request_id})
        try:
            async with session.post(url, data=sent, headers=headers) as response:
                raw = await response.read()
        except TimeoutError:  # a frozen gateway: the call counts as long as it was waited for
            latencies.append((time.perf_counter() - due) * 1000)
            return
        if response.status != 200 or b'"isError":false' not in raw:
            raise SystemExit(f"the trivial call failed: HTTP {response.status} {raw[:300]!r}")
        latencies.append((time.perf_counter() - due) * 1000)

    timeout = aiohttp.ClientTimeout(total=VICTIM_TIMEOUT_SECONDS)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        await one(session, time.perf_counter(), 0)  # a connection open before measuring
        latencies.clear()
        tasks = []
        start = time.perf_counter()
        for n in range(int(duration / interval)):
            due = start + n * interval
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            tasks.append(asyncio.create_task(one(session, due, n + 1)))
        await asyncio.gather(*tasks)
    return latencies


def start_attacker(url: str, attack: Attack, callers: int) -> subprocess.Popen[str]:
    if attack.method == "tools/call":
        arguments = json.dumps(attack.params.get("arguments", {}))
        given = ["--tool", str(attack.params.get("name")), "--arguments", arguments]
    else:
        given = ["--method", attack.method, "--params", json.dumps(attack.params)]
    return script_callers.start(url, [*given, "--any-answer"], callers, 0, f"the attacker of {attack.name}")


def attacker_summary(process: subprocess.Popen[str]) -> dict[str, Any]:
    process.terminate()
    return script_callers.summary(process, "the attacker", timeout=120, least=0)  # a stalling attack may finish none


@dataclass
class Row:
    attack: Attack
    checkout: harness.Checkout
    label: str
    refused: str | None = None
    alone: list[float] = field(default_factory=list)
    beside: list[float] = field(default_factory=list)
    attacks: int = 0
    attack_seconds: float = 0.0
    attack_p50: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0


def run(attack: Attack, args: argparse.Namespace, backend: str, tmp: Path, row: Row) -> None:
    config = write_config(tmp, backend, attack)
    gateway = start_gateway(config, row.checkout, tmp / f"{attack.name}.log")
    if isinstance(gateway, str):
        row.refused = gateway
        return
    try:
        url = f"{gateway.base}/mcp/plain"
        row.alone += asyncio.run(paced_calls(url, args.interval / 1000, args.duration))
        attacker = start_attacker(f"{gateway.base}/mcp/{attack.name}", attack, args.callers)
        try:
            row.beside += asyncio.run(paced_calls(url, args.interval / 1000, args.duration))
        finally:
            summary = attacker_summary(attacker)
        row.attacks += summary["calls"]
        row.attack_seconds += summary["seconds"]
        if "p50" in summary:
            row.attack_p50.append(summary["p50"])
        row.peak_rss_mb = max(row.peak_rss_mb, gateway.peak_rss_mb())
    finally:
        harness.stop(gateway.process)


def quantiles(latencies: Sequence[float]) -> str:
    ordered = sorted(latencies)
    p99 = statistics.quantiles(ordered, n=100, method="inclusive")[98]
    return f"{statistics.median(ordered):>7.1f} {p99:>7.1f} {ordered[-1]:>7.1f}"


def print_rows(rows: Sequence[Row], args: argparse.Namespace) -> None:
    print(
        f"\ntrivial tools/call every {args.interval:g} ms, {args.rounds} x {args.duration:g} s alone and beside "
        f"{args.callers} attacker(s), latency from when each call was due (ms)"
    )
    header = f"{'attack':<26} {'alone p50':>9} {'p99':>7} {'max':>7}  {'beside p50':>10} {'p99':>7} {'max':>7}"
    print(f"{header}  {'attacks/s':>9} {'attack p50':>10} {'peak MB':>8}  goal p99 < {GOAL_P99_MS:g} ms")
    for row in rows:
        if row.refused is not None:
            print(f"{row.label:<26} refused when the configuration was read: {row.refused}")
            continue
        rate = row.attacks / row.attack_seconds if row.attack_seconds else 0.0
        beside_p99 = statistics.quantiles(sorted(row.beside), n=100, method="inclusive")[98]
        verdict = "holds" if beside_p99 < GOAL_P99_MS else "DOES NOT HOLD"
        attack_p50 = f"{statistics.median(row.attack_p50):>10.0f}" if row.attack_p50 else f"{'-':>10}"
        print(
            f"{row.label:<26} {quantiles(row.alone)}  {quantiles(row.beside):>26}  {rate:>9.1f} "
            f"{attack_p50} {row.peak_rss_mb:>8.0f}  {verdict}"
        )
    print()
    for attack in {row.attack.name: row.attack for row in rows}.values():
        print(f"{attack.name:<16} {attack.what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds alone, and as long beside the attacker")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--interval", type=float, default=20.0, help="ms between two trivial calls")
    parser.add_argument("--callers", type=int, default=1, help="attacking clients, each calling in a loop")
    parser.add_argument("--only", nargs="*", help="the attacks to run, by name")
    parser.add_argument("--baseline", type=Path, help="also run each scenario with this checkout's gateway")
    args = parser.parse_args()
    attacks = [a for a in ATTACKS if not args.only or a.name in args.only]
    if not attacks:
        raise SystemExit(f"no such attack; known: {', '.join(a.name for a in ATTACKS)}")
    harness.require_tools()
    uvloop.install()
    checkouts = [(harness.Checkout.at(args.baseline), " (baseline)")] if args.baseline else []
    checkouts.append((harness.THIS, ""))
    rows = [Row(attack, checkout, attack.name + suffix) for attack in attacks for checkout, suffix in checkouts]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        port = harness.free_port()
        backend = harness.start_pinned(1, [sys.executable, "-m", "bench.answers_backend", f"--port={port}"],
                                       port, "answers backend")  # fmt: skip
        try:
            for round_number in range(1, args.rounds + 1):
                for row in rows:
                    run(row.attack, args, f"http://127.0.0.1:{port}", tmp, row)
                    state = "refused" if row.refused else f"{len(row.beside)} calls beside the attacker"
                    print(f"round {round_number}: {row.label}: {state}", file=sys.stderr)
        finally:
            harness.stop(backend)
    print_rows(rows, args)


if __name__ == "__main__":
    main()
