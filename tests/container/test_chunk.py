"""One chunk to bytes: what the element encoding refuses, named."""

from __future__ import annotations

import numpy as np
import pytest

from xarray_hurray.container import ChunkCodec, VariableMeta
from xarray_hurray.layout import RowMajorLayout


def test_a_string_chunk_holding_no_str_is_refused_naming_the_variable():
    meta = VariableMeta(
        name="s", dims=("x",), shape=(2,), dtype="string", chunks=(2,), layout=RowMajorLayout()
    )
    with pytest.raises(TypeError, match=r"variable 's': .* not str: None of type NoneType"):
        ChunkCodec(meta).encode(np.array(["a", None], dtype=object))
