"""`planlang run` tells the truth about how a run ended (issue 13, items 1-4).

Subprocess tests with real signals against a real loopback server. It is an error for a run
whose workers failed to exit 0, for a budget below the plan's cost to hang, for the result to
be hidden, for two runs to share a record, and for SIGTERM or SIGKILL to lose the record.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runtime.testing import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-planlang-truthful-test-never-printed"
SCHEMA = '{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}'
PLAN = f"""
phase("scan")
answers = parallel([lambda i=i: agent(f"question {{i}}", schema={SCHEMA}, model="scan")
                    for i in range(6)])
result = [a["answer"] if a is not None else None for a in answers]
"""
CONFIG = """
[planlang]
max_agents = 20
concurrency = 2
retries = 1
backoff_base = 0.01
[planlang.roles.scan]
model = "small"
price = 0.5
[gate]
max_median = 10
"""
EXPECTED = [f"question {i}" for i in range(6)]


@pytest.fixture
def server():
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


@pytest.fixture
def project(tmp_path):
    (tmp_path / "planlang.toml").write_text(CONFIG)
    (tmp_path / "plan.py").write_text(PLAN)
    return tmp_path


def env_for(url):
    return {**os.environ, "PYTHONPATH": str(ROOT), "LLM_BASE_URL": url, "LLM_API_KEY": KEY}


def planlang(project, *args, url="http://127.0.0.1:9/v1"):
    command = [sys.executable, "-m", "planlang", *args]
    done = subprocess.run(command, cwd=project, env=env_for(url), capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert "Traceback" not in done.stderr and KEY not in done.stdout + done.stderr
    return done


def start(project, *args, url):
    return subprocess.Popen([sys.executable, "-m", "planlang", "run", "plan.py", *args],
                            cwd=project, env=env_for(url), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def metas(project):
    return [json.loads(p.read_text()) for p in (project / ".planlang" / "runs").glob("*/meta.json")]


def wait_for(condition, what):
    deadline = time.monotonic() + 60  # a hang guard, not a timing assertion
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


# -- 1: failure exits 1, grouped by reason; partial results on request ----------------------


def test_an_unreachable_endpoint_fails_the_run_and_is_named(project):
    done = planlang(project, "run", "plan.py")
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert "6 worker(s) failed, by reason:" in done.stderr
    [group] = [line for line in done.stderr.splitlines() if line.startswith("  6 × ")]
    assert "http://127.0.0.1:9/v1/chat/completions is unreachable" in group
    [meta] = metas(project)
    assert meta["status"] == "failed"
    assert " failed " in planlang(project, "runs").stdout


def test_partial_results_are_accepted_on_request(project, server):
    server.fail_next("garbage")  # one worker gets a body that is not an answer
    done = planlang(project, "run", "plan.py", "--allow-failed-workers", url=server.base_url)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result.count(None) == 1 and len(result) == 6
    assert "1 worker(s) failed, by reason:" in done.stderr


# -- 3: the result on stdout, in `planlang result` and `planlang show` ----------------------


def test_the_result_is_printed_as_json_and_kept(project, server):
    done = planlang(project, "run", "plan.py", url=server.base_url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == EXPECTED
    assert "phase scan: 6/6 done, 0 running, 0 failed, 0 cached" in done.stderr
    [meta] = metas(project)
    assert json.loads(planlang(project, "result", meta["id"]).stdout) == EXPECTED
    shown = planlang(project, "show", meta["id"]).stdout
    assert '"question 5"' in shown
    again = planlang(project, "run", "plan.py", url=server.base_url)
    assert "phase scan: 6/6 done, 0 running, 0 failed, 6 cached" in again.stderr
    assert server.requests == 6


def test_a_cyclic_result_is_recorded_with_its_cycle(project, server):
    (project / "plan.py").write_text("x = [agent('q')]\nx.append(x)\nresult = x\n")
    from planlang.result_json import decode

    done = planlang(project, "run", "plan.py", url=server.base_url)
    assert done.returncode == 0, done.stderr
    result = decode(json.loads(done.stdout))
    assert result[0] == "echo: q" and result[1] is result


# -- 4: unique records, SIGTERM like Ctrl-C, SIGKILL listed as interrupted -----------------


def test_two_runs_started_at_once_keep_two_records(project, server):
    procs = [start(project, url=server.base_url) for _ in range(2)]
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
    finally:  # a failure here leaves no run behind to be collected in a later test
        for proc in procs:
            proc.kill()
            proc.communicate()
    records = metas(project)
    assert len({m["id"] for m in records}) == 2
    for folder in (project / ".planlang" / "runs").iterdir():
        lines = (folder / "events.jsonl").read_text().splitlines()
        kinds = [json.loads(line)["kind"] for line in lines]
        assert kinds.count("run_started") == 1


def test_sigterm_is_recorded_and_the_rerun_resumes(project, server):
    server.hold_after = 2
    proc = start(project, url=server.base_url)
    wait_for(lambda: server.held >= 1, "a request parked at the server")
    proc.send_signal(signal.SIGTERM)
    server.release()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Interrupted" in err and "Traceback" not in err
    [meta] = metas(project)
    assert meta["status"] == "interrupted"
    paid = sum(server.answered.values())
    server.hold_after = None
    done = planlang(project, "run", "plan.py", url=server.base_url)
    assert done.returncode == 0 and json.loads(done.stdout) == EXPECTED
    assert sum(server.answered.values()) == 6 and paid >= 2  # nothing answered was paid twice


def test_a_killed_run_is_listed_as_interrupted(project, server):
    server.hold_after = 1
    proc = start(project, url=server.base_url)
    wait_for(lambda: server.held >= 1, "a request parked at the server")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    server.release()
    listed = planlang(project, "runs").stdout
    assert " interrupted " in listed


# -- 2: a budget below the cost stops cleanly off a terminal; raise and cancel from outside ----


def test_a_budget_below_the_cost_stops_at_the_cap_and_the_rerun_resumes(project, server):
    done = planlang(project, "run", "plan.py", "--budget", "1.0", url=server.base_url)
    assert done.returncode == 1, done.stderr
    assert "Stopped at the budget: spent 1 of 1" in done.stderr
    [meta] = metas(project)
    assert meta["status"] == "stopped-at-budget" and meta["spent"] == 1.0
    assert server.requests == 2
    rerun = planlang(project, "run", "plan.py", "--budget", "10", url=server.base_url)
    assert rerun.returncode == 0 and json.loads(rerun.stdout) == EXPECTED
    assert server.requests == 6  # the two answers paid for came from the ledger
    assert "2 cached" in rerun.stderr


def test_raise_from_another_shell_lets_a_waiting_run_finish(project, server):
    proc = start(project, "--budget", "1.0", "--wait-at-budget", url=server.base_url)
    wait_for(lambda: metas(project) and server.requests == 2, "the run at its cap")
    [meta] = metas(project)
    raised = planlang(project, "raise", meta["id"], "10", "--json")
    assert raised.returncode == 0, raised.stderr
    assert json.loads(raised.stdout) == {"id": meta["id"], "request": {"raise": 10.0},
                                         "taken": True, "why": None}  # fmt: skip
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out) == EXPECTED and "The cap was raised to 10" in err


def test_cancel_from_another_shell_ends_a_live_run(project, server):
    proc = start(project, "--budget", "1.0", "--wait-at-budget", url=server.base_url)
    wait_for(lambda: metas(project) and server.requests == 2, "the run at its cap")
    [meta] = metas(project)
    assert planlang(project, "cancel", meta["id"]).returncode == 0
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Cancelled by request" in err
    assert metas(project)[0]["status"] == "cancelled"
    late = planlang(project, "raise", meta["id"], "10")
    assert late.returncode == 2 and "is not running (cancelled)" in late.stderr


class Terminal:
    """``planlang run`` on a pseudo-terminal (stdin and stderr), its stdout piped: what it
    drew is kept, and read all the time, so the live view never fills the terminal's buffer."""

    def __init__(self, project, url, *args):
        import pty

        self.master, slave = pty.openpty()
        command = [sys.executable, "-m", "planlang", "run", "plan.py", *args]
        self.proc = subprocess.Popen(command, cwd=project, env=env_for(url), stdin=slave,
                                     stderr=slave, stdout=subprocess.PIPE, text=True)  # fmt: skip
        os.close(slave)
        self.seen = b""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        try:
            while data := os.read(self.master, 4096):
                with self._lock:
                    self.seen += data
        except OSError:
            pass

    def text(self):
        with self._lock:
            return self.seen.decode(errors="replace")

    def wait_for(self, text):
        wait_for(lambda: text in self.text(), repr(text) + " on the terminal: " + self.text())

    def finish(self):
        out, _ = self.proc.communicate(timeout=120)
        self._reader.join(10)
        os.close(self.master)
        return self.proc.returncode, out, self.text()


