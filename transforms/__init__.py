"""cdc-smt's pure library: canonical model, MySQL types, codecs, transforms, chains.

Nothing here imports Kafka or Spark; the hosts live in ``connector``.
"""

from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema

__all__ = ["ChangeEvent", "Column", "Op", "Record", "SourcePosition", "TableSchema"]
