"""Source files as real libraries ship them: a declared encoding other than UTF-8, files that
do not parse (Python 2 leftovers), and a library the interpreter imported before the examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_helpers import ALGOS, assert_all_proven

from bench.__main__ import main
from bench.corpus import load_dir
from bench.proof import CHILD, DEFAULT_FLAGS

NUMBERS = (ALGOS / "source" / "algos" / "number_theory.py").read_text(encoding="utf-8")

LATIN = '''\
# -*- coding: latin-1 -*-
"""Caf\xe9 names."""


def cafe(n):
    """The word caf\xe9, ``n`` times.

    >>> cafe(1)
    'caf\xe9'
    >>> cafe(2)
    'caf\xe9caf\xe9'
    >>> len(cafe(3))
    12
    """
    return "caf\xe9" * n
'''

# An example that fails if an edited file is written in another encoding than the one its coding
# line declares: UTF-8 bytes read as latin-1 make the section sign two characters.
SECTION = '''

def label(n):
    """``n`` after the section sign.

    >>> len(label(3))
    3
    """
    return "\xa7 " + str(n)
'''


@pytest.fixture
def odd_library(tmp_path: Path) -> Path:
    package = tmp_path / "oddlib"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "numbers.py").write_text(NUMBERS, encoding="utf-8")
    (package / "latin.py").write_bytes(LATIN.encode("latin-1"))
    (package / "legacy.py").write_text('print "python 2"\n', encoding="utf-8")
    return package


def test_survey_and_plant_read_each_file_in_its_own_encoding(
    odd_library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["survey", "--source", str(odd_library), "--failures"]) == 0
    out = capsys.readouterr().out
    assert "files with doctest examples: 2" in out
    assert "files whose examples all pass before any edit: 2" in out
    before = {p.name: p.read_bytes() for p in odd_library.iterdir()}
    plant = ["plant", "--source", str(odd_library), "--out", str(tmp_path / "out")]
    assert main([*plant, "--bugs", "1", "--seed", "1", "--quiet"]) == 0
    audited = tmp_path / "out" / "audited" / "oddlib"
    latin = (audited / "latin.py").read_text(encoding="utf-8")  # the kit reads UTF-8
    assert 'return "caf\xe9" * n' in latin and ">>>" not in latin
    assert (audited / "legacy.py").read_text(encoding="utf-8") == 'print "python 2"\n'
    assert {p.name: p.read_bytes() for p in odd_library.iterdir()} == before


def test_a_library_whose_examples_are_all_in_latin_1_files_is_planted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "latinlib"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    numbers = package / "numbers.py"
    numbers.write_bytes(("# -*- coding: latin-1 -*-\n" + NUMBERS + SECTION).encode("latin-1"))
    before = numbers.read_bytes()
    assert main(["survey", "--source", str(package)]) == 0
    assert "files whose examples all pass before any edit: 1" in capsys.readouterr().out
    out = tmp_path / "out"
    plant = ["plant", "--source", str(package), "--out", str(out), "--bugs", "1", "--seed", "1"]
    assert main([*plant, "--quiet"]) == 0
    key = json.loads((out / "hidden" / "answer_key.json").read_text(encoding="utf-8"))
    [bug] = key["bugs"]
    assert bug["path"] == "latinlib/numbers.py"
    # The edited file ran in its declared encoding: the section sign's example still passed.
    assert "len(label(3))" not in [example["source"].strip() for example in bug["failing"]]
    assert numbers.read_bytes() == before
    audited = out / "audited" / "latinlib" / "numbers.py"
    text = audited.read_text(encoding="utf-8")
    assert 'return "\xa7 " + str(n)' in text and ">>>" not in text
    assert_all_proven(load_dir(package), key["bugs"], tmp_path / "proofs")


def test_the_audited_copy_declares_the_utf_8_it_is_written_in(
    odd_library: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    plant = ["plant", "--source", str(odd_library), "--out", str(out), "--bugs", "1"]
    assert main([*plant, "--seed", "1", "--quiet"]) == 0
    audited = out / "audited" / "oddlib" / "latin.py"
    assert audited.read_text(encoding="utf-8").splitlines()[0] == "# -*- coding: utf-8 -*-"
    # Imported from the audited copy (as verification runs a failing call), the text is intact.
    code = "import sys; sys.path.insert(0, sys.argv[1]); from oddlib.latin import cafe; "
    code += "print(ascii(cafe(1)))"
    shown = subprocess.run([sys.executable, "-s", "-c", code, str(audited.parents[1])],
                           check=True, capture_output=True, text=True).stdout  # fmt: skip
    assert shown.strip() == ascii("caf\xe9")


def test_a_library_imported_before_the_examples_is_replaced_by_the_copy(tmp_path: Path) -> None:
    installed, copy = tmp_path / "installed", tmp_path / "copy"
    for root, answer in ((installed, "'installed'"), (copy, "'copy'")):
        (root / "early").mkdir(parents=True)
        (root / "early" / "__init__.py").write_text(
            f'def where():\n    """Where.\n\n    >>> where()\n    \'copy\'\n    """\n'
            f"    return {answer}\n",
            encoding="utf-8",
        )
    result = tmp_path / "result.json"
    # As a .pth file does at startup: the installed package is imported before the child runs.
    preload = (
        f"import sys, runpy; sys.path.insert(0, {str(installed)!r}); import early; "
        f"sys.argv = [{str(CHILD)!r}, {str(copy)!r}, 'early', 'early/__init__.py', "
        f"{str(result)!r}, '{DEFAULT_FLAGS}', '{{}}']; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    subprocess.run([sys.executable, "-s", "-c", preload], check=True, cwd=tmp_path)
    data = json.loads(result.read_text(encoding="utf-8"))
    assert data["status"] == "ok"
    assert [example["ok"] for example in data["examples"]] == [True]
