"""One PostgreSQL server shared by many runners: the pool, the versioned schema, leases.

Why here and not in each store: the ledger, the shared budget and the gate keep their tables
in one schema with one version number, migrated once on first use (under an advisory lock, so
runners starting together do not race). Rows a runner holds for a while (a claim on a question
being paid for, a budget reservation) carry a lease that a heartbeat renews; a runner that dies
stops renewing, and others take its rows over when the lease runs out.

psycopg 3 and psycopg_pool are the ``planlang[postgres]`` extra; importing this module without
them says how to install them.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .stores import StoreUnavailable, redact

try:
    import psycopg
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # pragma: no cover - depends on the install
    raise ImportError(
        "A postgresql:// store needs psycopg 3 and psycopg_pool: pip install 'planlang[postgres]'"
    ) from missing

SCHEMA_VERSION = 1
_MIGRATION_LOCK = 7_041_999_616  # any constant: the advisory lock id of schema migrations

# Migration N takes the schema from version N-1 to N. Never edit one that has shipped.
_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE planlang_answers (
        key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        role TEXT,
        sample BIGINT NOT NULL,
        prompt_tokens BIGINT NOT NULL,
        completion_tokens BIGINT NOT NULL,
        seconds DOUBLE PRECISION NOT NULL,
        credits DOUBLE PRECISION NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        reply BYTEA NOT NULL
    );
    CREATE INDEX planlang_answers_created ON planlang_answers (created);
    CREATE TABLE planlang_claims (
        key TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE planlang_budgets (
        name TEXT PRIMARY KEY,
        cap BIGINT,
        spent BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE planlang_reservations (
        id BIGSERIAL PRIMARY KEY,
        budget TEXT NOT NULL REFERENCES planlang_budgets (name),
        holder TEXT NOT NULL,
        units BIGINT NOT NULL,
        expires TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX planlang_reservations_budget ON planlang_reservations (budget, expires);
    CREATE TABLE planlang_plans (
        id BIGSERIAL PRIMARY KEY,
        sha256 TEXT NOT NULL,
        filename TEXT NOT NULL,
        source TEXT NOT NULL,
        policy_sha256 TEXT NOT NULL,
        price_json TEXT NOT NULL,
        price_sha256 TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('approved', 'held')),
        reasons_json TEXT NOT NULL,
        submitted DOUBLE PRECISION NOT NULL,
        decided DOUBLE PRECISION,
        decided_by TEXT,
        seal TEXT
    );
    CREATE INDEX planlang_plans_sha ON planlang_plans (sha256, policy_sha256, status);
    -- One round trip each for the two hot paths. In a volatile function every statement
    -- takes a fresh snapshot, so what follows a lock sees what its holder committed.
    CREATE FUNCTION planlang_reserve(b TEXT, h TEXT, u BIGINT, lease DOUBLE PRECISION)
    RETURNS BIGINT LANGUAGE plpgsql AS $$
    DECLARE c BIGINT; s BIGINT; r BIGINT; made BIGINT;
    BEGIN
        SELECT cap, spent INTO c, s FROM planlang_budgets WHERE name = b FOR UPDATE;
        IF NOT FOUND THEN RAISE EXCEPTION 'there is no budget named %', b; END IF;
        IF c IS NOT NULL THEN
            SELECT coalesce(sum(units), 0) INTO r FROM planlang_reservations
                WHERE budget = b AND expires > now();
            IF s + r + u > c THEN RETURN NULL; END IF;
        END IF;
        INSERT INTO planlang_reservations (budget, holder, units, expires)
            VALUES (b, h, u, now() + lease * interval '1 second') RETURNING id INTO made;
        RETURN made;
    END $$;
    -- (taken, reply): the claim on k is h's now (and no answer was there), or the answer.
    CREATE FUNCTION planlang_claim(k TEXT, h TEXT, lease DOUBLE PRECISION,
                                   OUT taken BOOLEAN, OUT reply BYTEA)
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO planlang_claims VALUES (k, h, now() + lease * interval '1 second')
            ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires
            WHERE planlang_claims.expires < now();
        taken := FOUND;
        SELECT a.reply INTO reply FROM planlang_answers a WHERE a.key = k;
        IF taken AND reply IS NOT NULL THEN
            DELETE FROM planlang_claims WHERE key = k AND holder = h;
            taken := FALSE;
        END IF;
    END $$;
    """,
}


class Server:
    """A connection pool to one server, with the schema brought up to date on first use."""

    def __init__(self, location: str, *, max_size: int = 8, timeout: float = 10.0) -> None:
        self.location = location
        self.name = redact(location)
        self._pool = ConnectionPool(location, min_size=1, max_size=max_size, timeout=timeout,
                                    open=False, kwargs={"autocommit": True},
                                    name="planlang")  # fmt: skip
        try:
            self._pool.open(wait=True, timeout=timeout)
            self._migrate()
        except Exception as error:
            self._pool.close()
            raise self.unavailable(error) from None

    def __repr__(self) -> str:
        return f"Server({self.name!r})"

    def unavailable(self, error: BaseException) -> StoreUnavailable:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return StoreUnavailable(f"The PostgreSQL store {self.name} failed: {reason}")

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (autocommit); a server error becomes ``StoreUnavailable``."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            self._pool.check()  # drop the dead connections now, not on the next borrower
            raise self.unavailable(error) from None
        except (psycopg.Error, PoolTimeout) as error:  # whatever the server said, name it
            raise self.unavailable(error) from None

    def _migrate(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS planlang_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT max(version) FROM planlang_schema").fetchone()
            version = row[0] if row and row[0] is not None else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"its schema is version {version}, newer than this planlang "
                    f"({SCHEMA_VERSION}); upgrade planlang"
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                conn.execute(_MIGRATIONS[step])
                conn.execute("INSERT INTO planlang_schema VALUES (%s)", (step,))

    def close(self) -> None:
        self._pool.close()


class Heartbeat:
    """Renews this holder's leased rows every third of the lease, until closed.

    ``holder`` is unique per store object, so a process's rows are found by it and nobody
    else's are touched. ``renew`` runs the store's own UPDATE; a failure (server away) is
    ignored here: the calls of the runner meet it themselves and end the run.
    """

    def __init__(self, lease: float, renew: Callable[[str, float], None]) -> None:
        if lease <= 0:
            raise ValueError(f"A lease must be positive; got {lease}.")
        self.lease = lease
        self.holder = uuid.uuid4().hex
        self._renew = renew
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="planlang-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self._renew(self.holder, self.lease)
            except Exception:  # noqa: BLE001,S110 - see the class docstring
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
