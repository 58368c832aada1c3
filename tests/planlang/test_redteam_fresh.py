"""A second red-team table, written from scratch against planlang's promise (issue 2).

Each attack is a plan an adversary might write: refused by the check (its code and line are
asserted), or stopped at run time by planlang's own limits (``PlanLimitError`` of the expected
kind) or by a guard (``PlanRuntimeError``). After each, the host's dicts, lists and objects are
compared with snapshots taken before the run, and ``builtins`` must be untouched. Attacks that
could crash or hang a process (deep C recursion, long C calls) run in a child process.

The techniques come from RestrictedPython advisories (format-string attribute access,
generator/traceback frames), smolagents' local executor escapes, Python-jail tricks (NFKC
identifiers, dunders through f-strings, lambda defaults, exceptions' tracebacks) and resource
attacks (size, int, hash, text growth, self-feeding C loops).
"""

from __future__ import annotations

import builtins
import copy
import json
import resource
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

import planlang
from planlang import HostObject, Limits, PlanLimitError, PlanRefused, PlanRuntimeError, Sandbox

# Small limits keep the whole table fast; every attack must be stopped by one of them.
FAST = {
    "seconds": 2,
    "steps": 200_000,
    "size": 100_000,
    "int_bits": 20_000,
    "memory_mb": 512,
    "depth": 40,
}


@dataclass(frozen=True)
class Attack:
    """``expect``: a problem code ("PL201"), "runtime", or "limit:<kind>[|<kind>...]"."""

    name: str
    source: str
    expect: str
    line: int | None = None
    limits: dict[str, Any] = field(default_factory=dict)


# --- the host --------------------------------------------------------------------------------


class Vault:
    """A host object with state a plan must never change."""

    def __init__(self) -> None:
        self.secret = "s3cret"
        self.balance = 100
        self.history = [1, 2]

    def peek(self) -> dict[str, int]:
        return {"balance": self.balance}

    def drain(self) -> None:  # never declared to the plan
        self.balance = 0

    def me(self) -> Vault:  # declared: hands back a non-plain object
        return self


def _raise(error: BaseException) -> Any:
    def word(*_args: Any, **_kwargs: Any) -> Any:
        raise error

    return word


def make_host() -> tuple[dict[str, Any], dict[str, Any], Vault]:
    """The host values (what the plan gets) and the plain data to compare after the run."""
    data = {
        "k": "v",
        "lst": [1, 2, 3],
        "nested": {"d": {"x": 1}, "l": [[1], [2]]},
        "t": (1, [2]),
        "s": {1, 2},
    }
    items = [1, {"a": 1}, [2]]
    vault = Vault()
    host: dict[str, Any] = {
        "inputs": data,
        "items": items,
        "vault": HostObject(vault, methods=["peek", "me"], attributes=["balance", "history"]),
        "raw": Vault(),  # not declared: a proxy that shows nothing
        "echo": lambda *a, **k: {"args": list(a), "kwargs": k},
        "call": lambda f, *a: f(*a),  # a host word that calls back into the plan
        "kbd": _raise(KeyboardInterrupt()),
        "sysexit": _raise(SystemExit(3)),
        "genexit": _raise(GeneratorExit()),
        "baseexc": _raise(BaseException("host")),
        "give_object": lambda: object(),
        "give_type": lambda: dict,
        "give_builtin": lambda: len,
        "give_frame": lambda: sys._getframe(),
        "give_iter": lambda: iter([{"a": 1}, {"b": 2}]),
        "give_vault": lambda: vault,
    }
    expected = {"inputs": copy.deepcopy(data), "items": copy.deepcopy(items)}
    return host, expected, vault


# --- the table -------------------------------------------------------------------------------

P61 = 2**61 - 1
BIG = "x = [1]\nfor i in range(40):\n    x = [x, x]\n"  # a 2**40-node tree of 40 small lists

