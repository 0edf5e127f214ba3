"""Schema files seed every partition's catalog: positional TDSQL rows get their column names."""

from __future__ import annotations

import base64

import orjson
import pytest
import yaml

from cdc_smt.transforms.chain import ERROR_HEADER_PREFIX
from cdc_smt.transforms.model import Record
from tests.integration.helpers import KafkaCluster, consume, job_doc, partition_sizes, produce
from tests.integration.test_worker import all_acked, run_worker
from tests.messages import tdsql_message

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def tdsql_insert(i: int) -> bytes:
    fields = [str(i), f"'item ''{i}'''", f"{i}.50"]
    msg = tdsql_message(
        "insert", 23, begintime=1718000000 + i, gtid=f"0-2670193178-{726233561 + i}", where=[], field=fields
    )
    return orjson.dumps(msg)


def test_schema_files_name_positional_columns(kafka: KafkaCluster, names, tmp_path) -> None:
    src = names("items.tdsql")
    records = [Record(value=tdsql_insert(i), key=b"shop.items") for i in range(1, 51)]
    produce(kafka, src, records, partitions=2)
    sizes = partition_sizes(records, 2)
    schema = tmp_path / "shop.yaml"
    schema.write_text(
        yaml.safe_dump(
            {
                "ddl": [
                    {
                        "database": "shop",
                        "sql": "CREATE TABLE items (id int PRIMARY KEY, name varchar(32), price decimal(10,2))",
                    }
                ]
            }
        )
    )

    def job(tag: str, **extra):
        return job_doc(
            kafka,
            names(tag),
            src,
            names(f"items.{tag}"),
            source={"topics": [src], "format": "tdsql-binlog-json"},
            errors={"tolerance": "all", "dead_letter_topic": names(f"items.{tag}.dlq")},
            worker={"create_topics": True},
            **extra,
        )

    # Without a catalog the rows cannot be named: every one is a dead letter that says why.
    blind = job("blind")
    _, code, reached = run_worker(blind, all_acked(src, sizes))
    assert reached and code == 0
    dead = consume(kafka, blind["errors"]["dead_letter_topic"], min_records=50)
    assert len(dead) == 50
    assert all("not in the schema catalog" in dict(d.headers)[ERROR_HEADER_PREFIX + "message"].decode() for d in dead)

    # With the schema file, every partition's catalog knows the table.
    seeded = job("seeded", schema_files=[str(schema)])
    _, code, reached = run_worker(seeded, all_acked(src, sizes))
    assert reached and code == 0
    out = consume(kafka, seeded["sink"]["topic"], min_records=50)
    rows = {}
    for r in out:
        v = orjson.loads(r.value)
        after = v.get("payload", v)["after"]
        rows[after["id"]] = after
    assert sorted(rows) == list(range(1, 51))
    assert rows[7]["name"] == "item '7'"
    # decimal(10,2) in Kafka Connect's precise form: the unscaled value, big-endian, base64.
    assert int.from_bytes(base64.b64decode(rows[7]["price"]), "big", signed=True) == 750
