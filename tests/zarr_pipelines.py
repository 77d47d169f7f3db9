"""zarr's codec pipelines, for tests that must hold on each."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest
import zarr
import zarr.core.codec_pipeline

FUSED = "zarr.core.codec_pipeline.FusedCodecPipeline"
PIPELINES = [
    "batched",
    pytest.param(
        "fused",
        marks=pytest.mark.skipif(
            not hasattr(zarr.core.codec_pipeline, "FusedCodecPipeline"),
            reason="zarr < 3.4 has no FusedCodecPipeline",
        ),
    ),
]
"""zarr's default codec pipeline, and its synchronous one where it has it."""


def pipeline(name: str) -> AbstractContextManager[Any]:
    """A context in which zarr opens arrays with the codec pipeline ``name``."""
    return nullcontext() if name == "batched" else zarr.config.set({"codec_pipeline.path": FUSED})
