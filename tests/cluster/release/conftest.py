"""Fixtures of the repository tests: the pinned helm and a throwaway signing key (their helpers are in
tests/support/release.py)."""

from __future__ import annotations

import shutil

import pytest

from dlcharts.errors import DLChartsError
from dlcharts.helm import Helm, find_helm
from dlcharts.release.repository import ThrowawayKey, throwaway_key


@pytest.fixture(scope="session")
def helm() -> Helm:
    try:
        return find_helm()
    except DLChartsError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def key(tmp_path_factory: pytest.TempPathFactory) -> ThrowawayKey:
    if shutil.which("gpg") is None:
        pytest.fail("gpg is missing: install GnuPG (apt-get update && apt-get install -y gnupg)", pytrace=False)
    return throwaway_key(tmp_path_factory.mktemp("signing-key"))
