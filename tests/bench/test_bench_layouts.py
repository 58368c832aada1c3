"""Libraries laid out unlike networkx: a single module, a src/ layout next to a tests package,
a namespace package, a project conftest, names the examples take for granted; and mistakes in
naming one, which must give a sentence, not a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bench_helpers import ALGOS

from bench.__main__ import main
from bench.corpus import CorpusError, load_dir, load_package
from bench.workspace import Slot

NUMBERS = (ALGOS / "source" / "algos" / "number_theory.py").read_text(encoding="utf-8")


def _write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_single_module_library_is_planted_and_audited(tmp_path: Path) -> None:
    module = _write(tmp_path / "project" / "numbers_lib.py", NUMBERS)
    _write(tmp_path / "project" / "setup.py", "from setuptools import setup\nsetup()\n")
    for source in (module, module.parent):
        corpus = load_dir(source)
        assert (corpus.package, corpus.files, corpus.name) == (
            "numbers_lib.py",
            ("numbers_lib.py",),
            "numbers_lib",
        )
    out = tmp_path / "out"
    argv = ["plant", "--source", str(module), "--out", str(out), "--bugs", "1", "--seed", "3"]
    assert main([*argv, "--quiet"]) == 0
    key = json.loads((out / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
    assert key["corpus"] == "numbers_lib" and key["files"] == ["numbers_lib.py"]
    assert [bug["path"] for bug in key["bugs"]] == ["numbers_lib.py"]
    audited = sorted(p.relative_to(out / "audited").as_posix() for p in out.rglob("audited/*"))
    assert audited == ["numbers_lib.py"]
    line = (out / "audited" / "numbers_lib.py").read_text(encoding="utf-8").splitlines()
    assert line[key["bugs"][0]["line"] - 1] == key["bugs"][0]["planted"]
    assert module.read_text(encoding="utf-8") == NUMBERS  # the source is never edited


def test_a_src_layout_project_finds_its_package_not_its_tests(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _write(project / "tests" / "__init__.py")
    _write(project / "src" / "lib" / "__init__.py")
    _write(project / "src" / "lib" / "numbers.py", NUMBERS)
    _write(project / "conftest.py", "import math\ndef f(doctest_namespace):\n"
           "    doctest_namespace['m'] = math\n")  # fmt: skip
    corpus = load_dir(project)
    assert corpus.root == (project / "src").resolve() and corpus.package == "lib"
    assert corpus.files == ("lib/__init__.py", "lib/numbers.py")
    assert corpus.doctest_globals == {"m": "math"}


def test_a_namespace_package_is_found_without_an_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path / "nsroot" / "nspkg_bench_test" / "numbers.py", NUMBERS)
    monkeypatch.syspath_prepend(str(tmp_path / "nsroot"))
    corpus = load_package("nspkg_bench_test")
    assert corpus.files == ("nspkg_bench_test/numbers.py",)
    proof = Slot(corpus, _write(tmp_path / "slot" / "x").parent).run(corpus.files[0], 60)
    assert proof.all_pass and proof.total >= 3


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("json.decoder", "give the top-level package 'json'"),
        ("sys", "no Python source"),
        ("no_such_module_xyz", "No installed package"),
    ],
)
def test_names_that_cannot_be_a_corpus_are_refused_in_a_sentence(name: str, message: str) -> None:
    with pytest.raises(CorpusError, match=message):
        load_package(name)


def test_finding_a_dotted_name_imports_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    # find_spec("pkg.sub") would import pkg: library code run in the planter's own process.
    for name in ("wsgiref", "wsgiref.simple_server"):
        sys.modules.pop(name, None)
    assert main(["survey", "--package", "wsgiref.simple_server"]) == 2
    assert "wsgiref" not in sys.modules
    assert "top-level package 'wsgiref'" in capsys.readouterr().err


def test_a_project_with_several_modules_asks_for_one(tmp_path: Path) -> None:
    _write(tmp_path / "a.py", NUMBERS)
    _write(tmp_path / "b.py", NUMBERS)
    with pytest.raises(CorpusError, match="several modules"):
        load_dir(tmp_path)


def test_examples_may_name_their_own_library(tmp_path: Path) -> None:
    _write(tmp_path / "selfnamed" / "__init__.py", "from selfnamed.core import double\n")
    _write(tmp_path / "selfnamed" / "core.py", '''\
def double(x):
    """Twice ``x``.

    >>> selfnamed.double(2)
    4
    >>> double(0)
    0
    >>> selfnamed.core.double(-1)
    -2
    """
    return 2 * x
''')  # fmt: skip
    corpus = load_dir(tmp_path / "selfnamed")
    proof = Slot(corpus, _write(tmp_path / "slot" / "x").parent).run("selfnamed/core.py", 60)
    assert proof.all_pass and proof.total == 3


def test_an_output_folder_overlapping_the_library_is_refused_and_nothing_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Planting again from an audited copy into the same benchmark would first delete audited/.
    package = _write(tmp_path / "bench_out" / "audited" / "lib" / "numbers.py", NUMBERS).parent
    _write(package / "__init__.py")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for out in (tmp_path / "bench_out", package / "planted", package):
        argv = ["plant", "--source", str(package), "--out", str(out), "--bugs", "1", "--seed", "1"]
        assert main([*argv, "--quiet"]) == 2
        assert "overlaps the library" in capsys.readouterr().err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_library_without_doctests_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = _write(tmp_path / "plain" / "__init__.py", "def f():\n    return 1\n").parent
    argv = ["plant", "--source", str(package), "--out", str(tmp_path / "out"), "--bugs", "1"]
    assert main([*argv, "--seed", "1", "--quiet"]) == 1
    assert "No file of 'plain' has 3 doctest examples" in capsys.readouterr().err


def test_vendored_libraries_are_neither_planted_nor_audited(tmp_path: Path) -> None:
    package = _write(tmp_path / "host" / "__init__.py").parent
    _write(package / "core.py", NUMBERS)
    _write(package / "_vendor" / "__init__.py")
    _write(package / "_vendor" / "other" / "numbers.py", NUMBERS)
    corpus = load_dir(package)
    assert corpus.files == ("host/__init__.py", "host/core.py")
    argv = ["plant", "--source", str(package), "--out", str(tmp_path / "out"), "--bugs", "1"]
    assert main([*argv, "--seed", "1", "--quiet"]) == 0
    assert not (tmp_path / "out" / "audited" / "host" / "_vendor").exists()


DETAILED = '''\
def check(value):
    """Refuse negative values.

    >>> check(-1)
    Traceback (most recent call last):
      ...
    ValueError: value must be positive
    >>> check(2)
    2
    >>> check(0)
    0
    """
    if value < 0:
        raise ValueError(f"{value} is negative")
    return value
'''


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\ndoctest_optionflags = "IGNORE_EXCEPTION_DETAIL NUMBER"\n',
        ),
        ("pytest.ini", "[pytest]\ndoctest_optionflags = IGNORE_EXCEPTION_DETAIL\n"),
        ("setup.cfg", "[tool:pytest]\ndoctest_optionflags =\n    IGNORE_EXCEPTION_DETAIL\n"),
    ],
)
def test_the_projects_doctest_optionflags_are_used(tmp_path: Path, name: str, text: str) -> None:
    project = tmp_path / "project"
    _write(project / "src" / "flagged" / "__init__.py", DETAILED)
    plain = load_dir(project)
    slot = Slot(plain, _write(tmp_path / "slot1" / "x").parent)
    assert len(slot.run("flagged/__init__.py", 60).failed) == 1  # the message differs
    _write(project / name, text)
    configured = load_dir(project)
    slot = Slot(configured, _write(tmp_path / "slot2" / "x").parent)
    assert slot.run("flagged/__init__.py", 60).all_pass
