"""Readable views for the terminal: price tables, run summaries (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from planlang.price import PriceReport, Spread

__all__ = ["print_price", "print_run"]


def _spread(s: Spread, money: bool = False) -> str:
    fmt = (lambda v: f"{v:.4g}") if money else (lambda v: f"{v:g}")
    if s.min == s.max:
        return fmt(s.median)
    return f"{fmt(s.min)} / {fmt(s.median)} / {fmt(s.max)}"


def _table(title: str, column: str, rows: dict[str, dict[str, Spread]]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(column)
    table.add_column("calls (min / median / max)", justify="right")
    table.add_column("credits (min / median / max)", justify="right")
    for name, m in rows.items():
        table.add_row(name, _spread(m["calls"]), _spread(m["credits"], money=True))
    return table


def print_price(report: PriceReport, console: Console, *, concurrency: int, latency: float) -> None:
    seeds = report.seeds
    console.print(
        f"[bold]Price of {report.filename}[/bold]  sha256 {report.sha256[:12]}…  "
        f"{len(seeds)} rehearsal{'s' if len(seeds) != 1 else ''} "
        f"(seeds {', '.join(map(str, seeds))})"
    )
    console.print(_table("Phases", "phase", report.phases))
    console.print(_table("Roles", "role", report.roles))
    if report.tools:
        console.print(_table("Tools (MCP)", "tool", report.tools))
    console.print(_table("Total", "", {"all": report.total}))
    basis = report.ceiling_basis
    tools = (f" + max_tool_calls {basis['max_tool_calls']:g} x dearest tool price "
             f"{basis['dearest_tool_price']:g}" if "max_tool_calls" in basis else "")  # fmt: skip
    console.print(
        f"Hard ceiling: [bold]{report.ceiling:.4g}[/bold] credits "
        f"(max_agents {basis['max_agents']:g} x {basis['turns_per_worker']:g} turns x dearest "
        f"price {basis['dearest_price']:g}{tools})"
    )
    console.print(
        f"Estimated wall time: {_spread(report.wall_seconds)} s "
        f"(a call takes {latency:g} s, {concurrency} at a time)"
    )
    if report.problems:
        console.print(f"[red]{len(report.problems)} problem(s) met in rehearsal:[/red]")
        for problem in report.problems:
            console.print(
                f"  {problem.render(report.filename)}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )  # never wrapped: `grep plan.py:3` must find it
    else:
        console.print("[green]No problems met in rehearsal.[/green]")


def _tallies(title: str, column: str, tallies: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for name in (column, "calls", "sent", "cached", "credits"):
        table.add_column(name, justify="left" if name == column else "right")
    for name, tally in tallies.items():
        table.add_row(name, str(tally["calls"]), str(tally["sent"]), str(tally["cached"]),
                      f"{tally['credits']:.4g}")  # fmt: skip
    return table


def print_run(meta: dict[str, Any], threads: list[dict[str, Any]], console: Console) -> None:
    console.print(
        f"[bold]Run {meta['id']}[/bold]  {meta.get('filename')}  status {meta.get('status')}  "
        f"mode {meta.get('mode')}"
    )
    if meta.get("from_events"):
        console.print("So far, from its events.jsonl: the run has written no end record yet.")
    accounting = meta.get("accounting") or {}
    console.print(_tallies("Phases", "phase", accounting.get("phases") or {}))
    if accounting.get("tools"):
        console.print(_tallies("Tools (MCP)", "tool", accounting["tools"]))
    workers = Table(title="Workers", title_justify="left")
    for column in ("id", "phase", "label", "role", "status", "turns", "credits", "error"):
        workers.add_column(column)
    for t in threads:
        workers.add_row(
            str(t.get("id")), str(t.get("phase")), str(t.get("label") or ""),
            str(t.get("role") or ""), str(t.get("status")), str(t.get("turns", "")),
            f"{t.get('credits', 0):.4g}", (t.get("error") or "")[:60],
        )  # fmt: skip
    console.print(workers)
    total = accounting.get("total") or {}
    console.print(f"Total: {total.get('calls', 0)} calls, {total.get('sent', 0)} paid, "
                  f"{total.get('credits', 0):.4g} credits")  # fmt: skip
    if meta.get("error"):
        console.print(f"[red]Error:[/red] {meta['error']}", highlight=False)
