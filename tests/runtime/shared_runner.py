"""One runner process of the many-runners tests: N calls through ``Run.agent`` over a shared
ledger and a shared budget, with a client that writes each question it is paid for to a file
(the count at the client).

Usage: shared_runner.py LEDGER BUDGET_URL CAP NAME CALLS QUESTIONS SEED PAID_FILE [LEASE [DELAY
[TIMEOUT]]]; TIMEOUT: how long a PostgreSQL store waits for a connection (its default, 10 s).
Exit 0 when the run completed; 3 with one line on stderr when it ended with a RunError.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from typing import Any

from runtime import LLM, Budget, Ledger, Reply, Run, RunError, Settings

PRICE = 0.01


def main() -> int:
    location, budget_url, cap, name, calls, questions, seed, paid_path = sys.argv[1:9]
    lease = float(sys.argv[9]) if len(sys.argv) > 9 else 10.0
    delay = float(sys.argv[10]) if len(sys.argv) > 10 else 0.002  # seconds a call takes
    waits = {"timeout": float(sys.argv[11])} if len(sys.argv) > 11 else {}
    asked = random.Random(int(seed)).sample(range(int(questions)), int(calls))
    paid = open(paid_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - to the end
    lock = threading.Lock()

    def client(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        question = messages[-1]["content"]
        with lock:
            paid.write(question + "\n")  # a line each paid call, before the answer exists
        time.sleep(delay)
        return Reply(text=f"answer to {question}", credits=PRICE, model=model)

    settings = Settings(default_price=PRICE, max_agents=int(calls) + 10, concurrency=8)
    options = {"lease": lease, **waits} if location.startswith("postgresql") else {}
    try:
        ledger = Ledger(location, **options)
        budget: Budget | None = None
        if cap != "-":  # "-": the process's own budget; "keep": the shared budget's stored cap
            from runtime.shared_budget import SharedBudget

            capped = {} if cap == "keep" else {"cap": float(cap)}
            budget = SharedBudget(budget_url, name, lease=lease, **capped, **waits)
        llm = LLM(ledger, client=client, budget=budget, settings=settings)
        run = Run(f"runner {seed}", llm=llm, settings=settings)
        run.run_sync(lambda r: r.parallel([lambda q=q: r.agent(f"question {q}") for q in asked]))
    except RunError as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return 3
    finally:
        paid.close()
    print(f"done {run.status} {llm.stats['sent']} sent", flush=True)
    ledger.close()
    if budget is not None:
        budget.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
