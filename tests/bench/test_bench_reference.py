"""The reference corpus (networkx): a few bugs planted into a scratch folder and re-proven."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_helpers import assert_all_proven

from bench.corpus import load_package
from bench.key import write_corpus
from bench.plant import plant


@pytest.mark.slow
def test_bugs_planted_in_networkx_are_proven_against_the_corpus_copy(tmp_path: Path) -> None:
    corpus = load_package("networkx")
    planting = plant(corpus, 3, seed=7, attempts=4)
    key = write_corpus(corpus, planting, tmp_path / "nx", seed=7)
    assert len(key["bugs"]) == 3
    audited = tmp_path / "nx" / "audited"
    workdir = tmp_path / "proofs"
    for bug in key["bugs"]:
        assert (audited / bug["path"]).read_text(encoding="utf-8").splitlines()[
            bug["line"] - 1
        ] == bug["planted"]
    assert_all_proven(corpus, key["bugs"], workdir)
    assert not list(audited.rglob("tests"))
