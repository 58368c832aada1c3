"""Near misses: a valid plan with exactly one forbidden construct planted in it.

A policy gate must refuse each of them, and say where: ``NearMiss.line`` is the line the
construct starts on (``end_line`` its last line, for constructs that span several, such as a
decorator above its ``def``). Every construct is a small fixed snippet, so a failing case
shrinks to the plan around it; the variants cover the spellings attackers use.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PLANTED_CONSTRUCTS", "NearMiss", "plant"]


@dataclass(frozen=True)
class NearMiss:
    """A plan with one forbidden construct: where it is and what it is."""

    source: str
    construct: str
    line: int
    end_line: int
    snippet: str


# construct -> variants; a variant is (lines, first offending line, last offending line), the
# offsets counted from the snippet's first line.
_Variant = tuple[tuple[str, ...], int, int]


def _one(line: str) -> _Variant:
    return ((line,), 0, 0)


_FORBIDDEN_CALLS = (
    "eval('1')", "exec('planted = 1')", "compile('1', 'f', 'eval')", "open('/etc/passwd')",
    "getattr(1, 'real')", "vars()", "dir()", "globals()", "locals()", "type(1)", "setattr",
    "hasattr(1, 'real')", "delattr", "breakpoint()", "input()", "id(1)", "bytearray(2)",
    "memoryview", "object()", "super()", "format(1, 'x')", "issubclass(int, int)", "exit()",
    "quit", "help", "BaseException", "SystemExit(1)", "KeyboardInterrupt", "GeneratorExit",
    "StopIteration", "classmethod", "staticmethod", "property",
)  # fmt: skip

_FRAME_ATTRIBUTES = (
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_await", "ag_frame", "tb_frame",
    "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "co_code",
    "co_consts", "func_globals", "mro", "with_traceback", "throw", "send",
)  # fmt: skip

_VARIANTS: dict[str, tuple[_Variant, ...]] = {
    "import": (_one("import os"), _one("from os import path"), _one("import os.path as p"),
               _one("from . import planted")),
    "class": ((("class Planted:", "    pass"), 0, 0),
              (("class Planted(dict):", "    size = 1"), 0, 0)),
    "global": ((("def planted():", "    global counter", "    return 1"), 1, 1),),
    "nonlocal": ((("def planted():", "    x = 1", "    def inner():", "        nonlocal x",
                   "        return x", "    return inner()"), 3, 3),),
    "with": ((("with planted:", "    pass"), 0, 0),
             (("with planted as handle, other:", "    pass"), 0, 0)),
    "try/except": ((("try:", "    planted = 1", "except Exception:", "    planted = 2"), 0, 0),
                   (("try:", "    planted = 1", "except:", "    pass"), 0, 0)),
    "try/finally": ((("try:", "    planted = 1", "finally:", "    planted = 2"), 0, 0),),
    "try/except*": ((("try:", "    planted = 1", "except* ValueError:", "    pass"), 0, 0),),
    "async": ((("async def planted():", "    return 1"), 0, 0),
              (("async def planted():", "    await planted()"), 0, 1),
              _one("planted = [x async for x in other]")),
    "yield": ((("def planted():", "    yield 1"), 1, 1),
              (("def planted():", "    yield from [1]"), 1, 1),
              _one("planted = lambda: (yield)")),
    "decorator": ((("@planted_decorator", "def planted():", "    return 1"), 0, 1),),
    "underscore name": (_one("_planted = 1"), _one("planted = _hidden"),
                        _one("planted = __builtins__"), _one("planted = __import__('os')"),
                        _one("planted = lambda _x: 1"),
                        (("def _planted():", "    return 1"), 0, 0),
                        (("for _i in range(2):", "    pass"), 0, 0)),
    "underscore attribute": (_one("planted = ''.__class__"),
                             _one("planted = [].__class__.__mro__"),
                             _one("planted = (1).__add__(2)"),
                             _one("planted = f'{len.__self__}'"),
                             _one("planted = {}.__class__.__subclasses__")),
    "str.format": (_one("planted = '{0}'.format(1)"),
                   _one("planted = '{x}'.format_map({'x': 1})"),
                   _one("planted = '{0.__class__}'.format"),),
    "forbidden builtin": tuple(_one(f"planted = {call}") for call in _FORBIDDEN_CALLS),
    "frame attribute": tuple(_one(f"planted = (x for x in [1]).{a}") for a in _FRAME_ATTRIBUTES),
    "attribute assignment": (_one("planted.attr = 1"), _one("del planted.attr"),
                             _one("planted.attr += 1"), _one("planted.attr, other = 1, 2"),
                             (("for planted.attr in [1]:", "    pass"), 0, 0)),
    "bytes": (_one("planted = b'x'"), _one("planted = [rb'\\x00']"),
              _one("planted = {'k': b''}")),
    "match": ((("match planted:", "    case 1:", "        pass"), 0, 0),),
    "annotated assignment": (_one("planted: int = 1"), _one("planted: int")),
    "raise from": ((("if False:", "    raise ValueError('x') from None"), 1, 1),),
    "raise other": ((("if False:", "    raise planted"), 1, 1),
                    (("if False:", "    raise SystemExit(0)"), 1, 1)),
    "matmul": (_one("planted = [1] @ [2]"),),
    "encode/decode": (_one("planted = 'x'.encode()"), _one("planted = 'x'.translate({})")),
}  # fmt: skip

# The constructs near_misses() plants, each refused by the plan language.
PLANTED_CONSTRUCTS: tuple[str, ...] = tuple(_VARIANTS)


def plant(chunks: list[list[str]], construct: str, position: int, variant: int) -> NearMiss:
    """Insert one variant of ``construct`` before a top-level statement of the plan."""
    variants = _VARIANTS[construct]
    lines, first, last = variants[variant % len(variants)]
    at = position % max(len(chunks), 1)  # never after the final 'result = ...'
    start = 1 + sum(len(chunk) for chunk in chunks[:at])
    planted = [*chunks[:at], list(lines), *chunks[at:]]
    source = "\n".join(line for chunk in planted for line in chunk) + "\n"
    return NearMiss(source, construct, start + first, start + last, "\n".join(lines))