REFUSED: list[Attack] = [
    # imports and the statements the language does not have
    Attack("import", "import os\n", "PL101", 1),
    Attack("from_import", "x = 1\nfrom os import system\n", "PL101", 2),
    Attack("dunder_import", "os = __import__('os')\n", "PL201", 1),
    Attack("import_in_def", "def f():\n    import sys\n", "PL101", 2),
    Attack("class", "class A:\n    pass\n", "PL102", 1),
    Attack("class_init_subclass", "class A(dict):\n    x = 1\n", "PL102", 1),
    Attack("global", "def f():\n    global inputs\n    inputs = 1\n", "PL103", 2),
    Attack("nonlocal", "def f():\n    x = 1\n    def g():\n        nonlocal x\n", "PL103", 4),
    Attack("with", "with open('x') as f:\n    pass\n", "PL104", 1),
    Attack("async_def", "async def f():\n    pass\n", "PL105", 1),
    Attack("await", "x = 1\nawait x\n", "PL105", 2),
    Attack("async_comp", "async def f():\n    return [x async for x in y]\n", "PL105", 1),
    Attack("yield", "def g():\n    yield 1\n", "PL106", 2),
    Attack("yield_from", "def g():\n    yield from [1]\n", "PL106", 2),
    Attack("yield_in_lambda", "g = lambda: (yield)\n", "PL106", 1),
    Attack("yield_in_genexp_frame", "g = (x for x in [1])\nf = g.gi_frame\n", "PL205", 2),
    Attack("try_except", "try:\n    x = 1\nexcept Exception:\n    pass\n", "PL107", 1),
    Attack("try_finally", "try:\n    x = 1\nfinally:\n    pass\n", "PL107", 1),
    Attack("try_star", "try:\n    x = 1\nexcept* ValueError:\n    pass\n", "PL107", 1),
    Attack("match", "match inputs:\n    case {'k': v}:\n        pass\n", "PL108", 1),
    Attack("annotated", "x: int = 1\n", "PL109", 1),
    Attack("decorator", "def d(f):\n    return f\n@d\ndef g():\n    pass\n", "PL110", 3),
    Attack("raise_systemexit", "raise SystemExit(0)\n", "PL202", 1),
    Attack("raise_keyboard", "raise KeyboardInterrupt\n", "PL202", 1),
    Attack("raise_base", "raise BaseException('x')\n", "PL202", 1),
    Attack("raise_generator_exit", "raise GeneratorExit\n", "PL202", 1),
    Attack("raise_stop_iteration", "raise StopIteration\n", "PL202", 1),
    Attack("raise_group", "raise ExceptionGroup('g', [ValueError()])\n", "PL202", 1),
    Attack("raise_from", "raise ValueError('x') from None\n", "PL111", 1),
    Attack("raise_variable", "e = ValueError\nraise e\n", "PL111", 2),
    Attack("raise_call_result", "raise echo()\n", "PL111", 1),
    Attack("raise_host_word", "raise sysexit\n", "PL111", 1),
    Attack("bytes_literal", "x = b'abc'\n", "PL206", 1),
    Attack("matmul", "x = inputs @ items\n", "PL100", 1),
    Attack("matmul_augassign", "x = 1\nx @= 2\n", "PL100", 2),
    Attack("slice_in_unpacking", "xs = [1]\nxs[0:1], y = [1], 2\n", "PL112", 2),
    Attack("slice_for_target", "xs = [1]\nfor xs[0:] in [[1]]:\n    pass\n", "PL112", 2),
    Attack("slice_chained", "xs = [1]\nxs[0:] = ys = [1, 2]\n", "PL112", 2),
    # dunders, however they are spelled
    Attack("class_attr", "x = ().__class__\n", "PL204", 1),
    Attack("subclasses", "x = ().__class__.__bases__[0].__subclasses__()\n", "PL204", 1),
    Attack("func_globals", "def f():\n    pass\ng = f.__globals__\n", "PL204", 3),
    Attack("func_builtins", "f = lambda: 1\nb = f.__builtins__\n", "PL204", 2),
    Attack("code_object", "f = lambda: 1\nc = f.__code__\n", "PL204", 2),
    Attack("defaults", "f = lambda x=inputs: x\nd = f.__defaults__\n", "PL204", 2),
    Attack(
        "closure", "def f():\n    y = 1\n    return lambda: y\nc = f().__closure__\n", "PL204", 4
    ),
    Attack("reduce_ex", "r = items.__reduce_ex__(2)\n", "PL204", 1),
    Attack("init_subclass", "f = dict.__init_subclass__\n", "PL204", 1),
    Attack("setstate", "it = iter(items)\nit.__setstate__(0)\n", "PL204", 2),
    Attack("dict_of_module", "d = print.__self__.__dict__\n", "PL204", 1),
    Attack("nfkc_dunder_name", "x = _\uff3fimport\uff3f\uff3f('os')\n", "PL201", 1),
    Attack("nfkc_dunder_attr", "x = ()._\uff3fclass\uff3f\uff3f\n", "PL204", 1),
    Attack("nfkc_eval", "x = \uff45\uff56\uff41\uff4c('1')\n", "PL202", 1),
    Attack("nfkc_format_attr", "x = '{}'.\uff46ormat(1)\n", "PL205", 1),
    Attack("mathbold_getattr", "x = \U0001d420etattr(1, 'real')\n", "PL202", 1),
    Attack("fstring_dunder", "x = f'{inputs.__class__}'\n", "PL204", 1),
    Attack("fstring_nested_dunder", "x = f'{1:{inputs.__doc__}}'\n", "PL204", 1),
    Attack("underscore_name", "_ = 1\n", "PL201", 1),
    Attack("underscore_lambda_arg", "f = lambda _x: _x\n", "PL201", 1),
    Attack("underscore_kwargs", "def f(**_kw):\n    return _kw\n", "PL201", 1),
    Attack("underscore_keyword", "echo(_secret=1)\n", "PL201", 1),
    Attack("underscore_comprehension", "x = [_ for _ in range(3)]\n", "PL201", 1),
    Attack("dunder_default", "def f(b=__builtins__):\n    return b\n", "PL201", 1),
    Attack("dunder_annotation", "def f(x: __import__('os')):\n    pass\n", "PL201", 1),
    Attack("dunder_return_annotation", "def f() -> __loader__:\n    pass\n", "PL201", 1),
    Attack("name_dunder_name", "x = __name__\n", "PL201", 1),
    Attack("guard_name", "g = _getattr_\n", "PL201", 1),
    Attack("rebind_guard", "_write_ = lambda x: x\n", "PL201", 1),
    Attack("walrus_underscore", "y = (_g := 1)\n", "PL201", 1),
    # str.format and friends: attribute access through a template
    Attack("str_format", "x = '{0.__class__.__mro__}'.format(1)\n", "PL205", 1),
    Attack("format_map", "x = '{a.__class__}'.format_map({'a': 1})\n", "PL205", 1),
    Attack("format_builtin", "x = format(inputs, '{}')\n", "PL202", 1),
    Attack("format_via_method_ref", "f = 'x'.format\n", "PL205", 1),
    # frames, tracebacks, generators and code
    Attack("gi_frame_globals", "g = (i for i in [1])\nf = g.gi_frame.f_globals\n", "PL205", 2),
    Attack("gi_code", "g = (i for i in [1])\nc = g.gi_code\n", "PL205", 2),
    Attack("tb_frame", "e = ValueError()\nf = e.tb_frame\n", "PL205", 2),
    Attack("with_traceback", "e = ValueError().with_traceback(None)\n", "PL205", 1),
    Attack("f_back", "g = give_frame()\nb = g.f_back\n", "PL205", 2),
    Attack("generator_throw", "g = (i for i in [1])\ng.throw(ValueError)\n", "PL205", 2),
    Attack("generator_send", "g = (i for i in [1])\ng.send(None)\n", "PL205", 2),
    Attack("mro", "m = dict.mro()\n", "PL205", 1),
    Attack("encode", "b = 'x'.encode()\n", "PL205", 1),
    Attack("translate", "t = 'x'.translate({120: 'y' * 10**6})\n", "PL205", 1),
    Attack("maketrans", "t = str.maketrans('a', 'b')\n", "PL205", 1),
    # names that reach past the sandbox
    Attack("eval", "x = eval('1')\n", "PL202", 1),
    Attack("exec", "exec('x = 1')\n", "PL202", 1),
    Attack("compile", "c = compile('1', 'f', 'eval')\n", "PL202", 1),
    Attack("getattr", "x = getattr(inputs, 'update')\n", "PL202", 1),
    Attack("setattr", "setattr(vault, 'balance', 0)\n", "PL202", 1),
    Attack("delattr", "delattr(vault, 'balance')\n", "PL202", 1),
    Attack("hasattr", "x = hasattr(vault, 'drain')\n", "PL202", 1),
    Attack("vars", "x = vars()\n", "PL202", 1),
    Attack("dir", "x = dir(vault)\n", "PL202", 1),
    Attack("globals", "g = globals()\n", "PL202", 1),
    Attack("locals", "def f():\n    return locals()\n", "PL202", 2),
    Attack("type", "t = type(inputs)\n", "PL202", 1),
    Attack("type_three_args", "t = type('A', (), {})\n", "PL202", 1),
    Attack("object", "o = object()\n", "PL202", 1),
    Attack("super", "def f():\n    return super()\n", "PL202", 2),
    Attack("classmethod", "c = classmethod(len)\n", "PL202", 1),
    Attack("property", "p = property(len)\n", "PL202", 1),
    Attack("breakpoint", "breakpoint()\n", "PL202", 1),
    Attack("help", "help()\n", "PL202", 1),
    Attack("input", "x = input()\n", "PL202", 1),
    Attack("open", "f = open('/etc/passwd')\n", "PL202", 1),
    Attack("exit", "exit(0)\n", "PL202", 1),
    Attack("quit", "quit()\n", "PL202", 1),
    Attack("bytes_builtin", "b = bytes(10**9)\n", "PL202", 1),
    Attack("bytearray_builtin", "b = bytearray(10**9)\n", "PL202", 1),
    Attack("memoryview", "m = memoryview('x')\n", "PL202", 1),
    Attack("id", "i = id(inputs)\n", "PL202", 1),
    Attack("issubclass", "x = issubclass(bool, int)\n", "PL202", 1),
    Attack("license", "license()\n", "PL202", 1),
    Attack("printed", "p = printed\n", "PL202", 1),
    Attack("shadow_forbidden_as_param", "def f(eval):\n    return eval\n", "PL202", 1),
    Attack("forbidden_keyword_name", "echo(type=1)\n", "PL202", 1),
    # writing attributes
    Attack("set_host_attr", "vault.balance = 0\n", "PL203", 1),
    Attack("del_host_attr", "del vault.balance\n", "PL203", 1),
    Attack("augassign_attr", "vault.balance += 1\n", "PL203", 1),
    Attack("walrus_attr_target", "for vault.balance in [1]:\n    pass\n", "PL203", 1),
    # the source itself
    Attack("null_byte", "x = 1\x00\n", "PL001", 1),
    Attack("syntax_error_line", "x = 1\ny = (\n", "PL001", 2),
    Attack("empty", "   \n\n", "PL002", 1),
    Attack("too_long", "x = 1\n" + "#" * 1_000_001, "PL004", 1),
    Attack("deep_parens", "x = " + "(" * 300 + "1" + ")" * 300 + "\n", "PL001", 1),
    Attack("deep_lists", "x = " + "[" * 5000 + "]" * 5000 + "\n", "PL001", 1),
    Attack("deep_unary", "x = " + "-" * 100_000 + "1\n", "PL003", 1),
    Attack("deep_lambda", "f = " + "lambda: " * 300 + "1\n", "PL003", 1),
    Attack("deep_ifexp", "x = " + "1 if 1 else " * 3000 + "1\n", "PL003", 1),
]

