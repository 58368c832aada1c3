"""`planlang check` where a user expects ruff (issue 13, item 11).

It is an error for check to refuse '-' (stdin) or a folder, to have one output format only, to
stay silent about a name nothing defines, or to look for planlang.toml only in the current
folder.
"""

import io
import json
from pathlib import Path

import pytest

from planlang.cli import main

ROOT = Path(__file__).resolve().parents[2]
AUDITED = ROOT / "data" / "algos" / "audited"
BAD = "import os\nresult = agent('q')\n"
UNDEFINED = "for _, g in sorted({}.items()):\n    log(g)\nresult = shards(inputs)\n"


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_check_reads_stdin_named_by_stdin_filename(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(BAD))
    code, out, _ = cli(capsys, "check", "-", "--stdin-filename", "plans/mine.py")
    assert code == 1 and out.startswith("plans/mine.py:1:1: PL101 ")


def test_check_searches_folders_for_python_files(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plans" / "deep").mkdir(parents=True)
    (tmp_path / "plans" / "a.py").write_text("result = 1\n")
    (tmp_path / "plans" / "deep" / "b.py").write_text(BAD)
    (tmp_path / "plans" / ".hidden").mkdir()
    (tmp_path / "plans" / ".hidden" / "c.py").write_text(BAD)
    (tmp_path / "plans" / "notes.txt").write_text(BAD)
    code, out, err = cli(capsys, "check", "plans")
    assert code == 1 and out.splitlines() == [f"{Path('plans/deep/b.py')}:1:1: PL101 imports "
                                              "are not part of the plan language; use the host "
                                              "words"]  # fmt: skip
    code, out, _ = cli(capsys, "check", "plans", "--output-format", "json")
    assert json.loads(out)["checked"] == 2


def test_check_writes_github_annotations(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.py").write_text(BAD)
    code, out, _ = cli(capsys, "check", "p.py", "--output-format", "github")
    assert code == 1
    assert out.splitlines() == ["::error file=p.py,line=1,col=1,title=PL101::PL101 imports are "
                                "not part of the plan language; use the host words"]  # fmt: skip


def test_an_undefined_name_has_its_own_code(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.py").write_text(UNDEFINED)
    code, out, _ = cli(capsys, "check", "p.py")
    assert code == 1
    assert out.splitlines() == ["p.py:3:10: PL301 undefined name 'shards': the plan does not "
                                "define it and no host word has that name"]  # fmt: skip


@pytest.mark.parametrize("where", [".", "sub/folder"])
def test_the_project_is_found_walking_up_with_its_host_words(capsys, monkeypatch, tmp_path,
                                                             where):  # fmt: skip
    (tmp_path / "planlang.toml").write_text(
        f'[plan]\nhost = ["kit.audit_words:audit_words"]\noptions = {{ corpus = "{AUDITED}" }}\n'
    )
    plan = tmp_path / where / "p.py"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(UNDEFINED)
    elsewhere = tmp_path.parent
    monkeypatch.chdir(elsewhere)
    code, _, err = cli(capsys, "check", str(plan))
    assert code == 0, err
    code, out, _ = cli(capsys, "price", str(plan), "--seeds", "1", "--json")
    assert json.loads(out)["sha256"]  # priced with the project's words: no NameError note
    assert "NameError" not in out
