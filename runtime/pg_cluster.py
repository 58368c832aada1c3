"""A real, throwaway PostgreSQL server for tests and benchmarks: ``initdb`` into a temporary
folder, then ``pg_ctl start`` listening on a Unix socket in that folder only (no TCP port to
collide on), with durability off (``fsync = off``): it holds nothing worth keeping.

Run as root (CI), the server runs as the ``postgres`` user Debian's package creates, since
PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

_DB_IDS = itertools.count(1)


def bin_dir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: $PLANLANG_PG_BIN, Debian's folder, or the PATH."""
    named = os.environ.get("PLANLANG_PG_BIN")
    candidates = [named] if named else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    found = shutil.which("pg_ctl")
    if found:
        candidates.append(str(Path(found).parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    return None


class Cluster:
    """One server in its own folder; ``stop`` and ``start`` it at will (outage tests)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="planlang-pg-"))
        self.data = self.folder / "data"
        self._user: str | None = None
        if os.geteuid() == 0:
            self._user = "postgres"
            entry = pwd.getpwnam(self._user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8")  # fmt: skip
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"listen_addresses = ''\nunix_socket_directories = '{self.folder}'\n"
                       "fsync = off\nmax_connections = 200\nshared_buffers = 32MB\n")  # fmt: skip
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr or done.stdout}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.folder}"

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-w",
                  "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def new_database(self) -> str:
        """A fresh, empty database on this server; its address."""
        import psycopg

        name = f"t{os.getpid()}_{next(_DB_IDS)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)
