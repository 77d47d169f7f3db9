"""A fast subset of the structure-aware fuzzer (``tools/fuzz_structure.py`` runs
thousands of inputs and reports figures): parsed fields changed, checksums
recomputed, every way of reading run; no wrong value, no undocumented exception, no
temporary file left by a write.  Seeds of format 1.3: a tree of groups with index
pages and missing chunks, and a file with overviews."""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import xarray as xr
from fuzz_structure import (
    NAMES,
    PYRAMID_ATTRS,
    NotByTheSpec,
    _json_groups,
    _mutate_page,
    build,
    decode_index,
    index_read,
    mutant,
    mutate_index,
    mutate_places,
    mutate_pyramid_attrs,
    overall,
    parse,
    pyramid_step,
    read_all,
    run_input,
    seed_file,
    seed_pyramid,
    seed_tree,
    truth_of,
)

from xarray_hurray.errors import HurrayError, HurrayFormatError, HurrayValueError

# fuzzing: slow
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> tuple[bytes, dict, object]:
    work = tmp_path_factory.mktemp("fuzz")
    good = seed_file("tree")
    return good, truth_of(good), work


def test_the_seed_holds_the_seed_data_and_rebuilds_to_itself():
    good = seed_file("tree")
    with xr.open_datatree(io.BytesIO(good), engine="hurray") as tree:
        expected = seed_tree().map_over_datasets(xr.decode_cf)
        xr.testing.assert_identical(tree.load(), expected)
    assert build(parse(good)) == good


def test_the_page_mutations_reach_the_page_checks():
    """Each kind of change to a page is refused by the check it aims at."""
    good = seed_file("tree")
    rng = random.Random(5)
    seen: dict[str, set[str]] = {}
    live = [v for v, own in enumerate(parse(good).chunks) if own]
    for _ in range(400):
        tree = parse(good)
        kind = _mutate_page(tree, rng, rng.choice(live))
        try:
            read_all(build(tree))
            message = "read"
        except HurrayFormatError as err:
            message = str(err)
        seen.setdefault(kind, set()).add(message)
    expected = {
        "page:bitmap-stored": "its bitmap lists",
        "page:bitmap-missing": "its bitmap lists",
        "page:bitmap-padding": "is set, past the page's",
        "page:entry-size-0": "not a stored chunk",
        "page:absent-length": "is not 0 for an absent page",
    }
    for kind, phrase in expected.items():
        assert seen[kind] and all(phrase in m for m in seen[kind]), (kind, seen.get(kind))
    assert "read" not in seen["page:length"]


def test_the_decoder_of_the_test_reads_the_seeds_index_as_the_reader():
    good = seed_file("tree")
    decoded = decode_index(good)
    assert decoded == index_read(good)
    assert sum(map(len, decoded.values())) == 24  # the tree's stored chunks, h's four too


def mutants(
    mutate: Callable[[Any, random.Random], str], seed: int, prefix: str
) -> Iterator[tuple[str, Any]]:
    """Parsed trees of the tree seed, each changed by ``mutate`` (drawing from a
    generator of ``seed``) into a kind whose name starts with ``prefix``, until two
    such kinds were met."""
    good = seed_file("tree")
    rng = random.Random(seed)
    kinds: set[str] = set()
    while len(kinds) < 2:
        tree = parse(good)
        kind = mutate(tree, rng)
        if kind.startswith(prefix):
            kinds.add(kind)
            yield kind, tree


def test_a_root_entry_of_none_on_a_variable_with_pages_is_refused_by_both():
    """The zero entries the fuzzer gives variables with pages (their grids grown or
    not) are refused by the reader, naming the variable, as by the spec's decoding."""
    for kind, tree in mutants(mutate_index, 2, "root:none"):
        blob = build(tree)
        with pytest.raises(
            HurrayFormatError, match=r"the page table of variable '.*' is at offset 0"
        ):
            read_all(blob)
        if kind == "root:none":
            with pytest.raises(NotByTheSpec, match="has no page table"):
                decode_index(blob)


def test_chunks_moved_to_another_place_are_refused():
    """Resealed files whose index entries, or whose variables' root entries, are
    exchanged: each chunk keeps the checksum of the place it came from, and reading
    it in its new place fails that check."""
    seen = set()
    for kind, tree in mutants(mutate_places, 4, "places:"):
        seen.add(kind)
        with pytest.raises(HurrayFormatError, match=r"checksum mismatch in chunk .* another"):
            read_all(build(tree))
    assert seen == {"places:chunks", "places:variables"}


@pytest.mark.parametrize("rng_seed", range(8))
def test_mutated_fields_give_only_documented_outcomes(seed, rng_seed):
    good, truth, work = seed
    rng = random.Random(rng_seed)
    findings = []
    for _ in range(40):
        kind, blob = mutant(good, rng)
        outcome = run_input(blob, kind, truth, work)
        if overall(outcome) not in ("ok", "rejected"):
            findings.append((kind, outcome))
    assert findings == []


def test_every_hostile_name_of_a_group_or_variable_gives_a_documented_outcome(tmp_path):
    """Each name of :data:`NAMES` (and a sibling's) given to each group, and the names
    of periods alone to a variable, through every way of reading."""
    good = seed_file("tree")
    truth = truth_of(good)
    findings = []
    names = {"group": [*NAMES, "g"], "variable": [n for n in NAMES if "." in n or "/" in n]}
    # the two groups, and the variable of g (the first variable of the groups)
    for what, number in [("group", 0), ("group", 1), ("variable", 0)]:
        for name in names[what]:
            tree = parse(good)
            nodes = _json_groups(tree.meta) if what == "group" else tree.meta["groups"]
            if what == "variable":
                nodes = nodes[0]["variables"]
            nodes[number]["name"] = name
            outcome = run_input(build(tree), "names", truth, tmp_path)
            if overall(outcome) not in ("ok", "rejected"):
                findings.append((what, name, outcome))
    assert findings == []


