"""The kit's prompts: one text per role, kept in ``kit/prompts.json`` beside this module.

Prompts are data so they can be read, diffed and tuned without touching code. They carry the
markers of the kit's contract (``ROLE: scan``, ``ROLE: skeptic``), which a simulated model uses
to recognise a call; the loader refuses a file that lost one, so the contract cannot break
silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["LENSES", "PROMPTS_PATH", "Prompts", "load_prompts"]

PROMPTS_PATH = Path(__file__).with_name("prompts.json")
LENSES = ("boundaries", "logic", "state", "general")
SCAN_MARKER = "ROLE: scan"
SKEPTIC_MARKER = "ROLE: skeptic"


@dataclass(frozen=True)
class Prompts:
    scan: str
    skeptic: str
    lenses: dict[str, str]

    def scan_system(self, lens: str) -> str:
        """The scan worker's system prompt for ``lens``."""
        if lens not in self.lenses:
            raise ValueError(f"Unknown lens {lens!r}; the lenses are {', '.join(LENSES)}.")
        return self.scan.replace("{lens}", lens).replace("{focus}", self.lenses[lens])


def load_prompts(path: str | Path | None = None) -> Prompts:
    """Read and validate the prompts (the packaged file unless ``path`` is given)."""
    if path is None:
        return _packaged()
    return _read(Path(path))


@cache
def _packaged() -> Prompts:
    return _read(PROMPTS_PATH)


def _read(path: Path) -> Prompts:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"The prompts file {str(path)!r} cannot be read: {error}") from None
    problems = []
    scan, skeptic, lenses = table.get("scan"), table.get("skeptic"), table.get("lenses")
    if not isinstance(scan, str) or SCAN_MARKER not in scan or "{lens}" not in scan:
        problems.append(f'"scan" must be a text with {SCAN_MARKER!r} and a {{lens}} slot')
    if not isinstance(skeptic, str) or SKEPTIC_MARKER not in skeptic:
        problems.append(f'"skeptic" must be a text with {SKEPTIC_MARKER!r}')
    if not isinstance(lenses, dict) or set(lenses) != set(LENSES):
        problems.append(f'"lenses" must give one text for each of {", ".join(LENSES)}')
    elif not all(isinstance(text, str) and text for text in lenses.values()):
        problems.append('every text of "lenses" must be a non-empty string')
    if problems:
        raise ValueError(f"The prompts file {str(path)!r} is not usable: {'; '.join(problems)}.")
    assert isinstance(scan, str) and isinstance(skeptic, str) and isinstance(lenses, dict)
    return Prompts(scan=scan, skeptic=skeptic, lenses={k: lenses[k] for k in LENSES})
