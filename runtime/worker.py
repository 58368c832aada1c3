"""One worker's conversation: ask, validate against the schema, repair, check, retry.

Kept apart from ``run.py`` because it is the part with rules a plan author relies on:
- an answer that does not match its JSON schema (Draft 2020-12) gets repair turns
  (``max_repair_turns``, default one) that list the problems;
- ``check(value)`` is the worker's definition of done: it returns a problem (a string) or
  None; a problem is fed back and the worker retries, at most ``max_check_retries`` times;
- so a worker makes at most ``1 + max_repair_turns + max_check_retries`` calls.
Every turn is part of the conversation, so the ledger key of a repair includes the bad answer
and a rerun replays the same turns for free.
"""

from __future__ import annotations

import copy
import operator
import threading
from collections.abc import Callable
from typing import Any

from jsonschema.exceptions import SchemaError

from .canonical import same_as_dumps, written_too_large
from .errors import ClientError, RunError, WorkerFailed
from .json_schema import Validator, check_schema, check_size, schema_validator
from .quick_schema import Quick, compile_quick
from .records import WorkerRecord
from .reply import Reply, parse_json_text

Chat = Callable[[list[dict[str, Any]]], Reply]
Check = Callable[[Any], "str | None"]

# schema text -> its validator, and its quick yes (runtime.quick_schema) when it has one
_validators: dict[str, tuple[Validator, Quick | None]] = {}
_validators_lock = threading.Lock()
_schema_text = same_as_dumps(sort_keys=True)  # json.dumps(schema, sort_keys=True)
# json.dumps(x, sort_keys=True, ensure_ascii=False): how a schema and data are shown to a model
shown_json = same_as_dumps(sort_keys=True, ensure_ascii=False)
# a schema's: JSON has no NaN or infinity, and an endpoint refuses a request that holds one
_schema_json = same_as_dumps(sort_keys=True, ensure_ascii=False, allow_nan=False)


def key_of_shown(shown: str) -> str | None:
    """``json.dumps(schema, sort_keys=True)`` from the schema's ``shown_json`` text, when they
    are the same text: all ASCII, and no DEL (which only ``ensure_ascii`` escapes)."""
    return shown if shown.isascii() and "\x7f" not in shown else None


# The most values a worker's data may hold written out: shown to a model as text, a million
# values is past any model's context already; a plan's shared lists made 2**30 in 30 lines.
DATA_MOST = 1_000_000


def check_sizes(schema: dict[str, Any] | None, data: Any) -> None:
    """Raise ``ValueError`` for a schema or data too large written out (``check_size``,
    ``DATA_MOST``) or nested too deeply, in time bounded by the limit: their text would be as
    long."""
    if schema is not None:
        try:
            check_size(schema)
        except SchemaError as exc:
            raise ValueError(f"The worker's JSON schema is not valid: {exc.message}") from None
    if data is not None:
        _bounded("data", data)


def _bounded(what: str, value: Any) -> None:
    wrong = written_too_large(value, DATA_MOST)
    if wrong is not None:
        raise ValueError(f"The worker's {what} {wrong}.")


def prompt_text(prompt: Any) -> str:
    """The prompt as the worker's text: a plan may hand any value, written out with ``str``
    once it is known to be no larger than data may be (``ValueError`` says why not)."""
    if isinstance(prompt, str):
        return prompt
    _bounded("prompt", prompt)
    return str(prompt)


def schema_shown(schema: dict[str, Any]) -> str:
    """The schema's text as the model is shown it (``shown_json``); ``ValueError`` for one
    that is not plain JSON (a set, a key that is not text beside one that is)."""
    try:
        return _schema_json(schema)
    except (TypeError, ValueError) as exc:
        why = str(exc)
        if why.startswith("Out of range float values"):
            why = "it holds a number JSON has no text for (NaN or an infinity)"
        raise ValueError(f"The worker's JSON schema is not plain JSON data: {why}") from None


def check_system(system: Any) -> None:
    """Raise ``ValueError`` unless ``system`` is text (or None)."""
    if system is not None and not isinstance(system, str):
        raise ValueError(
            f"The worker's system text is not text: {type(system).__name__} was given."
        )


def argument_problem(model: Any, label: Any, sample: Any) -> str | None:
    """Why a worker's ``model``, ``label`` or ``sample`` cannot be used, or None: a model of
    5 went to the endpoint as ``"model": 5`` (and the rehearsal blamed its client)."""
    for name, value in (("model", model), ("label", label)):
        if value is not None and not isinstance(value, str):
            return f"The worker's {name} is not text: {type(value).__name__} was given."
    try:  # a numpy integer is a whole number too
        whole = None if isinstance(sample, bool) else operator.index(sample)
    except TypeError:
        whole = None
    if whole is None or whole < 0:
        shown = repr(sample) if type(sample) in (int, float, bool) else type(sample).__name__
        return f"The worker's sample is not a whole number of 0 or more: {shown} was given."
    return None


def validator_for(schema: dict[str, Any]) -> Validator:
    """A cached Draft 2020-12 validator; raises ``ValueError`` for a schema that is not valid."""
    return checker_for(schema)[0]


