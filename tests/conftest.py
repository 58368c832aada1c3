"""Shared test setup: hypothesis profiles, and the default isolation of the suite.

CI (``CI=true``) runs hypothesis derandomized, so a red build is reproducible, with enough
examples per property to find something. Locally the default profile keeps randomness.
"""

import os

# The suite tests the in-process sandbox unless a test asks for process isolation (the red-team
# suites run under both: tests/planlang/conftest.py); a plan process costs a few milliseconds.
os.environ.setdefault("PLANLANG_ISOLATION", "inprocess")

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
