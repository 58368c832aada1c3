"""``planlang report``: a recorded run drawn as one self-contained HTML page.

The timeline is SVG written here, not drawn by script in the browser, so the page shows at
once and a 10,000-worker run stays small: past ``lane_limit`` workers, consecutive workers of
a phase share an aggregate lane whose time bins show the state that held most of them. The
script only opens a worker's conversation (kept as JSON, long texts shared and, past a size
budget, cut with a note) when its lane is clicked.
"""

from __future__ import annotations

import math

from planlang.html_data import pack_conversations
from planlang.html_page import COLOURS, esc, fmt, page
from planlang.lane_groups import bins_of
from planlang.timeline import Lane, Timeline

__all__ = ["render_run"]

LABEL_W, PLOT_W, LANE_H, ROW = 230, 1000, 11, 14
BINS = 200


def render_run(tl: Timeline, *, lane_limit: int = 500, text_budget: int = 2_000_000) -> str:
    """The whole page for one run (``text_budget``: characters of conversation text kept)."""
    meta = tl.meta
    strings, conversations = pack_conversations(tl.conversations, text_budget)
    body = "".join([
        _totals(tl), _legend(), _timeline(tl, lane_limit), _budget(tl), _phase_table(tl),
        _costs(tl), _failures(tl), _logs(tl), _source(tl),
    ])  # fmt: skip
    subtitle = (f"{esc(meta.get('filename', ''))} &middot; status <b>{esc(meta.get('status'))}</b>"
                f" &middot; mode {esc(meta.get('mode'))} &middot; {fmt(tl.end)} s &middot; "
                f"concurrency {tl.concurrency}")  # fmt: skip
    if meta.get("error"):
        subtitle += f' &middot; <span class="err">{esc(meta["error"])}</span>'
    return page(f"Run {meta.get('id', '')}", subtitle, body,
                {"strings": strings, "conversations": conversations})  # fmt: skip


# -- summary ---------------------------------------------------------------------------------


def _totals(tl: Timeline) -> str:
    t = tl.totals
    attrs = " ".join(f'data-{k.replace("_", "-")}="{v}"' for k, v in t.items())
    cells = [("workers", t["workers"]), ("done", t["done"]), ("failed", t["failed"]),
             ("calls", t["calls"]), ("from the ledger", t["cached"]),
             ("credits paid", fmt(t["credits"])), ("wall s", fmt(tl.end, 3))]  # fmt: skip
    if tl.raises:
        cells.append(("cap raises", len(tl.raises)))
    inner = "".join(f"<div><b>{v}</b>{esc(k)}</div>" for k, v in cells)
    return f'<section><div id="totals" class="totals" {attrs}>{inner}</div></section>'


def _legend() -> str:
    items = [("queued", "queued"), ("running", "running"), ("waiting", "waiting at the budget"),
             ("done", "done"), ("failed", "failed"), ("cached", "cached (from the ledger)"),
             ("cancelled", "cancelled"), ("repair", "repair turn"),
             ("check", "check-retry turn")]  # fmt: skip
    spans = "".join(f'<span><i style="background:{COLOURS[k]}"></i>{esc(v)}</span>'
                    for k, v in items)  # fmt: skip
    return f'<div class="legend">{spans}<span>| a tick: one model call</span></div>'


# -- timeline --------------------------------------------------------------------------------


def _x(t: float, end: float) -> float:
    return round(LABEL_W + (t / end if end > 0 else 0.0) * PLOT_W, 1)


def _axis(end: float, y: float, height: float) -> str:
    step = _nice_step(end / 8 if end > 0 else 1.0)
    parts = []
    tick = 0.0
    while tick <= end + 1e-9:
        x = _x(tick, end)
        parts.append(
            f'<line x1="{x}" y1="{y}" x2="{x}" y2="{height}" stroke="#eef0f2"/>'
            f'<text x="{x}" y="{y - 3}" text-anchor="middle">{fmt(tick, 3)} s</text>'
        )
        tick += step
    return "".join(parts)


