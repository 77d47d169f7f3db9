"""Which dimensions of a dataset are spatial: the CF axes, standard names and units of
its coordinates, else the last two dimensions of each data variable.  Pyramids coarsen
these dimensions by default."""

from __future__ import annotations

import xarray as xr

SPATIAL_NAMES = frozenset(
    {
        "longitude",
        "latitude",
        "grid_longitude",
        "grid_latitude",
        "projection_x_coordinate",
        "projection_y_coordinate",
        "projection_x_angular_coordinate",
        "projection_y_angular_coordinate",
    }
)
"""CF standard names of horizontal coordinates."""

LON_LAT_UNITS = frozenset(
    f"{degree}{side}"
    for degree in ("degree", "degrees")
    for side in ("_east", "_e", "e", "_north", "_n", "n")
)
"""CF units of longitude and latitude (lowercase)."""

TIME_NAMES = frozenset({"time", "forecast_reference_time", "forecast_period"})
"""CF standard names of time coordinates."""

VERTICAL_NAMES = frozenset(
    {"altitude", "height", "depth", "air_pressure", "model_level_number", "geopotential_height"}
)
"""CF standard names of vertical coordinates (besides the parametric ones, whose
names begin ``atmosphere_`` or ``ocean_``)."""

PRESSURE_UNITS = frozenset({"pa", "hpa", "kpa", "mbar", "millibar", "bar", "dbar", "decibar"})
"""Units of pressure, which CF takes as the mark of a vertical coordinate (lowercase)."""


def _attr_text(var: xr.Variable, key: str) -> str:
    value = var.attrs.get(key, var.encoding.get(key))
    return value.strip() if isinstance(value, str) else ""


def is_spatial(var: xr.Variable) -> bool:
    """Whether the coordinate ``var`` is a horizontal one: CF ``axis`` X or Y, or the
    standard name or units of a longitude, latitude or projection coordinate."""
    return (
        _attr_text(var, "axis").upper() in ("X", "Y")
        or _attr_text(var, "standard_name") in SPATIAL_NAMES
        or _attr_text(var, "units").lower() in LON_LAT_UNITS
    )


def is_time_or_vertical(var: xr.Variable) -> bool:
    """Whether the coordinate ``var`` is a time or a vertical one (CF: ``axis`` T or
    Z, times or units "... since ...", a ``positive`` attribute, a standard name of
    either kind, or units of pressure)."""
    name = _attr_text(var, "standard_name")
    return (
        var.dtype.kind in "mM"
        or _attr_text(var, "axis").upper() in ("T", "Z")
        or " since " in _attr_text(var, "units")
        or "positive" in var.attrs
        or name in TIME_NAMES
        or name in VERTICAL_NAMES
        or name.startswith(("atmosphere_", "ocean_"))
        or _attr_text(var, "units").lower() in PRESSURE_UNITS
    )


def default_dims(ds: xr.Dataset) -> tuple[str, ...]:
    """The dimensions a pyramid coarsens by default: the spatial ones, those of the
    coordinates :func:`is_spatial` finds, else the last two of each data variable,
    never one whose coordinate :func:`is_time_or_vertical` finds; in the order the
    data variables have them."""
    excluded = {
        str(var.dims[0])
        for var in ds.coords.values()
        if var.ndim == 1 and is_time_or_vertical(var.variable)
    }
    spatial = {str(d) for var in ds.coords.values() if is_spatial(var.variable) for d in var.dims}
    dims: list[str] = []
    for var in ds.data_vars.values():
        own = [str(d) for d in var.dims if str(d) not in excluded]
        for dim in [d for d in own if d in spatial] if spatial else own[-2:]:
            if dim not in dims:
                dims.append(dim)
    return tuple(dims)