RUNTIME: list[Attack] = [
    # the host's dicts and lists are read-only
    Attack("host_dict_setitem", "inputs['k'] = 'pwned'\n", "runtime", 1),
    Attack("host_dict_delitem", "del inputs['k']\n", "runtime", 1),
    Attack("host_dict_update", "inputs.update({'k': 1})\n", "runtime", 1),
    Attack("host_dict_pop", "x = 1\ninputs.pop('k')\n", "runtime", 2),
    Attack("host_dict_popitem", "inputs.popitem()\n", "runtime", 1),
    Attack("host_dict_setdefault", "inputs.setdefault('z', 1)\n", "runtime", 1),
    Attack("host_dict_clear", "inputs.clear()\n", "runtime", 1),
    Attack("host_dict_ior", "d = inputs\nd |= {'k': 1}\n", "runtime", 2),
    Attack("host_dict_augitem", "inputs['k'] += 'x'\n", "runtime", 1),
    Attack("host_nested_setitem", "inputs['nested']['d']['x'] = 2\n", "runtime", 1),
    Attack("host_nested_list_item", "inputs['nested']['l'][0][0] = 9\n", "runtime", 1),
    Attack("host_tuple_inner_list", "inputs['t'][1].append(3)\n", "runtime", 1),
    Attack("host_list_append", "items.append(4)\n", "runtime", 1),
    Attack("host_list_extend", "items.extend([4])\n", "runtime", 1),
    Attack("host_list_insert", "items.insert(0, 4)\n", "runtime", 1),
    Attack("host_list_sort", "items.sort()\n", "runtime", 1),
    Attack("host_list_reverse", "items.reverse()\n", "runtime", 1),
    Attack("host_list_remove", "items.remove(1)\n", "runtime", 1),
    Attack("host_list_setitem", "items[0] = 99\n", "runtime", 1),
    Attack("host_list_delitem", "del items[0]\n", "runtime", 1),
    Attack("host_list_setslice", "items[:] = []\n", "runtime", 1),
    Attack("host_list_setslice_grow", "items[len(items):] = [1, 2]\n", "runtime", 1),
    Attack("host_list_iadd", "xs = items\nxs += [1]\n", "runtime", 2),
    Attack("host_list_imul", "xs = items\nxs *= 2\n", "runtime", 2),
    Attack("host_inner_dict", "items[1]['a'] = 2\n", "runtime", 1),
    Attack("host_inner_list_via_loop", "for x in items:\n    x.append(1)\n", "runtime", 2),
    Attack("host_set_is_frozen", "inputs['s'].add(3)\n", "runtime", 1),
    Attack("unbound_list_append", "list.append(items, 4)\n", "runtime", 1),
    Attack("unbound_dict_setitem", "dict.update(inputs, {'k': 1})\n", "runtime", 1),
    Attack("unbound_via_map", "x = list(map(list.append, [items], [4]))\n", "runtime", 1),
    Attack("dict_view_mapping", "m = inputs.items().mapping\n", "runtime", 1),
    Attack("keys_view_mapping", "m = inputs.keys().mapping\n", "runtime", 1),
    # host objects show only what was declared
    Attack("host_obj_undeclared_attr", "s = vault.secret\n", "runtime", 1),
    Attack("host_obj_undeclared_method", "vault.drain()\n", "runtime", 1),
    Attack("host_obj_raw_attr", "x = raw.secret\n", "runtime", 1),
    Attack("host_obj_raw_method", "raw.drain()\n", "runtime", 1),
    Attack("host_obj_call", "vault()\n", "runtime", 1),
    Attack("host_obj_item", "x = vault['secret']\n", "runtime", 1),
    Attack("host_obj_item_write", "vault['balance'] = 0\n", "runtime", 1),
    Attack(
        "host_obj_history_copy", "h = vault.history\nh.append(3)\nitems.append(h)\n", "runtime", 3
    ),
    Attack("host_obj_method_returns_self", "v = vault.me()\n", "runtime", 1),
    Attack("host_obj_method_attr", "m = vault.peek.func\n", "runtime", 1),
    # host words: results copied, internals refused, base exceptions mapped
    Attack("word_returns_object", "o = give_object()\n", "runtime", 1),
    Attack("word_returns_type", "t = give_type()\nt.update(inputs, {})\n", "runtime", 1),
    Attack("word_returns_builtin", "f = give_builtin()\n", "runtime", 1),
    Attack("word_returns_frame", "f = give_frame()\n", "runtime", 1),
    Attack("word_returns_host_object", "v = give_vault()\n", "runtime", 1),
    Attack("word_underscore_kwargs", "echo(**{'_secret': 1})\n", "runtime", 1),
    Attack("word_attr", "x = echo.x\n", "runtime", 1),
    Attack("word_iter_close", "g = give_iter()\ng.close()\n", "runtime", 2),
    Attack("word_raises_systemexit", "sysexit()\n", "runtime", 1),
    Attack("word_raises_generatorexit", "genexit()\n", "runtime", 1),
    Attack("word_raises_baseexception", "baseexc()\n", "runtime", 1),
    Attack("word_raises_keyboard", "kbd()\n", "limit:interrupted", 1),
    Attack(
        "word_raises_keyboard_in_loop", "for i in range(3):\n    kbd()\n", "limit:interrupted", 2
    ),
    Attack("callback_raises_systemexit", "call(lambda: sysexit())\n", "runtime", 1),
    # plain Python failures end as PlanRuntimeError, never as themselves
    Attack("next_on_empty", "x = next(iter([]))\n", "runtime", 1),
    Attack("stop_iteration_in_genexp", "x = list(next(iter([])) for i in [1])\n", "runtime", 1),
    Attack("assert_host_data", "assert False, inputs\n", "runtime", 1),
    Attack("raise_with_host_data", "raise ValueError(inputs, items, vault)\n", "runtime", 1),
    Attack(
        "raise_deep_message",
        "x = []\nfor i in range(3000):\n    x = [x]\nraise ValueError(x)\n",
        "runtime",
        4,
    ),
    Attack("iter_two_args", "it = iter(int, 1)\n", "runtime", 1),
    Attack("print_to_file", "print('x', file=None)\n", "runtime", 1),
    Attack("int_digits_limit", "x = int('9' * 5000)\n", "runtime", 1),
    Attack("str_of_huge_int", "x = 10 ** 5000\ny = str(x)\n", "runtime", 2),
    Attack("float_inf_range", "r = range(float('inf'))\n", "runtime", 1),
    Attack("int_of_inf", "x = int(float('inf'))\n", "runtime", 1),
    Attack("float_overflow", "x = 1e308 ** 2\n", "runtime", 1),
    Attack("chr_out_of_range", "c = chr(0x110000)\n", "runtime", 1),
    Attack("zero_division", "x = divmod(1, 0)\n", "runtime", 1),
    Attack(
        "sort_mutating_key",
        "xs = [3, 1, 2]\nxs.sort(key=lambda v: xs.append(v) or v)\n",
        "runtime",
        2,
    ),
    Attack("dict_grows_in_loop", "d = {1: 1}\nfor k in d:\n    d[k + 1] = 1\n", "runtime", 2),
    Attack("set_grows_in_loop", "s = {1}\nfor k in s:\n    s.add(k + 1)\n", "runtime", 2),
    Attack("generator_reentry", "g = (next(g) for i in [1])\nx = next(g)\n", "runtime", 1),
    Attack("type_attr_refused", "j = str.join\n", "runtime", 1),
    Attack("int_to_bytes", "b = (1).to_bytes(8, 'big')\n", "runtime", 1),
    Attack("float_hex_class", "f = (1.0).fromhex\n", "runtime", 1),
    Attack("complex_attr", "r = (1j).real\n", "runtime", 1),
    Attack("range_attr", "r = range(3).start\n", "runtime", 1),
    Attack("slice_indices", "s = slice(1).indices(10)\n", "runtime", 1),
    Attack("function_attr", "def f():\n    pass\nn = f.func_name\n", "runtime", 3),
    Attack("builtin_attr", "s = len.self\n", "runtime", 1),
    Attack("exception_attr", "e = ValueError('x')\nt = e.traceback\n", "runtime", 2),
    # time, steps and depth
    Attack("while_true", "while True:\n    pass\n", "limit:steps|seconds", 1),
    Attack("while_true_oneliner", "while 1: x = 1\n", "limit:steps|seconds", 1),
    Attack(
        "for_over_growing_list",
        "xs = [1]\nfor x in xs:\n    xs.append(x)\n",
        "limit:steps|seconds",
        2,
    ),
    Attack("recursion_def", "def f():\n    return f()\nf()\n", "limit:depth", 1),
    Attack("recursion_lambda", "f = lambda: f()\nf()\n", "limit:depth", 1),
    Attack(
        "recursion_mutual",
        "def f():\n    return g()\ndef g():\n    return f()\nf()\n",
        "limit:depth",
        None,
    ),
    Attack("recursion_through_map", "f = lambda x: list(map(f, [x]))\nf(1)\n", "limit:depth", 1),
    Attack(
        "recursion_through_sorted",
        "def f(x):\n    return sorted([1, 2], key=f)\nf(1)\n",
        "limit:depth",
        1,
    ),
    Attack("recursion_lambda_default", "f = lambda g=None: (g or f)()\nf()\n", "limit:depth", 1),
    Attack("recursion_through_host", "def f():\n    return call(f)\nf()\n", "limit:depth", 1),
    Attack(
        "nested_comprehension",
        "x = [[j for j in range(1000)] for i in range(1000)]\n",
        "limit:steps|seconds",
        1,
    ),
    Attack(
        "genexp_product",
        "x = sum(1 for a in range(10**4) for b in range(10**4))\n",
        "limit:steps|seconds",
        1,
    ),
    Attack(
        "walrus_counter",
        "i = 0\nx = [(i := i + 1) for j in range(10**5) for k in range(10)]\n",
        "limit:steps|seconds",
        2,
    ),
    Attack(
        "map_lambda_steps",
        "f = lambda v: v\ny = [list(map(f, range(99_999))) for i in range(5)]\n",
        "limit:steps|seconds",
        None,
    ),
    Attack(
        "map_self_append", "xs = [0]\nany(map(xs.append, xs))\n", "limit:steps|seconds|memory", 2
    ),
    Attack(
        "map_count_quadratic",
        "xs = list(range(50_000))\nys = list(map(xs.count, xs))\n",
        "limit:steps|seconds",
        2,
    ),
    Attack(
        "sorted_key_count",
        "xs = list(range(50_000))\nys = sorted(xs, key=xs.count)\n",
        "limit:steps|seconds",
        2,
    ),
    Attack(
        "min_key_count",
        "xs = list(range(50_000))\ny = min(xs, key=xs.count)\n",
        "limit:steps|seconds",
        2,
    ),
    Attack(
        "filter_count",
        "xs = list(range(50_000))\nys = list(filter(xs.count, xs))\n",
        "limit:steps|seconds",
        2,
    ),
    Attack(
        "sum_map_sum_aliased",
        "x = sum(map(sum, [range(1000)] * 100_000))\n",
        "limit:steps|seconds|size",
        1,
    ),
    Attack("host_word_loop", "while True:\n    echo(1)\n", "limit:steps|seconds", 2),
    # size: every operation that can allocate without a loop
    Attack("str_mul", "s = 'a' * 10**9\n", "limit:size", 1),
    Attack("str_rmul", "s = 10**9 * 'a'\n", "limit:size", 1),
    Attack("list_mul", "xs = [0] * 10**9\n", "limit:size", 1),
    Attack("list_of_lists_mul", "xs = [[]] * 10**9\n", "limit:size", 1),
    Attack("tuple_mul", "t = (0,) * 10**9\n", "limit:size", 1),
    Attack("bool_mul", "s = 'ab' * (10**9 > 1) * 10**9\n", "limit:size", 1),
    Attack("mul_twice", "s = 'a' * 50_000 * 50_000\n", "limit:size", 1),
    Attack("str_imul_loop", "s = 'ab'\nwhile True:\n    s *= 2\n", "limit:size", 3),
    Attack("str_iadd_loop", "s = 'ab'\nwhile True:\n    s += s\n", "limit:size", 3),
    Attack("list_iadd_loop", "xs = [1]\nwhile True:\n    xs += xs\n", "limit:size", 3),
    Attack("list_extend_self", "xs = [1]\nwhile True:\n    xs.extend(xs)\n", "limit:size", 3),
    Attack(
        "list_extend_generator",
        "xs = [1]\nxs.extend(x for x in range(10**6))\n",
        "limit:size|steps",
        2,
    ),
    Attack("concat_two_halves", "a = 'a' * 99_999\nb = a + a\n", "limit:size", 2),
    Attack("tuple_concat_loop", "t = (1,)\nwhile True:\n    t = t + t\n", "limit:size", 3),
    Attack(
        "star_display_doubling", "xs = [1]\nwhile True:\n    xs = [*xs, *xs]\n", "limit:size", 3
    ),
    Attack("star_set_doubling", "t = tuple(range(99_000))\ns = {*t, *t, *t}\n", "limit:size", 2),
    Attack("star_call_doubling", "xs = list(range(60_000))\nprint(*xs, *xs)\n", "limit:size", 2),
    Attack(
        "star_subscript", "xs = list(range(60_000))\nd = {}\nd[*xs, *xs] = 1\n", "limit:size", 3
    ),
    Attack("setslice_doubling", "xs = [1]\nwhile True:\n    xs[len(xs):] = xs\n", "limit:size", 3),
    Attack(
        "setslice_generator",
        "xs = [1]\nxs[:0] = (i for i in range(10**7))\n",
        "limit:size|steps",
        2,
    ),
    Attack("fstring_doubling", "s = 'ab'\nwhile True:\n    s = f'{s}{s}'\n", "limit:size", 3),
    Attack("fstring_repr_doubling", "s = '\\\\'\nwhile True:\n    s = f'{s!r}'\n", "limit:size", 3),
    Attack("percent_r_doubling", "s = '\\\\'\nwhile True:\n    s = '%r' % (s,)\n", "limit:size", 3),
    Attack(
        "ascii_expansion_fstring", "s = '\\U0001f600' * 50_000\nt = f'{s!a}'\n", "limit:size", 2
    ),
    Attack(
        "ascii_expansion_percent", "s = '\\U0001f600' * 50_000\nt = '%a' % (s,)\n", "limit:size", 2
    ),
    Attack("join_big", "xs = ['ab'] * 60_000\ns = ','.join(xs)\n", "limit:size", 2),
    Attack(
        "join_generator", "s = 'xx'.join(str(i) for i in range(60_000))\n", "limit:size|steps", 1
    ),
    Attack(
        "join_as_separator", "sep = 'a' * 60_000\ns = sep.join(['', '', ''])\n", "limit:size", 2
    ),
    Attack("replace_blowup", "s = 'a' * 1000\nt = s.replace('a', 'b' * 1000)\n", "limit:size", 2),
    Attack("replace_empty_old", "s = 'a' * 1000\nt = s.replace('', 'b' * 1000)\n", "limit:size", 2),
    Attack("ljust", "s = 'a'.ljust(10**9)\n", "limit:size", 1),
    Attack("rjust", "s = 'a'.rjust(10**9, '*')\n", "limit:size", 1),
    Attack("center", "s = 'a'.center(10**9)\n", "limit:size", 1),
    Attack("zfill", "s = '1'.zfill(10**9)\n", "limit:size", 1),
    Attack("expandtabs", "s = ('\\t' * 1000).expandtabs(10**6)\n", "limit:size", 1),
    Attack("fstring_width", "s = f'{1:1000000000}'\n", "limit:size", 1),
    Attack("fstring_nested_width", "w = 10**9\ns = f'{1:{w}}'\n", "limit:size", 2),
    Attack("fstring_precision", "p = 10**9\ns = f'{1.5:.{p}f}'\n", "limit:size", 2),
    Attack("fstring_fill_align", "s = f\"{'a':*^999999999}\"\n", "limit:size", 1),
    Attack("fstring_str_width_var", "w = '999999999'\ns = f'{1:{w}}'\n", "limit:size", 2),
    Attack(
        "fstring_arabic_digits",
        "s = f'{1:\u0661\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660}'\n",
        "limit:size",
        1,
    ),
    Attack("fstring_many_fields", "s = 'a' * 99_000\nt = f'{s}{s}{s}'\n", "limit:size", 2),
    Attack("percent_width", "s = '%1000000000s' % 'a'\n", "limit:size", 1),
    Attack("percent_star_width", "s = '%*s' % (10**9, 'a')\n", "limit:size", 1),
    Attack("percent_star_precision", "s = '%.*f' % (10**9, 1.0)\n", "limit:size", 1),
    Attack(
        "percent_mapping_paren_width",
        "s = '%(a(b)(c))999999999s' % {'a(b)(c)': 'x'}\n",
        "limit:size",
        1,
    ),
    Attack(
        "percent_many_widths", "t = '%99999s' * 100\ns = t % tuple(['a'] * 100)\n", "limit:size", 2
    ),
    Attack("percent_long_args", "a = 'x' * 60_000\ns = '%s%s' % (a, a)\n", "limit:size", 2),
    Attack("percent_container_repr", BIG + "s = '%s' % (x,)\n", "limit:size", 4),
    Attack("repr_shared_tree", BIG + "s = repr(x)\n", "limit:size", 4),
    Attack("print_shared_tree", BIG + "print(x)\n", "limit:size", 4),
    Attack("fstring_shared_tree_wide", BIG + "s = f'{x!r:>{5}}'\n", "limit:size", 4),
    Attack("pow_big", "x = 10 ** 10**9\n", "limit:size", 1),
    Attack("pow_tower", "x = 2 ** 2 ** 64\n", "limit:size", 1),
    Attack("pow_negative_base", "x = (-3) ** 10**7\n", "limit:size", 1),
    Attack("pow_builtin", "x = pow(7, 10**9)\n", "limit:size", 1),
    Attack("ipow_loop", "x = 3\nwhile True:\n    x **= 2\n", "limit:size", 3),
    Attack("lshift", "x = 1 << 10**9\n", "limit:size", 1),
    Attack("ilshift_loop", "x = 1\nwhile True:\n    x <<= 5000\n", "limit:size", 3),
    Attack("mul_square_loop", "x = 3\nwhile True:\n    x = x * x\n", "limit:size", 3),
    Attack("imul_loop", "x = 3\nwhile True:\n    x *= x\n", "limit:size", 3),
    Attack("pow_mod_big", "m = 7 ** 5000\nx = pow(3, m, m)\n", "limit:size", 2),
    Attack("round_negative", "x = round(1, -10**8)\n", "limit:size", 1),
    Attack("range_huge", "r = range(10**9)\n", "limit:size", 1),
    Attack("range_overflow", "r = range(10**30)\n", "limit:size", 1),
    Attack("range_in_map", "x = list(map(range, [10**9]))\n", "limit:size", 1),
    Attack("sum_lists", "x = sum([[0] * 1000] * 1000, [])\n", "limit:size", 1),
    Attack("sum_strings_via_tuples", "x = sum([(0,) * 1000] * 1000, ())\n", "limit:size", 1),
    Attack("zip_fan_out", "r = range(50_000)\nx = list(zip(*[r] * 100))\n", "limit:size", 2),
    Attack("map_fan_out", "r = range(50_000)\nx = list(map(max, *[r] * 100))\n", "limit:size", 2),
    Attack("dict_fromkeys_huge", "d = dict.fromkeys(range(10**9))\n", "limit:size", 1),
    # text of shared structure through views, slices and exceptions (priced by sandbox.walks)
    Attack(
        "percent_dict_values_shared",
        BIG + "d = {1: x}\ns = '%s' % (d.values(),)\n",
        "limit:size",
        5,
    ),
    Attack("print_slice_shared", BIG + "print(slice(x))\n", "limit:size", 4),
    Attack("repr_exception_shared", BIG + "s = repr(ValueError(x))\n", "limit:size", 4),
    Attack("fstring_items_view_wide", BIG + "s = f'{ {1: x}.items()!r:>3}'\n", "limit:size", 4),
    Attack("print_sep_shared", BIG + "print(1, 2, sep=x)\n", "limit:size", 4),
    Attack("word_dunder_kwargs", "echo(**{'__class__': 1})\n", "runtime", 1),
    Attack(
        "nested_generators",
        "g = (v for v in range(1))\nfor i in range(5000):\n    g = (v for v in g)\nr = list(g)\n",
        "limit:depth",
        None,
    ),
    Attack(
        "nested_closures",
        "f = lambda: 1\nfor i in range(3000):\n    f = (lambda g: lambda: g())(f)\nf()\n",
        "limit:depth",
        None,
    ),
    Attack("dict_comp_huge_range", "d = {i: i for i in range(10**9)}\n", "limit:size", 1),
    Attack(
        "set_comp_product", "s = {i for i in range(90_000) for j in range(3)}\n", "limit:steps", 1
    ),
    Attack(
        "memory_growth",
        "xs = []\nwhile True:\n    xs.append('a' * 99_999)\n",
        "limit:memory|steps",
        3,
        {"memory_mb": 64, "steps": 2_000_000, "seconds": 20},
    ),
]