@pytest.fixture
def on_a_terminal(project, server):
    """Start ``planlang run`` on a terminal; whatever a test leaves running is killed."""
    started = []
    yield lambda *args: started.append(Terminal(project, server.base_url, *args)) or started[-1]
    for terminal in started:
        if terminal.proc.poll() is None:
            terminal.proc.kill()
            terminal.proc.wait(30)


def test_on_a_terminal_the_run_pauses_at_the_cap_and_asks_for_a_new_one(
    project, server, on_a_terminal
):
    terminal = on_a_terminal("--budget", "1")
    terminal.wait_for("New cap, or 'stop'")
    assert "Paused at the budget: spent 1 of the cap 1." in terminal.text()
    os.write(terminal.master, b"10\n")
    code, out, _ = terminal.finish()
    assert code == 0 and json.loads(out) == EXPECTED
    assert server.requests == 6


def test_raise_from_another_shell_answers_the_prompt_on_a_terminal(project, server, on_a_terminal):
    terminal = on_a_terminal("--budget", "1")
    terminal.wait_for("New cap, or 'stop'")
    [meta] = metas(project)
    raised = planlang(project, "raise", meta["id"], "10", "--json")
    assert raised.returncode == 0 and json.loads(raised.stdout)["taken"] is True, raised.stderr
    code, out, drawn = terminal.finish()
    assert code == 0 and json.loads(out) == EXPECTED
    assert "The cap was raised to 10 (planlang raise)." in drawn
    assert metas(project)[0]["status"] == "completed" and server.requests == 6


