"""docs/EMBEDDING.md's statements, run as written: each does what the page says."""

import importlib
import re
from pathlib import Path

DOC = (Path(__file__).parents[2] / "docs" / "EMBEDDING.md").read_text()


def test_the_statement_that_turns_rehearsal_hosts_off_turns_them_off(monkeypatch):
    # It read 'planlang.price.REHEARSAL_HOSTS = 0': planlang.price is the function, so that
    # set an attribute of the function, and every price still started a rehearsal host.
    (statement,) = re.findall(r"`([^`]*REHEARSAL_HOSTS = 0)`", DOC)
    module = importlib.import_module("planlang.price")
    monkeypatch.setattr(module, "REHEARSAL_HOSTS", 1)
    exec(statement, {"importlib": importlib, "planlang": importlib.import_module("planlang")})
    assert module.REHEARSAL_HOSTS == 0
