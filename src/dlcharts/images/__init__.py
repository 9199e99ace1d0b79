"""Local container images built from Debian packages and PyPI wheels (mmdebstrap, pip, umoci, crane)."""

from dlcharts.images.build import Builder, BuildResult, build_images, verify_layout
from dlcharts.images.definitions import IMAGES, ImageDef

__all__ = ["IMAGES", "BuildResult", "Builder", "ImageDef", "build_images", "verify_layout"]