ALL = REFUSED + RUNTIME


# --- running ---------------------------------------------------------------------------------


def _builtins_snapshot() -> dict[str, int]:
    return {name: id(value) for name, value in vars(builtins).items()}


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _run(attack: Attack) -> BaseException | None:
    """Run one attack in this process, with the address space capped for its duration: a
    breach then ends in MemoryError (a failing test) instead of taking the machine's memory."""
    saved = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + (3 << 30), saved[1]))
    try:
        return _run_uncapped(attack)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, saved)


def _run_uncapped(attack: Attack) -> BaseException | None:
    host, expected, vault = make_host()
    before = _builtins_snapshot()
    limits = Limits(**{**FAST, **attack.limits})
    error: BaseException | None = None
    try:
        Sandbox(host=host, limits=limits).run(attack.source)
    except BaseException as caught:  # noqa: BLE001 - what escaped is the verdict
        error = caught
    # The host is unchanged, whatever happened.
    assert host["inputs"] == expected["inputs"]
    assert host["items"] == expected["items"]
    assert (vault.secret, vault.balance, vault.history) == ("s3cret", 100, [1, 2])
    assert _builtins_snapshot() == before
    return error


@pytest.mark.parametrize("attack", REFUSED, ids=[a.name for a in REFUSED])
def test_refused_at_check(attack: Attack) -> None:
    verdict = planlang.check(attack.source)
    assert verdict.ok is False
    codes = {(p.code, p.line) for p in verdict.problems}
    assert (attack.expect, attack.line) in codes, verdict.problems
    assert all(p.col >= 1 for p in verdict.problems)
    error = _run(attack)
    assert type(error) is PlanRefused, repr(error)


