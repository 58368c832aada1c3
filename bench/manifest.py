"""The manifest of an evaluation with a real model: what a third party needs to re-score it.

``python -m bench eval --endpoint URL`` writes every answer to its ledger and, beside it
(``LEDGER.manifest.json``), what the run was: the corpus and key it was scored on (hashes, so a
replay against other files is refused), the designs and their plans' hashes, the seeds, the
models and prices of the roles, the budget and the shard and context sizes. ``--replay LEDGER``
rebuilds the run from it and answers every question from the ledger, sending nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bench.eval import DESIGNS
from runtime import Settings
from runtime.settings import Role

__all__ = ["FORMAT", "ManifestError", "corpus_hash", "manifest_path", "read", "write"]

FORMAT = 1


class ManifestError(ValueError):
    """A manifest that is missing, unreadable, or does not fit the corpus it is replayed on."""


def manifest_path(ledger: str | Path) -> Path:
    return Path(f"{ledger}.manifest.json")


def corpus_hash(corpus: Path) -> str:
    """sha256 over the audited copy: every file's path and bytes, in path order."""
    digest = hashlib.sha256()
    audited = corpus / "audited"
    for path in sorted(p for p in audited.rglob("*") if p.is_file() and "__pycache__" not in
                       p.parts):  # fmt: skip
        digest.update(path.relative_to(audited).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def key_hash(corpus: Path) -> str:
    return hashlib.sha256((corpus / "hidden" / "answer_key.json").read_bytes()).hexdigest()


def _plans() -> dict[str, str]:
    return {p.stem: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(DESIGNS.glob("*.py"))}  # fmt: skip


def write(ledger: str | Path, *, corpus: Path, settings: Settings, designs: list[str],
          seeds: list[int], options: dict[str, Any], endpoint: str, model: str,
          command: str) -> Path:  # fmt: skip
    """Write the manifest beside ``ledger``; returns its path."""
    data = {
        "format": FORMAT,
        "command": command,
        "corpus": str(corpus),
        "corpus_sha256": corpus_hash(corpus),
        "key_sha256": key_hash(corpus),
        "designs": designs,
        "plans_sha256": _plans(),
        "seeds": seeds,
        "options": options,
        "endpoint": endpoint,
        "model": model,
        "roles": {name: {"model": r.model, "price": r.price} for name, r in settings.roles.items()},
    }
    path = manifest_path(ledger)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read(ledger: str | Path, corpus: Path | None = None) -> dict[str, Any]:
    """The manifest of ``ledger``, checked against ``corpus`` (default: the one it names)."""
    path = manifest_path(ledger)
    if not Path(ledger).is_file():
        raise ManifestError(f"The ledger {str(ledger)!r} is not a file.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ManifestError(
            f"The manifest {str(path)!r} cannot be read: {error.strerror}."
        ) from None
    except json.JSONDecodeError as error:
        raise ManifestError(f"The manifest {str(path)!r} is not JSON: {error.msg}.") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestError(f"The manifest {str(path)!r} is not a format {FORMAT} manifest.")
    folder = corpus if corpus is not None else Path(data["corpus"])
    if not (folder / "hidden" / "answer_key.json").is_file():
        raise ManifestError(
            f"The corpus {str(folder)!r} needs audited/ and hidden/answer_key.json."
        )
    for name, found in (("corpus", corpus_hash(folder)), ("key", key_hash(folder))):
        if data[f"{name}_sha256"] != found:
            raise ManifestError(
                f"The {name} in {str(folder)!r} is not the one the ledger was collected on "
                f"(its sha256 differs); replay on that one."
            )
    changed = sorted(k for k, v in _plans().items() if data["plans_sha256"].get(k) != v)
    if changed:
        raise ManifestError(f"The design plans {', '.join(changed)} changed since the ledger was "
                            "collected; their questions would not be in it.")  # fmt: skip
    data["corpus"] = str(folder)
    return data


def settings_of(data: dict[str, Any]) -> Settings:
    """The settings of the run: its roles' models and prices."""
    roles = {name: Role(**spec) for name, spec in data["roles"].items()}
    return Settings().model_copy(update={"roles": roles})
