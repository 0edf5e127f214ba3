"""Packaging glue that pyproject.toml cannot express declaratively.

The repository keeps its top-level folders (``transforms/``, ``connector/``,
``schemas/``); Python imports them as ``cdc_smt.transforms``,
``cdc_smt.connector`` and ``cdc_smt.schemas`` so that cdc-smt never claims a
top-level name another distribution (PyPI's ``transforms``, ``schemas``) owns.
Subpackages are found here, so a new one needs no edit.

The native core (``native/``, a Rust crate built with PyO3) becomes the
extension module ``cdc_smt._native`` when a Rust toolchain is present; it is
optional: without one the install succeeds on the pure-Python path.
"""

from pathlib import Path

from setuptools import find_packages, setup
from setuptools_rust import Binding, RustExtension

ROOTS = ("transforms", "connector", "schemas")
#: Where the extension module lands in a source tree: an editable install maps the
#: ``cdc_smt`` namespace to this folder (no ``__init__.py``), so it imports from there.
NATIVE_NAMESPACE = "native/cdc_smt"

package_dir = {f"cdc_smt.{root}": root for root in ROOTS}
packages = [
    f"cdc_smt.{name}"
    for name in find_packages(include=[f"{root}*" for root in ROOTS] + [f"{root}.*" for root in ROOTS])
]
if Path(NATIVE_NAMESPACE).is_dir():  # a checkout with the native core's sources
    package_dir["cdc_smt"] = NATIVE_NAMESPACE
    packages.insert(0, "cdc_smt")

setup(
    package_dir=package_dir,
    packages=packages,
    rust_extensions=[
        RustExtension(
            "cdc_smt._native",
            path="native/Cargo.toml",
            binding=Binding.PyO3,
            py_limited_api="auto",
            debug=False,  # editable installs too: the debug build is ~20x slower
            optional=True,
        )
    ],
    zip_safe=False,
)
