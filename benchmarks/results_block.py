"""Writing one benchmark's table into a shared results file, between its own markers.

Several benchmarks write into ``benchmarks/RESULTS.md``; each owns the block between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` and replaces only that, or appends it.
"""

from __future__ import annotations

from pathlib import Path


def write_block(path: Path, name: str, text: str) -> None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{start}\n{text}{end}\n"
    if start in old and end in old:
        old = old[: old.index(start)] + block + old[old.index(end) + len(end) + 1 :]
    else:
        old = old.rstrip() + "\n\n" + block
    path.write_text(old, encoding="utf-8")