# ---------------------------------------------------------------- a file with overviews


def test_the_pyramid_seed_holds_its_levels_and_rebuilds_to_itself():
    import xarray_hurray as xh

    good = seed_file("pyramid")
    expected = xh.multiscale(seed_pyramid(), [2, 4])
    with xr.open_datatree(io.BytesIO(good), engine="hurray") as tree:
        for name in ("0", "1", "2"):
            xr.testing.assert_allclose(
                tree[name].to_dataset().load(), expected[name].to_dataset(), rtol=1e-6
            )
    assert build(parse(good)) == good


def test_the_pyramid_mutations_reach_the_checks_of_records_and_layouts(tmp_path):
    """Changed records and multiscales text are refused by the checks they aim at, by
    the append and by the accessor alike, and never change the file."""
    good = seed_file("pyramid")
    rng = random.Random(3)
    seen: dict[str, set[str]] = {}
    for _ in range(120):
        tree = parse(good)
        kind = mutate_pyramid_attrs(tree, rng)
        outcome = run_pyramid_file(build(tree), tmp_path)
        seen.setdefault(kind, set()).update(outcome)
    assert set(seen) == {"pyramid:text", *(f"pyramid:{k}" for k in PYRAMID_ATTRS)}
    messages = set().union(*seen.values())
    assert any("not a record of overviews" in m for m in messages)
    assert any("'multiscales' attribute is not a multiscales object" in m for m in messages)
    assert any("disagrees with its levels" in m for m in messages)
    assert "changed" not in messages


def run_pyramid_file(blob: bytes, work) -> set[str]:
    """The messages of the refusals of an append into ``blob`` and of a level pick;
    ``"changed"`` where a refused append changed the file."""
    import xarray_hurray as xh

    path = work / "p.hurray"
    path.write_bytes(blob)
    messages = set()
    try:
        xh.to_hurray(pyramid_step(), path, append_dim="time")
    except HurrayError as err:
        messages.add(str(err))
        if path.read_bytes() != blob:
            messages.add("changed")
    try:
        with xr.open_datatree(path, engine="hurray") as tree:
            tree.hurray.level(size={"x": 2})
    except HurrayError as err:
        messages.add(str(err))
    return messages


@pytest.mark.parametrize("rng_seed", range(3))
def test_mutated_pyramids_give_only_documented_outcomes(tmp_path, rng_seed):
    good = seed_file("pyramid")
    truth = truth_of(good)
    rng = random.Random(100 + rng_seed)
    findings = []
    for _ in range(40):
        kind, blob = mutant(good, rng)
        outcome = run_input(blob, kind, truth, tmp_path, pyramid=True)
        if overall(outcome) not in ("ok", "rejected"):
            findings.append((kind, outcome))
    assert findings == []


def _pyramid_with(edit) -> bytes:
    tree = parse(seed_file("pyramid"))
    edit(tree)
    return build(tree)


def _level_0_variable(tree, name: str) -> dict:
    (level,) = [g for g in tree.meta["groups"] if g["name"] == "0"]
    return next(v for v in level["variables"] if v["name"] == name)


def test_an_append_into_the_last_generation_is_refused_and_the_file_kept(tmp_path):
    """A finding of the pyramid seed's append: struct.error at the commit."""
    import xarray_hurray as xh

    blob = _pyramid_with(lambda tree: tree.slot_edits.append((0, "set", 2**64 - 1)))
    path = tmp_path / "p.hurray"
    path.write_bytes(blob)
    with pytest.raises(HurrayFormatError, match="generation 18446744073709551615"):
        xh.to_hurray(pyramid_step(), path, append_dim="time")
    assert path.read_bytes() == blob


def test_an_append_into_a_variable_of_codec_settings_no_encoder_takes_is_refused(tmp_path):
    """A finding of the pyramid seed's append: TypeError from the zstd encoder."""
    import xarray_hurray as xh

    def edit(tree) -> None:
        _level_0_variable(tree, "t")["codecs"] = [{"id": "zstd", "level": {"a": 1}}]

    blob = _pyramid_with(edit)
    path = tmp_path / "p.hurray"
    path.write_bytes(blob)
    read_all(blob)  # a setting only encoding uses: the file reads
    with pytest.raises(HurrayValueError, match="invalid zstd codec configuration"):
        xh.to_hurray(pyramid_step(), path, append_dim="time")
    assert path.read_bytes() == blob


def test_references_of_a_fill_value_of_another_type_are_refused(tmp_path):
    """A finding of the pyramid seed's references: TypeError from xarray's fill coder."""
    from xarray_hurray.container import ContainerReader
    from xarray_hurray.io import FileObjectSource
    from xarray_hurray.zarr.references import kerchunk_references

    def edit(tree) -> None:
        _level_0_variable(tree, "time")["attrs"]["_FillValue"] = "[[["

    reader = ContainerReader(FileObjectSource(io.BytesIO(_pyramid_with(edit))))
    with pytest.raises(HurrayFormatError, match="variable 'time': its _FillValue"):
        kerchunk_references(reader, "file:///p.hurray")
