"""The compiled kernels are an optional accelerator: without numba, or with numba
failing (a cache it can neither write nor load), chunks are permuted by numpy with
the same bytes, and a process warns once at most.

Each case runs in a fresh process, as numba reads its settings (``NUMBA_CACHE_DIR``)
at import and the fallback lasts for the rest of the process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import xarray_hurray
from xarray_hurray.layout import HilbertLayout, MortonLayout

pytestmark = pytest.mark.slow  # a process start each, and compiling in some

CHUNKS = [
    (HilbertLayout(2, 9), "float32"),  # 2**18 elements: loads the kernels
    (MortonLayout((4, 4, 4)), "uint8"),  # and a second chunk, once they are loaded
]

SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys, warnings
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    if sys.argv[1] == "hidden":
        sys.modules["numba"] = None  # as if not installed: importing it fails
    from xarray_hurray.layout import KernelFallbackWarning, layout_from_config, tiles

    def digests(arrays):
        return sorted({hashlib.sha256(a.tobytes()).hexdigest() for a in arrays})

    found = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", KernelFallbackWarning)  # each one, not one a place
        for config, dtype in json.loads(sys.argv[2]):
            layout = layout_from_config(config)
            shape = layout._default_shape()
            array = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
            # from threads at once, as a dask worker's: the first use of the kernels too
            with ThreadPoolExecutor(4) as pool:
                buffers = list(pool.map(lambda _: layout.encode(array), range(4)))
                decoded = list(pool.map(lambda buffer: layout.decode(buffer, shape), buffers))
            found.append([digests(buffers), digests(decoded)])
    print(json.dumps({
        "digests": found,
        "warnings": [str(w.message) for w in caught if w.category is KernelFallbackWarning],
        "kernels": tiles.available(),
    }))
    """
)
"""Encodes each of :data:`CHUNKS` four times and decodes the buffers, from four
threads, and reports the distinct digests of the buffers and of the decoded arrays,
the warnings that say the kernels failed, and whether the kernels serve at the end."""


def expected_digests() -> list[list[list[str]]]:
    """The digest of each chunk's buffer, by numpy's own indexing, and of the chunk."""
    digests = []
    for layout, dtype in CHUNKS:
        shape = layout._default_shape()
        array = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
        buffer = array.reshape(-1)[layout.sources(shape)]
        digests.append([[hashlib.sha256(a.tobytes()).hexdigest()] for a in (buffer, array)])
    return digests


def run(env: dict[str, str], where: Path, numba: str = "installed") -> dict:
    """What :data:`SCRIPT` reports in a fresh process with ``env``, started in
    ``where`` (the package imported from ``PYTHONPATH`` or the installed one, not from
    the working directory)."""
    chunks = json.dumps([(layout.to_config(), dtype) for layout, dtype in CHUNKS])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, numba, chunks],
        env=env,
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def environment(**settings: str) -> dict[str, str]:
    """This process's environment with ``settings``, for a numba compiling for this
    processor."""
    env = dict(os.environ)
    env.pop("NUMBA_CPU_NAME", None)  # (CI runs the layout tests for a portable one too)
    env.update(settings)
    return env


def test_without_numba_the_numpy_path_serves_without_a_warning(tmp_path: Path):
    report = run(environment(), tmp_path, numba="hidden")
    assert report == {"digests": expected_digests(), "warnings": [], "kernels": False}


def assert_fell_back_once(report: dict, cause: str) -> None:
    assert report["digests"] == expected_digests()
    assert not report["kernels"]
    [message] = report["warnings"]  # one, however many chunks follow
    assert "permuted by numpy" in message and cause in message


def test_a_cache_that_cannot_be_written_falls_back_to_numpy_with_one_warning(tmp_path: Path):
    pytest.importorskip("numba")
    # No cache directory numba tries can be made: a path below a regular file is
    # refused whoever asks (a read-only mode is not: root writes through it).
    # numba tries NUMBA_CACHE_DIR, then __pycache__ beside the kernels' source (of a
    # copy of the package here, whose __pycache__ is a file), then the user's cache.
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    site = tmp_path / "site"
    shutil.copytree(
        Path(xarray_hurray.__file__).parent,
        site / "xarray_hurray",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (site / "xarray_hurray" / "layout" / "__pycache__").write_text("")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    env = environment(
        NUMBA_CACHE_DIR=str(blocked / "numba"),
        XDG_CACHE_HOME=str(blocked / "cache"),
        HOME=str(blocked),
        PYTHONPATH=path,
    )
    assert_fell_back_once(run(env, tmp_path), "cannot cache")


def test_a_cache_that_cannot_be_loaded_falls_back_to_numpy_with_one_warning(tmp_path: Path):
    pytest.importorskip("numba")
    env = environment(NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    healthy = run(env, tmp_path)  # compiles the loops, and caches them
    assert healthy == {"digests": expected_digests(), "warnings": [], "kernels": True}
    damaged = [path for path in (tmp_path / "numba").rglob("*") if path.is_file()]
    assert damaged
    for path in damaged:
        path.write_bytes(b"\x80\x05 not a pickle")
    assert_fell_back_once(run(env, tmp_path), "UnpicklingError")
