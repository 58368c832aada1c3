"""[mcp.servers.NAME] in planlang.toml, and the names tools take in a plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from planlang.mcp.config import McpConfigError, servers_from_table
from planlang.mcp.tools import word_name
from planlang.project import ProjectError, load_project


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"servers": {"files": {}}}, "exactly one of command"),
        ({"servers": {"files": {"command": ["a"], "url": "http://x"}}}, "exactly one of command"),
        ({"servers": {"files": {"command": []}}}, "command is empty"),
        ({"servers": {"files": {"url": "ftp://x"}}}, "must start with http"),
        ({"servers": {"agent": {"command": ["a"]}}}, "taken by the language or the run"),
        ({"servers": {"len": {"command": ["a"]}}}, "taken by the language or the run"),
        ({"servers": {"_x": {"command": ["a"]}}}, "must be an identifier"),
        ({"servers": {"my-files": {"command": ["a"]}}}, "must be an identifier"),
        ({"servers": {"f": {"command": ["a"], "prices": {"t": -1}}}}, "cannot be negative"),
        ({"servers": {"f": {"command": ["a"], "colour": "red"}}}, "colour"),
        ({"servers": {"f": "python server.py"}}, "must be a table"),
        ({"server": {}}, "unknown keys ['server']"),
    ],
    ids=["none", "both", "empty", "scheme", "core-word", "builtin", "underscore", "dash",
         "negative-price", "unknown-key", "not-a-table", "typo"],
)  # fmt: skip
def test_bad_server_tables_are_refused_with_where_and_why(table, message) -> None:
    with pytest.raises(McpConfigError, match="mcp") as refused:
        servers_from_table(table)
    assert message in str(refused.value)


def test_a_project_names_its_servers_and_takes_cwd_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "planlang.toml").write_text(
        '[mcp.servers.files]\ncommand = ["python", "s.py"]\nprices = { write = 0.5 }\n'
        '[mcp.servers.web]\nurl = "http://127.0.0.1:8000/mcp"\n',
        encoding="utf-8",
    )
    project = load_project(tmp_path / "planlang.toml")
    files, web = project.mcp_servers
    assert files.command == ("python", "s.py") and files.cwd == str(tmp_path)
    assert files.prices == {"write": 0.5} and web.url == "http://127.0.0.1:8000/mcp"


def test_a_bad_server_table_is_a_project_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "planlang.toml").write_text("[mcp.servers.files]\n", encoding="utf-8")
    with pytest.raises(ProjectError, match=r"planlang\.toml: \[mcp\.servers\.files\]"):
        load_project(tmp_path / "planlang.toml")


@pytest.mark.parametrize(
    ("tool", "word"),
    [("search", "search"), ("create-issue", "create_issue"), ("v1.get", "v1_get"),
     ("2fa", "t_2fa"), ("_hidden", "t_hidden"), ("class", "class_"), ("send", "send_"),
     ("format", "format_")],
)  # fmt: skip
def test_tool_names_become_names_a_plan_can_call(tool: str, word: str) -> None:
    assert word_name(tool) == word


def test_planlang_and_its_cli_load_no_mcp_sdk_until_a_server_starts() -> None:
    import subprocess
    import sys

    code = "import sys, planlang, planlang.cli, planlang.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
