"""Shared test settings: project paths and the hypothesis profile CI uses."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
CHARTS = ROOT / "charts"

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")
