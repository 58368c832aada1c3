"""Red-team suite: escape and resource attacks on the plan sandbox.

Every attack is a plan kept as a constant in one table, with the outcome planlang must give:
refused by the check (with the problem's code and line), or stopped at run time by one of its
own limits (``PlanLimitError`` of the right kind) or as a plan error (``PlanRuntimeError``).
After every attack the host must be unharmed: nothing but a ``PlanError`` left ``run``, the
host's dicts, lists and objects are deep-equal to before, no file appeared, the environment and
the ``builtins`` module are as they were.

Sources of the techniques: RestrictedPython's advisories (generator/coroutine/traceback frames,
``str.format`` / ``string.Formatter`` field access, guard hooks shadowed through positional-only
parameters, ``try``/``except*``), smolagents' LocalPythonExecutor CVEs and issues (``getattr``
leakage, class-hierarchy walks to ``Popen``, dunder "time bombs" in plan-defined classes,
``ctypes``), and the resource attacks an allocation-free loop, recursion or C-level operation
can mount. Attacks that planlang cannot contain in-process are in docs/SECURITY.md instead.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import os
import time
from dataclasses import dataclass

import pytest

import planlang
from planlang import HostObject, Limits, PlanError, PlanLimitError, PlanRefused, PlanRuntimeError

LIMITS = Limits(seconds=2, steps=200_000, size=100_000, memory_mb=512)
# An attack that must end at a limit other than time gets a clock far past what its steps take
# on a loaded machine: which limit trips first may not depend on the load (deep-nesting-loop
# met 2 s before 200,000 steps with the other core busy). The clock stays a hang guard.
UNTIMED_LIMITS = Limits(seconds=60, steps=200_000, size=100_000, memory_mb=512)


# -- the host the attacks run against ---------------------------------------------------------


class Repo:
    """A host object: the plan may call ``files`` and read ``name``, nothing else."""

    def __init__(self) -> None:
        self.name = "demo"
        self.secret = "hunter2"
        self.paths = ["a.py", "b.py"]

    def files(self) -> list[str]:
        return self.paths

    def wipe(self) -> None:  # must never be reachable
        self.paths.clear()
        raise AssertionError("an undeclared host method ran")


def make_host() -> tuple[dict[str, object], dict[str, object]]:
    """(host mapping for the sandbox, the mutable host values to compare afterwards)."""
    inputs = {
        "files": ["a.py", "b.py"],
        "cfg": {"x": 1, "nested": {"deep": [{"k": 1}]}},
        "tags": {"t1", "t2"},
        "pair": (1, [2, 3]),
    }
    shared = [1, 2, 3]
    repo = Repo()

    def agent(prompt: str, schema: object = None) -> dict[str, object]:
        return {"answer": str(prompt).upper(), "tags": ["a"]}

    def give_callable() -> object:
        return os.getcwd  # a host word that returns a host callable

    def give_object() -> object:
        return repo  # ... or a host object that is not plain data

    def give_shared() -> list[int]:
        return shared  # ... or the host's own list, which the plan must not change

    def sleepy() -> str:
        meter = planlang.current_meter()
        assert meter is not None
        time.sleep(min(30.0, meter.remaining()))  # a well-behaved slow word
        return "slept"

    def raise_system_exit() -> None:
        raise SystemExit(3)

    def raise_keyboard_interrupt() -> None:
        raise KeyboardInterrupt

    def raise_generator_exit() -> None:
        raise GeneratorExit

    class HostBaseError(BaseException):
        pass

    def raise_base_exception() -> None:
        raise HostBaseError("host internals")

    host: dict[str, object] = {
        "inputs": inputs,
        "shared": shared,
        "repo": HostObject(repo, methods=["files"], attributes=["name"]),
        "bare": repo,  # an object handed in without a declaration: shows nothing
        "agent": agent,
        "give_callable": give_callable,
        "give_object": give_object,
        "give_shared": give_shared,
        "sleepy": sleepy,
        "raise_system_exit": raise_system_exit,
        "raise_keyboard_interrupt": raise_keyboard_interrupt,
        "raise_generator_exit": raise_generator_exit,
        "raise_base_exception": raise_base_exception,
    }
    return host, {"inputs": inputs, "shared": shared, "repo": repo}


def snapshot(values: dict[str, object]) -> object:
    """A deep copy of the host values, objects by their attributes."""
    repo = values["repo"]
    return copy.deepcopy({**values, "repo": dict(vars(repo))})


# -- expected outcomes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Refused:
    code: str
    line: int


@dataclass(frozen=True)
class Limit:
    kind: str
    # The step limit for this attack, where the default would take long to reach: each host call
    # of a plan process crosses a pipe (about 0.5 ms), so a flood of 200,000 of them would meet
    # the 60 s hang guard before its step limit. The limit that ends it stays the same kind.
    steps: int | None = None


@dataclass(frozen=True)
class Fails:
    """A PlanRuntimeError; ``error_type`` names the Python error behind it."""

    error_type: str
    at_a_plan_line: bool = True  # False when it fails converting the result, after the plan


Outcome = Refused | Limit | Fails

# -- the attacks --------------------------------------------------------------------------------
# (category, id, source, outcome)

ADVISORIES = "restrictedpython-advisories"
SMOLAGENTS = "smolagents-escapes"
UNDERSCORE = "dunder-and-underscore"
INTROSPECTION = "attributes-of-functions-and-types"
HOST_DATA = "mutating-host-values"
HOST_OBJECTS = "host-objects-and-words"
SYNTAX = "syntax-tricks"
RESOURCES = "resources"
HOST_BASE = "host-word-base-exceptions"

ATTACKS: list[tuple[str, str, str, Outcome]] = [
    # RestrictedPython advisories: frames, format strings, except*, imports, builtins, printed
    (ADVISORIES, "generator-gi_frame",
     "g = (x for x in [1])\nf = g.gi_frame\n", Refused("PL205", 2)),
    (ADVISORIES, "generator-frame-f_back-f_globals",
     "g = (x for x in [1])\nresult = g.gi_frame.f_back.f_globals\n", Refused("PL205", 2)),
    (ADVISORIES, "generator-gi_code", "g = (x for x in [1])\nc = g.gi_code\n", Refused("PL205", 2)),
    (ADVISORIES, "coroutine-cr_frame",
     "async def f():\n    pass\nc = f().cr_frame\n", Refused("PL105", 1)),
    (ADVISORIES, "traceback-tb_frame-via-except",
     "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame\n",
     Refused("PL107", 1)),
    (ADVISORIES, "exception-with_traceback",
     "e = ValueError('x')\nt = e.with_traceback(None)\n", Refused("PL205", 2)),
    (ADVISORIES, "str-format-attribute-walk",
     "result = '{0.__class__.__base__}'.format(1)\n", Refused("PL205", 1)),
    (ADVISORIES, "str-format_map-attribute-walk",
     "result = '{x.__class__}'.format_map({'x': 1})\n", Refused("PL205", 1)),
    (ADVISORIES, "str-format-unbound-from-type", "f = str.format\n", Refused("PL205", 1)),
    (ADVISORIES, "string-formatter-import",
     "import string\nresult = string.Formatter().get_field('0.__class__', [1], {})\n",
     Refused("PL101", 1)),
    (ADVISORIES, "try-except-star",
     "try:\n    raise ValueError('x')\nexcept* ValueError:\n    pass\n", Refused("PL107", 1)),
    (ADVISORIES, "raise-exception-group",
     "raise ExceptionGroup('g', [ValueError('x')])\n", Refused("PL202", 1)),
    (ADVISORIES, "try-finally-swallows-limit",
     "try:\n    while True:\n        pass\nfinally:\n    result = 1\n", Refused("PL107", 1)),
    (ADVISORIES, "dunder-import", "os = __import__('os')\n", Refused("PL201", 1)),
    (ADVISORIES, "builtins-dict", "o = __builtins__['open']\n", Refused("PL201", 1)),
    (ADVISORIES, "builtins-rebind-guard", "_getattr_ = lambda o, n: o\n", Refused("PL201", 1)),
    (ADVISORIES, "shadow-builtin-locally-only",
     "len = 5\nresult = len('abc')\n", Fails("TypeError")),
    (ADVISORIES, "printed-collector", "print('x')\nresult = printed\n", Refused("PL202", 2)),
    (ADVISORIES, "print-hook", "_print_ = 1\n", Refused("PL201", 1)),
    (ADVISORIES, "print-to-file", "print('x', file=None)\n", Fails("TypeError")),
    (ADVISORIES, "positional-only-shadows-getattr",
     "def f(_getattr_, /):\n    return ().__class__\nf(1)\n", Refused("PL201", 1)),
    (ADVISORIES, "positional-only-lambda-shadows-write",
     "f = lambda _write_, /: _write_\n", Refused("PL201", 1)),
    (ADVISORIES, "kwonly-shadows-getiter",
     "def f(*, _getiter_=None):\n    return 1\n", Refused("PL201", 1)),
    (ADVISORIES, "vararg-shadows-apply", "def f(*_apply_):\n    return 1\n", Refused("PL201", 1)),
    (ADVISORIES, "kwarg-shadows-getitem",
     "def f(**_getitem_):\n    return 1\n", Refused("PL201", 1)),
    # smolagents LocalPythonExecutor escapes
    (SMOLAGENTS, "class-del-time-bomb",
     "class A:\n    def __del__(self):\n        pass\nresult = A()\n", Refused("PL102", 1)),
    (SMOLAGENTS, "class-eq-time-bomb",
     "class A:\n    def __eq__(self, o):\n        return True\n", Refused("PL102", 1)),
    (SMOLAGENTS, "getattr-leak", "g = getattr\nresult = g(1, '__class__')\n", Refused("PL202", 1)),
    (SMOLAGENTS, "subclasses-to-popen",
     "p = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen']\n",
     Refused("PL204", 1)),
    (SMOLAGENTS, "object-subclasses", "s = object.__subclasses__()\n", Refused("PL204", 1)),
    (SMOLAGENTS, "object-builtin", "o = object()\n", Refused("PL202", 1)),
    (SMOLAGENTS, "type-builtin", "t = type(1)\n", Refused("PL202", 1)),
    (SMOLAGENTS, "import-ctypes", "import ctypes\n", Refused("PL101", 1)),
    (SMOLAGENTS, "import-os-system", "import os\nos.system('true')\n", Refused("PL101", 1)),
    (SMOLAGENTS, "star-import", "from os import *\n", Refused("PL101", 1)),
    (SMOLAGENTS, "eval", "eval('1')\n", Refused("PL202", 1)),
    (SMOLAGENTS, "exec", "exec('x = 1')\n", Refused("PL202", 1)),
    (SMOLAGENTS, "compile", "c = compile('1', 'f', 'eval')\n", Refused("PL202", 1)),
    (SMOLAGENTS, "open-write", "open('pwned.txt', 'w')\n", Refused("PL202", 1)),
    (SMOLAGENTS, "globals-guard-swap", "globals()['_getattr_'] = None\n", Refused("PL202", 1)),
    (SMOLAGENTS, "vars-dir-locals", "v = [vars(), dir(), locals()]\n", Refused("PL202", 1)),
    (SMOLAGENTS, "map-over-import", "m = list(map(__import__, ['os']))\n", Refused("PL201", 1)),
    (SMOLAGENTS, "breakpoint", "breakpoint()\n", Refused("PL202", 1)),
    (SMOLAGENTS, "exit-builtin", "exit(3)\n", Refused("PL202", 1)),
    (SMOLAGENTS, "raise-system-exit", "raise SystemExit(3)\n", Refused("PL202", 1)),
    (SMOLAGENTS, "raise-keyboard-interrupt", "raise KeyboardInterrupt\n", Refused("PL202", 1)),
    (SMOLAGENTS, "raise-base-exception", "raise BaseException('x')\n", Refused("PL202", 1)),
    (SMOLAGENTS, "raise-from", "raise ValueError('x') from None\n", Refused("PL111", 1)),
    # dunder and underscore access in all its forms
    (UNDERSCORE, "class-of-literal", "c = (1).__class__\n", Refused("PL204", 1)),
    (UNDERSCORE, "mro-walk", "m = ''.__class__.__mro__[-1]\n", Refused("PL204", 1)),
    (UNDERSCORE, "function-globals", "g = (lambda: 0).__globals__\n", Refused("PL204", 1)),
    (UNDERSCORE, "function-code", "def f():\n    return 1\nc = f.__code__\n", Refused("PL204", 3)),
    (UNDERSCORE, "fstring-dunder", "result = f'{(1).__class__}'\n", Refused("PL204", 1)),
    (UNDERSCORE, "fullwidth-underscores-attribute",
     "result = (1)._\uff3fclass\uff3f\uff3f\n", Refused("PL204", 1)),
    (UNDERSCORE, "fullwidth-letters-attribute",
     "result = (1).__\uff43\uff4c\uff41\uff53\uff53__\n", Refused("PL204", 1)),
    (UNDERSCORE, "fullwidth-letters-forbidden-name", "x = \uff45\uff56\uff41\uff4c('1')\n",
     Refused("PL202", 1)),
    (UNDERSCORE, "fullwidth-underscores-name",
     "m = _\uff3fimport\uff3f\uff3f('os')\n", Refused("PL201", 1)),
    (UNDERSCORE, "underscore-variable", "_secret = 1\n", Refused("PL201", 1)),
    (UNDERSCORE, "underscore-function", "def _f():\n    return 1\n", Refused("PL201", 1)),
    (UNDERSCORE, "underscore-comprehension-var", "x = [_y for _y in [1]]\n", Refused("PL201", 1)),
    (UNDERSCORE, "underscore-attribute-private", "x = repo._target\n", Refused("PL204", 1)),
    (UNDERSCORE, "name-mangled-looking", "x = repo._Repo__secret\n", Refused("PL204", 1)),
    (UNDERSCORE, "guard-call-direct", "_getattr_(repo, '_target')\n", Refused("PL201", 1)),
    # attributes of functions, methods, builtins and types
    (INTROSPECTION, "builtin-self-is-module", "m = len.__self__\n", Refused("PL204", 1)),
    (INTROSPECTION, "bound-method-self", "m = 'a'.join.__self__\n", Refused("PL204", 1)),
    (INTROSPECTION, "type-mro-method", "m = int.mro()\n", Refused("PL205", 1)),
    (INTROSPECTION, "str-maketrans", "t = str.maketrans('a', 'b')\n", Refused("PL205", 1)),
    (INTROSPECTION, "list-append-unbound-on-host-list",
     "list.append(inputs['files'], 'evil')\n", Fails("AttributeError")),
    (INTROSPECTION, "dict-update-unbound-on-host-dict",
     "dict.update(inputs['cfg'], {'x': 2})\n", Fails("AttributeError")),
    (INTROSPECTION, "dict-setitem-via-type", "f = dict.setdefault\n", Fails("AttributeError")),
    (INTROSPECTION, "set-add-unbound", "set.add(inputs['tags'], 'x')\n", Fails("AttributeError")),
    (INTROSPECTION, "list-sort-unbound-on-host-list",
     "list.sort(shared, reverse=True)\n", Fails("AttributeError")),
    (INTROSPECTION, "method-of-builtin-function", "m = len.upper\n", Fails("AttributeError")),
    (INTROSPECTION, "attribute-of-plan-function",
     "def f():\n    return 1\nn = f.name\n", Fails("AttributeError")),
    (INTROSPECTION, "attribute-of-host-word", "w = agent.name\n", Fails("AttributeError")),
    (INTROSPECTION, "exception-class-attribute", "a = ValueError.args\n", Fails("AttributeError")),
    (INTROSPECTION, "generator-method-send", "g = (x for x in [1])\ng.send(None)\n",
     Refused("PL205", 2)),
    (INTROSPECTION, "generator-undeclared-attr", "g = (x for x in [1])\nn = g.close\n",
     Fails("AttributeError")),
    (INTROSPECTION, "str-encode", "b = 'x'.encode()\n", Refused("PL205", 1)),
    (INTROSPECTION, "int-to-bytes", "b = (1).to_bytes(2, 'big')\n", Fails("AttributeError")),
    # mutating host values in every way
    (HOST_DATA, "append-host-list", "inputs['files'].append('evil')\n", Fails("AttributeError")),
    (HOST_DATA, "extend-host-list", "shared.extend([4])\n", Fails("AttributeError")),
    (HOST_DATA, "insert-host-list", "shared.insert(0, 0)\n", Fails("AttributeError")),
    (HOST_DATA, "pop-host-list", "shared.pop()\n", Fails("AttributeError")),
    (HOST_DATA, "remove-host-list", "shared.remove(1)\n", Fails("AttributeError")),
    (HOST_DATA, "clear-host-list", "shared.clear()\n", Fails("AttributeError")),
    (HOST_DATA, "sort-host-list", "shared.sort(reverse=True)\n", Fails("AttributeError")),
    (HOST_DATA, "reverse-host-list", "shared.reverse()\n", Fails("AttributeError")),
    (HOST_DATA, "item-set-host-list", "shared[0] = 99\n", Fails("TypeError")),
    (HOST_DATA, "item-del-host-list", "del shared[0]\n", Fails("TypeError")),
    (HOST_DATA, "slice-assign-host-list", "shared[:] = []\n", Fails("TypeError")),
    (HOST_DATA, "slice-del-host-list", "del shared[1:]\n", Fails("TypeError")),
    (HOST_DATA, "augmented-add-host-list", "s = shared\ns += [4]\n", Fails("TypeError")),
    (HOST_DATA, "augmented-mul-host-list", "s = shared\ns *= 2\n", Fails("TypeError")),
    (HOST_DATA, "augmented-item-host-list", "shared[0] += 1\n", Fails("TypeError")),
    (HOST_DATA, "item-set-host-dict", "inputs['cfg']['x'] = 2\n", Fails("TypeError")),
    (HOST_DATA, "item-del-host-dict", "del inputs['cfg']\n", Fails("TypeError")),
    (HOST_DATA, "nested-item-set-host-dict",
     "inputs['cfg']['nested']['deep'][0]['k'] = 2\n", Fails("TypeError")),
    (HOST_DATA, "update-host-dict", "inputs['cfg'].update({'x': 2})\n", Fails("AttributeError")),
    (HOST_DATA, "setdefault-host-dict",
     "inputs['cfg'].setdefault('y', 1)\n", Fails("AttributeError")),
    (HOST_DATA, "pop-host-dict", "inputs['cfg'].pop('x')\n", Fails("AttributeError")),
    (HOST_DATA, "popitem-host-dict", "inputs['cfg'].popitem()\n", Fails("AttributeError")),
    (HOST_DATA, "clear-host-dict", "inputs.clear()\n", Fails("AttributeError")),
    (HOST_DATA, "or-assign-host-dict", "c = inputs['cfg']\nc |= {'y': 1}\n", Fails("TypeError")),
    (HOST_DATA, "augmented-item-host-dict", "inputs['cfg']['x'] += 1\n", Fails("TypeError")),
    (HOST_DATA, "or-assign-host-dict-item", "inputs['tags'] |= {'t3'}\n", Fails("TypeError")),
    (HOST_DATA, "add-host-set", "inputs['tags'].add('t3')\n", Fails("AttributeError")),
    (HOST_DATA, "discard-host-set", "inputs['tags'].discard('t1')\n", Fails("AttributeError")),
    (HOST_DATA, "list-inside-host-tuple", "inputs['pair'][1].append(4)\n", Fails("AttributeError")),
    (HOST_DATA, "for-target-host-item",
     "for shared[0] in range(3):\n    pass\n", Fails("TypeError")),
    (HOST_DATA, "unpack-target-host-item", "a, inputs['cfg']['x'] = 1, 2\n", Fails("TypeError")),
    (HOST_DATA, "comprehension-target-host-item",
     "x = [0 for shared[0] in [5]]\n", Fails("TypeError")),
    (HOST_DATA, "host-word-result-is-a-copy",
     "s = give_shared()\ns.append(4)\nassert give_shared() == [1, 2, 3, 4], 'host unchanged'\n",
     Fails("AssertionError")),
    # host objects and what host words return
    (HOST_OBJECTS, "undeclared-attribute", "s = repo.secret\n", Fails("AttributeError")),
    (HOST_OBJECTS, "undeclared-method", "repo.wipe()\n", Fails("AttributeError")),
    (HOST_OBJECTS, "undeclared-object-shows-nothing", "n = bare.name\n", Fails("AttributeError")),
    (HOST_OBJECTS, "set-attribute", "repo.name = 'evil'\n", Refused("PL203", 1)),
    (HOST_OBJECTS, "delete-attribute", "del repo.name\n", Refused("PL203", 1)),
    (HOST_OBJECTS, "augmented-attribute", "repo.name += 'x'\n", Refused("PL203", 1)),
    (HOST_OBJECTS, "augmented-attribute-of-input", "inputs.cfg += 1\n", Refused("PL203", 1)),
    (HOST_OBJECTS, "declared-method-result-is-a-copy",
     "fs = repo.files()\nfs.clear()\nassert repo.files() == [], 'host unchanged'\n",
     Fails("AssertionError")),
    (HOST_OBJECTS, "declared-method-self", "o = repo.files.__self__\n", Refused("PL204", 1)),
    (HOST_OBJECTS, "host-word-wrapped", "w = agent.__wrapped__\n", Refused("PL204", 1)),
    (HOST_OBJECTS, "host-word-closure", "c = agent.__closure__\n", Refused("PL204", 1)),
    (HOST_OBJECTS, "host-word-returns-callable", "f = give_callable()\n", Fails("TypeError")),
    (HOST_OBJECTS, "host-word-returns-object", "o = give_object()\n", Fails("TypeError")),
    (HOST_OBJECTS, "result-is-host-callable", "result = len\n", Fails("TypeError", True)),
    (HOST_OBJECTS, "proxy-item-access", "x = repo['name']\n", Fails("TypeError")),
    (HOST_OBJECTS, "proxy-iteration", "x = [a for a in repo]\n", Fails("TypeError")),
    # syntax-level tricks
    (SYNTAX, "walrus-shadows-getattr", "x = (_getattr_ := 1)\n", Refused("PL201", 1)),
    (SYNTAX, "walrus-shadows-write-in-comprehension",
     "x = [(_write_ := y) for y in [1]]\n", Refused("PL201", 1)),
    (SYNTAX, "del-guard-name", "del _getiter_\n", Refused("PL201", 1)),
    (SYNTAX, "lambda-default-arg-dunder", "f = lambda x=().__class__: x\n", Refused("PL204", 1)),
    (SYNTAX, "decorator", "@print\ndef f():\n    return 1\n", Refused("PL110", 1)),
    (SYNTAX, "class", "class A:\n    pass\n", Refused("PL102", 1)),
    (SYNTAX, "global", "def f():\n    global x\n    x = 1\n", Refused("PL103", 2)),
    (SYNTAX, "nonlocal",
     "def f():\n    x = 1\n    def g():\n        nonlocal x\n", Refused("PL103", 4)),
    (SYNTAX, "with", "with agent('x') as a:\n    pass\n", Refused("PL104", 1)),
    (SYNTAX, "async-def", "async def f():\n    return 1\n", Refused("PL105", 1)),
    (SYNTAX, "async-comprehension", "def f(xs):\n    return [x async for x in xs]\n",
     Refused("PL105", 2)),
    (SYNTAX, "yield", "def f():\n    yield 1\n", Refused("PL106", 2)),
    (SYNTAX, "yield-from", "def f():\n    yield from [1]\n", Refused("PL106", 2)),
    (SYNTAX, "match", "match 1:\n    case _:\n        pass\n", Refused("PL108", 1)),
    (SYNTAX, "annotated-assignment", "x: int = 1\n", Refused("PL109", 1)),
    (SYNTAX, "bytes-literal", "b = b'\\x00'\n", Refused("PL206", 1)),
    (SYNTAX, "raise-non-builtin", "def E():\n    return 1\nraise E()\n", Refused("PL111", 3)),
    (SYNTAX, "import-in-function", "def f():\n    import os\n", Refused("PL101", 2)),
    # resource attacks
    (RESOURCES, "while-true", "while True:\n    pass\n", Limit("steps")),
    (RESOURCES, "while-one-counter", "i = 0\nwhile 1:\n    i += 1\n", Limit("steps")),
    (RESOURCES, "nested-loops", "for i in range(1000):\n    for j in range(1000):\n        pass\n",
     Limit("steps")),
    (RESOURCES, "recursion", "def f(n):\n    return f(n + 1)\nf(0)\n", Limit("depth")),
    (RESOURCES, "mutual-recursion",
     "def f(n):\n    return g(n)\ndef g(n):\n    return f(n)\nf(0)\n", Limit("depth")),
    (RESOURCES, "lambda-recursion", "f = lambda n: f(n + 1)\nf(0)\n", Limit("depth")),
    (RESOURCES, "lambda-y-combinator",
     "y = lambda f: (lambda x: x(x))(lambda x: f(lambda v: x(x)(v)))\n"
     "loop = y(lambda self: lambda n: self(n + 1))\nloop(0)\n", Limit("depth")),
    (RESOURCES, "recursion-in-comprehension", "def f(n):\n    return [f(n) for i in [1]]\nf(0)\n",
     Limit("depth")),
    (RESOURCES, "pow-bomb", "x = 2 ** 10 ** 8\n", Limit("size")),
    (RESOURCES, "pow-builtin-bomb", "x = pow(10, 10 ** 7)\n", Limit("size")),
    (RESOURCES, "pow-modular-work-bomb",
     "m = 2 ** 40000 - 1\nx = pow(3, m, m)\n", Limit("size")),
    (RESOURCES, "pow-augmented-bomb", "x = 10\nx **= 10 ** 7\n", Limit("size")),
    (RESOURCES, "lshift-bomb", "x = 1 << 10 ** 9\n", Limit("size")),
    (RESOURCES, "lshift-augmented-bomb", "x = 1\nx <<= 10 ** 9\n", Limit("size")),
    (RESOURCES, "int-multiply-bomb", "x = 7 ** 20000\nwhile True:\n    x = x * x\n", Limit("size")),
    (RESOURCES, "round-power-of-ten-bomb", "x = round(1, -10 ** 8)\n", Limit("size")),
    (RESOURCES, "str-repeat-bomb", "x = 'a' * 10 ** 9\n", Limit("size")),
    (RESOURCES, "list-repeat-bomb", "x = [0] * 10 ** 9\n", Limit("size")),
    (RESOURCES, "tuple-repeat-bomb", "x = (0,) * 10 ** 9\n", Limit("size")),
    (RESOURCES, "int-times-list-bomb", "x = 10 ** 9 * [0]\n", Limit("size")),
    (RESOURCES, "augmented-repeat-bomb", "x = [0] * 1000\nx *= 1000\n", Limit("size")),
    (RESOURCES, "plus-doubling-loop", "s = 'ab'\nwhile True:\n    s = s + s\n", Limit("size")),
    (RESOURCES, "plus-equals-doubling-loop", "s = [1]\nwhile True:\n    s += s\n", Limit("size")),
    (RESOURCES, "extend-doubling-loop", "s = [1]\nwhile True:\n    s.extend(s)\n", Limit("size")),
    (RESOURCES, "star-display-doubling", "x = [0]\nwhile True:\n    x = [*x, *x]\n", Limit("size")),
    (RESOURCES, "star-tuple-doubling", "x = (0,)\nwhile True:\n    x = (*x, *x)\n", Limit("size")),
    (RESOURCES, "star-call-args", "x = [0] * 90000\nprint(*x, *x)\n", Limit("size")),
    (RESOURCES, "range-bomb", "r = range(10 ** 9)\n", Limit("size")),
    (RESOURCES, "range-overflow", "r = range(10 ** 30)\n", Limit("size")),
    (RESOURCES, "dict-fromkeys-range", "d = dict.fromkeys(range(10 ** 8))\n", Limit("size")),
    (RESOURCES, "join-bomb", "x = ''.join(['a' * 60000] * 2)\n", Limit("size")),
    (RESOURCES, "join-generator-bomb", "x = '-'.join('a' * 1000 for i in range(200))\n",
     Limit("size")),
    (RESOURCES, "replace-bomb", "x = ('a' * 1000).replace('', 'b' * 1000)\n", Limit("size")),
    (RESOURCES, "ljust-bomb", "x = 'a'.ljust(10 ** 9)\n", Limit("size")),
    (RESOURCES, "rjust-bomb", "x = 'a'.rjust(10 ** 9, '-')\n", Limit("size")),
    (RESOURCES, "center-bomb", "x = 'a'.center(10 ** 9)\n", Limit("size")),
    (RESOURCES, "zfill-bomb", "x = '1'.zfill(10 ** 9)\n", Limit("size")),
    (RESOURCES, "expandtabs-bomb", "x = ('\\t' * 1000).expandtabs(10 ** 6)\n", Limit("size")),
    (RESOURCES, "fstring-width-bomb", "x = f'{1:>999999999}'\n", Limit("size")),
    (RESOURCES, "fstring-precision-bomb", "x = f'{1.5:.999999999f}'\n", Limit("size")),
    (RESOURCES, "fstring-nested-width-bomb", "w = 10 ** 9\nx = f'{1:{w}}'\n", Limit("size")),
    (RESOURCES, "fstring-nested-spec-bomb", "w = '9' * 12\nx = f'{\"a\":>{w}}'\n", Limit("size")),
    (RESOURCES, "percent-width-bomb", "x = '%999999999d' % 1\n", Limit("size")),
    (RESOURCES, "percent-star-width-bomb", "x = '%*d' % (10 ** 9, 1)\n", Limit("size")),
    (RESOURCES, "percent-star-precision-bomb", "x = '%.*f' % (10 ** 9, 1.0)\n", Limit("size")),
    (RESOURCES, "percent-nested-paren-key-bomb",
     "x = '%(a(b))999999999s' % {'a(b)': 'x'}\n", Limit("size")),
    (RESOURCES, "percent-many-fields-bomb",
     "x = ('%9999s' * 100) % tuple(['a'] * 100)\n", Limit("size")),
    (RESOURCES, "list-grows-while-iterated", "x = [1]\nfor i in x:\n    x.append(i)\n",
     Limit("steps")),
    (RESOURCES, "nested-comprehension-bomb",
     "x = [[i * j for i in range(1000)] for j in range(1000)]\n", Limit("steps")),
    (RESOURCES, "generator-chain-bomb",
     "x = sum(1 for i in range(90000) for j in range(90000))\n", Limit("steps")),
    (RESOURCES, "memory-hog-appending-big-lists",
     "big = []\nwhile True:\n    big.append([0] * 99000)\n", Limit("memory")),
    (RESOURCES, "iter-callable-sentinel", "it = iter(lambda: 1, 2)\nx = list(it)\n",
     Fails("TypeError")),
    (RESOURCES, "sum-of-lists-bomb", "a = [0] * 90000\nx = sum([a] * 90000, [])\n", Limit("size")),
    (RESOURCES, "sum-of-tuples-bomb", "a = (0,) * 90000\nx = sum([a] * 3, ())\n", Limit("size")),
    (RESOURCES, "sorted-huge", "x = sorted(range(10 ** 7))\n", Limit("size")),
    (RESOURCES, "zip-fan-out-bomb", "r = range(90000)\nx = list(zip(*[r] * 3000))\n",
     Limit("size")),
    (RESOURCES, "map-fan-out-bomb", "r = range(90000)\nx = list(map(max, *[r] * 3000))\n",
     Limit("size")),
    (RESOURCES, "deep-nesting-loop", "x = []\nwhile True:\n    x = [x]\n", Limit("steps")),
    # a result nested 50,000 deep is no attack: it is returned, as deep, in both modes
    # (tests/planlang/test_codec_depth.py)
    (RESOURCES, "deep-nesting-in-error-message",
     "x = []\nfor i in range(50000):\n    x = [x]\nraise ValueError(x)\n", Fails("ValueError")),
    (RESOURCES, "shared-structure-in-error-message",
     "x = [0]\nfor i in range(64):\n    x = [x, x]\nraise ValueError(x)\n", Fails("ValueError")),
    (RESOURCES, "huge-error-message", "raise ValueError('x' * 10 ** 9)\n", Limit("size")),
    # all a run prints is capped at Limits.size characters: the same end on any machine load
    (RESOURCES, "print-flood", "while True:\n    print('x' * 1000)\n", Limit("size")),
    (RESOURCES, "host-word-flood", "while True:\n    agent('x')\n",
     Limit("steps", steps=5_000)),
    (RESOURCES, "host-word-in-comprehension-flood",
     "x = [agent('x') for i in range(90000) for j in range(9)]\n", Limit("steps", steps=5_000)),
    (RESOURCES, "host-word-sleeps", "x = sleepy()\nwhile True:\n    pass\n", Limit("seconds")),
    (RESOURCES, "time-limit-with-sleepy-loop", "while True:\n    sleepy()\n", Limit("seconds")),
    # host words that raise what a plan may never see
    (HOST_BASE, "host-word-system-exit", "raise_system_exit()\n", Fails("SystemExit")),
    (HOST_BASE, "host-word-keyboard-interrupt", "raise_keyboard_interrupt()\n",
     Limit("interrupted")),
    (HOST_BASE, "host-word-generator-exit", "raise_generator_exit()\n", Fails("GeneratorExit")),
    (HOST_BASE, "host-word-base-exception", "raise_base_exception()\n", Fails("HostBaseError")),
    (HOST_BASE, "host-word-system-exit-in-lambda",
     "f = lambda: raise_system_exit()\nx = [f() for i in [1]]\n", Fails("SystemExit")),
]  # fmt: skip


def test_shared_structure_comes_back_shared_and_fast() -> None:
    """x = [x, x] sixty times is sixty lists: the result copy keeps them shared (a tree copy
    would take 2**60 steps in the host's own code)."""
    result = planlang.Sandbox(limits=LIMITS).run(
        "x = [0]\nfor i in range(60):\n    x = [x, x]\nresult = x\n"
    )
    assert result[0] is result[1]


def test_an_interrupted_plan_stays_stopped() -> None:
    """After a host word's KeyboardInterrupt, plan functions the host still holds refuse to run."""
    kept: list[object] = []

    def interrupt(f: object) -> None:
        kept.append(f)
        raise KeyboardInterrupt

    box = planlang.Sandbox(host={"interrupt": interrupt}, limits=LIMITS)
    with pytest.raises(PlanLimitError) as caught:
        box.run("def f():\n    return 1\ninterrupt(f)\n")
    assert caught.value.kind == "interrupted"
    with pytest.raises(PlanLimitError):
        kept[0]()  # type: ignore[operator]


def _ids(attack: tuple[str, str, str, Outcome]) -> str:
    return f"{attack[0]}/{attack[1]}"


def test_the_table_is_large_and_its_ids_unique() -> None:
    ids = [_ids(a) for a in ATTACKS]
    assert len(ids) == len(set(ids))
    assert len(ATTACKS) >= 100


@pytest.fixture
def clean_directory(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("category", "name", "source", "outcome"), ATTACKS, ids=map(_ids, ATTACKS))
def test_attack_is_stopped_and_the_host_unharmed(
    category: str, name: str, source: str, outcome: Outcome, clean_directory
) -> None:  # type: ignore[no-untyped-def]
    host, values = make_host()
    before = snapshot(values)
    env_before = dict(os.environ)
    builtins_before = dict(vars(builtins))
    timed = isinstance(outcome, Limit) and outcome.kind == "seconds"
    limits = LIMITS if timed else UNTIMED_LIMITS
    if isinstance(outcome, Limit) and outcome.steps is not None:
        limits = dataclasses.replace(limits, steps=outcome.steps)
    box = planlang.Sandbox(host=host, limits=limits)

    escaped: BaseException | None = None
    try:
        box.run(source)
    except BaseException as error:  # noqa: BLE001 - whatever leaves run() is the verdict
        escaped = error

    # The host is unharmed, whatever the outcome.
    assert snapshot(values) == before
    assert dict(os.environ) == env_before
    assert dict(vars(builtins)) == builtins_before
    assert list(clean_directory.iterdir()) == []

    assert isinstance(escaped, PlanError), f"{type(escaped).__name__} left run(): {escaped!r}"
    if isinstance(outcome, Refused):
        assert isinstance(escaped, PlanRefused), escaped
        found = {(p.code, p.line) for p in escaped.problems}
        assert (outcome.code, outcome.line) in found, found
    elif isinstance(outcome, Limit):
        assert isinstance(escaped, PlanLimitError), escaped
        assert escaped.kind == outcome.kind, escaped
    else:
        assert isinstance(escaped, PlanRuntimeError), escaped
        assert escaped.error_type == outcome.error_type, escaped
        assert (escaped.line is not None) == outcome.at_a_plan_line, escaped
    assert len(str(escaped)) < 5000  # the message is bounded, whatever the plan put in it
