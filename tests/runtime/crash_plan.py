"""A two-phase plan of 30 workers each, run as a child process by the crash-recovery test.

Usage: python crash_plan.py LEDGER BASE_URL API_KEY OUT_JSON
Phase two asks about phase one's answers, so its questions exist only once phase one is done.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from runtime import LLM, Ledger, Run, http_client

S = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
CONCURRENCY = 4


def plan(run: Run) -> Any:
    run.phase("scan")
    found = run.parallel([lambda i=i: run.agent(f"scan {i}", schema=S) for i in range(30)])
    run.phase("verify")
    checks = [lambda f=f: run.agent(f"verify {f['answer']}", schema=S) for f in found]
    return {"scan": found, "verify": run.parallel(checks)}


def main(ledger_path: str, base_url: str, key: str, out: str) -> None:
    with http_client(base_url, key, timeout=10, retries=0) as client:
        ledger = Ledger(ledger_path)
        run = Run("crash test", llm=LLM(ledger, client=client), concurrency=CONCURRENCY)
        result = run.run_sync(plan)
        ledger.close()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, sort_keys=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