def test_cancel_from_another_shell_answers_the_prompt_on_a_terminal(project, server, on_a_terminal):
    terminal = on_a_terminal("--budget", "1")
    terminal.wait_for("New cap, or 'stop'")
    [meta] = metas(project)
    cancelled = planlang(project, "cancel", meta["id"], "--json")
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["taken"] is True
    code, out, drawn = terminal.finish()
    assert code == 1 and out == ""
    assert "Cancelled by request (planlang cancel)." in drawn
    assert metas(project)[0]["status"] == "cancelled" and server.requests == 2


# -- 6: the live view on a terminal: per phase done/total, running, failed, cached; credits --


def test_the_live_view_draws_each_phase_its_credits_and_a_true_summary(
    project, server, on_a_terminal
):
    (project / "plan.py").write_text(PLAN + 'phase("sum")\nresult = agent("the sum of it all")\n')
    release = threading.Event()

    def responder(body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if first.startswith(("question 2", "question 3")):
            release.wait(120)  # two workers stay running until the test has seen them
        return json.dumps({"answer": first.split("\n")[0]})

    server.responder = responder
    terminal = on_a_terminal("--budget", "100")
    try:
        wait_for(lambda: "phase scan: 2/6 done, 2 running, 0 failed, 0 cached" in drawn(terminal),
                 "the live view of the scan")  # fmt: skip
        live = drawn(terminal)
        assert "plan.py · running · credits 1 of 100 · elapsed " in live and " · ETA " in live
    finally:
        release.set()
    code, out, _ = terminal.finish()
    assert code == 0 and json.loads(out) == json.dumps({"answer": "the sum of it all"})
    lines = [line for line in drawn(terminal).splitlines() if line]
    scan = "phase scan: 6/6 done, 0 running, 0 failed, 0 cached"
    summary = len(lines) - 1 - lines[::-1].index(scan)  # the last: the live view drew it too
    assert lines[summary + 1] == "phase sum: 1/1 done, 0 running, 0 failed, 0 cached"
    assert lines[summary + 2].startswith("plan.py · completed · credits 3.01 of 100 · elapsed ")
    assert "ETA" not in lines[summary + 2]


def drawn(terminal):
    """What the terminal shows as text: rich's colours and cursor moves taken out."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.text())
    return "\n".join(line.strip() for line in text.replace("\r", "\n").splitlines())


# -- 5: --retry-failed asks the failed workers again, under a fresh sample index --------------


def test_retry_failed_asks_again_and_deletes_nothing(project, server):
    asked = {"question 2": 0}

    def responder(body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if first.startswith("question 2"):
            asked["question 2"] += 1
            if asked["question 2"] <= 2:  # the first answer and its repair: not JSON
                return "I would rather not."
        return json.dumps({"answer": first.split("\n")[0]})

    server.responder = responder
    failed = planlang(project, "run", "plan.py", url=server.base_url)
    assert failed.returncode == 1 and "1 worker(s) failed" in failed.stderr
    paid = server.requests
    again = planlang(project, "run", "plan.py", url=server.base_url)
    assert again.returncode == 1 and server.requests == paid  # strict replay: same answer
    retried = planlang(project, "run", "plan.py", "--retry-failed", url=server.base_url)
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout) == EXPECTED
    assert server.requests == paid + 1 and "Retrying 1 failed worker(s)" in retried.stderr
    replayed = planlang(project, "run", "plan.py", "--replay")
    assert replayed.returncode == 1 and server.requests == paid + 1  # old answers still there


# -- 6: piped, one line per phase change and a final summary, never wrapped -------------------


def test_piped_progress_is_a_line_per_phase_change_and_a_summary(project, server):
    (project / "plan.py").write_text(PLAN + 'phase("sum")\nresult = agent("the sum of it all")\n')
    done = planlang(project, "run", "plan.py", url=server.base_url)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    scan = "phase scan: 6/6 done, 0 running, 0 failed, 0 cached"
    assert lines[:2] == [scan, "phase sum: 1/1 done, 0 running, 0 failed, 0 cached"]
    assert lines[2].startswith("plan.py · completed · credits 3.01 · elapsed ")
    [last] = [line for line in lines if line.startswith("Run ")]
    assert len(last) > 80 and last.endswith("details: planlang show " + metas(project)[0]["id"])
