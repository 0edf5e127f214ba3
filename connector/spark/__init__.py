"""The bulk backfill: the worker's job file run as a Spark Structured Streaming query.

``cdc-smt backfill -c job.yaml`` reads a Kafka topic over offset or time
ranges (or JSON Lines / Avro container files), runs the job's chain in the
executors over Arrow batches, and writes Kafka topics, JSON Lines or Parquet
files, with dead letters to a topic or files. ``trigger(availableNow=True)``
plus a checkpoint directory make it resumable: an interrupted backfill picks
up at the first micro-batch that was not committed.

Modules:

- :mod:`connector.spark.settings`: the ``backfill:`` section of the job file.
- :mod:`connector.spark.kafkaio`: synchronous Kafka reads for planning and tasks.
- :mod:`connector.spark.datasource`: Python data sources (Kafka, message files).
- :mod:`connector.spark.process`: the per-task chain and sinks (runs in executors).
- :mod:`connector.spark.sinks`: Kafka, JSON Lines, Parquet and dead-letter writers.
- :mod:`connector.spark.backfill`: the query, its progress and its errors.

Only the last one imports pyspark at module level; the rest run in executors
and in unit tests without a Spark session.
"""

from __future__ import annotations
