"""Bootstrap intervals for an evaluation's recall, precision and skeptic accuracy, and for the
differences between designs.

A run of 72 bugs is one noisy draw: two designs 0.05 apart can be the same design. So every
number of the report comes with a 95% interval from one bootstrap shared by all designs:

- bugs are resampled with replacement, each carrying its outcome in every repeat (a cluster
  bootstrap: the variation between repeats is inside each bug's mean, and a design's repeats
  with other seeds narrow it). The same resampled bugs serve every design, so a difference
  between two designs is paired: the bugs both find or both miss do not widen it;
- false places (findings at no bug) are not tied to a bug, so each design's total is redrawn
  from a Poisson with its mean (a Poisson bootstrap); precision is found / (found + false);
- skeptic accuracy: the agreeing verdicts redrawn from a binomial of the verdicts judged.

``tests/bench/test_intervals.py`` checks that the interval of a known binomial covers the truth
at about 95%.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Draws", "Outcomes", "bootstrap", "interval"]

DRAWS = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Outcomes:
    """One design's results over R repeats and the key's n bugs."""

    found: np.ndarray  # (R, n) booleans: repeat r found bug b
    wrong: int  # false places, summed over repeats
    agree: int = 0  # skeptic verdicts that agree with the key, summed
    judged: int = 0  # skeptic verdicts judged, summed

    @classmethod
    def of(cls, found: Sequence[Sequence[bool]], wrong: int, agree: int = 0,
           judged: int = 0) -> Outcomes:  # fmt: skip
        return cls(np.asarray(found, dtype=bool), wrong, agree, judged)

    @property
    def recall(self) -> float:
        return float(self.found.mean()) if self.found.size else 0.0

    @property
    def precision(self) -> float:
        hits = int(self.found.sum())
        return hits / (hits + self.wrong) if hits + self.wrong else 0.0

    @property
    def accuracy(self) -> float | None:
        return self.agree / self.judged if self.judged else None


@dataclass(frozen=True)
class Draws:
    """Bootstrap draws of one design's numbers (each an array of ``DRAWS``)."""

    recall: np.ndarray
    precision: np.ndarray
    accuracy: np.ndarray | None

    @property
    def f1(self) -> np.ndarray:
        total = self.recall + self.precision
        return np.divide(2 * self.recall * self.precision, total, out=np.zeros_like(total),
                         where=total > 0)  # fmt: skip


def bootstrap(designs: dict[str, Outcomes], draws: int = DRAWS, seed: int = 0) -> dict[str, Draws]:
    """Draws for every design, on the same resampled bugs (all designs share n)."""
    rng = np.random.default_rng(seed)
    sizes = {outcome.found.shape[1] for outcome in designs.values()}
    if len(sizes) > 1:
        raise ValueError(f"Every design must be scored on the same bugs, got sizes {sizes}.")
    n = sizes.pop() if sizes else 0
    bugs = rng.integers(0, max(n, 1), size=(draws, n))
    out = {}
    for name, outcome in designs.items():
        per_bug = outcome.found.sum(axis=0)  # times each bug was found, over the repeats
        repeats = outcome.found.shape[0]
        hits = per_bug[bugs].sum(axis=1) if n else np.zeros(draws)
        recall = hits / (repeats * n) if n and repeats else np.zeros(draws)
        wrong = rng.poisson(outcome.wrong, size=draws)
        total = hits + wrong
        precision = np.divide(hits, total, out=np.zeros(draws), where=total > 0)
        accuracy = None
        if outcome.judged:
            agree = rng.binomial(outcome.judged, outcome.agree / outcome.judged, draws)
            accuracy = agree / outcome.judged
        out[name] = Draws(recall, precision, accuracy)
    return out


def interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval holding ``level`` of the draws."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
