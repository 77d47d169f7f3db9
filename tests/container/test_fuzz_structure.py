"""A fast subset of the structure-aware fuzzer (``tools/fuzz_structure.py`` runs
thousands of inputs and reports figures): parsed fields changed, checksums
recomputed, every way of reading run; no wrong value, no undocumented exception, no
temporary file left by a write.  Seeds of format 1.0 (flat) and 1.1 (a tree of
groups with index pages and missing chunks)."""

from __future__ import annotations

import io
import random

import pytest
import xarray as xr
from fuzz_structure import (
    build,
    build_1_1,
    mutant,
    overall,
    parse,
    parse_1_1,
    run_input,
    seed_dataset,
    seed_file,
    seed_tree,
    truth_of,
)

VERSIONS = [(1, 0), (1, 1)]

# fuzzing: slow
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=VERSIONS, ids=["1.0", "1.1"])
def seed(request, tmp_path_factory) -> tuple[bytes, dict, object]:
    work = tmp_path_factory.mktemp("fuzz")
    good = seed_file(request.param)
    return good, truth_of(good), work


def test_the_seeds_hold_the_seed_data_and_rebuild_to_themselves():
    good = seed_file((1, 0))
    with xr.open_dataset(io.BytesIO(good), engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), xr.decode_cf(seed_dataset()))
    assert build(parse(good)) == good
    good = seed_file((1, 1))
    with xr.open_datatree(io.BytesIO(good), engine="hurray") as tree:
        expected = seed_tree().map_over_datasets(xr.decode_cf)
        xr.testing.assert_identical(tree.load(), expected)
    assert build_1_1(parse_1_1(good)) == good


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
