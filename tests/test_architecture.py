"""Dependencies point one way, and nothing imports bench (the hidden key stays out of reach).

lead -> kit -> runtime,  lead -> planlang -> runtime,  bench -> all
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("planlang", "runtime", "kit", "lead", "bench")
ALLOWED = {
    "runtime": set(),
    "planlang": {"runtime"},
    "kit": {"runtime"},
    "lead": {"kit", "planlang", "runtime"},
    "bench": {"kit", "planlang", "runtime", "lead"},
}


def imported_packages(package: str) -> dict[str, set[str]]:
    """Which of our packages each module of ``package`` imports (statically)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = (names & set(PACKAGES)) - {package}
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_what_the_design_allows(package):
    for module, imports in imported_packages(package).items():
        assert imports <= ALLOWED[package], f"{module} imports {sorted(imports - ALLOWED[package])}"


def test_importing_planlang_loads_no_kit_lead_or_bench():
    code = (
        "import sys, planlang, planlang.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'kit','lead','bench'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_public_api_of_planlang_is_sorted_and_complete():
    import planlang

    assert planlang.__all__ == sorted(planlang.__all__)
    for name in planlang.__all__:
        assert hasattr(planlang, name)


# -- the layout of issue 11: leaves, the checker apart from the sandbox, no import cycles ------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def project_imports() -> dict[str, set[str]]:
    """Each module of ours -> the modules of ours it imports, anywhere in its body (imports
    inside functions count: they are still a dependency), except under ``TYPE_CHECKING``."""
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    known = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        current = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped |= {id(n) for child in node.body for n in ast.walk(child)}
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, current, path.name == "__init__.py")
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != current:
                    found.add(target)
        graph[current] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _parent_packages(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycle_among_the_projects_modules():
    graph = project_imports()
    # A package's __init__ re-exporting its own modules is not a cycle of design: a module of
    # the package that imports a sibling loads the __init__ first, by Python's rules.
    graph = {
        m: {t for t in targets if t not in _parent_packages(m)} for m, targets in graph.items()
    }
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("leaf", ["planlang.language", "planlang.errors"])
def test_language_and_errors_are_leaves(leaf):
    assert project_imports()[leaf] == set()


def test_the_checker_never_imports_the_sandbox_the_runtime_rich_or_pydantic():
    graph = project_imports()
    checker = [m for m in graph if m == "planlang.check" or m.startswith("planlang.check.")]
    assert len(checker) >= 3
    for module in checker:
        ours = {t for t in graph[module] if t.startswith(("planlang.sandbox", "runtime"))}
        assert ours == set(), f"{module} imports {sorted(ours)}"
        path = ROOT / (
            module.replace(".", "/") + ("/__init__.py" if module == "planlang.check" else ".py")
        )
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            a.name.split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import)
            for a in n.names
        }
        names |= {n.module.split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}  # fmt: skip
        assert not names & {"rich", "pydantic", "runtime"}, f"{module} imports {names}"


def test_planlang_check_in_a_fresh_interpreter_loads_no_runtime_rich_or_pydantic(tmp_path):
    plan = tmp_path / "plan.py"
    plan.write_text("x = [i * 2 for i in range(3)]\nresult = {'x': x}\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from planlang.cli import main\n"
        f"code = main(['check', {str(plan)!r}])\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'runtime', 'rich', 'pydantic'}\n"
        "print(code, sorted(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[-2] == "0 []", out.stdout


def test_the_embedding_api_is_at_the_top_level():
    """``planlang.price(...)`` and ``planlang.Gate(...)``, as docs/EMBEDDING.md writes them."""
    import planlang
    from planlang.gate import Gate
    from planlang.price import price

    assert planlang.price is price and callable(planlang.price)
    assert planlang.Gate is Gate


def test_every_package_is_installed():
    """pyproject lists its packages by name: one left out is missing from a wheel (it was so
    for planlang.isolation, the default isolation: `pip install .` could not run a plan)."""
    import tomllib

    root = Path(__file__).resolve().parent.parent
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(root).parts)
        for top in ("planlang", "runtime", "kit", "lead", "bench")
        for init in (root / top).rglob("__init__.py")
    }
    assert found <= listed, f"not installed: {sorted(found - listed)}"
