"""The simulated model's numbers: what the reference study measured, and what is fitted to it.

The study audited networkx with 72 planted bugs and measured whole plans, so the model is fitted
at that level (docs/EVAL.md, "The simulated model", lists every number with its source):

- a bug is *visible* in a shard of ``t`` tokens with probability ``v(t) = A + B ln t`` (one
  latent draw per bug and seed: a bug seen in a big shard is seen in a smaller one too), and one
  read of a shard (a lens, a sample, a round) reports a visible bug with probability
  ``READ_HIT``. So a plan that reads every shard through four lenses finds
  ``v(t) (1 - (1 - READ_HIT)^4)`` of the bugs. ``A`` and ``B`` are solved from the study's slim
  plan (four lenses, no skeptics): 0.38 at 20,000-token shards and 0.18 at 100,000, averaged
  over the real shards networkx's 72 bugs fall in (``REFERENCE_LOG_TOKENS``).
- the skeptics: the fixed plan (the slim plan plus 3 skeptics, 2 votes needed) found 0.30,
  so the vote keeps 0.30 / 0.38 of the real candidates; ``SKEPTIC_REAL`` is the chance one
  skeptic calls a real bug real that gives that vote.
- one agent over the whole library (far beyond its context) reads about ``SOLO_READ_TOKENS``
  tokens from where it starts, reports what it saw at the visibility of one context, and stops
  on its own: fitted to the study's 0, 1 and 4 of 72.

``fit()`` derives the fitted numbers from the study's and the assumed ones; the constants below
are its output on the reference corpus, and ``tests/bench/test_calibration.py`` checks they
agree (and, on a rebuilt networkx, that ``REFERENCE_LOG_TOKENS`` is what the kit packs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.library import library_files
from kit.shards import pack

__all__ = ["FITTED", "STUDY", "Fitted", "fit", "log_tokens_of_bugs", "visibility", "vote_keeps"]

# -- what the study measured (networkx, 72 planted bugs) ------------------------------------


@dataclass(frozen=True)
class Study:
    bugs: int = 72
    slim_20k: float = 0.38  # recall of the slim plan (4 lenses, no skeptics), 20,000-token shards
    slim_100k: float = 0.18  # the same plan at 100,000-token shards
    fixed: float = 0.30  # the fixed plan: the slim plan at 20,000, 3 skeptics, 2 votes needed
    lead: float = 0.45  # the lead's own plan
    one_agent_found: tuple[int, ...] = (0, 1, 4)  # bugs found by one agent alone, three runs

    @property
    def one_agent(self) -> float:
        return sum(self.one_agent_found) / (len(self.one_agent_found) * self.bugs)

    def spread(self, recall: float) -> float:
        """Twice the binomial standard error of one 72-bug run: the study's own spread."""
        return 2 * math.sqrt(recall * (1 - recall) / self.bugs)


STUDY = Study()

# -- assumed (no study number; configured settings, and verdicts that rest on them say so) ---

READ_HIT = 0.85  # one read reporting a visible bug; only the ablations depend on it much
LENSES = 4
SKEPTICS, NEED = 3, 2
SKEPTIC_FALSE = 0.75  # a skeptic calls a false alarm false
VERIFIED = (0.95, 0.92)  # both accuracies when shown the failing call's result (H6)
FALSE_ALARM_TRIES, FALSE_ALARM_RATE = 3, 0.3  # per scan: 0.9 false alarms on average
CONTEXT_TOKENS = 100_000  # one agent's context window (python -m bench eval --context-tokens)

# -- facts of the reference corpus the fit uses (log_tokens_of_bugs on networkx 3.6.1) -------

REFERENCE_LOG_TOKENS = {20_000: 9.9046, 100_000: 11.4709}  # mean ln(tokens) of the bugs' shards
REFERENCE_LIBRARY_TOKENS = 1_455_799  # the fact sheet's total


@dataclass(frozen=True)
class Fitted:
    intercept: float  # A of v(t) = A + B ln t
    slope: float  # B
    skeptic_real: float  # a skeptic calls a real bug real
    solo_read_tokens: float  # one agent's mean reading before it stops


def vote_keeps(real: float, skeptics: int = SKEPTICS, need: int = NEED) -> float:
    """The chance that at least ``need`` of ``skeptics`` call a real bug real."""
    return sum(
        math.comb(skeptics, k) * real**k * (1 - real) ** (skeptics - k)
        for k in range(need, skeptics + 1)
    )


def fit(
    study: Study = STUDY,
    log_tokens: Mapping[int, float] = REFERENCE_LOG_TOKENS,
    library_tokens: int = REFERENCE_LIBRARY_TOKENS,
    read_hit: float = READ_HIT,
    context: int = CONTEXT_TOKENS,
) -> Fitted:
    """Solve the fitted numbers from the study's (closed form, and a bisection for the vote)."""
    lenses = 1 - (1 - read_hit) ** LENSES
    l20, l100 = log_tokens[20_000], log_tokens[100_000]
    slope = (study.slim_100k - study.slim_20k) / (l100 - l20) / lenses
    intercept = study.slim_20k / lenses - slope * l20
    keep, low, high = study.fixed / study.slim_20k, 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if vote_keeps(middle) < keep else (low, middle)
    one_read = read_hit * (intercept + slope * math.log(context))
    solo = study.one_agent * library_tokens / one_read
    return Fitted(round(intercept, 6), round(slope, 6), round((low + high) / 2, 6), round(solo))


FITTED = Fitted(intercept=1.645546, slope=-0.127754, skeptic_real=0.704362, solo_read_tokens=226908)


def visibility(tokens: float, fitted: Fitted = FITTED) -> float:
    """The chance that a bug is visible in a read of ``tokens`` tokens (clamped to [0, 1])."""
    value = fitted.intercept + fitted.slope * math.log(max(tokens, 1.0))
    return min(1.0, max(0.0, value))


def log_tokens_of_bugs(
    root: str | Path, key: Mapping[str, Any], targets: Iterable[int] = (20_000, 100_000)
) -> dict[int, float]:
    """Mean ln(tokens) of the shard each bug falls in, when the kit packs ``root`` at each
    target: what ``fit`` averages the study's plan recall over."""
    files = library_files(Path(root))
    paths = {bug["path"] for bug in key["bugs"]}
    means = {}
    for target in targets:
        sizes = [s.tokens for s in pack(files, target, root=root) for f in s.files if f in paths]
        means[target] = round(sum(math.log(size) for size in sizes) / len(sizes), 4)
    return means