@pytest.mark.parametrize("attack", RUNTIME, ids=[a.name for a in RUNTIME])
def test_stopped_at_run(attack: Attack) -> None:
    assert planlang.check(attack.source).ok, planlang.check(attack.source).problems
    error = _run(attack)
    if attack.expect == "runtime":
        assert type(error) is PlanRuntimeError, repr(error)
    else:
        kinds = set(attack.expect.removeprefix("limit:").split("|"))
        assert type(error) is PlanLimitError, repr(error)
        assert error.kind in kinds, (error.kind, str(error))
    if attack.line is not None:
        assert error.line == attack.line, str(error)


def test_table_is_large_and_names_are_unique() -> None:
    assert len(ALL) >= 100
    assert len({a.name for a in ALL}) == len(ALL)


# --- after the run -----------------------------------------------------------------------------


def test_plan_function_handed_back_is_dead_after_the_run() -> None:
    """A plan function in the result (or kept by a host word) cannot run plan code later."""
    box = Sandbox(limits=Limits(**FAST))
    result = box.run("def f():\n    return 1\nresult = {'f': f, 'g': lambda: 2}\n")
    with pytest.raises(PlanLimitError):
        result["f"]()
    with pytest.raises(PlanLimitError):
        result["g"]()


def test_host_word_holding_a_plan_function_cannot_revive_it() -> None:
    kept: list[Any] = []
    box = Sandbox(host={"keep": kept.append}, limits=Limits(**FAST))
    box.run("keep(lambda: [0] * 10)\n")
    with pytest.raises(PlanLimitError):
        kept[0]()


