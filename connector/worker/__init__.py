"""The topic-to-topic worker: a Faust app that runs a job's chain between Kafka topics.

- :mod:`.app`: the Faust app, its batch consumer, and :func:`.app.run` (start-up, stop, exit codes).
- :mod:`.pipeline`: per-partition batches: decode, chain, encode, produce, ack tracking.
- :mod:`.pool`: conversion in child processes (``worker.processes``).
- :mod:`.state`: chain state in changelog-backed Faust tables.
- :mod:`.logging_setup`: JSON or text log lines.

Nothing is imported here, so the Faust-free parts (pipeline, state) load without Faust.
"""
