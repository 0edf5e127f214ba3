"""The demo's job and input, shipped inside the wheel so ``cdc-smt demo`` runs from any install.

The files are links to ``examples/jobs/shop-canal-to-debezium.yaml`` and
``examples/data/demo-shop.canal.jsonl`` (one copy in the repository); building
the wheel copies their contents here. Found through ``importlib.resources``,
so the lookup does not depend on the working directory or the checkout.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _path(name: str) -> Path:
    return Path(str(resources.files(__name__).joinpath(name)))


#: The worker job the demo runs (Canal JSON -> Debezium JSON on the shop topics).
JOB = _path("shop-canal-to-debezium.yaml")
#: The demo's input: one Canal JSON message per line (row changes, a DDL, one malformed line).
DATA = _path("demo-shop.canal.jsonl")
