"""The capability matrix and A -> B loss reports, derived from codec declarations.

Each codec declares what its format carries in ``Codec.capabilities``. From
those declarations alone this module renders the README's matrix and lists
what converting from one format to another loses; the any-to-any tests hold
the codecs to these declarations, so the table cannot drift from reality.
"""

from __future__ import annotations

from dataclasses import fields

from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.formats.base import Capabilities

#: Column headings and the loss sentence for each boolean capability.
_FEATURES: dict[str, tuple[str, str]] = {
    "column_types": ("types", "column types (the target types values from the schema catalog when one is given)"),
    "typed_values": ("typed values", "typed values (all values become text)"),
    "primary_key": ("primary key", "primary-key names"),
    "binlog_position": ("binlog position", "binlog file/position"),
    "gtid": ("GTID", "GTIDs"),
    "transactions": ("transactions", "transaction begin/commit markers"),
    "ddl": ("DDL", "DDL events"),
    "heartbeats": ("heartbeats", "heartbeat events"),
    "watermarks": ("watermarks", "watermark events"),
    "snapshot_reads": ("snapshot reads", "snapshot-read markers (snapshot rows become inserts)"),
}
_BEFORE_RANK = {"full": 2, "changed": 1, "none": 0}


def losses(source: str, target: str) -> list[str]:
    """What converting ``source`` -> ``target`` cannot carry, one sentence each."""
    reg = registry()
    a: Capabilities = reg[source].capabilities
    b: Capabilities = reg[target].capabilities
    out: list[str] = []
    if _BEFORE_RANK[b.before_image] < _BEFORE_RANK[a.before_image]:
        if b.before_image == "none":
            out.append("update/delete before-images are dropped")
        else:
            out.append("update before-images are reduced to the changed columns")
    for name, (_, sentence) in _FEATURES.items():
        if getattr(a, name) and not getattr(b, name):
            out.append(f"{sentence} are lost")
    return out


def matrix_markdown() -> str:
    """The capability matrix as a Markdown table (one row per format)."""
    reg = registry()
    heads = ["format", "before image"] + [h for h, _ in _FEATURES.values()]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for name, cls in reg.items():
        caps = cls.capabilities
        cells = [f"`{name}`", caps.before_image] + ["yes" if getattr(caps, f) else "–" for f in _FEATURES]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def formats_markdown() -> str:
    """The format table: name, what it is, directions and framing."""
    lines = ["| format | what it is | decode | encode | messages |", "|---|---|---|---|---|"]
    for name, cls in registry().items():
        framing = "schemaless Avro binary" if cls.binary else "JSON"
        desc = (cls.description or "").replace("|", "\\|")
        decode, encode = ("yes" if can else "–" for can in (cls.can_decode, cls.can_encode))
        lines.append(f"| `{name}` | {desc} | {decode} | {encode} | {framing} |")
    return "\n".join(lines)


def _check_declared_fields() -> None:
    declared = {f.name for f in fields(Capabilities)} - {"before_image"}
    missing = declared - set(_FEATURES)
    if missing:  # a new capability must get a heading and a loss sentence here
        raise AssertionError(f"capabilities without a description: {sorted(missing)}")


_check_declared_fields()
