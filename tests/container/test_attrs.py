"""numpy attributes in the metadata: decoded as the spec's rules for their items say
(checked against a reading of those rules item by item), and parsed in time linear
in their items, near the standard library's own JSON parse."""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xarray_hurray.container import DatasetMeta, VariableMeta
from xarray_hurray.container.attrs import decode_attr, encode_attr
from xarray_hurray.container.metadata import parse_metadata
from xarray_hurray.errors import HurrayValueError
from xarray_hurray.layout import RowMajorLayout

DTYPES = ["bool", "int8", "uint8", "int32", "uint64", "int64", "float16", "float32"]
DTYPES += ["float64", "complex64", "complex128", "<U3"]

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

JSON_ITEMS = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 255, 256, -129, 2**63 - 1, 2**63, 2**64, 10**309]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "", "ab", "abcd", "x"]),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=2, max_size=2),
    st.none(),
)


def _float_item(item):
    """The float a JSON item stands for in a float element, or None if it cannot."""
    if isinstance(item, str):
        return NON_FINITE.get(item)
    if isinstance(item, bool) or not isinstance(item, int | float):
        return None
    if isinstance(item, int) and abs(item) > sys.float_info.max:
        return None
    return float(item)


def by_the_rules(items: list, dtype: np.dtype) -> np.ndarray | None:
    """The elements ``items`` stand for in an attribute of ``dtype``, item by item as
    docs/spec/container.md says; None if one cannot be such an element."""
    out = []
    for item in items:
        if dtype.kind == "b":
            ok = isinstance(item, bool)
            value = item
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            ok = isinstance(item, int) and not isinstance(item, bool)
            ok = ok and info.min <= item <= info.max
            value = item
        elif dtype.kind == "f":
            value = _float_item(item)
            ok = value is not None
        elif dtype.kind == "c":
            ok = isinstance(item, list) and len(item) == 2
            parts = [_float_item(p) for p in item] if ok else []
            ok = ok and None not in parts
            value = complex(*parts) if ok else None
        else:
            ok = isinstance(item, str) and len(item) <= dtype.itemsize // 4
            value = item
        if not ok:
            return None
        out.append(value)
    with np.errstate(over="ignore"):
        return np.array(out, dtype=dtype)


@settings(max_examples=300, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    items=st.one_of(st.lists(JSON_ITEMS, max_size=8), st.lists(st.integers(-300, 300), max_size=8)),
)
def test_items_decode_as_the_rules_say(dtype, items):
    dtype = np.dtype(dtype)
    expected = by_the_rules(items, dtype)
    element = encode_attr(np.zeros(1, dtype))["dtype"]  # the format's name of the type
    stored = {"dtype": element, "shape": [len(items)], "data": items}
    if expected is None:
        with pytest.raises(HurrayValueError, match="cannot be an element of type"):
            decode_attr(stored)
        return
    with np.errstate(over="ignore"):
        got = decode_attr(stored)
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()


@settings(max_examples=100, deadline=None)
@given(dtype=st.sampled_from(DTYPES), n=st.integers(0, 50), seed=st.integers(0, 2**32 - 1))
def test_numpy_attributes_round_trip_through_the_metadata(dtype, n, seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).tobytes()
    if np.dtype(dtype).kind == "U":
        values = np.array(["".join(rng.choice(list("ab\u00e9"), 3)) for _ in range(n)], dtype)
    elif np.dtype(dtype).kind == "b":
        values = rng.integers(0, 2, n).astype(bool)
    else:
        values = np.frombuffer(raw, dtype=dtype)  # any bits: NaNs, infinities, -0.0
    data = DatasetMeta(attrs={"a": values}, variables=()).to_bytes()
    back = parse_metadata(data).attrs["a"]
    assert back.dtype == values.dtype
    if values.dtype.kind in "fc":  # NaN is stored as "NaN": its payload is not kept
        assert np.array_equal(back, values, equal_nan=True)
        assert (np.signbit(back.real) == np.signbit(values.real))[~np.isnan(values.real)].all()
    else:
        assert back.tobytes() == values.tobytes()


def _parse_seconds(data: bytes) -> tuple[float, float]:
    """Best of three of ``parse_metadata`` and of ``json.loads`` of ``data``."""
    ours = bare = math.inf
    for _ in range(3):
        start = time.perf_counter()
        parse_metadata(data)
        ours = min(ours, time.perf_counter() - start)
        start = time.perf_counter()
        json.loads(data)
        bare = min(bare, time.perf_counter() - start)
    return ours, bare


@pytest.mark.slow
@pytest.mark.parametrize("where", ["root", "variable"])
@pytest.mark.parametrize("integers", [False, True], ids=["floats", "integers as floats"])
def test_a_large_numpy_attribute_parses_near_the_speed_of_json(integers, where):
    """3 million floats took 17.8 s; item by item they cost 4 to 18 times the bare
    parse (benchmarks/typed_attrs.py).  Now at most 2.5 times (floats) or 4 times
    (integer items), and the same per item at 30,000 and 300,000."""
    seconds = {}
    for n in (30_000, 300_000):
        values = np.random.default_rng(n).random(n).round(3)
        if integers:
            values = np.floor(values * 100)
        if where == "root":
            data = DatasetMeta(attrs={"a": values}, variables=()).to_bytes()
        else:
            var = VariableMeta(
                "v", ("x",), (3,), "float64", (3,), RowMajorLayout(), attrs={"a": values}
            )
            data = DatasetMeta(attrs={}, variables=(var,)).to_bytes()
        if integers:  # 7 for 7.0, as another writer may store it: 2 bytes an item
            data = data.replace(b".0,", b",").replace(b".0]", b"]")
        ours, bare = _parse_seconds(data)
        # integers: numpy's conversion of Python ints takes longer than their parse
        assert ours < (4 if integers else 2.5) * bare + 0.01, (n, ours, bare)
        seconds[n] = ours
    # linear: 10 times the items, where a quadratic parse takes 100 times; the bound
    # leaves room for a busy machine's noise between two best-of-3 timings
    assert seconds[300_000] < 40 * seconds[30_000]
