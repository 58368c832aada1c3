"""What a run leaves in the state folder, and how a later command reads it back.

Each run gets a folder ``<state>/runs/<id>/`` that no other run can share: the id is the start
time, the plan's sha256 prefix and a random suffix, and the folder is made with
``exist_ok=False``, so two runs started in the same second by two processes get two folders.
The folder holds:

- ``meta.json``: written when the run starts (status ``running``, the process id) and again
  when it ends (``completed``, ``failed``, ``cancelled``, ``interrupted``,
  ``stopped-at-budget``), with the accounting and the error;
- ``events.jsonl``: every event, one JSON object a line, as it happens;
- ``threads.json``: every worker's conversation, status, cost and error;
- ``result.json``: the plan's result (see ``planlang.result_json`` for shared parts).

A run whose ``meta.json`` still says ``running`` while its process is gone (SIGKILL, power
loss) is listed as ``interrupted``: it has no end record, and a rerun resumes from the ledger.
One whose ``meta.json`` cannot be read (not JSON, not an object) is listed as ``unreadable``,
with why. What a run without its end record has done so far is read from its events
(``planlang.run_so_far``): the run writes no record in between.
"""

from __future__ import annotations

import collections
import json
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from planlang import result_json

__all__ = ["failure_groups", "list_runs", "meta_problem", "new_run_folder", "read_meta",
           "retry_failed", "run_folders", "write_end", "write_json", "write_start",
           "write_unstarted"]  # fmt: skip

END_STATUSES = ("completed", "failed", "cancelled", "interrupted", "stopped-at-budget")


def new_run_folder(runs_dir: Path, sha256: str) -> Path:
    """A fresh folder for one run, never shared with another run of any process."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    while True:
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{sha256[:8]}-{secrets.token_hex(3)}"
        folder = runs_dir / run_id
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder


def write_json(path: Path, data: Any, *, text: str | None = None) -> None:
    """Write atomically: a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(text if text is not None else json.dumps(data, indent=2, default=str),
                   encoding="utf-8", errors="backslashreplace")  # fmt: skip
    # (a plan's lone surrogate, which UTF-8 cannot hold, is written \ud800: JSON's escape)
    tmp.replace(path)


def write_start(folder: Path, *, filename: str, sha256: str, mode: str, cap: float | None) -> None:
    meta = {
        "id": folder.name, "filename": filename, "sha256": sha256, "mode": mode,
        "status": "running", "pid": os.getpid(), "started": time.time(), "finished": None,
        "cap": cap, "accounting": {"total": {"calls": 0, "credits": 0.0}}, "error": None,
    }  # fmt: skip
    write_json(folder / "meta.json", meta)


def write_unstarted(folder: Path, why: str) -> None:
    """The run's record, where its start record was written and then the run could not start
    (a full disk, a plan file gone): failed, with why, not "running" for as long as the process
    that tried lives. If even that cannot be written, the folder goes: no record at all."""
    meta = read_meta(folder) or {"id": folder.name}
    meta.update(status="failed", finished=time.time(), error=f"The run could not start: {why}")
    try:
        write_json(folder / "meta.json", meta)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


def write_end(folder: Path, *, status: str, run: Any, result: Any, cap: float | None) -> None:
    """The end record: meta (status, accounting, error), the workers and the result, if the
    plan returned one (a plan that failed or was stopped has none: ``result`` says so, where
    a ``null`` here was read as an answer)."""
    meta = read_meta(folder) or {"id": folder.name}
    spent, _reserved, _cap = run.llm.budget.snapshot()
    meta.update(
        status=status, finished=time.time(), accounting=run.accounting.to_dict(),
        error=None if run.error is None else f"{type(run.error).__name__}: {run.error}",
        spent=spent, cap=cap, counts=run.counts(),
    )  # fmt: skip
    write_json(folder / "threads.json", run.threads_json())
    if run.error is None:
        write_json(folder / "result.json", None, text=result_json.dumps(result))
    write_json(folder / "meta.json", meta)


