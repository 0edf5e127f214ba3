"""Packaging glue that pyproject.toml cannot express declaratively.

The repository keeps its top-level folders (``transforms/``, ``connector/``,
``schemas/``); Python imports them as ``cdc_smt.transforms``,
``cdc_smt.connector`` and ``cdc_smt.schemas`` so that cdc-smt never claims a
top-level name another distribution (PyPI's ``transforms``, ``schemas``) owns.
Subpackages are found here, so a new one needs no edit.
"""

from setuptools import find_packages, setup

ROOTS = ("transforms", "connector", "schemas")

setup(
    package_dir={f"cdc_smt.{root}": root for root in ROOTS},
    packages=[f"cdc_smt.{name}" for name in find_packages(include=[f"{root}*" for root in ROOTS] + [f"{root}.*" for root in ROOTS])],
)
