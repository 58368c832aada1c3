"""Recorded runs for the report tests: a real run against FakeOpenAI, and a synthetic big one.

``record_run`` runs a checked, approved plan through ``runtime.Run`` and an HTTP client on
127.0.0.1, exactly as ``planlang run`` does, and leaves the run folder it leaves: the budget cap
is hit and raised while workers wait, one worker fails (its answer never matches the schema,
after a repair turn), one passes on its repair, one needs a check-retry, one question is
asked twice, so its second answer comes from the ledger, and one thunk of the plan's own fails.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from planlang.commands import _gate
from planlang.project import load_project
from planlang.run_records import save_finished
from runtime import LLM, Budget, Ledger, Reply, Run, http_client
from runtime.testing import FakeOpenAI

PLAN = """\
S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

phase("scan")
questions = [f"question {i}" for i in range(6)] + ["question 0"]
answers = parallel([lambda q=q: agent(q, schema=S, model="scan") for q in questions])

phase("check")
def done(value):
    return None if value["answer"].startswith("ok") else "start the answer with ok"
checks = parallel([lambda a=a: agent(f"check {a['answer']}", schema=S, model="skeptic",
                                     check=done) for a in answers if a])

phase("report")
log(f"{len([a for a in answers if a])} answers, {len([c for c in checks if c])} checked")
result = agent("summarise", model="lead")
parallel([lambda d=d: 1 // d for d in [0]])  # the plan's own code fails in a thunk
"""

CONFIG = """\
[planlang]
max_agents = 50
concurrency = 3
retries = 0
max_repair_turns = 1
max_check_retries = 2
[planlang.roles.scan]
model = "small"
price = 0.5
[planlang.roles.skeptic]
model = "small"
price = 0.25
[planlang.roles.lead]
model = "large"
price = 1.0
[gate]
max_median = 100
allow_problems = true
"""

CAP = 2.0  # the scan phase alone needs 3.5: workers wait until the test raises it
RAISED = 50.0


def respond(body: dict[str, Any]) -> str:
    """The fake model: question 3 never answers in shape, question 1 only on its repair."""
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    first, last = users[0], users[-1]
    if first == "question 3":
        return "no JSON here"
    if first == "question 1" and len(users) == 1:
        return '{"wrong": 1}'
    if first.startswith("check "):
        # the check of question 2's answer says "ok" only when told it was not done
        ok = not first.endswith("question 2") or last.startswith("Not done yet")
        return json.dumps({"answer": ("ok " if ok else "") + first})
    if "response_format" in body:
        time.sleep(0.05 if first == "question 5" else 0.01)  # one slow worker holds the phase
        return json.dumps({"answer": first})
    return "a summary of the run"


def record_run(root: Path) -> Path:
    """Run PLAN in a project at ``root``; return the run folder (events, records, plan)."""
    (root / "planlang.toml").write_text(CONFIG)
    (root / "plan.py").write_text(PLAN)
    project = load_project(str(root / "planlang.toml"))
    approved = _gate(project, seeds=1).submit(PLAN, filename="plan.py").plan
    assert approved is not None
    folder = project.state_dir / "runs" / "test-run"
    with FakeOpenAI() as fake:
        fake.responder = respond
        client = http_client(fake.base_url, "sk-test", retries=0)
        ledger = Ledger(project.state_dir / "answers.db")
        llm = LLM(ledger, client=client, budget=Budget(CAP), settings=project.settings)
        run = Run("plan.py", llm=llm, settings=project.settings,
                  events_path=folder / "events.jsonl")  # fmt: skip
        (folder / "plan.py").write_text(approved.source, encoding="utf-8")
        raised = threading.Event()

        def raise_when_paused() -> None:
            deadline = time.monotonic() + 60
            while not run.paused and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)  # stay paused a moment, so the wait is visible
            llm.budget.raise_to(RAISED)
            raised.set()

        threading.Thread(target=raise_when_paused, daemon=True).start()
        run.start(approved)
        result = run.wait(timeout=120)
        assert raised.wait(5), "the run never paused at the budget cap"
        save_finished(folder, run, filename="plan.py", mode="collect", result=result)
        ledger.close()
        client.close()
    return folder


def record_synthetic(folder: Path, workers: int, *, concurrency: int = 16) -> Path:
    """A big recorded run without HTTP: ``workers`` workers over three phases (in process)."""

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        text = messages[-1]["content"]
        return Reply(json.dumps({"answer": text[:40]}), credits=0.001, model=model)

    llm = LLM(Ledger(":memory:"), client=client, budget=Budget(None))
    run = Run("synthetic", llm=llm, concurrency=concurrency, max_agents=workers + 1,
              events_path=folder / "events.jsonl")  # fmt: skip
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    sizes = {"scan": workers * 7 // 10, "check": workers * 2 // 10}
    sizes["report"] = workers - sum(sizes.values())

    def plan(r: Run) -> Any:
        for name, n in sizes.items():
            r.phase(name)
            r.parallel([lambda i=i, name=name: r.agent(f"{name} item {i} " + "x" * 80,
                                                       schema=schema, model=name)
                        for i in range(n)])  # fmt: skip
        return "done"

    (folder / "plan.py").parent.mkdir(parents=True, exist_ok=True)
    (folder / "plan.py").write_text(
        "".join(f'phase("{name}")\nparallel(...)\n' for name in sizes), encoding="utf-8"
    )
    result = run.run_sync(plan)
    save_finished(folder, run, filename="synthetic.py", mode="collect", result=result)
    return folder
