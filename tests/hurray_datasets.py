"""Datasets covering what xarray users write to netCDF and Zarr, for Hurray tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

NUMERIC_DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def numeric(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random values of ``dtype`` spanning its range."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    values = rng.standard_normal(shape) * 1e3
    if dt.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dt)


def everything() -> xr.Dataset:
    """One dataset with every supported kind of variable, coordinate and attribute."""
    rng = np.random.default_rng(1)
    time = pd.date_range("2001-02-03", periods=6, freq="6h")
    words = np.array(["", "a", "héllo", "wörld 🌍", "x" * 40], dtype=object)
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), rng.standard_normal((6, 20, 33)).astype("f4")),
            "count": (("y", "x"), rng.integers(0, 100, (20, 33)).astype("u2")),
            "mask": (("y", "x"), rng.random((20, 33)) < 0.3),
            "elapsed": (("time",), pd.to_timedelta(np.arange(6), "min").to_numpy()),
            "label": (("y",), np.array([f"r{i}" for i in range(20)], dtype="U3")),
            "raw": (("x",), np.array([b"b%d" % i for i in range(33)], dtype="S3")),
            "names": (("k",), words),
            "scalar": ((), np.float64(2.5)),
            "empty": (("e", "y"), np.zeros((0, 20), dtype="i4")),
        },
        coords={
            "time": time,
            "y": np.linspace(-1, 1, 20),
            "x": np.arange(33, dtype="i2"),
            "lat": (("y", "x"), rng.standard_normal((20, 33))),
            "station": ((), "mawson"),
        },
        attrs={
            "title": "everything",
            "version": np.int32(3),
            "scale": np.float32(0.5),
            "levels": [1, 2, 3],
            "weights": np.array([0.25, 0.75]),
            "flag": True,
            "nothing_here": "",
        },
    )
    ds["temp"].attrs = {"units": "K", "valid_range": np.array([-5.0, 5.0], dtype="f4")}
    ds["temp"][0, 0, 0] = np.nan
    return ds