def test_result_is_copied_and_host_values_in_it_are_fresh() -> None:
    host, expected, _vault = make_host()
    box = Sandbox(host=host, limits=Limits(**FAST))
    result = box.run("result = [inputs, items, inputs['nested']]\n")
    result[0]["k"] = "changed"
    result[1].append(9)
    result[2]["d"]["x"] = 5
    assert host["inputs"] == expected["inputs"]
    assert host["items"] == expected["items"]


def test_limit_error_cannot_be_swallowed_by_a_host_word() -> None:
    """A host word that catches the plan's limit error and calls back gets it again."""

    def swallow(f: Any) -> str:
        for _ in range(3):
            try:
                f()
            except PlanLimitError:
                pass
        return "swallowed"

    box = Sandbox(host={"swallow": swallow}, limits=Limits(**FAST))
    with pytest.raises(PlanLimitError) as info:
        box.run(
            "def spin():\n    while True:\n        pass\nx = swallow(spin)\nwhile True:\n    pass\n"
        )
    assert info.value.kind in ("steps", "seconds")


# --- attacks that could crash or hang a process: in a child ---------------------------------

_CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import planlang
src, limits = json.loads(sys.stdin.read())
try:
    planlang.Sandbox(limits=planlang.Limits(**limits)).run(src)
    print(json.dumps(["finished", None]))
