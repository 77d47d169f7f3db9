"""The xarray adapter: the ``hurray`` engine, ``to_hurray``, ``to_zarr``, overviews and
the ``.hurray`` accessors.

Reading:

- :mod:`.backend`: ``xr.open_dataset(path, engine="hurray")``, ``open_datatree`` and
  ``open_groups``, lazy outer indexing; :mod:`.entrypoint`, the module xarray's entry
  point names, which registers the accessors on the way.
- :mod:`.cf_checks`: checks of what a file hands to xarray's CF decoders.
- :mod:`.pyramid`: what a file records of its pyramid, without xarray or dask
  (``hurray info`` reads it); :mod:`.overview_read`: the choice of a level
  (``tree.hurray.level``), without dask.

Writing a Hurray file:

- :mod:`.hurray_write`: :func:`to_hurray`, its arguments made into one request
  checked against the input (:mod:`.request`, which alone reads the mode) and run as
  one job (:mod:`.job`) through the write pipeline (:mod:`xarray_hurray.write`).
- :mod:`.planner`: every write resolved by one walk over its input against the
  file's version, a new file (the walk against no base) or an update (modes,
  appends, regions); :mod:`.region`, where a region goes in the file; :mod:`.parts`,
  the chunks each variable written changes; :mod:`.tree`, the input as a tree of
  groups.
- :mod:`.appends`: what a write into variables a file or store holds checks against
  them (``to_hurray`` and ``to_zarr``).
- :mod:`.encoding`: CF encoding and storage choices per variable, the default chunks
  among them (map tiles one step deep for a variable with two spatial dimensions).
- :mod:`.strings`: missing strings, bytes and character arrays, stored with CF
  attributes; :mod:`.dataarray`: a DataArray stored as xarray stores one.
- :mod:`.overviews`: :func:`multiscale`, pyramids of coarser levels in groups, and
  their ``multiscales`` record; :mod:`.overview_plan` what a pyramid is asked for,
  :mod:`.overview_chunks` the chunks of its levels, :mod:`.overview_build` their
  computation, :mod:`.resampling` its kernels, :mod:`.dims` the spatial dimensions
  they coarsen (which the default chunks follow too); :mod:`.overview_write` writing
  and appending to a file with overviews; :mod:`.geozarr`, where a pyramid lies on the
  Earth (the ``proj`` and ``spatial`` conventions of GeoZarr, from the dataset's CRS
  and grid).

Elsewhere:

- :mod:`.zarr_write`: :func:`to_zarr`, Zarr v3 stores of shards whose inner chunks are
  placed along the Hilbert curve (standard codecs by default).
- :mod:`.accessor`: ``Dataset.hurray``, ``DataArray.hurray`` and ``DataTree.hurray``,
  registered by importing it: ``import xarray_hurray`` does when xarray is loaded, and
  :mod:`.entrypoint` does at xarray's first open of a file (docs/design.md, "Imports").
- :mod:`.compat`: the private parts of xarray relied on, in one place.
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
