"""The xarray adapter: the ``hurray`` backend, ``to_hurray`` and the ``.hurray`` accessor.

- :mod:`.backend`: ``xr.open_dataset(path, engine="hurray")``, lazy outer indexing.
- :mod:`.writer`: :func:`to_hurray`, which plans a new file or an update and runs it
  through the write pipeline (:mod:`xarray_hurray.write`).
- :mod:`.encoding`: CF encoding and storage choices per variable.
- :mod:`.update`: the plan of a write into an existing file (modes, appends, regions).
- :mod:`.zarr_write`: :func:`to_zarr`, Hurray-serialized Hilbert-placed shards in Zarr v3.
- :mod:`.strings`: missing strings, bytes and character arrays, stored with CF attributes.
- :mod:`.overviews`: :func:`multiscale`, pyramids of coarser levels in groups, and
  their ``multiscales`` record; :mod:`.overview_plan` what a pyramid is asked for,
  :mod:`.overview_chunks` the chunks of its levels, :mod:`.overview_build` their
  computation, :mod:`.resampling` its kernels, :mod:`.overview_write` writing and
  appending to a file with overviews, :mod:`.overview_read` the choice of a level
  (without dask).
- :mod:`.accessor`: ``Dataset.hurray``, ``DataArray.hurray`` and ``DataTree.hurray``,
  registered once xarray is loaded by ``import xarray_hurray``, which runs before
  any module of this package (the engine's entry point, which xarray loads, too).
- :mod:`.pyramid`: what a file records of its pyramid, without xarray or dask
  (``hurray info`` reads it).
- :mod:`.dataarray`: a DataArray stored as xarray stores one.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_attributes

if TYPE_CHECKING:
    from .backend import HurrayBackendEntrypoint
    from .hurray_write import to_hurray
    from .overviews import multiscale
    from .zarr_write import to_zarr

__all__ = ["HurrayBackendEntrypoint", "multiscale", "to_hurray", "to_zarr"]

# Importing this package imports nothing: its modules import what each needs (the
# backend's read path neither dask nor zarr, the writers both), on first use.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "HurrayBackendEntrypoint": "xarray_hurray.xarray.backend",
        "multiscale": "xarray_hurray.xarray.overviews",
        "to_hurray": "xarray_hurray.xarray.hurray_write",
        "to_zarr": "xarray_hurray.xarray.zarr_write",
    },
)
