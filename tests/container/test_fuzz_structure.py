"""A fast subset of the structure-aware fuzzer (``tools/fuzz_structure.py`` runs
thousands of inputs and reports figures): parsed fields changed, checksums
recomputed, every way of reading run; no wrong value, no undocumented exception, no
temporary file left by a write.  Seeds of format 1.0 (flat), 1.1 and 1.2 (a tree of
groups with index pages and missing chunks; 1.2 pages list only the stored chunks)."""

from __future__ import annotations

import io
import random

import pytest
import xarray as xr
from fuzz_structure import (
    NAMES,
    NotByTheSpec,
    _json_groups,
    _mutate_page_1_2,
    build,
    build_1_1,
    decode_index,
    index_read,
    mutant,
    mutate_index_1_1,
    overall,
    parse,
    parse_1_1,
    read_all,
    run_input,
    seed_dataset,
    seed_file,
    seed_tree,
    truth_of,
)

from xarray_hurray.errors import HurrayFormatError

VERSIONS = [(1, 0), (1, 1), (1, 2)]

# fuzzing: slow
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=VERSIONS, ids=["1.0", "1.1", "1.2"])
def seed(request, tmp_path_factory) -> tuple[bytes, dict, object]:
    work = tmp_path_factory.mktemp("fuzz")
    good = seed_file(request.param)
    return good, truth_of(good), work


def test_the_seeds_hold_the_seed_data_and_rebuild_to_themselves():
    good = seed_file((1, 0))
    with xr.open_dataset(io.BytesIO(good), engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), xr.decode_cf(seed_dataset()))
    assert build(parse(good)) == good
    for version in ((1, 1), (1, 2)):
        good = seed_file(version)
        with xr.open_datatree(io.BytesIO(good), engine="hurray") as tree:
            expected = seed_tree().map_over_datasets(xr.decode_cf)
            xr.testing.assert_identical(tree.load(), expected)
        assert build_1_1(parse_1_1(good)) == good


def test_the_1_2_mutations_reach_the_page_checks():
    """Each kind of change to a 1.2 page is refused by the check it aims at."""
    good = seed_file((1, 2))
    rng = random.Random(5)
    seen: dict[str, set[str]] = {}
    live = [v for v, own in enumerate(parse_1_1(good).chunks) if own]
    for _ in range(400):
        tree = parse_1_1(good)
        kind = _mutate_page_1_2(tree, rng, rng.choice(live))
        try:
            read_all(build_1_1(tree))
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


@pytest.mark.parametrize("version", [(1, 1), (1, 2)], ids=["1.1", "1.2"])
def test_the_decoder_of_the_test_reads_the_seeds_index_as_the_reader(version):
    good = seed_file(version)
    decoded = decode_index(good)
    assert decoded == index_read(good)
    assert sum(map(len, decoded.values())) == 24  # the tree's stored chunks, h's four too


@pytest.mark.parametrize("version", [(1, 1), (1, 2)], ids=["1.1", "1.2"])
def test_a_root_entry_of_none_on_a_variable_with_pages_is_refused_by_both(version):
    """The zero entries the fuzzer gives variables with pages (their grids grown or
    not) are refused by the reader, naming the variable, as by the spec's decoding."""
    good = seed_file(version)
    rng = random.Random(2)
    seen = set()
    while len(seen) < 2:
        tree = parse_1_1(good)
        kind = mutate_index_1_1(tree, rng)
        if not kind.startswith("root:none"):
            continue
        seen.add(kind)
        blob = build_1_1(tree)
        with pytest.raises(
            HurrayFormatError, match=r"the page table of variable '.*' is at offset 0"
        ):
            read_all(blob)
        if kind == "root:none":
            with pytest.raises(NotByTheSpec, match="has no page table"):
                decode_index(blob)


@pytest.mark.parametrize("rng_seed", range(4))
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
    of periods alone to a variable, through every way of reading (the names are
    parsed alike in 1.1 and 1.2)."""
    good = seed_file((1, 2))
    truth = truth_of(good)
    findings = []
    names = {"group": [*NAMES, "g"], "variable": [n for n in NAMES if "." in n or "/" in n]}
    # the two groups, and the variable of g (the first variable of the groups)
    for what, number in [("group", 0), ("group", 1), ("variable", 0)]:
        for name in names[what]:
            tree = parse_1_1(good)
            nodes = _json_groups(tree.meta) if what == "group" else tree.meta["groups"]
            if what == "variable":
                nodes = nodes[0]["variables"]
            nodes[number]["name"] = name
            outcome = run_input(build_1_1(tree), "names", truth, tmp_path)
            if overall(outcome) not in ("ok", "rejected"):
                findings.append((what, name, outcome))
    assert findings == []
