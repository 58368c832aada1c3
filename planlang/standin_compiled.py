"""The stand-in's fast path: its maker compiled once per plain schema, and its seed text.

``standin._Maker`` reads a schema's keywords on every answer: a dozen lookups and a dispatch
per node, for the same few schemas a plan asks thousands of times. ``compile_maker(schema)``
turns a schema of the simple kinds below into one function of the random generator that draws
from it exactly as the maker does (the same calls, in the same order, on the same bounds), so
its answers are the maker's byte for byte (``tests/planlang/test_standin_golden.py``, and a
property test against the maker). For anything else it gives None and the maker answers as it
always did: ``$ref``, the combinators, ``prefixItems``, ``uniqueItems``, ``format``,
``pattern``, ``multipleOf``, exclusive bounds, a ``const`` or ``enum`` holding containers, a
``type`` the maker does not name, and bounds of a type or order the maker would stop on (it
raises only when it reaches them, so they are the maker's to report).

A compiled maker is shared by every schema with the same text, so it is used only for schemas
of plain JSON (``plain``): a tuple or an int key would give the same text as a list or a str.
The schema's sorted text, kept with it, is the key of its validator and the part of the seed
text (``seed_text``) that the schema is; each is made once per schema, not once per answer.
"""

from __future__ import annotations

import json
import json.encoder
import random
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from planlang.standin_maker import SOFT, listed
from planlang.standin_numbers import rounded, uniform
from planlang.standin_size import AnswerTooLarge, fits, spend, tick_chunk
from runtime.canonical import same_as_dumps

__all__ = ["Entry", "Rules", "compile_maker", "plain", "plain_entry", "seed_text"]

Make = Callable[[random.Random], Any]
Entry = tuple[Make | None, str]  # a plain schema's compiled maker (None: the maker's) and text

# json.dumps's texts, made faster: what a stand-in answer's seed is made of; a schema's sorted
# text (its validator's key); a schema's text in its own key order (the maker draws properties
# in that order), the key of its compiled maker.
asked_text = same_as_dumps(sort_keys=True, default=str)
_sorted_text = same_as_dumps(sort_keys=True)
_ordered_text = same_as_dumps()
_entries: dict[tuple[str | bytes, int], Entry] = {}
# A str as json.dumps writes it inside a document (ensure_ascii), and the system texts a plan's
# workers send again and again (each holds its worker's schema), kept escaped.
_quoted: Callable[[str], str] = json.encoder.encode_basestring_ascii
_quoted_contents: dict[str, str] = {}
_QUOTED_MAX = 256  # contents kept; a plan with more distinct system texts escapes them again
_MESSAGE_KEYS = {"content", "role"}
_FORMAT_KEYS = {"type", "json_schema"}
_INNER_KEYS = {"name", "schema"}

_MAX_DEPTH = SOFT  # deeper schemas go to the maker, which makes the least down there
_CHUNK = 4096  # items of an array built between looks at the plan's clock
_REFUSED = frozenset({
    "$ref", "oneOf", "anyOf", "allOf", "prefixItems", "uniqueItems", "format", "pattern",
    "multipleOf", "exclusiveMinimum", "exclusiveMaximum", "if", "dependentSchemas", "not",
    "minProperties", "maxProperties", "patternProperties", "contains",
})  # fmt: skip
_KINDS = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


class _Refused(Exception):
    """A node the compiled maker leaves to ``standin._Maker``."""


def plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON: dicts with str keys, lists, str, int, bool, None and
    finite floats (what its JSON text alone says)."""
    try:
        return _plain(value)
    except RecursionError:
        return False


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                continue  # the usual leaves, without a call each
            if not _plain(item):
                return False
        return True
    if kind is list:
        for item in value:
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                continue
            if not _plain(item):
                return False
        return True
    if kind is float:
        return value - value == 0.0
    return kind is str or kind is int or kind is bool or value is None


class Rules(NamedTuple):
    """What the compiled makers share with ``standin._Maker`` (passed in: no import cycle)."""

    words: list[str]  # the maker's words for text
    guess: Callable[[dict[str, Any]], str]  # the kind of a node without a type
    bounds: Callable[..., tuple[Any, Any]]  # a number's bounds; raises when there are none


def plain_entry(schema: dict[str, Any], extra: int, rules: Rules) -> Entry | None:
    """For a schema of plain JSON: its compiled maker (None when the maker answers it) and its
    sorted text. Compiled once per text, from a copy made of that text (the plan's own schema
    may change after). None for any other schema."""
    if not plain(schema):
        return None
    text = _key(schema)
    found = _entries.get((text, extra))
    if found is None:
        copy = orjson.loads(text) if type(text) is bytes else json.loads(text)
        found = (compile_maker(copy, extra, rules), _sorted_text(schema))
        if len(_entries) >= 512:
            _entries.clear()
        _entries[text, extra] = found
    return found


def _key(schema: dict[str, Any]) -> str | bytes:
    """A plain schema's text in its own key order, the key of its compiled maker: orjson's
    (a fifth of the cost; for plain JSON, one text a value, as json.dumps's is), or
    json.dumps's for what orjson declines (an int past 64 bits). The two never meet: bytes
    and str are different keys."""
    try:
        return orjson.dumps(schema)
    except TypeError:  # orjson.JSONEncodeError
        return _ordered_text(schema)


def seed_text(model: str, messages: list[dict[str, Any]], params: dict[str, Any],
              schema: dict[str, Any] | None, entry: Entry | None) -> str:  # fmt: skip
    """``asked_text([model, messages, params])``. For the runtime's own ``response_format``
    with a plain schema, the schema's sorted text (made already) is put in its place, and
    the runtime's own messages are written from their contents' escaped texts."""
    if entry is None or not _runtimes_format(params, schema):
        return asked_text([model, messages, params])
    # as json.dumps sorts the keys: json_schema before type, name before schema
    head = _messages_head(model, messages)
    name = asked_text(params["response_format"]["json_schema"]["name"])
    return (f'{head}, {{"response_format": {{"json_schema": {{"name": {name}, "schema": '
            f'{entry[1]}}}, "type": "json_schema"}}}}]')  # fmt: skip


def _messages_head(model: str, messages: list[dict[str, Any]]) -> str:
    """``asked_text([model, messages])`` without its closing bracket. For messages of the
    runtime's own form (plain dicts of a str role and a str content, nothing else) it is
    written here, as json.dumps writes it (content before role: sorted), with each content
    escaped once a run of calls; anything else is json.dumps's own text."""
    if type(model) is not str or type(messages) is not list:
        return asked_text([model, messages])[:-1]
    parts = []
    quoted = _quoted_contents
    for message in messages:
        if type(message) is not dict or message.keys() != _MESSAGE_KEYS:
            return asked_text([model, messages])[:-1]
        content, role = message["content"], message["role"]
        if type(content) is not str or type(role) is not str:
            return asked_text([model, messages])[:-1]
        text = quoted.get(content) if role == "system" else None
        if text is None:
            text = _quoted(content)
            if role == "system":  # a user's text is new each call: not kept
                if len(quoted) >= _QUOTED_MAX:
                    quoted.clear()
                quoted[content] = text
        parts.append(f'{{"content": {text}, "role": {_quoted(role)}}}')
    return f"[{_quoted(model)}, [{', '.join(parts)}]"


def _runtimes_format(params: dict[str, Any], schema: Any) -> bool:
    """Whether ``params`` is ``runtime.worker.response_params``'s json_schema form, exactly,
    for ``schema`` itself: plain dicts, these keys alone, a str name."""
    fmt = params.get("response_format") if len(params) == 1 else None
    if type(fmt) is not dict or fmt.keys() != _FORMAT_KEYS:
        return False
    kind, inner = fmt["type"], fmt["json_schema"]
    return (type(kind) is str and kind == "json_schema" and type(inner) is dict
            and inner.keys() == _INNER_KEYS and inner["schema"] is schema
            and type(inner["name"]) is str)  # fmt: skip


def compile_maker(schema: Any, extra: int, rules: Rules) -> Make | None:
    """``rng -> value`` drawing as ``_Maker(schema, rng, extra).make(schema, 0)``, or None."""
    try:
        return _Compiler(extra, rules, schema).node(schema, 0)
    except (_Refused, RecursionError):
        return None


def _scalar(value: Any) -> bool:
    kind = type(value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def _whole(value: Any) -> bool:
    return type(value) is int


def _number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def _too_large(rng: random.Random) -> Any:
    """A node no answer within ``ANSWER_MOST`` can be built for (``standin_size.fits``)."""
    raise AnswerTooLarge


def _none(rng: random.Random) -> None:
    return None


class _Compiler:
    """One schema's closures; each method mirrors the ``_Maker`` method of the same name."""

    def __init__(self, extra: int, rules: Rules, root: Any) -> None:
        self.extra = extra
        self.words = rules.words
        self.rules = rules
        self.root = root  # the whole schema, and its nodes' least sizes (``fits``)
        self.memo: dict[Any, int] = {}

    def node(self, schema: Any, depth: int) -> Make:
        if schema is True or schema == {}:
            words = self.words
            return lambda rng: rng.choice(words)
        if depth >= _MAX_DEPTH:
            raise _Refused
        if schema is False or not isinstance(schema, dict):
            raise _Refused  # the maker leaves it out, or says no answer has it
        if not _REFUSED.isdisjoint(schema):
            raise _Refused
        if "const" in schema:
            const = schema["const"]
            if not _scalar(const):
                raise _Refused  # the maker hands out the schema's own container
            return lambda rng: const
        if "enum" in schema:
            enum = schema["enum"]
            if type(enum) is not list or not all(_scalar(v) for v in enum):
                raise _Refused
            enum = listed(schema)  # what the node's other keywords allow, as the maker draws
            if not enum:
                raise _Refused  # an empty enum: the maker says no answer has one
            return lambda rng: rng.choice(enum)
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or kind
            if not kinds or not all(k is None or type(k) is str for k in kinds):
                raise _Refused
            fitting = [k for k in kinds if k is None or fits(schema, self.root, self.memo, k)]
            if not fitting:
                if "null" in kind:
                    raise _Refused  # null answers it: the maker's to draw
                return _too_large
            by_kind = {k: self.kind(schema, k, depth) for k in fitting}
            return lambda rng: by_kind[rng.choice(fitting)](rng)
        return self.kind(schema, kind, depth)

    def kind(self, schema: dict[str, Any], kind: Any, depth: int) -> Make:
        if kind is None:
            kind = self.rules.guess(schema)
        if kind not in _KINDS:  # the maker looks such a name up among its methods
            raise _Refused
        if kind == "object":
            return self.object(schema, depth)
        if kind == "array":
            return self.array(schema, depth)
        if kind == "string":
            return self.string(schema)
        if kind == "integer":
            return self.integer(schema)
        if kind == "number":
            return self.number(schema)
        if kind == "boolean":
            return lambda rng: rng.random() < 0.5
        return _none

    def object(self, schema: dict[str, Any], depth: int) -> Make:
        props = schema.get("properties", {})
        asked = schema.get("required", [])
        if type(props) is not dict or type(asked) is not list:
            raise _Refused
        if not all(type(k) is str for k in asked):
            raise _Refused
        required = list(dict.fromkeys(asked))
        if not set(required) <= set(props) and "additionalProperties" in schema:
            raise _Refused  # a required name's value meets additionalProperties: the maker's
        optional = [k for k in props if k not in required]
        makers = {k: self.node(props.get(k, {}), depth + 1) for k in required + optional}
        if not optional:
            size = len(required)

            def whole(rng: random.Random) -> dict[str, Any]:
                spend(size)
                return {k: makers[k](rng) for k in required}

            return whole

        def make(rng: random.Random) -> dict[str, Any]:
            draw = rng.random
            chosen = required + [k for k in optional if draw() < 0.5]
            spend(len(chosen))
            return {k: makers[k](rng) for k in chosen}

        return make

    def array(self, schema: dict[str, Any], depth: int) -> Make:
        low = schema.get("minItems", 0)
        if not _whole(low):
            raise _Refused
        low = max(low, 0)
        high = schema.get("maxItems", low + self.extra)
        if not _whole(high) or high < low:
            raise _Refused
        top = max(low, min(high, low + self.extra))
        item = self.node(schema.get("items", {}), depth + 1)

        def make(rng: random.Random) -> list[Any]:
            n = rng.randint(low, top)
            spend(n)
            if n <= _CHUNK:
                return [item(rng) for _ in range(n)]
            made: list[Any] = []
            for start in range(0, n, _CHUNK):  # a look at the plan's clock between chunks
                tick_chunk()
                made += [item(rng) for _ in range(min(_CHUNK, n - start))]
            return made

        return make

    def string(self, schema: dict[str, Any]) -> Make:
        low = schema.get("minLength", 1)
        if not _whole(low):
            raise _Refused
        high = schema.get("maxLength", max(low, 24))
        if not _whole(high) or high < schema.get("minLength", 0):
            raise _Refused
        if "minLength" not in schema:
            low = min(low, high)  # maxLength 0: the empty text, as the maker makes it
        words = self.words
        cut = high >= low

        def make(rng: random.Random) -> str:
            spend(low)
            choice = rng.choice
            text = " ".join(choice(words) for _ in range(rng.randint(1, 4)))
            parts, size = [text], len(text)
            while size < low:  # joined once: ``+=`` grew it in quadratic time (REDTEAM14)
                word = choice(words)
                parts.append(word)
                size += 1 + len(word)
            text = " ".join(parts)
            return text[:high] if cut else text

        return make

    def integer(self, schema: dict[str, Any]) -> Make:
        low, high = self.bounds(schema, integer=True)
        return lambda rng: rng.randint(low, high)

    def number(self, schema: dict[str, Any]) -> Make:
        low, high = self.bounds(schema, integer=False)
        return lambda rng: rounded(uniform(rng, low, high), low, high)

    def bounds(self, schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
        """The maker's bounds, for numbers it takes without a stop (else its to say)."""
        for name in ("minimum", "maximum"):
            if name in schema and not _number(schema[name]):
                raise _Refused
            if name in schema and not integer and not -(2**1023) < schema[name] < 2**1023:
                raise _Refused  # past a float's range: the maker answers an integer
        try:
            return self.rules.bounds(schema, integer=integer)
        except ValueError:  # UnsatisfiableSchema: the maker raises it when it gets there
            raise _Refused from None
