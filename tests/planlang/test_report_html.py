"""`planlang report`: a recorded run (FakeOpenAI on 127.0.0.1) drawn as one HTML page, opened
in headless Chromium with the network off: one lane per worker, the run's totals, no request.
"""

import json
import os
import time
from pathlib import Path

import pytest
from browser import browse, elements, with_class
from report_runs import RAISED, record_run

from planlang.cli import main
from planlang.html_page import COLOURS, CSP
from planlang.timeline import load_timeline


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(project root, run folder, report path): one real run, drawn once for every test."""
    root = tmp_path_factory.mktemp("project")
    folder = record_run(root)
    page = root / "run.html"
    assert main(["report", str(folder), "-o", str(page)]) == 0
    return root, folder, page


def records(folder: Path):
    meta = json.loads((folder / "meta.json").read_text())
    threads = json.loads((folder / "threads.json").read_text())
    return meta, threads


def test_the_timeline_holds_every_worker_wait_raise_and_retry(recorded):
    _, folder, _ = recorded
    meta, threads = records(folder)
    tl = load_timeline(folder)
    assert [lane.worker for lane in tl.lanes] == [t["id"] for t in threads]
    statuses = [lane.status for lane in tl.lanes]
    assert statuses.count("failed") == 1 and "cached" in statuses
    assert {r["why"] for lane in tl.lanes for r in lane.retries} == {"repair", "check"}
    assert [r["cap"] for r in tl.raises] == [RAISED]
    assert tl.paused and all(b > a for a, b in tl.paused)
    assert any(lane.start > lane.queued for lane in tl.lanes)  # someone queued for a slot
    total = meta["accounting"]["total"]
    assert tl.totals["credits"] == total["credits"]
    assert (tl.totals["calls"], tl.totals["cached"]) == (total["calls"], total["cached"])
    assert [p.name for p in tl.phases] == ["scan", "check", "report"]
    assert [p.line for p in tl.phases] == [3, 7, 13]  # the lines of phase(...) in PLAN
    assert tl.phases[0].waited > 0 and tl.phases[0].lost >= 0
    assert [(e["index"], e["error"].split(":")[0]) for e in tl.thunk_failures] == [
        (0, "ZeroDivisionError")
    ]
    paid = sum(row["credits"] for row in tl.costs["phases"].values())
    assert round(paid, 9) == total["credits"]


def test_the_page_in_chromium_has_a_lane_per_worker_the_totals_and_no_request(recorded, tmp_path):
    _, folder, page = recorded
    meta, threads = records(folder)
    dom, requests = browse(page, tmp_path, "--dump-dom")
    assert requests == []
    lanes = with_class(dom, "lane")
    assert sorted(int(a["data-worker"]) for a in lanes) == sorted(t["id"] for t in threads)
    failed = [t["id"] for t in threads if t["status"] == "failed"]
    assert [int(a["data-worker"]) for a in lanes if a["data-status"] == "failed"] == failed
    (totals,) = [a for _, a in elements(dom) if a.get("id") == "totals"]
    total = meta["accounting"]["total"]
    assert float(totals["data-credits"]) == total["credits"]
    assert int(totals["data-calls"]) == total["calls"]
    assert int(totals["data-cached"]) == total["cached"]
    assert int(totals["data-workers"]) == len(threads)
    assert int(totals["data-failed"]) == len(failed)
    (body,) = [a for tag, a in elements(dom) if tag == "body"]
    assert float(body["data-rendered-ms"]) > 0  # the page's script ran to its end


def test_a_lane_opens_its_workers_whole_conversation(recorded, tmp_path):
    _, folder, page = recorded
    _, threads = records(folder)
    (failed,) = [t for t in threads if t["status"] == "failed"]
    dom, requests = browse(page, tmp_path, "--dump-dom", fragment=f"#worker-{failed['id']}")
    assert requests == []
    (panel,) = [a for _, a in elements(dom) if a.get("id") == "panel"]
    assert panel["class"] == "open" and panel["data-open"] == str(failed["id"])
    assert dom.count('class="msg"') == len(failed["messages"])
    assert "question 3" in dom and "no JSON here" in dom and "does not match" in dom


def test_the_page_paints_lanes_in_their_colours(recorded, tmp_path):
    from PIL import Image as image  # the test extra installs pillow

    _, _, page = recorded
    shot = tmp_path / "shot.png"
    browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1300,900")
    pixels = image.open(shot).convert("RGB")
    colours = pixels.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 20  # not a blank page
    counts = {rgb: n for n, rgb in colours}
    for state in ("done", "failed", "waiting", "queued"):
        rgb = tuple(int(COLOURS[state][i : i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) > 50, f"no {state} lane painted"


CONTROL = '<!DOCTYPE html><html><head>{meta}</head><body><img src="http://127.0.0.1:9/x.png">'


def test_the_request_detector_sees_a_request_and_the_pages_policy_stops_it(tmp_path):
    """The detector is not blind: a bare page's image is seen; under the report's CSP, none."""
    bare, guarded = tmp_path / "bare.html", tmp_path / "guarded.html"
    bare.write_text(CONTROL.format(meta=""))
    guarded.write_text(CONTROL.format(meta=f'<meta http-equiv="Content-Security-Policy" '
                                           f'content="{CSP}">'))  # fmt: skip
    assert browse(bare, tmp_path / "a", "--dump-dom")[1] == ["http://127.0.0.1:9/x.png"]
    assert browse(guarded, tmp_path / "b", "--dump-dom")[1] == []


def test_the_report_is_self_contained(recorded):
    _, _, page = recorded
    html = page.read_text()
    assert f'content="{CSP}"' in html
    for tag, attrs in elements(html):
        for name in ("src", "href"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), (tag, attrs)


def test_show_html_draws_the_same_page_and_bad_names_are_one_line(recorded, capsys):
    root, folder, page = recorded
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["show", folder.name, "--html", "-o", "shown.html"]) == 0
        assert (root / "shown.html").read_text() == page.read_text()
        capsys.readouterr()
        assert main(["report", "no-such-run"]) == 2
        _, err = capsys.readouterr()
        assert err.strip() == (
            "Error: no run 'no-such-run' (see planlang runs, or give a run folder's path)"
        )
    finally:
        os.chdir(cwd)


def test_price_html_draws_min_median_max_and_the_ceiling(recorded, tmp_path):
    root, _, _ = recorded
    out = tmp_path / "price.html"
    cwd = os.getcwd()
    os.chdir(root)
    try:
        main(["price", "plan.py", "--seeds", "2", "--html", "-o", str(out)])
    finally:
        os.chdir(cwd)
    dom, requests = browse(out, tmp_path / "b", "--dump-dom")
    assert requests == []
    rows = [a for tag, a in elements(dom) if tag == "tr"]
    assert len(rows) == 1 + 3 + 1 + 3 + 1 + 1  # phases, roles, total, each with a head
    (totals,) = [a for _, a in elements(dom) if a.get("id") == "totals"]
    assert float(totals["data-ceiling"]) == 50 * 4 * 1.0  # max_agents x turns x dearest price
    assert "Hard ceiling" in dom


@pytest.mark.slow
def test_ten_thousand_workers_stay_under_5_mb_and_render_aggregated(tmp_path):
    """Size and DOM are asserted; the render time is only guarded (benchmarks/bench_report.py
    measures it), so a loaded machine cannot fail this test."""
    from report_runs import record_synthetic

    folder = record_synthetic(tmp_path / "run", 10_000)
    page = tmp_path / "run.html"
    assert main(["report", str(folder), "-o", str(page)]) == 0
    assert page.stat().st_size < 5_000_000
    dom, requests = browse(page, tmp_path / "b", "--dump-dom")
    assert requests == []
    groups = with_class(dom, "agg")
    assert 100 <= len(groups) <= 400
    assert sum(int(a["data-workers"]) for a in groups) == 10_000
    assert len(elements(dom)) < 20_000  # aggregated: far fewer elements than workers x marks
    (body,) = [a for tag, a in elements(dom) if tag == "body"]
    assert float(body["data-rendered-ms"]) > 0


NEW_KINDS = {"budget", "worker_running", "resumed", "cap_raised", "retry"}


def test_a_run_recorded_before_the_new_events_still_draws(recorded):
    from planlang.html_report import render_run
    from planlang.timeline import build_timeline

    _, folder, _ = recorded
    meta, threads = records(folder)
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    old = [e for e in events if e["kind"] not in NEW_KINDS]
    tl = build_timeline(old, meta, threads, "")
    assert len(tl.lanes) == len(threads) and not tl.raises
    assert all(lane.queued == lane.start and not lane.retries for lane in tl.lanes)
    assert tl.totals["credits"] == meta["accounting"]["total"]["credits"]
    assert len(with_class(render_run(tl), "lane")) == len(threads)


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    (tmp_path / "events.jsonl").write_text(
        '{"seq": 1, "t": 0, "kind": "run_started"}\nnot json\n{}\n'
    )
    assert main(["report", str(tmp_path)]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines() == [
        f"Error: no run {str(tmp_path)!r} (see planlang runs, or give a run folder's path)",
        f"Error: {tmp_path / 'events.jsonl'}:2: not a JSON event",
    ]


def test_a_run_still_going_or_killed_draws_from_its_events_alone(recorded, tmp_path):
    _, folder, _ = recorded
    lines = (folder / "events.jsonl").read_text().splitlines()
    (tmp_path / "events.jsonl").write_text("\n".join(lines[:40]) + '\n{"seq": 41, "t"')
    page = tmp_path / "run.html"
    assert main(["report", str(tmp_path), "-o", str(page)]) == 0
    html = page.read_text()
    started = sum(1 for line in lines[:40] if '"worker_started"' in line)
    assert len(with_class(html, "lane")) == started
    assert "unfinished" in html


@pytest.mark.slow
def test_the_example_audit_report_script_runs_offline(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).parents[2]
    page = tmp_path / "audit.html"
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("LLM_API_KEY", None)
    done = subprocess.run([sys.executable, str(root / "examples" / "audit_report.py"), "--html",
                           str(page)], capture_output=True, text=True, timeout=600, cwd=root,
                          env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    html = page.read_text()
    assert len(with_class(html, "lane")) > 10
    assert 'class="raise"' in html and 'class="paused"' in html


CENTRE = """(function(sel){var r=document.querySelector(sel).getBoundingClientRect();
window.scrollBy(0, r.top - 200); r=document.querySelector(sel).getBoundingClientRect();
return [r.left + r.width / 2, r.top + r.height / 2]})(%s)"""
PANEL = """(function(){var p=document.getElementById('panel');
return [p.className, p.getAttribute('data-open'), location.hash, p.innerText]})()"""


def click(browser, selector, until="true"):
    """Click the middle of ``selector``; once ``until`` holds (a hash change is a task of its
    own, run after the click's), read the panel back."""
    x, y = browser.evaluate(CENTRE % json.dumps(selector))
    browser.click(x, y)
    deadline = time.monotonic() + 30  # a hang guard only
    while not browser.evaluate(until) and time.monotonic() < deadline:
        time.sleep(0.01)
    return browser.evaluate(PANEL)


def test_a_mouse_click_on_a_lane_opens_the_conversation_and_close_closes_it(recorded, tmp_path):
    from cdp import Browser

    _, folder, page = recorded
    _, threads = records(folder)
    (failed,) = [t for t in threads if t["status"] == "failed"]
    browser = Browser(tmp_path)
    try:
        browser.open(page)
        opened_it = (
            f"document.getElementById('panel').getAttribute('data-open') === '{failed['id']}'"
        )
        state, opened, address, text = click(
            browser, f'.lane[data-worker="{failed["id"]}"] rect', until=opened_it
        )
        assert (state, opened, address) == ("open", str(failed["id"]), f"#worker-{failed['id']}")
        assert "question 3" in text and failed["error"] in text
        state, *_ = click(
            browser, "#panel .close", until="!document.getElementById('panel').className"
        )
        assert state == ""
        assert [url for url in browser.requests() if url != page.resolve().as_uri()] == []
    finally:
        browser.close()


def test_an_aggregate_lane_lists_its_workers_and_each_opens(recorded, tmp_path):
    from cdp import Browser

    from planlang.html_report import render_run

    _, folder, _ = recorded
    page = tmp_path / "grouped.html"
    page.write_text(render_run(load_timeline(folder), lane_limit=5))
    browser = Browser(tmp_path)
    try:
        browser.open(page)
        assert browser.evaluate("document.querySelectorAll('.lane').length") == 0
        size = browser.evaluate("document.querySelector('.agg').getAttribute('data-workers')")
        state, _, _, text = click(
            browser, ".agg", until="document.getElementById('panel').className"
        )
        assert int(size) > 1 and state == "open"
        assert text.splitlines()[1:] == [f"{size} workers"] + [f"worker {i}" for i in
                                                               range(1, int(size) + 1)]  # fmt: skip
        _, opened, address, text = click(
            browser, "#panel a", until="document.getElementById('panel').getAttribute('data-open')"
        )
        assert (opened, address) == ("1", "#worker-1") and "question 0" in text
    finally:
        browser.close()


def test_a_phase_started_twice_keeps_its_workers_apart():
    from planlang.html_report import render_run
    from planlang.timeline import build_timeline
    from runtime import LLM, Ledger, Reply, Run

    llm = LLM(Ledger(":memory:"), client=lambda model, messages, **kw: Reply("ok", credits=0.5))
    run = Run("rounds", llm=llm, concurrency=2)

    def plan(r):
        for size in (2, 3):
            r.phase("round")
            r.parallel([lambda i=i, size=size: r.agent(f"{size} {i}") for i in range(size)])

    run.run_sync(plan)
    tl = build_timeline(run.events, {}, run.threads_json(), 'phase("round")\n')
    assert [(p.name, p.workers, p.line) for p in tl.phases] == [("round", 2, 1), ("round", 3, 1)]
    assert [lane.phase_index for lane in tl.lanes] == [0, 0, 1, 1, 1]
    assert len(with_class(render_run(tl), "lane")) == 5


HOSTILE = '</script><script>alert(1)</script><!-- <img src="http://127.0.0.1:9/x">'


def test_text_from_a_run_cannot_close_the_data_block_or_add_markup():
    from planlang.html_report import render_run
    from planlang.timeline import build_timeline

    events = [
        {"seq": 1, "t": 0.0, "kind": "run_started", "concurrency": 1},
        {"seq": 2, "t": 0.1, "kind": "worker_started", "worker": 1, "label": HOSTILE,
         "role": HOSTILE, "phase": HOSTILE},
        {"seq": 3, "t": 0.2, "kind": "worker_failed", "worker": 1, "error": HOSTILE},
    ]  # fmt: skip
    threads = [{"id": 1, "label": HOSTILE, "status": "failed", "error": HOSTILE,
                "messages": [{"role": "user", "content": HOSTILE}], "replies": []}]  # fmt: skip
    html = render_run(build_timeline(events, {"error": HOSTILE}, threads, HOSTILE))
    assert html.count("</script>") == 2  # the data block's own end and the script's
    assert "<script>alert" not in html and "<img" not in html
    data = html.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert HOSTILE in json.loads(data)["strings"]


def test_tool_calls_count_in_the_totals_the_costs_and_the_budget():
    from planlang.html_report import render_run
    from planlang.timeline import build_timeline

    events = [
        {"seq": 1, "t": 0.0, "kind": "run_started", "concurrency": 1},
        {"seq": 2, "t": 0.0, "kind": "budget", "spent": 0.0, "reserved": 0.0, "cap": None},
        {"seq": 3, "t": 0.1, "kind": "phase", "name": "look"},
        {"seq": 4, "t": 0.2, "kind": "tool_call", "tool": "fs.read", "index": 0, "phase": "look",
         "cached": False, "standin": False, "credits": 0.25, "would_credits": 0.0},
        {"seq": 5, "t": 0.3, "kind": "tool_call", "tool": "fs.read", "index": 1, "phase": "look",
         "cached": True, "standin": False, "credits": 0.0, "would_credits": 0.0},
    ]  # fmt: skip
    tl = build_timeline(events, {}, [], "")
    assert (tl.totals["calls"], tl.totals["cached"], tl.totals["credits"]) == (2, 1, 0.25)
    assert tl.costs["tools"]["fs.read"] == {
        "calls": 2, "paid": 1, "credits": 0.25, "cached": 1, "ledger_credits": 0.0,
    }  # fmt: skip
    assert tl.budget[-1][1] == 0.25  # spent
    assert 'id="cost-tools"' in render_run(tl)


def test_a_phase_name_meets_its_f_strings_pattern_in_linear_time():
    """A plan's ``phase(f"...")`` is matched as a pattern (each field ``.*``) against the names
    its run started: six fields and a name of 400 letters that does not end the f-string's way
    are 400**6 / 6! backtracking steps for Python's ``re`` (over 100 s here, the page's whole
    host still); RE2 matches it in milliseconds: the bound of 30 s is far from both."""
    from planlang.timeline import build_timeline

    source = 'phase(f"{a}{b}{c}{d}{e}{f}x")\nphase("other")\n'
    events = [{"kind": "run_started", "t": 0.0, "concurrency": 1},
              {"kind": "phase", "t": 0.1, "name": "y" * 400},
              {"kind": "phase", "t": 0.2, "name": "y" * 400 + "x"},
              {"kind": "phase", "t": 0.3, "name": "other"}]  # fmt: skip
    started = time.monotonic()
    timeline = build_timeline(events, {}, [], source)
    took = time.monotonic() - started
    assert [p.line for p in timeline.phases] == [None, 1, 2]
    assert took < 30, f"matching the phases took {took:.0f} s"
