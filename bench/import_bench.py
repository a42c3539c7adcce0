"""Import time and peak memory of a large OpenAPI description: apimcp and FastMCP side by side.

    python -m bench.import_bench [--spec PATH] [--rounds 5]

Each measurement is a fresh process (bench/import_one.py) that turns the description into a
listed set of MCP tools; rounds alternate between the two so machine noise hits both alike.
The default description is GitHub's REST API from the shared corpus (~1,200 operations, 13 MB).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

DEFAULT_SPEC = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "openapi" / "github" / "api.github.com.json"
CONTENDERS = ("apimcp", "fastmcp")


def measure(which: str, spec: Path) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-m", "bench.import_one", which, str(spec)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not args.spec.exists():
        raise SystemExit(f"{args.spec} not found (pass --spec)")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
    for round_number in range(1, args.rounds + 1):
        for which in CONTENDERS:
            result = measure(which, args.spec)
            results[which].append(result)
            print(f"round {round_number}: {which}: {result['seconds']:.2f} s, {result['peak_rss_mb']:.0f} MB",
                  file=sys.stderr)  # fmt: skip

    def median(which: str, key: str) -> float:
        return statistics.median(r[key] for r in results[which])

    print(f"\n{args.spec.name}, {args.rounds} rounds, medians")
    print(f"{'importer':<10} {'tools':>6} {'import s':>9} {'library import s':>17} {'peak RSS MB':>12}")
    for which in CONTENDERS:
        print(
            f"{which:<10} {median(which, 'tools'):>6.0f} {median(which, 'seconds'):>9.2f} "
            f"{median(which, 'import_seconds'):>17.2f} {median(which, 'peak_rss_mb'):>12.0f}"
        )
    ratio = median("apimcp", "seconds") / median("fastmcp", "seconds")
    memory = median("apimcp", "peak_rss_mb") / median("fastmcp", "peak_rss_mb")
    print(f"apimcp / fastmcp: time {ratio:.2f}, peak memory {memory:.2f}")


if __name__ == "__main__":
    main()