def _nice_step(raw: float) -> float:
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _lane(lane: Lane, y: float, end: float) -> str:
    colour = COLOURS.get(lane.status, COLOURS["running"])
    parts = [
        f'<g class="lane" data-worker="{lane.worker}" data-status="{lane.status}">'
        f'<rect class="bg" x="0" y="{y}" width="{LABEL_W + PLOT_W}" height="{ROW}" '
        'fill="transparent"/>'
        f'<text x="6" y="{y + 10}">#{lane.worker} {esc(lane.label[:26])}</text>'
    ]
    title = f"worker {lane.worker} {lane.label} ({lane.role}): {lane.status}"
    if lane.error:
        title += f" - {lane.error}"
    parts.append(f"<title>{esc(title[:300])}</title>")
    bar = y + (ROW - LANE_H) / 2

    def rect(a: float, b: float, fill: str) -> str:
        x0, x1 = _x(a, end), _x(b, end)
        return (
            f'<rect x="{x0}" y="{bar}" width="{max(x1 - x0, 3.0):.1f}" height="{LANE_H}" '
            f'fill="{fill}"/>'
        )

    if lane.start > lane.queued:
        parts.append(rect(lane.queued, lane.start, COLOURS["queued"]))
    parts.append(rect(lane.start, lane.end, colour))
    parts.extend(rect(a, b, COLOURS["waiting"]) for a, b in lane.waits)
    for call in lane.calls:
        x = _x(call["t"], end)
        parts.append(
            f'<line x1="{x}" y1="{bar}" x2="{x}" y2="{bar + LANE_H}" stroke="#1d2430" '
            'stroke-width="1.2"/>'
        )
    for retry in lane.retries:
        x = _x(retry["t"], end)
        parts.append(
            f'<path class="retry {esc(retry["why"])}" d="M{x} {bar - 1}l4 6l-4 6l-4-6z" '
            f'fill="{COLOURS.get(retry["why"], "#000")}"/>'
        )
    parts.append("</g>")
    return "".join(parts)


def _aggregate(lanes: list[Lane], y: float, end: float) -> str:
    ids = [lane.worker for lane in lanes]
    statuses = [lane.status for lane in lanes]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    label = f"#{ids[0]}-{ids[-1]} ({len(ids)})"
    parts = [
        f'<g class="agg" data-workers="{len(ids)}" data-group="[{",".join(map(str, ids))}]">'
        f'<rect class="bg" x="0" y="{y}" width="{LABEL_W + PLOT_W}" height="{ROW}" '
        f'fill="transparent"/><text x="6" y="{y + 10}">{label}</text>'
        f"<title>{len(ids)} workers: {esc(counts)}</title>"
    ]
    width = PLOT_W / BINS
    cells = bins_of(lanes, end, BINS)
    i = 0
    while i < BINS:  # run-length: one rect per stretch of bins with the same look
        if not cells[i]:
            i += 1
            continue
        state, busy = cells[i][0]
        level = max(1, round(busy * 4))
        j = i + 1
        while j < BINS and cells[j] and cells[j][0][0] == state and \
                max(1, round(cells[j][0][1] * 4)) == level:  # fmt: skip
            j += 1
        parts.append(
            f'<rect x="{LABEL_W + i * width:.1f}" y="{y + 1.5}" '
            f'width="{(j - i) * width:.1f}" height="{LANE_H}" '
            f'fill="{COLOURS.get(state, COLOURS["running"])}" '
            f'fill-opacity="{0.25 + 0.1875 * level:.2f}"/>'
        )
        i = j
    parts.append("</g>")
    return "".join(parts)


def _timeline(tl: Timeline, lane_limit: int) -> str:
    limit = max(lane_limit, 1)
    group = max(1, math.ceil(len(tl.lanes) / (limit * 0.6))) if len(tl.lanes) > limit else 1
    rows: list[str] = []
    y = 22.0
    end = tl.end
    by_phase: dict[int, list[Lane]] = {}
    for lane in tl.lanes:
        by_phase.setdefault(lane.phase_index, []).append(lane)
    groups = [(i, p.name, p.line) for i, p in enumerate(tl.phases)]
    if -1 in by_phase:  # workers of no phase the events name (refused before any phase)
        groups.append((-1, "(none)", None))
    for index, name, line in groups:
        lanes = by_phase.get(index, [])
        head = f"phase {name} ({len(lanes)} worker{'s' if len(lanes) != 1 else ''})"
        link = f' <a href="#L{line}">line {line}</a>' if line else ""
        rows.append(
            f'<text x="4" y="{y + 12}" font-weight="600">{esc(head)}</text>'
            + (
                f'<a href="#L{line}"><text x="{LABEL_W - 60}" y="{y + 12}" '
                f'fill="#2856b6">line {line}</text></a>'
                if link
                else ""
            )
        )
        y += 18
        for start in range(0, len(lanes), group):
            chunk = lanes[start : start + group]
            rows.append(_lane(chunk[0], y, end) if group == 1 else _aggregate(chunk, y, end))
            y += ROW
        y += 4
    marks = "".join(f'<line x1="{_x(p.start, end)}" y1="14" x2="{_x(p.start, end)}" y2="{y}" '
                    'stroke="#98a1ad" stroke-dasharray="3 3"/>' for p in tl.phases)  # fmt: skip
    note = (
        f'<p class="note">{len(tl.lanes)} workers: lanes of {group} consecutive workers '
        "each (a click lists them); a bin shows the state that held most of them.</p>"
        if group > 1
        else ""
    )
    svg = (
        f'<svg id="timeline" width="100%" viewBox="0 0 {LABEL_W + PLOT_W + 10} {y + 4}" '
        f'xmlns="http://www.w3.org/2000/svg">{_axis(end, 14, y)}{marks}{"".join(rows)}</svg>'
    )
    return f'<section><h2>Timeline</h2>{note}<div style="overflow:auto">{svg}</div></section>'


