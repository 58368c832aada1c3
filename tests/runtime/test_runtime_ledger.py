"""The ledger: fingerprints, compressed rows, many threads and several processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
import zlib
from pathlib import Path

from runtime import Ledger, Reply, fingerprint

MESSAGES = [{"role": "user", "content": "What is 2 + 2?"}]


def test_fingerprint_covers_model_messages_params_and_sample() -> None:
    base = fingerprint("m", MESSAGES, {"temperature": 0}, 0)
    assert base == fingerprint("m", [dict(MESSAGES[0])], {"temperature": 0}, 0)
    assert base != fingerprint("m2", MESSAGES, {"temperature": 0}, 0)
    assert base != fingerprint("m", MESSAGES + MESSAGES, {"temperature": 0}, 0)
    assert base != fingerprint("m", MESSAGES, {"temperature": 1}, 0)
    assert base != fingerprint("m", MESSAGES, {"temperature": 0}, 1)  # samples are independent
    assert len(base) == 64


def test_round_trip_on_disk_with_compressed_rows(tmp_path: Path) -> None:
    path = tmp_path / "answers.db"
    reply = Reply(text="4" * 500, prompt_tokens=3, completion_tokens=1, seconds=0.5,
                  credits=0.02, model="m", role="scan", sample=1)  # fmt: skip
    key = fingerprint("m", MESSAGES, {}, 1)
    with Ledger(path) as ledger:
        assert ledger.get(key) is None
        assert ledger.put(key, reply) is True
        assert ledger.put(key, reply.replace(text="5")) is False  # the first answer wins
    with Ledger(path) as again:
        assert again.get(key) == reply
        assert key in again and len(again) == 1
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


def test_many_threads_share_one_ledger(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "threads.db")
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


def test_several_processes_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "procs.db"
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
