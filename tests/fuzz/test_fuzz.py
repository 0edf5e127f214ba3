"""The short fuzz run of the normal test suite: every decoder, the chain loader, the job loader.

Hypothesis drives the structured mutators (``st.randoms()``: a failure shrinks
to the fewest, smallest mutation choices), a fixed number of examples per
target, derandomized so the suite is repeatable; ``./dev fuzz`` is the long,
seeded run. The invariant is the harness's: only the target's own error
(``DecodeError`` / ``ConfigError``), under one CPU second per input.
"""

from __future__ import annotations

import logging
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import Guard
from tests.fuzz.targets import Target, all_targets

#: Examples per target: a few seconds each on an idle core (the loaders parse YAML in pure
#: Python and validate with jsonschema: far fewer inputs per second).
EXAMPLES = 300
LOADER_EXAMPLES = 20


@cache
def target(name: str) -> Target | None:
    return all_targets()[name]()


@pytest.mark.parametrize("name", list(all_targets()))
def test_fuzz_short(name: str) -> None:
    t = target(name)
    if t is None:
        pytest.skip(f"{name}: the native core is not built")
    if not t.seeds:
        pytest.skip(f"no seed inputs for {name}")
    logging.disable(logging.CRITICAL)  # warnings about garbage input are expected
    guard = Guard()
    try:

        @settings(
            max_examples=LOADER_EXAMPLES if name.endswith("-loader") else EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.integers(0, len(t.seeds) - 1), st.integers(1, 3), st.randoms(use_true_random=False))
        def mutated_input_is_handled(seed: int, rounds: int, rng: object) -> None:
            data = t.seeds[seed]
            for _ in range(rounds):
                data = t.mutator(data, rng)
            finding = guard.check(name, t.run, t.expected, data, t.limit_s)
            assert finding is None, f"{finding.describe()}\ninput: {finding.data[:2000]!r}"

        mutated_input_is_handled()
    finally:
        guard.close()
        logging.disable(logging.NOTSET)


def test_seeds_cover_every_decoder() -> None:
    """Every decoder has generated seeds at least (the corpus adds real ones when present)."""
    from cdc_smt.transforms.formats import registry

    empty = [name for name in registry() if not target(name).seeds]  # type: ignore[union-attr]
    assert empty == []
