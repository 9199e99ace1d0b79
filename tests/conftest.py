"""Settings for every test session: the hypothesis profile CI uses. Shared helpers are in tests/support."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")