except planlang.PlanLimitError as e:
    print(json.dumps(["limit", e.kind]))
except planlang.PlanError as e:
    print(json.dumps([type(e).__name__, None]))
except BaseException as e:
    print(json.dumps(["escaped " + type(e).__name__, None]))
"""

HEAVY: list[Attack] = [
    Attack(
        "deep_tuple_hash_dict_key",
        "t = ()\nfor i in range(400_000):\n    t = (t,)\nd = {t: 1}\n",
        "finished",
        None,
        {"steps": 500_000, "seconds": 20, "size": 1_000_000},
    ),
    Attack(
        "deep_tuple_in_set",
        "t = ()\nfor i in range(400_000):\n    t = (t,)\nx = t in {1}\n",
        "finished",
        None,
        {"steps": 500_000, "seconds": 20, "size": 1_000_000},
    ),
    Attack(
        "pow_mod_40k_bits",
        "m = 3 ** 25_000\nx = pow(7, m, m)\n",
        "limit:size",
        None,
        {"int_bits": 100_000},
    ),
    Attack(
        "aliased_repr_2_60",
        "x = [1]\nfor i in range(60):\n    x = [x, x]\ns = repr(x)\n",
        "limit:size",
        None,
        {},
    ),
    Attack(
        "aliased_print_2_60",
        "x = [1]\nfor i in range(60):\n    x = [x, x]\nprint(x)\n",
        "limit:size",
        None,
        {},
    ),
    Attack(
        "sum_map_sum_1e8",
        "x = sum(map(sum, [range(1000)] * 100_000))\n",
        "limit:steps|seconds|size",
        None,
        {"size": 1_000_000},
    ),
    Attack(
        "zip_star_3000",
        "r = range(30_000)\nx = list(zip(*[r] * 3000))\n",
        "limit:size",
        None,
        {"size": 1_000_000},
    ),
    Attack(
        "sorted_big_aliased_key",
        "xs = [list(range(1000))] * 100_000\ny = sorted(xs, key=sum)\n",
        "limit:steps|seconds|size",
        None,
        {"size": 1_000_000},
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("attack", HEAVY, ids=[a.name for a in HEAVY])
def test_heavy_attack_in_child(attack: Attack) -> None:
    limits = {**FAST, "seconds": 2, **attack.limits}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([attack.source, limits]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    outcome, kind = json.loads(proc.stdout.strip().splitlines()[-1])
    if attack.expect == "finished":
        assert outcome in ("finished", "limit"), outcome  # the point: the process lives
    else:
        kinds = set(attack.expect.removeprefix("limit:").split("|"))
        assert outcome == "limit" and kind in kinds, (outcome, kind)
