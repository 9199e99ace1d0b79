"""One error hierarchy for the harness. Every error carries what a person needs to act on it."""

from __future__ import annotations


class DLChartsError(Exception):
    """Base class of every error the harness raises on purpose."""


class ToolchainError(DLChartsError):
    """A pinned binary is missing, of the wrong version, or failed verification."""


class RenderError(DLChartsError):
    """`helm template` failed. Carries the chart, the inputs and helm's stderr."""

    def __init__(self, chart: str, inputs: str, stderr: str) -> None:
        self.chart = chart
        self.inputs = inputs
        self.stderr = stderr.strip()
        super().__init__(f"helm could not render {chart} ({inputs}):\n{self.stderr}")


class ManifestError(DLChartsError):
    """Rendered output is not a stream of Kubernetes objects."""


class SchemaError(DLChartsError):
    """No schema is known for an object's apiVersion/kind or Kubernetes version."""


class ClusterError(DLChartsError):
    """The cluster could not be started, reached, or did not reach the state waited for."""


class ImageError(DLChartsError):
    """An image could not be built or pushed (names the image, the step and its log)."""