# -- budget ----------------------------------------------------------------------------------


def _budget(tl: Timeline) -> str:
    points = tl.budget
    if len(points) > 2 * PLOT_W:  # one point per pixel column: spent last, reserved highest
        columns: dict[int, tuple[float, float, float, float | None]] = {}
        for t, spent, reserved, cap in points:
            column = int(_x(t, tl.end))
            prev = columns.get(column)
            columns[column] = (t, spent, max(reserved, prev[2]) if prev else reserved, cap)
        points = list(columns.values())
    caps = [p[3] for p in points if p[3] is not None]
    # the scale fits what was used and the first cap; a cap raised far above is drawn at the top
    top = max([p[1] + p[2] for p in points] + caps[:1] + [1e-9]) * 1.12
    height, base = 170.0, 160.0

    def y(v: float) -> float:
        return round(base - v / top * (base - 14), 1)

    def steps(values: list[tuple[float, float]]) -> str:
        out, last = [], None
        for t, v in values:
            x = _x(t, tl.end)
            if last is not None:
                out.append(f"{x},{y(last)}")
            out.append(f"{x},{y(v)}")
            last = v
        return " ".join(out)

    spent_line = steps([(p[0], p[1]) for p in points])
    both = steps([(p[0], p[1] + p[2]) for p in points])
    first, final_x = _x(points[0][0], tl.end), _x(points[-1][0], tl.end)
    parts = [f'<rect class="paused" x="{_x(a, tl.end)}" y="10" '
             f'width="{max(_x(b, tl.end) - _x(a, tl.end), 1):.1f}" height="{base - 10}" '
             f'fill="{COLOURS["waiting"]}" fill-opacity="0.25">'
             f"<title>paused at the cap {fmt(a, 3)}-{fmt(b, 3)} s</title></rect>"
             for a, b in tl.paused]  # fmt: skip
    parts.append(f'<polygon points="{first},{base} {both} {final_x},{base}" fill="#a9c4f5"/>')
    parts.append(f'<polygon points="{first},{base} {spent_line} {final_x},{base}" fill="#3a6fd8"/>')
    if caps:
        cap_line = steps([(p[0], min(top, p[3]) if p[3] is not None else top) for p in points])
        parts.append(
            f'<polyline points="{cap_line}" fill="none" stroke="#d64545" '
            'stroke-width="1.5" stroke-dasharray="6 3"/>'
        )
    for r in tl.raises:
        cx, cy = _x(r["t"], tl.end), y(min(top, r["cap"] or top))
        parts.append(
            f'<circle class="raise" cx="{cx}" cy="{cy}" r="4" fill="#d64545"><title>cap '
            f"raised {r['old_cap']} &#8594; {r['cap']} at {fmt(r['t'], 3)} s</title>"
            f'</circle><text x="{cx + 6}" y="{cy + 12}" fill="#d64545">cap raised to '
            f"{'none' if r['cap'] is None else fmt(r['cap'])}</text>"
        )
    if caps:
        parts.append(
            f'<text x="{LABEL_W - 4}" y="{y(min(top, caps[0])) + 4}" text-anchor="end" '
            f'fill="#d64545">cap {fmt(caps[0])}</text>'
        )
    parts.append(
        f'<text x="6" y="{y(top / 1.12) + 4}">{fmt(top / 1.12)}</text>'
        f'<text x="6" y="{base}">0</text>'
    )
    final = points[-1]
    text = (
        f"spent {fmt(final[1])} credits; cap "
        f"{'none' if final[3] is None else fmt(final[3])}; paused "
        f"{fmt(sum(b - a for a, b in tl.paused), 3)} s in {len(tl.paused)} interval(s); "
        f"{len(tl.raises)} raise(s)."
    )
    legend = (
        '<div class="legend"><span><i style="background:#3a6fd8"></i>spent</span>'
        '<span><i style="background:#a9c4f5"></i>reserved (paid calls in flight)</span>'
        '<span><i style="background:#d64545"></i>cap</span><span><i style="background:'
        f'{COLOURS["waiting"]};opacity:.4"></i>paused at the cap</span></div>'
    )
    svg = (
        f'<svg id="budget" width="100%" viewBox="0 0 {LABEL_W + PLOT_W + 10} {height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )
    return f"<section><h2>Budget over time</h2>{legend}<p>{esc(text)}</p>{svg}</section>"


# -- tables ----------------------------------------------------------------------------------


def _table(head: list[str], rows: list[list[str]], table_id: str) -> str:
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _phase_table(tl: Timeline) -> str:
    rows = []
    for p in tl.phases:
        name = f'<a href="#L{p.line}">{esc(p.name)}</a>' if p.line else esc(p.name)
        rows.append([name, fmt(p.wall, 3), str(p.workers), fmt(p.used, 3), fmt(p.waited, 3),
                     fmt(p.lost, 3), fmt(p.streaming_saved, 3)])  # fmt: skip
    head = ["phase", "wall s", "workers", "worker-s used", "worker-s waiting at the budget",
            "worker-s lost to the barrier", "streaming would save (wall s)"]  # fmt: skip
    return (
        f'<section><h2>Phases</h2>{_table(head, rows, "phases")}<p class="note">Lost to '
        "the barrier: slot-seconds left idle after the phase's last worker started, while the "
        "slowest ones held it open. Streaming would save: that idle time filled with the next "
        "phase's work, divided by the concurrency.</p></section>"
    )


def _costs(tl: Timeline) -> str:
    head = ["", "calls", "paid calls", "credits paid", "answers from the ledger",
            "their worth (not paid)"]  # fmt: skip
    out = []
    for key, title in (("phases", "phase"), ("roles", "role"), ("tools", "tool")):
        if key == "tools" and not tl.costs.get(key):
            continue
        rows = [[esc(name), str(r["calls"]), str(r["paid"]), fmt(r["credits"]), str(r["cached"]),
                 fmt(r["ledger_credits"])] for name, r in tl.costs[key].items()]  # fmt: skip
        out.append(f"<h3>per {title}</h3>" + _table([title] + head[1:], rows, f"cost-{key}"))
    return f"<section><h2>Cost</h2>{''.join(out)}</section>"


def _failures(tl: Timeline) -> str:
    failed = [lane for lane in tl.lanes if lane.status in ("failed", "cancelled", "refused")]
    if not failed and not tl.thunk_failures:
        return '<section><h2>Failures</h2><p id="failures">No worker failed.</p></section>'
    rows = [[f'<a href="#" data-worker="{ln.worker}">#{ln.worker}</a>', esc(ln.phase),
             esc(ln.label), esc(ln.status), f'<span class="err">{esc(ln.error or "")}</span>']
            for ln in failed]  # fmt: skip
    rows += [[f"thunk {e['index']}", esc(e["phase"]), "", "the plan's code failed",
              f'<span class="err">{esc(e["error"])}</span>']
             for e in tl.thunk_failures]  # fmt: skip
    table = _table(["worker", "phase", "label", "status", "reason"], rows, "failures")
    return f"<section><h2>Failures ({len(rows)})</h2>{table}</section>"


def _logs(tl: Timeline) -> str:
    if not tl.logs:
        return ""
    rows = [[fmt(e["t"], 4), esc(e.get("phase") or ""), esc(e.get("message") or "")]
            for e in tl.logs[:500]]  # fmt: skip
    return f"<section><h2>Log</h2>{_table(['s', 'phase', 'message'], rows, 'logs')}</section>"


def _source(tl: Timeline) -> str:
    if not tl.source:
        return '<section><h2>Plan</h2><p class="note">No plan.py was recorded.</p></section>'
    starts = {p.line: p.name for p in tl.phases if p.line}
    lines = []
    for number, text in enumerate(tl.source.splitlines(), 1):
        cls = ' class="phase"' if number in starts else ""
        lines.append(f'<span id="L{number}"{cls}><em>{number}</em>{esc(text)}</span>')
    return f'<section><h2>Plan</h2><pre class="src">{"".join(lines)}</pre></section>'
