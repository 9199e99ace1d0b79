"""dl-charts: render, validate and install Helm charts from Python."""

__version__ = "0.1.0"
