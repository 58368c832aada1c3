"""`planlang run` then `planlang report`: the run folder the CLI leaves draws its page, plan
source included, with no project needed once the folder is given by its path."""

import json

from browser import with_class

from planlang.cli import main
from runtime.testing import FakeOpenAI

PLAN = """
phase("scan")
answers = parallel([lambda i=i: agent(f"question {i}", model="scan") for i in range(5)])
phase("sum")
result = len(answers)
"""
CONFIG = """
[planlang]
max_agents = 20
concurrency = 2
retries = 0
[planlang.roles.scan]
model = "small"
price = 0.5
[gate]
max_median = 10
"""


def test_run_keeps_the_plan_and_report_draws_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "planlang.toml").write_text(CONFIG)
    (tmp_path / "plan.py").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAI() as fake:
        monkeypatch.setenv("LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("LLM_API_KEY", "sk-report-test")
        assert main(["run", "plan.py"]) == 0
    assert capsys.readouterr().out.strip() == "5"  # planlang run prints the plan's result
    (folder,) = (tmp_path / ".planlang" / "runs").iterdir()
    assert (folder / "plan.py").read_text() == PLAN
    assert main(["report", folder.name, "-o", "by-id.html"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no planlang.toml here: the folder's path is enough
    assert main(["report", str(folder), "-o", "by-path.html"]) == 0
    html = (elsewhere / "by-path.html").read_text()
    assert html == (tmp_path / "by-id.html").read_text()
    assert len(with_class(html, "lane")) == 5
    assert [a["id"] for a in with_class(html, "phase")] == ["L2", "L4"]  # phase(...) lines
    meta = json.loads((folder / "meta.json").read_text())
    credits = meta["accounting"]["total"]["credits"]
    assert credits == 2.5 and f'data-credits="{credits}"' in html
    assert main(["report", str(folder)]) == 0
    assert capsys.readouterr().out == html  # without -o: standard output
