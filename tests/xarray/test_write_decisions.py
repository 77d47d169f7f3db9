"""What a write's mode means, decided in one place (``WriteRequest.start`` for the
file, ``WriteRequest.group_into`` for the group), against the table of ``to_zarr``'s
modes; and a write resolved once and planned once, a pending one too."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import DatasetMeta, VariableMeta
from xarray_hurray.errors import TargetExistsError
from xarray_hurray.layout import RowMajorLayout
from xarray_hurray.xarray import job
from xarray_hurray.xarray.request import Start, StorageSettings, WriteRequest

DS = xr.Dataset({"v": (("t",), np.arange(4.0))}, coords={"t": np.arange(4)})
CHUNKS = {"v": {"chunks": (2,)}, "t": {"chunks": (2,)}}

# mode, group, append_dim, what starts the write where there is no file, and where
# there is one: a Start, or the error the mode gives
FILE_TABLE = [
    ("w", None, None, Start.REPLACE, Start.REPLACE),
    ("w-", None, None, Start.CREATE, FileExistsError),
    ("a", None, None, Start.CREATE, Start.BASE),
    ("a-", None, None, Start.CREATE, Start.BASE),
    ("r+", None, None, Start.CREATE, Start.BASE),  # no file to write into: group_into
    ("a", None, "t", Start.CREATE, Start.BASE),
    ("w", "g", None, Start.CREATE, Start.BASE),
    ("w-", "g", None, Start.CREATE, Start.BASE),
    ("a", "g", None, Start.CREATE, Start.BASE),
    ("r+", "g", None, Start.CREATE, Start.BASE),
]


def _request(mode: str, group: str | None, append_dim: str | None = None) -> WriteRequest:
    return WriteRequest.parse(
        DS,
        mode=mode,
        group=group,
        append_dim=append_dim,
        region=None,
        encoding=None,
        settings=StorageSettings({}),
        levels=(None, None, None),
        window=4,
        progress=None,
    )


@pytest.mark.parametrize(("mode", "group", "append_dim", "absent", "present"), FILE_TABLE)
def test_what_a_write_starts_from_follows_the_table_of_the_modes(
    mode, group, append_dim, absent, present
):
    request = _request(mode, group, append_dim)
    for exists, expected in ((False, absent), (True, present)):
        if isinstance(expected, Start):
            assert request.start(exists, "f.hurray") is expected
        else:
            with pytest.raises(expected, match=r"f\.hurray|mode"):
                request.start(exists, "f.hurray")


@pytest.mark.parametrize("since", ["pending", "written"])
def test_a_file_made_meanwhile_is_named_as_such_by_w_minus(since):
    with pytest.raises(TargetExistsError, match=f"another writer .* while this one was {since}"):
        _request("w-", None).start(True, "f.hurray", since)
    assert _request("w-", "g").start(True, "f.hurray", since) is Start.BASE


def _root(*groups: str) -> DatasetMeta:
    var = VariableMeta("v", ("t",), (4,), "float64", (4,), RowMajorLayout(), [], "hilbert")
    return DatasetMeta(
        attrs={},
        variables=(var,),
        groups=tuple(DatasetMeta(attrs={}, variables=(), name=g) for g in groups),
    )


# mode, group, append_dim, the group the input goes into where the file holds the
# group, where it does not, and where there is no file: "held" (written into), None
# (replaced or added), or the error
GROUP_TABLE = [
    ("w", None, None, None, None, None),
    ("a", None, None, "held", "held", None),  # the root is always held
    ("r+", None, None, "held", "held", FileNotFoundError),
    ("a", None, "t", "held", "held", FileNotFoundError),
    ("w", "g", None, None, None, None),
    ("w-", "g", None, FileExistsError, None, None),
    ("a", "g", None, "held", None, None),
    ("a-", "g", "t", "held", ValueError, FileNotFoundError),
    ("r+", "g", None, "held", ValueError, FileNotFoundError),
]


@pytest.mark.parametrize(("mode", "group", "append_dim", "held", "lacking", "new"), GROUP_TABLE)
def test_the_group_a_write_goes_into_follows_the_table_of_the_modes(
    mode, group, append_dim, held, lacking, new
):
    request = _request(mode, group, append_dim)
    for root, expected in ((_root("g"), held), (_root(), lacking), (None, new)):
        if isinstance(expected, type):
            with pytest.raises(expected, match=r"group|no file"):
                request.group_into(root, "f.hurray")
        elif expected == "held":
            assert root is not None
            assert request.group_into(root, "f.hurray") is root.group(group or "")
        else:
            assert request.group_into(root, "f.hurray") is None


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """How often a write is resolved and its parts made, counted around the job's own
    functions (which still run)."""
    counts = {"resolved": 0, "planned": 0}

    def counting(name: str, function):  # type: ignore[no-untyped-def]
        def run(*args, **kwargs):  # type: ignore[no-untyped-def]
            counts[name] += 1
            return function(*args, **kwargs)

        return run

    monkeypatch.setattr(job, "resolve_write", counting("resolved", job.resolve_write))
    monkeypatch.setattr(job, "write_parts", counting("planned", job.write_parts))
    return counts


def test_a_write_is_resolved_and_planned_once(tmp_path, counted):
    xh.to_hurray(DS.chunk(2), tmp_path / "f.hurray", encoding=CHUNKS)
    assert counted == {"resolved": 1, "planned": 1}
    xh.to_hurray(DS.assign_coords(t=np.arange(4, 8)), tmp_path / "f.hurray", append_dim="t")
    assert counted == {"resolved": 2, "planned": 2}


def test_a_pending_write_is_checked_when_asked_for_and_planned_once_when_it_runs(tmp_path, counted):
    """Checked at the call, against the file as it is then (nothing of the data is
    read, no encoder made); resolved again under the lock when it runs, against the
    version found then, and planned only there."""
    path = tmp_path / "f.hurray"
    xh.to_hurray(DS, path, encoding=CHUNKS)
    more = DS.assign_coords(t=np.arange(4, 8)).chunk(2)
    pending = xh.to_hurray(more, path, append_dim="t", compute=False)
    assert counted == {"resolved": 2, "planned": 1}  # the first write, and the check
    dask.compute(pending)
    assert counted == {"resolved": 3, "planned": 2}
    with xr.open_dataset(path, engine="hurray") as back:
        np.testing.assert_array_equal(back["v"].values, np.tile(np.arange(4.0), 2))
