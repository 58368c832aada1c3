"""Embedding the gate in your own agent stack, end to end, offline.

Run it with ``python examples/embed_gate.py``. It registers a host word of its own (``lookup``),
submits a plan "written by a model", prints the price and the gate's decision, and runs the plan
when it is approved, against a scripted client that stands in for a real endpoint (swap in
``runtime.http_client()`` to talk to any OpenAI-compatible server).
"""

from __future__ import annotations

import json

import planlang
from planlang.gate import Gate, Policy
from runtime import LLM, Budget, Ledger, Reply, Run, Settings

# 1. A host word of your own. The plan sees it as a function; what it returns is copied into
#    plain data, so the plan cannot reach your objects through it.
GLOSSARY = {"ledger": "where answers are kept", "gate": "what approves plans"}


def provide_words(run: Run) -> dict[str, object]:
    def lookup(term: str) -> str:
        return GLOSSARY.get(term, "unknown")

    return {"lookup": lookup}


# 2. A plan, as a lead model would write it.
MODEL_WRITTEN_PLAN = """
DEFINITION = {"type": "object", "properties": {"term": {"type": "string"},
              "better": {"type": "string"}}, "required": ["term", "better"]}
phase("improve")
terms = inputs["terms"]
drafts = parallel([lambda t=t: agent(f"Improve the definition of {t}: {lookup(t)}",
                                     schema=DEFINITION, model="writer") for t in terms])
phase("review")
verdict = agent("Which definition is best? " + "; ".join(d["better"] for d in drafts if d),
                model="reviewer")
result = {"drafts": drafts, "verdict": verdict}
"""

SETTINGS = Settings(
    roles={
        "writer": {"model": "small", "price": 0.01},
        "reviewer": {"model": "big", "price": 0.05},
    },
    max_agents=20,
)


def scripted_client(model: str, messages: list[dict[str, str]], **params: object) -> Reply:
    """Stands in for an endpoint: JSON when a schema is asked for, text otherwise."""
    if "response_format" in params:
        data = {"term": "x", "better": f"a clearer definition from {model}"}
        return Reply(text=json.dumps(data), data=data)
    return Reply(text="the first one")


def main() -> None:
    gate = Gate(Policy(max_ceiling=5.0, max_median=0.5), settings=SETTINGS, host=provide_words,
                inputs={"terms": ["ledger", "gate"]}, seeds=3)  # fmt: skip
    try:
        decision = gate.submit(MODEL_WRITTEN_PLAN, filename="model_plan.py")
    except planlang.PlanRefused as refused:
        for problem in refused.problems:  # feed these back to the model that wrote the plan
            print(problem.render())
        return
    total = decision.price.total
    print(f"price: {total['calls'].median:g} calls, {total['credits'].median:.3g} credits "
          f"(ceiling {decision.price.ceiling:g})")  # fmt: skip
    print(f"decision: {decision.status}", *decision.reasons)
    if not decision.approved:
        return  # a person approves it later: gate.approve(decision.id)
    llm = LLM(Ledger(":memory:"), client=scripted_client, budget=Budget(1.0), settings=SETTINGS)
    run = Run("glossary", llm=llm, settings=SETTINGS)
    result = run.run_sync(decision.plan)  # the ApprovedPlan is the only runnable form
    print("result:", json.dumps(result))
    print("spent:", run.accounting.to_dict()["total"]["credits"], "credits")


if __name__ == "__main__":
    main()
