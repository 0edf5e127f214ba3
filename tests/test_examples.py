"""Every chain in ``examples/chains`` runs end to end on its sample input, with its outputs checked.

Each example has a check below (a test fails for an example without one). A
chain whose codec is not available is skipped with the missing format's name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_smt.transforms.chain import ChainResult
from cdc_smt.transforms.config import build_chain, load_config
from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.model import Record

ROOT = Path(__file__).resolve().parents[1] / "examples"
CHAINS = sorted((ROOT / "chains").glob("*.yaml"))
SALT = "test-pepper"


@dataclass
class Run:
    result: ChainResult

    @property
    def values(self) -> list[dict[str, Any] | None]:
        return [None if r.value is None else orjson.loads(r.value) for r in self.result.outputs]

    @property
    def topics(self) -> list[str | None]:
        return [r.topic for r in self.result.outputs]

    @property
    def keys(self) -> list[Any]:
        return [None if r.key is None else orjson.loads(r.key) for r in self.result.outputs]


def run_example(chain_file: Path, data_file: str) -> Run:
    cfg = load_config(chain_file)
    for fmt in (cfg.source_format, cfg.sink_format):
        if fmt not in registry():
            pytest.skip(f"format {fmt} is not available yet")
    chain = build_chain(cfg)
    lines = (ROOT / "data" / data_file).read_bytes().splitlines()
    records = [
        Record(value=line, topic="source", partition=0, offset=i) for i, line in enumerate(lines) if line.strip()
    ]
    result = chain.process_batch(records)
    result.extend(chain.flush())
    return Run(result)


def payload(value: dict[str, Any]) -> dict[str, Any]:
    return value.get("payload", value) if "schema" in value and "payload" in value else value


# -- the checks, one per example -------------------------------------------------


def check_ckafka_to_debezium(run: Run) -> None:
    assert not run.result.dead_letters
    values = [payload(v) for v in run.values]
    # DDL and the audit_log row are filtered out; the customers rows remain, in order
    assert [v["op"] for v in values] == ["c", "u", "d"]
    assert set(run.topics) == {"flink.inventory.customers"}
    assert values[1]["before"]["first_name"] == "Anne" and values[1]["after"]["first_name"] == "Anne Marie"
    # typed through the CREATE TABLE in the stream: ints and exact decimals, not strings
    assert values[0]["after"]["id"] == 1004
    assert str(values[1]["after"]["balance"]) == "99.9"
    assert run.keys == [{"id": 1004}] * 3
    assert values[0]["source"]["file"] == "mysql-bin.000012" and values[0]["source"]["pos"] == 1200


def check_ticdc_to_canal(run: Run) -> None:
    assert not run.result.dead_letters
    values = run.values
    assert [v["type"] for v in values] == ["CREATE", "INSERT", "UPDATE", "DELETE"]  # no TIDB_WATERMARK
    insert, update = values[1], values[2]
    assert insert["mysqlType"]["price"] == "decimal(10,2)"  # restored by cast
    assert update["old"] == [{"price": "19.90"}]  # official Canal: only the changed column
    assert all("_tidb" not in v for v in values)


def check_dataworks_single(run: Run) -> None:
    assert not run.result.dead_letters
    ops = [v["payload"]["op"] for v in run.values]
    assert ops == ["INSERT", "UPDATE_AFTER", "DELETE"]  # two halves became one; heartbeat dropped
    update = run.values[1]["payload"]
    assert update["before"]["dataColumn"]["status"] == "NEW"
    assert update["after"]["dataColumn"]["status"] == "PAID"


def check_pii_masking(run: Run) -> None:
    assert not run.result.dead_letters
    values = run.values
    users = [v for v in values if v["table"] == "users"]
    rows = [r for v in users for r in v["data"]]
    assert [r["id"] for r in rows] == ["1", "2", "1", "2"]
    expect = hashlib.sha256(f"{SALT}lilei@example.com".encode()).hexdigest()
    assert rows[0]["email"] == expect
    assert [v["type"] for v in users] == ["INSERT", "INSERT", "UPDATE", "DELETE"]  # one row per message
    assert users[2]["old"][0]["email"] == expect  # the old value is masked too
    assert rows[0]["phone"] == hashlib.sha256(f"{SALT}13800138000".encode()).hexdigest()
    assert rows[1]["phone"] is None
    assert {r["id_card"] for r in rows} == {"******"}
    assert all("password_hash" not in r for r in rows)
    assert all("password_hash" not in v["mysqlType"] for v in users)
    orders = [v for v in values if v["table"] == "orders"]
    assert orders[0]["data"] == [{"id": "900", "user_id": "1", "amount": "59.00"}]  # other tables untouched


def check_shard_merge(run: Run) -> None:
    assert not run.result.dead_letters
    assert run.topics == ["cdc.shop.orders", "cdc.shop.orders", "cdc.shop.orders", "cdc.shop_01.refunds"]
    keys = [payload(k) for k in run.keys]
    assert keys[:3] == [
        {"id": 1, "__dbz__physicalTableIdentifier": "shop_01.orders_0"},
        {"id": 1, "__dbz__physicalTableIdentifier": "shop_02.orders_63"},
        {"id": 1, "__dbz__physicalTableIdentifier": "shop_01.orders_0"},
    ]
    assert keys[3] == {"id": 5}
    sources = [payload(v)["source"] for v in run.values]
    assert [(s["db"], s["table"]) for s in sources] == [("shop", "orders")] * 3 + [("shop_01", "refunds")]


def check_unwrap_lakehouse(run: Run) -> None:
    assert not run.result.dead_letters
    rows = run.values
    assert set(run.topics) == {"lake.shop.stock"}
    assert [(r["id"], r["__op"], r["__deleted"]) for r in rows] == [
        (1, "c", "false"),
        (2, "c", "false"),
        (1, "u", "false"),
        (2, "d", "true"),
    ]
    assert rows[0] == {
        "id": 1,
        "sku": "KETTLE-01",
        "qty": 3,
        "price": "19.90",
        "updated_at": 1709254800000,  # 09:00 Beijing = 01:00 UTC
        "__op": "c",
        "__table": "stock",
        "__source_ts_ms": 1709254800000,
        "__deleted": "false",
    }
    assert rows[2]["qty"] == 2


CHECKS: dict[str, tuple[str, Callable[[Run], None]]] = {
    "ckafka-to-debezium-for-flink": ("chains-ckafka.jsonl", check_ckafka_to_debezium),
    "ticdc-to-canal": ("chains-ticdc.jsonl", check_ticdc_to_canal),
    "dataworks-split-to-single-updates": ("chains-dataworks.jsonl", check_dataworks_single),
    "pii-masking": ("chains-pii.jsonl", check_pii_masking),
    "shard-merge": ("chains-shards.jsonl", check_shard_merge),
    "unwrap-for-lakehouse": ("chains-lakehouse.jsonl", check_unwrap_lakehouse),
}


def test_examples_exist() -> None:
    assert len(CHAINS) >= 6


@pytest.mark.parametrize("chain_file", CHAINS, ids=[p.stem for p in CHAINS])
def test_example_chain(chain_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert chain_file.stem in CHECKS, f"examples/chains/{chain_file.name} has no check in tests/test_examples.py"
    monkeypatch.setenv("CDC_SMT_PII_SALT", SALT)
    data_file, check = CHECKS[chain_file.stem]
    check(run_example(chain_file, data_file))
