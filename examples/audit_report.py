"""Run the example audit offline and draw its report: the picture in the README.

The audit plan (``examples/audit_plan.py``, with the project's ``planlang.toml``) runs for real
through the gate, the runtime and the HTTP client, against ``runtime.testing.FakeOpenAI`` on
127.0.0.1 answering with planlang's stand-in (valid JSON for every schema) after a short,
varied delay; shards are smaller than the project's, so there are more workers to draw. The
budget cap is set below what the audit needs, so workers wait at it until this script raises
it, as a person watching the run would. Nothing leaves the machine.

    python examples/audit_report.py                       # writes audit-report.html here
    python examples/audit_report.py --png docs/report.png # and a screenshot (headless Chromium)
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planlang.commands import _gate  # noqa: E402
from planlang.html_report import render_run  # noqa: E402
from planlang.project import load_project  # noqa: E402
from planlang.run_records import save_finished  # noqa: E402
from planlang.standin import StandIn  # noqa: E402
from planlang.timeline import load_timeline  # noqa: E402
from runtime import LLM, Budget, Ledger, Run, http_client  # noqa: E402
from runtime.testing import FakeOpenAI  # noqa: E402

CAP, RAISED = 0.3, 5.0
SHARD_TOKENS = 4000  # smaller shards than planlang.toml's, so more scan workers to draw


def respond_with(standin: StandIn) -> Any:
    def respond(body: dict[str, Any]) -> str:
        params = {k: v for k, v in body.items() if k not in ("model", "messages")}
        digest = hashlib.sha256(str(body["messages"]).encode()).digest()
        time.sleep(0.05 + digest[0] / 255 * 0.35)  # 50-400 ms, fixed per question
        return standin(body["model"], body["messages"], **params).text

    return respond


def record(state: Path) -> Path:
    project = load_project(str(ROOT / "planlang.toml"))
    project.state_dir = state
    project.options = {**project.options, "shard_tokens": SHARD_TOKENS}
    source = (ROOT / "examples" / "audit_plan.py").read_text(encoding="utf-8")
    approved = _gate(project, seeds=2).submit(source, filename="examples/audit_plan.py").plan
    if approved is None:
        raise SystemExit("the gate held the example audit plan")
    folder = state / "runs" / "example-audit"
    with FakeOpenAI() as fake:
        fake.responder = respond_with(StandIn(7))
        client = http_client(fake.base_url, "sk-local", retries=0)
        llm = LLM(Ledger(state / "answers.db"), client=client, budget=Budget(CAP),
                  settings=project.settings)  # fmt: skip
        run = Run("examples/audit_plan.py", llm=llm, settings=project.settings,
                  events_path=folder / "events.jsonl")  # fmt: skip
        (folder / "plan.py").write_text(source, encoding="utf-8")

        def raise_when_paused() -> None:
            deadline = time.monotonic() + 120
            while not run.paused and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.6)  # a person notices, then raises the cap
            llm.budget.raise_to(RAISED)

        threading.Thread(target=raise_when_paused, daemon=True).start()
        run.start(approved)
        result = run.wait(timeout=600)
        save_finished(folder, run, filename="examples/audit_plan.py", mode="collect", result=result)
        client.close()
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default="audit-report.html")
    parser.add_argument("--png", default=None, help="Also save a screenshot here.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = record(Path(tmp))
        Path(args.html).write_text(render_run(load_timeline(folder)), encoding="utf-8")
        print(f"Wrote {args.html}")
        if args.png:
            chromium = shutil.which("chromium") or "/usr/bin/chromium"
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                            f"--user-data-dir={tmp}/profile", "--window-size=1300,1250",
                            f"--screenshot={Path(args.png).resolve()}",
                            Path(args.html).resolve().as_uri()],
                           check=True, capture_output=True, timeout=300)  # fmt: skip
            print(f"Wrote {args.png}")


if __name__ == "__main__":
    main()
