"""Release engineering for a folder of charts: version discipline, chart metadata checks, and a signed
Helm repository (packages + ``index.yaml``) built from the source tree.

- :mod:`dlcharts.release.semver`: Semantic Versioning 2.0 parsing and precedence.
- :mod:`dlcharts.release.changes`: which charts changed against a base git ref, and whether each one's
  ``version`` went up (ct's version-increment check, with ``file://`` dependents included).
- :mod:`dlcharts.release.metadata`: Chart.yaml against our yamale schema, yamllint, ``appVersion`` equal to
  the main image's tag, artifacthub annotations, a CHANGELOG entry per version.
- :mod:`dlcharts.release.repository`: package (dependencies vendored), sign, index, verify; a throwaway
  GPG key for tests and CI.
- :mod:`dlcharts.release.oci`: push those packages (with their provenance) to an OCI registry, refusing a
  published version with other content.
"""

from __future__ import annotations

from dlcharts.release.changes import VersionProblem, check_version_bumps
from dlcharts.release.metadata import MetadataProblem, check_metadata
from dlcharts.release.repository import BuiltRepository, Signer, build_repository, throwaway_key, verify_package
from dlcharts.utils.git import resolve_base

__all__ = [
    "BuiltRepository",
    "MetadataProblem",
    "Signer",
    "VersionProblem",
    "build_repository",
    "check_metadata",
    "check_version_bumps",
    "resolve_base",
    "throwaway_key",
    "verify_package",
]