def read_meta(folder: Path) -> dict[str, Any] | None:
    """The run's ``meta.json``; None if there is none or it cannot be read (``meta_problem``)."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if _not_a_record(meta) is not None:
        return None
    if meta.get("status") == "running" and not _alive(meta.get("pid")):
        meta["status"] = "interrupted"  # no end record, and its process is gone
    return meta  # as written: what a run without its end did so far is ``run_so_far``'s


def meta_problem(folder: Path) -> str | None:
    """Why the ``meta.json`` of ``folder`` cannot be read, in one line; None if it can (or if
    there is none: a folder without one is no run's)."""
    path = folder / "meta.json"
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        return f"meta.json: cannot read: {error.strerror or error}"
    except UnicodeDecodeError as error:
        return f"meta.json: not UTF-8 text (byte {error.start})"
    except ValueError as error:
        return f"meta.json: not JSON ({error})"
    except RecursionError:
        return "meta.json: not JSON (nested too deeply)"
    return _not_a_record(meta)


def _not_a_record(meta: Any) -> str | None:
    """Why ``meta``, read from a ``meta.json``, is no run's record (an object naming its
    ``id`` and ``status``, as ``write_start`` writes it); None if it is one."""
    if not isinstance(meta, dict):
        return f"meta.json: a JSON {type(meta).__name__}, not an object"
    missing = [f"'{key}'" for key in ("id", "status") if not isinstance(meta.get(key), str)]
    if missing:
        return f"meta.json: without {' and '.join(missing)} (a run's record names both)"
    return None


def list_runs(runs_dir: Path) -> list[dict[str, Any]]:
    """Every run, oldest first: its record, or for a run whose ``meta.json`` cannot be read
    ``{"id", "status": "unreadable", "error"}`` (listed, not dropped; placed by its folder's
    time)."""
    return [meta for _, meta in run_folders(runs_dir)]


def run_folders(runs_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every run's folder with its record, oldest first, as ``list_runs`` lists them."""
    if not runs_dir.is_dir():
        return []
    found: list[tuple[float, str, Path, dict[str, Any]]] = []
    for folder in runs_dir.iterdir():
        if not folder.is_dir():
            continue
        meta = read_meta(folder)
        if meta is None:
            why = meta_problem(folder)
            if why is None:  # no meta.json: no run's record (or one a moment from written)
                continue
            meta = {"id": folder.name, "status": "unreadable", "error": why}
            when = folder.stat().st_mtime
        else:
            when = meta.get("started") or meta.get("finished") or 0
        when = when if isinstance(when, int | float) else 0
        found.append((when, str(meta.get("id")), folder, meta))
    return [(folder, meta) for *_, folder, meta in sorted(found, key=lambda item: item[:2])]


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class FreshSamples:
    """A ``Run.resample``: the questions to ask again, each with the index to ask under."""

    def __init__(self, fresh: dict[tuple[Any, ...], int], since: str | None = None) -> None:
        self.fresh = fresh
        self.retried = len(fresh)
        self.since = since  # the run whose failed workers these are; None: no run before

    def __call__(self, label: str | None, prompt: str, role: str | None, sample: int) -> int:
        return self.fresh.get((label, prompt, role, sample), sample)


def retry_failed(runs_dir: Path, sha256: str) -> FreshSamples:
    """A ``Run.resample`` asking the failed workers of the plan's last run under a fresh index.

    A worker is the same question when its label, prompt, role and the sample the plan asked
    for are the same; it gets the index it last used plus one, so its stored bad answer stays
    in the ledger (replayable) and is not the answer again. Every other worker keeps its index.
    """
    last = [m for m in list_runs(runs_dir) if m.get("sha256") == sha256
            and (runs_dir / m["id"] / "threads.json").exists()]  # fmt: skip
    fresh: dict[tuple[Any, ...], int] = {}
    if not last:
        return FreshSamples(fresh)
    since = last[-1]["id"]
    try:
        threads = json.loads((runs_dir / since / "threads.json").read_text(encoding="utf-8"))
        for t in threads:
            if t["status"] == "failed":
                key = (t["label"], t["prompt"], t["role"], t.get("asked_sample", 0))
                fresh[key] = t.get("sample", 0) + 1
    except (OSError, ValueError, RecursionError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"run {since!r}: threads.json is unreadable, so its failed workers are "
                         f"not known: {type(error).__name__}: {error}") from None  # fmt: skip
    return FreshSamples(fresh, since)


def failure_groups(threads: list[dict[str, Any]]) -> list[tuple[str, int, list[int]]]:
    """Failed workers grouped by reason: (reason, how many, the first few worker ids)."""
    groups: dict[str, list[int]] = collections.defaultdict(list)
    for thread in threads:
        if thread["status"] in ("failed", "refused"):
            groups[thread.get("error") or "the worker failed"].append(thread["id"])
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [(reason, len(ids), ids[:5]) for reason, ids in ranked]


def save_finished(folder: Path, run: Any, *, filename: str, mode: str, result: Any) -> None:
    """Both records of a run that is over, for code that ran it itself (tests, examples): as
    ``planlang run`` writes them at its start and its end."""
    folder.mkdir(parents=True, exist_ok=True)
    cap = run.llm.budget.snapshot()[2]
    write_start(folder, filename=filename, sha256="", mode=mode, cap=cap)
    write_end(folder, status=run.status, run=run, result=result, cap=cap)
