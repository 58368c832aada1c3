"""The ledger: fingerprints, compressed rows, many threads and several processes."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import LLM, Ledger, Reply, fingerprint
from runtime.ledger import _CHECKPOINT_EVERY, _Pending, compress

MESSAGES = [{"role": "user", "content": "What is 2 + 2?"}]


def test_fingerprint_covers_model_messages_params_and_sample() -> None:
    base = fingerprint("m", MESSAGES, {"temperature": 0}, 0)
    assert base == fingerprint("m", [dict(MESSAGES[0])], {"temperature": 0}, 0)
    assert base != fingerprint("m2", MESSAGES, {"temperature": 0}, 0)
    assert base != fingerprint("m", MESSAGES + MESSAGES, {"temperature": 0}, 0)
    assert base != fingerprint("m", MESSAGES, {"temperature": 1}, 0)
    assert base != fingerprint("m", MESSAGES, {"temperature": 0}, 1)  # samples are independent
    assert len(base) == 64


def test_round_trip_with_the_first_answer_winning(ledger_location: str) -> None:
    reply = Reply(text="4" * 500, prompt_tokens=3, completion_tokens=1, seconds=0.5,
                  credits=0.02, model="m", role="scan", sample=1)  # fmt: skip
    key = fingerprint("m", MESSAGES, {}, 1)
    with Ledger(ledger_location) as ledger:
        assert ledger.get(key) is None
        assert ledger.put(key, reply) is True
        assert ledger.put(key, reply.replace(text="5")) is False  # the first answer wins
    with Ledger(ledger_location) as again:
        assert again.get(key) == reply
        assert key in again and len(again) == 1 and again.keys() == [key]
        (row,) = again.rows()
        assert (row["credits"], row["role"], row["sample"]) == (0.02, "scan", 1)
        assert Reply.from_json(row["reply"]) == reply


def test_rows_on_disk_are_compressed_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "answers.db"
    reply = Reply(text="4" * 500, prompt_tokens=3, completion_tokens=1, seconds=0.5,
                  credits=0.02, model="m", role="scan", sample=1)  # fmt: skip
    with Ledger(path) as ledger:
        ledger.put(fingerprint("m", MESSAGES, {}, 1), reply)
    raw = sqlite3.connect(path)
    try:
        (mode,) = raw.execute("PRAGMA journal_mode").fetchone()
        (blob, credits, role) = raw.execute("SELECT reply, credits, role FROM answers").fetchone()
    finally:
        raw.close()
    assert mode == "wal"
    assert len(blob) < 200 and b"4444" not in blob  # stored compressed
    assert Reply.from_json(zlib.decompress(blob).decode()) == reply
    assert (credits, role) == (0.02, "scan")


def test_many_threads_share_one_ledger(ledger_location: str) -> None:
    ledger = Ledger(ledger_location)
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for i in range(100):
                key = fingerprint("m", [{"role": "user", "content": f"{thread}-{i}"}], {}, 0)
                ledger.put(key, Reply(text=f"{thread}-{i}"))
                assert ledger.get(key) == Reply(text=f"{thread}-{i}")
                shared = fingerprint("m", [{"role": "user", "content": f"shared-{i}"}], {}, 0)
                ledger.put(shared, Reply(text=f"shared by {thread}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ledger) == 8 * 100 + 100
    ledger.close()


WRITER = textwrap.dedent(
    """
    import sys
    from runtime import Ledger, Reply, fingerprint
    path, name = sys.argv[1], sys.argv[2]
    ledger = Ledger(path)
    for i in range(150):
        key = fingerprint("m", [{"role": "user", "content": f"{name}-{i}"}], {}, 0)
        ledger.put(key, Reply(text=f"{name}-{i}"))
        shared = fingerprint("m", [{"role": "user", "content": f"shared-{i}"}], {}, 0)
        ledger.put(shared, Reply(text=name))
        assert ledger.get(shared) is not None
    ledger.close()
    """
)


def test_several_processes_share_one_ledger(tmp_path: Path, ledger_location: str) -> None:
    path = ledger_location
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    children = [
        subprocess.Popen([sys.executable, str(script), str(path), f"p{n}"]) for n in range(3)
    ]
    assert [child.wait(timeout=60) for child in children] == [0, 0, 0]
    with Ledger(path) as ledger:
        assert len(ledger) == 3 * 150 + 150
        texts = {row["reply"] for row in ledger.rows()}
        assert len(texts) >= 3 * 150


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    model=st.text(),
    messages=st.lists(st.dictionaries(st.text(), JSON_VALUES, max_size=3), max_size=3),
    params=st.dictionaries(st.text(), JSON_VALUES, max_size=3),
    sample=st.integers(min_value=0, max_value=10**6) | st.booleans(),
)
def test_fingerprint_is_sha256_of_the_documented_canonical_json(
    model: str, messages: list[dict[str, Any]], params: dict[str, Any], sample: int
) -> None:
    # Ledgers written by earlier versions must still match: the key is exactly this text.
    asked = {"model": model, "messages": messages, "params": params, "sample": sample}
    text = json.dumps(asked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert fingerprint(model, messages, params, sample) == hashlib.sha256(text.encode()).hexdigest()
    reply = Reply(text=model, data=messages, credits=0.5, model=model, sample=sample)
    assert Reply.from_json(reply.to_json()) == reply


def test_a_batch_marks_exactly_the_rows_it_stored(tmp_path: Path) -> None:
    # One batch holding a new key, a key stored before and the same new key twice: the
    # multi-row insert is undone and the rows go in one by one, first answer winning.
    with Ledger(tmp_path / "batch.db") as ledger:
        ledger.put("old", Reply(text="before"))
        entries = [
            _Pending(("old", "m", None, 0, 0, 0, 0.0, 0.0, 1.0, _blob("again"))),
            _Pending(("new", "m", None, 0, 0, 0, 0.0, 0.0, 1.0, _blob("first"))),
            _Pending(("new", "m", None, 0, 0, 0, 0.0, 0.0, 1.0, _blob("second"))),
            _Pending(("other", "m", None, 0, 0, 0, 0.0, 0.0, 1.0, _blob("other"))),
        ]
        ledger._commit(entries)
        assert [(e.done, e.stored, e.error) for e in entries] == [
            (True, False, None), (True, True, None), (True, False, None), (True, True, None),
        ]  # fmt: skip
        texts = [ledger.get(key) for key in ("old", "new", "other")]
        assert texts == [Reply(text="before"), Reply(text="first"), Reply(text="other")]
        fresh = [
            _Pending((f"k{i}", "m", None, 0, 0, 0, 0.0, 0.0, 1.0, _blob(f"{i}"))) for i in range(3)
        ]
        ledger._commit(fresh)
        assert [e.stored for e in fresh] == [True, True, True] and len(ledger) == 6


def _blob(text: str) -> bytes:
    return zlib.compress(Reply(text=text).to_json().encode())


def test_threads_racing_on_one_key_store_it_once(ledger_location: str) -> None:
    ledger = Ledger(ledger_location)
    start = threading.Barrier(12)
    stored: list[tuple[int, bool]] = []

    def work(n: int) -> None:
        start.wait()
        stored.append((n, ledger.put("same", Reply(text=f"from {n}"))))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [n for n, won in stored if won]
    assert len(stored) == 12 and len(winners) == 1
    assert ledger.get("same") == Reply(text=f"from {winners[0]}")
    ledger.close()


@pytest.mark.parametrize("size", [0, 1, 300, 4_000, 16_384, 16_385, 40_000])
def test_rows_are_ordinary_zlib_streams_at_every_size(size: int) -> None:
    noise = random.Random(size).randbytes(size // 2)
    data = (noise + b"repeated text " * size)[:size]
    assert zlib.decompress(compress(data)) == data


def test_a_large_reply_round_trips_compressed(tmp_path: Path) -> None:
    reply = Reply(text="all work and no play " * 2000, model="m")
    with Ledger(tmp_path / "large.db") as ledger:
        assert ledger.put("big", reply) is True
        assert ledger.get("big") == reply
        (blob,) = ledger._conn().execute("SELECT reply FROM answers").fetchone()
    assert len(blob) < len(reply.text) // 20


def test_the_wal_is_checkpointed_as_rows_arrive(tmp_path: Path) -> None:
    # SQLite's own checkpoints are off (they would stall every queued writer behind an fsync);
    # the ledger runs them itself. Without them each commit adds at least two 4 KB pages to
    # the WAL, and the database file would hold nothing but its first page until closed.
    path = tmp_path / "wal.db"
    commits = 4 * _CHECKPOINT_EVERY
    with Ledger(path) as ledger:
        for i in range(commits):
            ledger.put(f"k{i}", Reply(text=f"answer {i}"))
        wal = Path(f"{path}-wal").stat().st_size
        assert wal < commits * 4096
        assert path.stat().st_size > 4096
        assert len(ledger) == commits
    with Ledger(path) as again:
        assert again.get(f"k{commits - 1}") == Reply(text=f"answer {commits - 1}")


def test_many_writers_each_get_their_own_outcome(ledger_location: str) -> None:
    # Group commit hands the lead from writer to writer; every writer must come back, with
    # True exactly for the rows it stored, however the batches fell.
    ledger = Ledger(ledger_location)
    outcomes: dict[tuple[int, int], bool] = {}
    start = threading.Barrier(16)

    def work(n: int) -> None:
        start.wait()
        for i in range(60):
            outcomes[(n, i)] = ledger.put(f"k{(n * 60 + i) % 500}", Reply(text=f"{n}/{i}"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 16 * 60
    assert sum(outcomes.values()) == 500 == len(ledger)
    for key in (f"k{k}" for k in range(500)):
        stored = ledger.get(key)
        assert stored is not None
        n, i = map(int, stored.text.split("/"))
        assert outcomes[(n, i)] is True and (n * 60 + i) % 500 == int(key[1:])
    ledger.close()


def test_a_row_another_process_wrote_is_a_hit_for_an_open_ledger(
    tmp_path: Path, ledger_location: str
) -> None:
    # This process has the ledger open (and has written to it) before the other process
    # writes; the front door must then find that answer and not pay for it again.
    path = ledger_location
    messages = [{"role": "user", "content": "asked elsewhere"}]
    key = fingerprint("m", messages, {}, 0)
    ledger = Ledger(path)
    ledger.put("ours", Reply(text="written here first"))
    assert ledger.get(key) is None
    script = tmp_path / "other.py"
    script.write_text(
        "import sys\nfrom runtime import Ledger, Reply\n"
        "with Ledger(sys.argv[1]) as other:\n"
        "    assert other.get('ours') == Reply(text='written here first')\n"
        "    other.put(sys.argv[2], Reply(text='paid by the other process', model='m'))\n"
    )
    subprocess.run([sys.executable, str(script), path, key], check=True, timeout=60)

    def must_not_pay(model: str, messages: list[dict[str, Any]], **params: Any) -> Reply:
        raise AssertionError("the answer is in the ledger; the client must not be called")

    llm = LLM(ledger, client=must_not_pay)
    reply = llm.chat(messages, model="m")
    assert reply.cached and reply.text == "paid by the other process"
    assert llm.stats["hits"] == 1 and llm.budget.spent == 0
    ledger.close()


def _open_tool_marks(path: Path) -> None:
    from runtime.tools import _Marks

    _Marks(str(path))


def _forget_in_flight(path: Path) -> None:
    from runtime.tools import forget_in_flight

    forget_in_flight(path)


@pytest.mark.parametrize("beside", [None, _open_tool_marks, _forget_in_flight],
                         ids=["ledgers", "with-tool-marks", "with-forget-in-flight"])  # fmt: skip
def test_runners_creating_one_ledger_at_once_all_open_it(tmp_path: Path, beside: Any) -> None:
    """Two `planlang run`s started at once on a new project both create its ledger: SQLite
    refused one of them at once ("database is locked", whatever the busy timeout: both read the
    new file, then both asked to write it), and that run ended with exit code 2. A run's tool
    marks (a table in the ledger's file) are set up beside another run's ledger the same way."""
    failures: list[str] = []
    opens = [lambda path: Ledger(path).close(), beside or (lambda path: Ledger(path).close())]
    for round_ in range(60):
        path = tmp_path / f"answers{round_}.db"
        path.touch()  # an empty file is an empty SQLite database: still to be set up
        barrier = threading.Barrier(4)

        def open_it(how: Any, path: Path = path, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                how(path)
            except sqlite3.Error as error:
                failures.append(str(error))

        threads = [threading.Thread(target=open_it, args=(opens[n % 2],)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with Ledger(path) as ledger:  # what they made is a ledger in WAL mode
            assert ledger._conn().execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert failures == []


def test_a_file_that_is_not_a_ledger_leaves_nothing_open(tmp_path: Path) -> None:
    import gc
    import warnings

    bad = tmp_path / "notes.db"
    bad.write_text("not a database, " * 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(sqlite3.DatabaseError):
            Ledger(bad)
        gc.collect()
    assert not any(Path("/proc/self/fd").joinpath(fd).resolve() == Path(f"{bad}-claims")
                   for fd in os.listdir("/proc/self/fd"))  # fmt: skip


def test_a_setup_held_elsewhere_is_waited_for_no_longer_than_the_busy_timeout(
    tmp_path: Path,
) -> None:
    """A runner stopped (Ctrl-Z, a debugger) while it sets the ledger up held every other
    opener of that file for as long as it was stopped: the setup's lock waited for good."""
    from runtime.claims import FileClaims

    path = tmp_path / "answers.db"
    holder = FileClaims(f"{path}-claims")
    try:
        with holder.setting_up(1.0):
            outcome: list[BaseException | None] = []

            def open_it() -> None:
                try:
                    Ledger(path, busy_timeout=0.2).close()
                    outcome.append(None)
                except BaseException as error:  # noqa: BLE001 - what it was is asserted
                    outcome.append(error)

            opener = threading.Thread(target=open_it, daemon=True)
            opener.start()
            opener.join(timeout=120)  # a hang guard, not a timing assertion
            assert outcome, "the ledger waited past its busy timeout for the setup lock"
            assert isinstance(outcome[0], sqlite3.OperationalError)
            assert str(outcome[0]) == "database is locked"
        Ledger(path, busy_timeout=0.2).close()  # let go: it opens
    finally:
        holder.close()