def checker_for(schema: dict[str, Any], text: str | None = None) -> tuple[Validator, Quick | None]:
    """``validator_for``'s validator, with the schema's quick yes (None when it has none).
    ``text`` is ``json.dumps(schema, sort_keys=True)`` when the caller has it already."""
    if text is None:
        text = _schema_text(schema)
    with _validators_lock:
        found = _validators.get(text)
    if found is not None:
        return found
    try:
        check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"The worker's JSON schema is not valid: {exc.message}") from None
    made = (schema_validator(schema), compile_quick(schema))
    with _validators_lock:
        if len(_validators) > 512:
            _validators.clear()
        _validators[text] = made
    return made


def schema_problems(validator: Validator, value: Any, limit: int = 10) -> list[str]:
    problems = []
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
    except RecursionError:  # jsonschema recurses into the answer: one nested past the stack
        return ["at (top level): the answer nests too deeply to be checked against the schema"]
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        problems.append(f"at {where}: {error.message}")
        if len(problems) == limit:
            break
    return problems


def build_messages(
    prompt: str,
    *,
    system: str | None,
    schema: dict[str, Any] | None,
    data: Any,
    shown: str | None = None,
) -> list[dict[str, Any]]:
    """The first messages of a worker; ``shown`` is ``shown_json(schema)`` if made already."""
    system_parts = [system] if system else []
    if schema is not None:
        system_parts.append(
            "Answer with only a JSON value (no prose, no code fence) that validates against "
            "this JSON schema:\n" + (shown if shown is not None else shown_json(schema))
        )
    user = str(prompt)
    if data is not None:
        try:
            user += "\n\nData (JSON):\n" + shown_json(data)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"The worker's data is not plain JSON data: {exc}") from None
    messages = [{"role": "system", "content": "\n\n".join(system_parts)}] if system_parts else []
    messages.append({"role": "user", "content": user})
    return messages


def response_params(schema: dict[str, Any] | None, style: str) -> dict[str, Any]:
    """The ``response_format`` asking the model for JSON, per ``Settings.response_format``."""
    if schema is None or style == "none":
        return {}
    if style == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        }
    }


def converse(
    chat: Chat,
    record: WorkerRecord,
    *,
    schema: dict[str, Any] | None,
    check: Check | None,
    max_repairs: int,
    max_checks: int,
    on_retry: Callable[[str, str], object] | None = None,
    schema_text: str | None = None,
) -> Any:
    """Talk until the answer is valid and done; return it as plain data (or text).

    Raises ``WorkerFailed`` when the worker gives up. Run-ending errors pass through.
    ``on_retry(why, problem)`` is told before each repair (``why="repair"``) or check-retry
    (``why="check"``) turn, so a run can mark those turns. ``schema_text`` is
    ``json.dumps(schema, sort_keys=True)`` if the caller made it already.
    """
    validator, quick = checker_for(schema, schema_text) if schema is not None else (None, None)
    messages = record.messages
    repairs_left, checks_left = max_repairs, max_checks
    while True:
        try:
            reply = chat(list(messages))
        except ClientError as exc:
            raise WorkerFailed(record.id, f"the model call failed: {exc}") from None
        record.add_reply(reply)
        messages.append({"role": "assistant", "content": reply.text})
        value: Any = reply.text
        if validator is not None:
            try:
                value = parse_json_text(reply.text)
                fits = quick is not None and quick(value)  # else jsonschema says what is wrong
                problems = [] if fits else schema_problems(validator, value)
            except ValueError as exc:
                problems = [str(exc)]
            if problems:
                if repairs_left == 0:
                    raise WorkerFailed(record.id, _failed_text(problems, reply.cut_off))
                repairs_left -= 1
                if on_retry is not None:
                    on_retry("repair", "; ".join(problems))
                messages.append({"role": "user", "content": _repair_text(problems, reply.cut_off)})
                continue
        if check is not None:
            try:
                # A copy: the check is the plan's code, and the value is what the run records.
                problem = check(copy.deepcopy(value))
            except RunError:
                raise  # what ends the run (a cancel, a fan-out that could never finish) ends it
            except Exception as exc:
                raise WorkerFailed(
                    record.id, f"its check raised {type(exc).__name__}: {exc}"
                ) from None
            if problem is not None and not isinstance(problem, str | bool):
                # Never str() a plan's value here: text of a shared structure is unpriced work.
                raise WorkerFailed(
                    record.id, f"its check returned a value of type {type(problem).__name__}, "
                    "not a problem (a str) or None",
                )  # fmt: skip
            if problem:
                if checks_left == 0:
                    raise WorkerFailed(record.id, f"its check still finds a problem: {problem}")
                checks_left -= 1
                if on_retry is not None:
                    on_retry("check", str(problem))
                messages.append(
                    {
                        "role": "user",
                        "content": f"Not done yet: {problem}\nAnswer again, complete and fixed.",
                    }
                )
                continue
        return value


_CUT_OFF = "cut off at the length limit (finish_reason 'length')"


def _failed_text(problems: list[str], cut_off: bool) -> str:
    cause = f"was {_CUT_OFF}, so it " if cut_off else ""
    return f"the answer {cause}does not match its schema: " + "; ".join(problems)


def _repair_text(problems: list[str], cut_off: bool) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    if cut_off:
        return (
            f"Your answer was {_CUT_OFF}, before the JSON was complete:\n"
            f"{listed}\nReply again with only the JSON, shorter, so that it fits."
        )
    return (
        "Your answer does not match the required JSON schema:\n"
        f"{listed}\nReply again with only the corrected JSON."
    )
