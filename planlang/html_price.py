"""``planlang price --html``: the price report as the same kind of self-contained page.

Per phase and per role, calls and credits as min / median / max over the rehearsals, each
drawn as a range bar on one scale whose right end is the hard ceiling's share, with the
ceiling and its basis, the estimated wall time and every problem met in rehearsal.
"""

from __future__ import annotations

from planlang.html_page import esc, fmt, page
from planlang.price import PriceReport, Spread

__all__ = ["render_price"]

BAR_W = 320


def _spread(s: Spread) -> str:
    return fmt(s.median) if s.min == s.max else f"{fmt(s.min)} / {fmt(s.median)} / {fmt(s.max)}"


def _bar(s: Spread, top: float) -> str:
    """min..max as a bar, the median as a tick, on a scale from 0 to ``top``."""

    def x(v: float) -> float:
        return round(v / top * (BAR_W - 4) + 2, 1) if top > 0 else 2.0

    lo, mid, hi = x(s.min), x(s.median), x(s.max)
    return (
        f'<svg width="{BAR_W}" height="14" xmlns="http://www.w3.org/2000/svg">'
        f'<rect x="0" y="6" width="{BAR_W}" height="2" fill="#eef0f2"/>'
        f'<rect x="{lo}" y="3" width="{max(hi - lo, 2):.1f}" height="8" fill="#a9c4f5"/>'
        f'<rect x="{mid - 1}" y="1" width="2" height="12" fill="#3a6fd8"/></svg>'
    )


def _table(title: str, column: str, rows: dict[str, dict[str, Spread]], top: float) -> str:
    head = (
        f"<tr><th>{esc(column)}</th><th>calls (min / median / max)</th>"
        "<th>credits (min / median / max)</th><th>credits</th></tr>"
    )
    body = "".join(
        f"<tr><td>{esc(name)}</td><td>{_spread(m['calls'])}</td><td>{_spread(m['credits'])}</td>"
        f"<td>{_bar(m['credits'], top)}</td></tr>"
        for name, m in rows.items()
    )
    table_id = f"price-{column or 'total'}"
    return f'<h3>{esc(title)}</h3><table id="{table_id}"><thead>{head}</thead>{body}</table>'


def render_price(report: PriceReport, *, concurrency: int, latency: float) -> str:
    """The whole page for one price report."""
    total = report.total
    top = max([m["credits"].max for m in report.phases.values()] + [total["credits"].max, 1e-9])
    basis = report.ceiling_basis
    seeds = ", ".join(map(str, report.seeds))
    cells = [
        ("median credits", fmt(total["credits"].median)),
        ("max credits", fmt(total["credits"].max)),
        ("hard ceiling", fmt(report.ceiling)),
        ("median calls", fmt(total["calls"].median)),
        ("wall s (estimate)", _spread(report.wall_seconds)),
        ("rehearsals", len(report.seeds)),
    ]
    totals = "".join(f"<div><b>{v}</b>{esc(k)}</div>" for k, v in cells)
    ceiling = (
        f"<p>Hard ceiling: <b>{fmt(report.ceiling)}</b> credits (max_agents "
        f"{basis['max_agents']:g} &times; {basis['turns_per_worker']:g} turns &times; dearest "
        f"price {basis['dearest_price']:g}): what the plan could spend whatever the models "
        f"answer. Wall time: a call takes {latency:g} s, {concurrency} at a time.</p>"
        f"<p>The rehearsals against the ceiling: {_bar(total['credits'], report.ceiling)} "
        f"0 to {fmt(report.ceiling)} credits</p>"
    )
    if report.problems:
        items = "".join(
            f'<li class="err">{esc(p.render(report.filename))}</li>' for p in report.problems
        )
        problems = f"<h2>Problems met in rehearsal ({len(report.problems)})</h2><ul>{items}</ul>"
    else:
        problems = "<h2>Problems</h2><p>No problems met in rehearsal.</p>"
    body = (
        f'<section><div id="totals" class="totals" data-ceiling="{report.ceiling}" '
        f'data-median="{total["credits"].median}">{totals}</div>{ceiling}</section>'
        f"<section><h2>Price</h2>"
        f"{_table('Phases', 'phase', report.phases, top)}"
        f"{_table('Roles', 'role', report.roles, top)}"
        f"{_table('Total', '', {'all': total}, top)}</section>"
        f"<section>{problems}</section>"
    )
    subtitle = f"sha256 {esc(report.sha256[:12])}&hellip; &middot; seeds {esc(seeds)}"
    return page(f"Price of {report.filename}", subtitle, body, report.to_dict())
