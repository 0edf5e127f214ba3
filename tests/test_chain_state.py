"""Chain state snapshots: what a host persists per source partition, and the snapshot history
that keeps a restart consistent with at-least-once re-reading."""

from __future__ import annotations

import orjson

from cdc_smt.connector.worker.state import MAX_SNAPSHOTS, decode_snapshots, encode_snapshots, pick, push
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.messages import tdsql_message


def tdsql(kind: str, code: int, **fields) -> Record:
    return Record(value=orjson.dumps(tdsql_message(kind, code, **fields)), topic="t", partition=0, offset=0)


def tdsql_chain() -> Chain:
    return Chain(get_codec("tdsql-binlog-json"), get_codec("debezium-json", {"schemas_enable": False}), [], "all")


def test_stateless_chains_say_so():
    assert not Chain(get_codec("canal-json"), get_codec("debezium-json"), [], "all").stateful
    assert tdsql_chain().stateful  # keeps its own catalog
    assert Chain(get_codec("dataworks-json"), get_codec("canal-json"), [], "all").stateful  # holds halves back


def test_catalog_state_restores_into_a_fresh_chain_in_place():
    first = tdsql_chain()
    first.process(tdsql("query", 2, sql="create table items (id int primary key, name varchar(20))"))
    state = orjson.loads(orjson.dumps(first.state()))  # plain JSON data

    fresh = tdsql_chain()
    insert = tdsql("insert", 23, where=[], field=["7", "'seven'"])
    assert fresh.process(insert).dead_letters  # nobody told it the table
    restored = tdsql_chain()
    catalog = restored.catalog
    restored.restore_state(state)
    assert restored.catalog is catalog and restored.decoder.catalog is catalog  # in place: codecs see it
    result = restored.process(insert)
    assert not result.dead_letters
    assert orjson.loads(result.outputs[0].value)["after"] == {"id": 7, "name": "seven"}
    assert restored.state() == first.state()


def blob(n: int) -> bytes:
    return orjson.dumps({"n": n})


def test_restart_takes_the_newest_snapshot_not_ahead_of_the_resume_offset():
    snaps = []
    for offset in (10, 20, 30):
        snaps = push(snaps, offset, blob(offset), committed=None)
    assert pick(snaps, 25) == blob(20)  # 30 was written before a commit that never happened
    assert pick(snaps, 30) == blob(30)
    assert pick(snaps, 9) is None
    assert decode_snapshots(encode_snapshots(snaps)) == snaps


def test_snapshots_before_the_last_commit_are_pruned_but_the_committed_one_is_kept():
    snaps = []
    for offset in (10, 20, 30, 40):
        snaps = push(snaps, offset, blob(offset), committed=25)
    assert [o for o, _ in snaps] == [20, 30, 40]
    assert pick(snaps, 25) == blob(20)


def test_a_rewritten_offset_replaces_newer_snapshots():
    snaps = push(push(push([], 10, blob(1), None), 20, blob(2), None), 15, blob(3), None)
    assert [o for o, _ in snaps] == [10, 15]


def test_history_is_bounded_when_commits_lag():
    snaps = []
    for offset in range(1, 100):
        snaps = push(snaps, offset, blob(offset), committed=None)
    assert len(snaps) == MAX_SNAPSHOTS + 1 and snaps[-1][0] == 99


def test_the_state_marker_changes_exactly_when_the_state_does():
    chain = tdsql_chain()
    empty = chain.state_marker()
    chain.process(tdsql("query", 2, sql="create table items (id int primary key, name varchar(20))"))
    learned, state = chain.state_marker(), chain.state()
    assert learned != empty
    chain.process(tdsql("insert", 23, where=[], field=["7", "'seven'"]))
    assert chain.state_marker() == learned and chain.state() == state
