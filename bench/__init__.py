"""bench: a planted-bug benchmark for audits, and its scorer.

Plant proven bugs in a library with doctest examples (``python -m bench plant``), hand agents the
audited copy, and score what they report with :func:`match` (``python -m bench score``).
"""

from bench.score import Score, match

__all__ = ["Score", "match"]
