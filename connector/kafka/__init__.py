"""All broker I/O: the worker, the backfill, the demo, the tests and the benchmarks reach Kafka here.

One module per concern:

- :mod:`.settings`: the job's Kafka settings translated for aiokafka, Faust and Spark's Kafka connector;
- :mod:`.admin`: readiness (the start-up probe every host runs), topic lists, partition counts, topic creation;
- :mod:`.produce`: batch-API producing, and a producer for synchronous callers;
- :mod:`.consume`: reading a topic back;
- :mod:`.offsets`: a consumer group's committed offsets;
- :mod:`.partitioner`: the Java client's partition choice (murmur2);
- :mod:`.errors`: :class:`KafkaUnavailable`, the start-up probe's one-line error.

The public names are re-exported here (``from cdc_smt.connector import kafka as K;
K.produce_records(...)``). aiokafka and Faust are imported only when a client is made.
"""

from cdc_smt.connector.kafka.admin import (
    bootstrap_addresses,
    create_topics,
    list_topics,
    partition_counts,
    wait_until_ready,
)
from cdc_smt.connector.kafka.consume import consume_all, stop_consumer
from cdc_smt.connector.kafka.errors import KafkaUnavailable
from cdc_smt.connector.kafka.offsets import CoordinatorClosed, committed_offsets, unless_coordinator_closes
from cdc_smt.connector.kafka.partitioner import murmur2, partition_for
from cdc_smt.connector.kafka.produce import BlockingProducer, produce_records
from cdc_smt.connector.kafka.settings import (
    DEFAULT_CONNECT_TIMEOUT_S,
    SASL_LOGIN_MODULES,
    SECURITY_PROTOCOLS,
    Conn,
    KafkaSettings,
    client_kwargs,
    connection_json,
    faust_client_settings,
    jaas_config,
    producer_kwargs,
    settings_from_json,
)

__all__ = [
    "BlockingProducer",
    "CoordinatorClosed",
    "Conn",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "KafkaSettings",
    "KafkaUnavailable",
    "SASL_LOGIN_MODULES",
    "SECURITY_PROTOCOLS",
    "bootstrap_addresses",
    "client_kwargs",
    "committed_offsets",
    "connection_json",
    "consume_all",
    "stop_consumer",
    "unless_coordinator_closes",
    "create_topics",
    "faust_client_settings",
    "jaas_config",
    "list_topics",
    "murmur2",
    "partition_counts",
    "partition_for",
    "produce_records",
    "producer_kwargs",
    "settings_from_json",
    "wait_until_ready",
]
