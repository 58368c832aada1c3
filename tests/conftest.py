"""Shared test setup: hypothesis profiles.

CI (``CI=true``) runs hypothesis derandomized, so a red build is reproducible, with enough
examples per property to find something. Locally the default profile keeps randomness.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

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
