"""Red team 17: the host of plans, attacked through the embedding API, ``price`` and the
runtime's ``agent`` word with schemas, offline. Each case fails on 73c0d09; deadlines here are
hang guards only, never the thing measured. Cases that could hold the host run in a
subprocess that is killed at its timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 120.0


def _python(code: str, timeout: float = HANG_GUARD, mode: str = "process") -> dict:
    """Run ``code`` in a fresh interpreter of this worktree, in a session of its own (killed
    whole at ``timeout``, its fork servers too); its last stdout line is JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PLANLANG_ISOLATION": mode}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                             start_new_session=True)  # fmt: skip
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise AssertionError(f"the host did not finish within {timeout:.0f} s") from None
    lines = out.strip().splitlines()
    assert lines, f"no output (exit {child.returncode}): {err[-2000:]}"
    return json.loads(lines[-1])


# -- 1. the stand-in's least-answer bound, around it -------------------------------------------

_ARRAY = "{'type': 'array', 'minItems': 300, 'items': %s}"
_INT = "{'type': 'integer'}"
_NESTED_ANYOF = "{'anyOf': [%s]}" % (
    _ARRAY % ("{'anyOf': [%s]}" % (_ARRAY % ("{'anyOf': [%s]}" % (_ARRAY % _INT))))
)
_UNTYPED = (
    "{'minItems': 300, 'items': {'minItems': 300, 'items': {'minItems': 300, 'items':"
    " {'type': 'integer'}}}}"
)
_REFS = ("{'$defs': {'a': {'type': 'array', 'minItems': 300, 'items': {'type': 'integer'}},"
         " 'b': {'type': 'array', 'minItems': 300, 'items': {'$ref': '#/$defs/a'}}},"
         " 'type': 'array', 'minItems': 300, 'items': {'$ref': '#/$defs/b'}}")  # fmt: skip


@pytest.mark.parametrize(("schema", "mode"), [
    (_NESTED_ANYOF, "process"), (_UNTYPED, "process"), (_REFS, "process"),
    (_NESTED_ANYOF, "inprocess"),
], ids=["anyOf", "untyped", "ref", "anyOf-inprocess"])  # fmt: skip
def test_a_large_least_answer_behind_anyof_no_type_or_ref_is_not_built_in_the_host(
    schema: str, mode: str
) -> None:
    """REDTEAM14's fix bounds the stand-in's least answer (``standin_size.least_size``) only
    for a schema that names one ``type`` and no ``anyOf``/``oneOf``, and never follows a
    ``$ref``: the same 27 million items (three nested ``minItems`` of 300) wrapped in a
    one-choice ``anyOf``, written without ``type`` (the maker guesses "array" from ``items``),
    or reached through ``$defs`` is built in the host. The price returns at the plan's limit
    (``seconds``, 3.4 s) while a host thread goes on building and validating it: 60 s of the
    host's CPU a minute later and still going, 270 MB of the host's memory for a plan of
    ``memory_mb=256`` (1,000 a level is 10**9 items); in one process the price itself does
    not return (past the test's 40 s). It should be refused at once as a worker's failure, as
    the typed schema is."""
    got = _python(
        f"""
        import json, resource, time
        import planlang
        from planlang.sandbox.limits import Limits
        from runtime import Settings
        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime
        report = planlang.price("r = agent('x', schema={schema})\\nresult = 1\\n",
                                settings=Settings(), seeds=1,
                                limits=Limits(seconds=2, memory_mb=256))
        before = cpu()
        time.sleep(4.0)  # what the host still does for a price that returned
        print(json.dumps({{"kinds": [p.kind for p in report.problems],
                           "cpu_after": cpu() - before}}), flush=True)
        import os; os._exit(0)  # the building thread would hold the interpreter's exit
    """,
        timeout=40.0,
        mode=mode,
    )
    assert got["cpu_after"] < 1.5, f"the host spent {got['cpu_after']:.1f} s of CPU after the price"
    assert got["kinds"] == ["worker"], got
