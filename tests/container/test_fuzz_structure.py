"""A fast subset of the structure-aware fuzzer (``tools/fuzz_structure.py`` runs
thousands of inputs and reports figures): parsed fields changed, checksums
recomputed, every way of reading run; no wrong value, no undocumented exception, no
temporary file left by a write."""

from __future__ import annotations

import io
import random

import pytest
import xarray as xr
from fuzz_structure import (
    build,
    mutant,
    overall,
    parse,
    run_input,
    seed_dataset,
    seed_file,
    truth_of,
    work_directory,
)


@pytest.fixture(scope="module")
def seed() -> tuple[bytes, dict, object]:
    work = work_directory()
    good = seed_file()
    return good, truth_of(good), work


def test_the_seed_holds_the_seed_dataset_and_rebuilds_to_itself(seed):
    good, _, _ = seed
    with xr.open_dataset(io.BytesIO(good), engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), xr.decode_cf(seed_dataset()))
    assert build(parse(good)) == good


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
