"""Shared test setup: hypothesis profiles, and the default isolation of the suite.

CI (``CI=true``) runs hypothesis derandomized, so a red build is reproducible, with enough
examples per property to find something. Locally the default profile keeps randomness.
"""

import atexit
import os
import shutil
import signal
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# The gate seals its decisions with a key file (planlang.gate_seal); the tests, and the CLI
# they start, use a throwaway one instead of the user's own ~/.config/planlang/gate.key.
if "PLANLANG_GATE_KEY" not in os.environ:
    _key_folder = tempfile.mkdtemp(prefix="planlang-key-")
    atexit.register(shutil.rmtree, _key_folder, True)
    os.environ["PLANLANG_GATE_KEY"] = os.path.join(_key_folder, "gate.key")

# The suite tests the in-process sandbox unless a test asks for process isolation (the red-team
# suites run under both: tests/planlang/conftest.py); a plan process costs milliseconds.
os.environ.setdefault("PLANLANG_ISOLATION", "inprocess")

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=300,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def ctrl_c():
    """A real Ctrl-C reaches this process, and a process it starts, as KeyboardInterrupt.

    A shell without job control starts a background job with SIGINT ignored, and an ignored
    signal stays ignored across fork and exec (Python then leaves it so): a test that sends
    SIGINT would see nothing happen. Python's own handler for the test's length restores what
    a terminal gives; a process started meanwhile starts with SIGINT at its default."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# -- a real PostgreSQL server (issue 16): started once per session, only if a test asks ----


@pytest.fixture(scope="session")
def pg_cluster():
    from pgserver import Cluster, require_binaries

    cluster = Cluster(require_binaries())
    yield cluster
    cluster.remove()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The address of a fresh database on the session's server."""
    return pg_cluster.new_database()
