"""`apimcp discovery report EXPOSITION`: how well search finds each of an exposition's tools, and what each
listing mode costs a model's context."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from apimcp.cli import output
from apimcp.cli.common import client, find, reporting
from apimcp.cli.output import Format, OutputOption

discovery_app = typer.Typer(help="What search finds of an exposition's tools, and what listing them costs.")

_KINDS = {
    "title": "its title",
    "description": "its description's first sentence",
    "name": "its name's words",
    "paraphrase": "a paraphrase of its method and path",
    "keywords": "its two rarest words",
}


def _figures(figures: dict[str, Any]) -> str:
    return (
        f"recall@1 {figures['recall@1']:.2f}  recall@5 {figures['recall@5']:.2f}  MRR {figures['mrr']:.2f}"
        f"  ({figures['queries']} queries)"
    )


def _cost(cost: dict[str, Any]) -> str:
    tokens = cost.get("tokens")
    return f"{cost['bytes']:,} bytes" + (f", {tokens:,} tokens" if tokens is not None else "")


def _print(report: dict[str, Any], name: str, out: Any) -> None:
    out.print(f"[bold]Discovery report of {name}[/bold]: {report['tools']} tools, ranked {report['ranking']}"
              f" ({report['seconds']} s)")  # fmt: skip
    if report.get("probed", report["tools"]) < report["tools"]:
        out.print(f"Searched for the first {report['probed']} tools only: the report's time ran out.")
    out.print(f"  every query          {_figures(report['overall'])}", markup=False)
    for kind, about in _KINDS.items():
        figures = report["by_kind"].get(kind)
        if figures and figures["queries"]:
            out.print(f"  {kind:<20} {_figures(figures)}  - {about}", markup=False)
    out.print("[bold]Found least by their own queries[/bold] (improve their titles and descriptions):")
    for entry in report["hardest"]:
        out.print(f"  {entry['tool']}: MRR {entry['mrr']:.2f}", markup=False)
        for miss in entry["misses"][:3]:
            where = f"rank {miss['rank']}" if miss["rank"] else "not in the first 10"
            out.print(f"      {miss['kind']} {miss['query']!r}: {where}, {miss['first']} first", markup=False)
    out.print("[bold]Pairs search confuses[/bold] (a tool's query finds the other first):")
    for pair in report["confused"]:
        out.print(f"  {pair['tool']} -> {pair['found_instead']} x{pair['times']} (e.g. {pair['example']!r})",
                  markup=False)  # fmt: skip
    context = report["context"]
    unit = f"tokens of {report['tokens']}" if report["tokens"] else "no token counts: install the tokens extra"
    out.print(f"[bold]What a model reads[/bold] (medians; {unit}):")
    out.print(f"  every tool    tools/list {_cost(context['every_tool']['listing'])}", markup=False)
    for mode, label in (("search", "search   "), ("code_mode", "code mode")):
        costs = context[mode]
        out.print(f"  {label}     tools/list {_cost(costs['listing'])}; a search {_cost(costs['search_tools'])}; "
                  f"a tool described {_cost(costs['describe_one_tool'])}", markup=False)  # fmt: skip


REPORT_SECONDS = 1200.0
"""How long the CLI waits for a report: the control plane's wait for the tools' vectors, and the making."""


@discovery_app.command("report")
def report(
    exposition: Annotated[str, typer.Argument(help="id or name")],
    out: OutputOption = Format.table,
) -> None:
    """For every tool, queries made from its own texts and from its shape, searched as search_tools searches:
    recall@1, recall@5 and MRR per kind of query, the tools found least, the pairs search confuses, and what
    each listing mode costs a model's context (bytes, tokens). A minute for a thousand tools, then kept."""
    api = client()
    with reporting():
        found = find(api, "/expositions", exposition, "exposition")
        # a report of thousands of tools takes minutes to make (its tools' vectors waited for up to ten)
        data = api.get_slowly(f"/expositions/{found['id']}/discovery", REPORT_SECONDS)
    if out is Format.json:
        typer.echo(output.json_text(data))
        return
    _print(data, found.get("name") or found["id"], output.console())
