"""Rebuild a planted corpus from its key alone, without proving anything again.

Planting networkx takes minutes of doctest runs; the committed key already records every bug as
a one-line edit of the installed release (``source_line``, ``original``, ``planted``). Writing
the corpus from those edits gives the same ``audited/`` copy that ``python -m bench plant`` wrote
(``tests/bench/test_rebuild.py``), in seconds, for the evaluation of the reference corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.corpus import Corpus
from bench.edits import Edit
from bench.key import load_key, write_corpus
from bench.plant import Planted, Planting

__all__ = ["rebuild"]


def rebuild(corpus: Corpus, key_path: str | Path, out: Path) -> dict[str, Any]:
    """Write ``out/audited`` and ``out/hidden`` for the bugs of the key at ``key_path``; the
    written key is the given one, byte for byte (the proofs it records are kept as they were)."""
    key = load_key(key_path)
    planting = Planting(
        bugs=[
            Planted(
                bug["path"],
                bug["function"],
                Edit(bug["kind"], bug["source_line"], bug["original"], bug["planted"]),
                bug["examples"],
                tuple(bug["failing"]),
            )
            for bug in key["bugs"]
        ]
    )
    write_corpus(corpus, planting, out, key["seed"])
    hidden = out / "hidden"
    (hidden / "answer_key.json").write_text(Path(key_path).read_text(encoding="utf-8"),
                                            encoding="utf-8")  # fmt: skip
    (hidden / "plant_report.json").write_text(json.dumps({"rebuilt_from": str(key_path)}) + "\n",
                                              encoding="utf-8")  # fmt: skip
    return key
