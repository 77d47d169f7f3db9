"""The Python and JavaScript readers on the same mutants (``tests/differential.py``):
neither reads what the other refuses, and both read the same values.  The default
JavaScript test run compares a small corpus (js/test/differential.test.js);
``tools/fuzz_differential.py`` runs thousands.  Mutants that put valid chunks in
another place are refused by both, as format 1.3 binds checksums to their place."""

from __future__ import annotations

import pytest
from differential import (
    corpus,
    disagreement,
    js_outcomes,
    node_found,
    python_outcome,
    swapped_mutants,
)

# a Node.js process and hundreds of files: slow
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not node_found(), reason="the JavaScript reader runs in Node.js"),
]


def test_the_readers_agree_on_the_fuzzers_mutants(tmp_path):
    mutants = list(corpus(per_seed=150, rng_seed=7))
    paths = []
    for mutant in mutants:
        paths.append(tmp_path / f"{mutant.name}.hurray")
        paths[-1].write_bytes(mutant.blob)
    python = [python_outcome(mutant.blob) for mutant in mutants]
    found = [
        f"{mutant.name} ({mutant.kind}): {why}"
        for mutant, py, js in zip(mutants, python, js_outcomes(paths), strict=True)
        if (why := disagreement(py, js)) is not None
    ]
    assert found == []
    # the corpus reaches both reads and refusals
    opened = sum(py["open"] == "ok" for py in python)
    assert 0.2 * len(mutants) < opened < len(mutants)


@pytest.mark.parametrize("number", [0, 1], ids=["root-entries", "index-entries"])
def test_chunks_put_in_another_place_are_refused_by_both_readers(tmp_path, number):
    mutant, seed = list(swapped_mutants())[number]
    path = tmp_path / f"{mutant.name}.hurray"
    path.write_bytes(mutant.blob)
    python = python_outcome(mutant.blob)
    (js,) = js_outcomes([path])
    assert disagreement(python, js) is None  # they agree ...
    for outcome in (python, js):
        # ... and either refuse it or read the values it was made from
        values = outcome["variables"]
        assert outcome["open"] != "ok" or all(
            got == want or got == "refused"
            for (_, got), (_, want) in zip(values, seed["variables"], strict=True)
        ), f"{mutant.name}: {values} read, the file was made from {seed['variables']}"
        assert any(got == "refused" for _, got in values), f"{mutant.name}: nothing refused"
