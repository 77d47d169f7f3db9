"""The xarray adapter: the ``hurray`` backend, ``to_hurray`` and the ``.hurray`` accessor.

- :mod:`.backend`: ``xr.open_dataset(path, engine="hurray")``, lazy outer indexing.
- :mod:`.writer`: :func:`to_hurray`, which plans a new file or an update and runs it
  through the write pipeline (:mod:`xarray_hurray.write`).
- :mod:`.encoding`: CF encoding and storage choices per variable.
- :mod:`.update`: the plan of a write into an existing file (modes, appends, regions).
- :mod:`.zarr_write`: :func:`to_zarr`, Hurray-serialized Hilbert-placed shards in Zarr v3.
- :mod:`.strings`: missing strings, bytes and character arrays, stored with CF attributes.
- :mod:`.overviews`: :func:`multiscale`, pyramids of coarser levels in groups, and
  the choice of a level; :mod:`.resampling` its kernels; :mod:`.overview_write`
  writing and appending to a file with overviews.
- :mod:`.accessor`: ``Dataset.hurray``, ``DataArray.hurray`` and ``DataTree.hurray``.
- :mod:`.dataarray`: a DataArray stored as xarray stores one.
"""

from . import accessor as _accessor  # noqa: F401  (registers the .hurray accessors)
from .backend import HurrayBackendEntrypoint
from .overviews import multiscale
from .to_hurray import to_hurray
from .zarr_write import to_zarr

__all__ = ["HurrayBackendEntrypoint", "multiscale", "to_hurray", "to_zarr"]
