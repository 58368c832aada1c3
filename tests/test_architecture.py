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
