"""Fuzzing every decoder, the chain loader and the job loader.

Structured mutations (:mod:`tests.fuzz.mutate`) of corpus and generated
messages feed each target (:mod:`tests.fuzz.targets`); the invariant
(:mod:`tests.fuzz.harness`) is that an input either passes or raises the
target's own error (``DecodeError`` for codecs, ``ConfigError`` for loaders),
within one CPU second, in bounded memory.

- ``tests/fuzz/test_fuzz.py``: a short hypothesis-driven run per target in
  the normal test suite, and the regression inputs of everything found;
- ``./dev fuzz`` (``python -m tests.fuzz``): the long run, counts per target.
"""
