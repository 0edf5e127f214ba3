"""Rendering typed events the way Flink and Paimon tests print rows.

Corpus ``.expected.txt`` files hold what a Flink or Paimon test asserted:

* Flink ``RowData``: ``+I(101,scooter,Small 2-wheel scooter,3.14)`` per change,
  UPDATE as ``-U(before)`` then ``+U(after)``, DELETE as ``-D(before)``, SQL
  NULL as ``null`` (:func:`flink_rows`);
* Paimon ``InternalRow``: ``+I[1, 1.1, true, ...]`` per row of the final table,
  NULL as ``NULL``, DATE as epoch days, TIME as milliseconds of the day, binary
  as signed byte lists, geometry as GeoJSON (:func:`paimon_row`).

Types are named as in Flink/Paimon SQL (``INT``, ``STRING``, ``FLOAT`` ...);
``FLOAT`` is a Java float (printed with the shortest digits of the 32-bit
value), ``DOUBLE`` a Java double.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import orjson

from cdc_smt.transforms.formats.canal_json import java_float_text
from cdc_smt.transforms.model import ChangeEvent, Op
from cdc_smt.transforms.types import float32

Field = tuple[str, str]  # (column name, Flink/Paimon type name)

_KIND = {Op.INSERT: "+I", Op.READ: "+I"}


# ---------------------------------------------------------------------------
# Flink RowData
# ---------------------------------------------------------------------------


def flink_rows(events: Iterable[ChangeEvent], fields: Sequence[Field]) -> list[str]:
    """Flink changelog lines of the row events (typed first); control events print nothing."""
    out: list[str] = []
    for e in events:
        if not e.op.is_row:
            continue
        e.typed()
        if e.op is Op.UPDATE:
            out.append("-U" + flink_row(e.before or {}, fields))
            out.append("+U" + flink_row(e.after or {}, fields))
        elif e.op is Op.DELETE:
            out.append("-D" + flink_row(e.before or {}, fields))
        else:
            out.append(_KIND[e.op] + flink_row(e.after or {}, fields))
    return out


def flink_row(row: Mapping[str, Any], fields: Sequence[Field]) -> str:
    """``(v1,v2,...)`` as ``GenericRowData.toString`` prints the fields (missing = null)."""
    return "(" + ",".join(flink_value(row.get(name), typ) for name, typ in fields) + ")"


def flink_value(v: Any, typ: str) -> str:
    if v is None:
        return "null"
    return _java_value(v, typ)


# ---------------------------------------------------------------------------
# Paimon InternalRow
# ---------------------------------------------------------------------------


def paimon_row(row: Mapping[str, Any], columns: Sequence[Field], kind: str = "+I") -> str:
    """``+I[v1, v2, ...]`` as Paimon's test utilities print a row."""
    return kind + "[" + ", ".join(paimon_value(row.get(name), typ) for name, typ in columns) + "]"


def paimon_value(v: Any, typ: str) -> str:
    """One value in Paimon's notation; ``typ`` is the Paimon type (``GEOMETRY`` =
    MySQL geometry, SRID + WKB bytes, printed as Paimon's GeoJSON text)."""
    if v is None:
        return "NULL"
    t = typ.upper()
    if t == "DATE":
        return str((v - dt.date(1970, 1, 1)).days)
    if t == "TIME":
        return str(int(v / dt.timedelta(milliseconds=1)))
    if t.startswith("ARRAY"):
        items = v.split(",") if isinstance(v, str) and v else list(v or ())
        return "[" + ", ".join(items) + "]"
    if t == "GEOMETRY":
        return geometry_json(bytes(v))
    return _java_value(v, t)


def _java_value(v: Any, typ: str) -> str:
    t = typ.upper().split("(")[0].strip()
    if t == "BOOLEAN":
        return "true" if v else "false"
    if t == "FLOAT":
        return java_float_text(float32(float(v)), single=True)
    if t == "DOUBLE":
        return java_float_text(float(v))
    if t in ("DECIMAL", "NUMERIC"):
        return format(v if isinstance(v, Decimal) else Decimal(str(v)), "f")
    if t in ("BYTES", "BINARY", "VARBINARY"):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bytes(v)) + "]"
    if t in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return local_datetime(v)
    if t in ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"):
        return str(int(v))
    return str(v)


def local_datetime(v: dt.datetime) -> str:
    """Java ``LocalDateTime.toString``: seconds only when non-zero, fraction in 3/6/9 digits."""
    out = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}"
    if v.second or v.microsecond:
        out += f":{v.second:02d}"
    if v.microsecond:
        out += f".{v.microsecond // 1000:03d}" if v.microsecond % 1000 == 0 else f".{v.microsecond:06d}"
    return out


# ---------------------------------------------------------------------------
# MySQL geometry (SRID + WKB) -> Paimon's GeoJSON text
# ---------------------------------------------------------------------------

_GEO_TYPES = {
    1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon",
    7: "GeometryCollection",
}  # fmt: skip


def geometry_json(value: bytes) -> str:
    """MySQL's internal geometry value as Paimon prints it:
    ``{"coordinates":[1,1],"type":"Point","srid":0}``; the members of a collection
    print ``type`` first and no ``srid``."""
    srid = struct.unpack_from("<I", value, 0)[0]
    geo, _ = _wkb(value, 4)
    if geo["type"] == "GeometryCollection":
        doc = {"geometries": geo["geometries"], "type": geo["type"], "srid": srid}
    else:
        doc = {"coordinates": geo["coordinates"], "type": geo["type"], "srid": srid}
    return orjson.dumps(doc).decode()


def _wkb(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
    order = "<" if buf[pos] == 1 else ">"
    kind = struct.unpack_from(order + "I", buf, pos + 1)[0]
    pos += 5
    name = _GEO_TYPES[kind]

    def point(p: int) -> tuple[list, int]:
        x, y = struct.unpack_from(order + "dd", buf, p)
        return [_num(x), _num(y)], p + 16

    def count(p: int) -> tuple[int, int]:
        return struct.unpack_from(order + "I", buf, p)[0], p + 4

    def points(p: int) -> tuple[list, int]:
        n, p = count(p)
        out = []
        for _ in range(n):
            pt, p = point(p)
            out.append(pt)
        return out, p

    def rings(p: int) -> tuple[list, int]:
        n, p = count(p)
        out = []
        for _ in range(n):
            ring, p = points(p)
            out.append(ring)
        return out, p

    if kind == 1:
        coords, pos = point(pos)
    elif kind == 2:
        coords, pos = points(pos)
    elif kind == 3:
        coords, pos = rings(pos)
    else:
        n, pos = count(pos)
        parts = []
        for _ in range(n):
            part, pos = _wkb(buf, pos)
            parts.append(part)
        if kind == 7:
            return {"type": name, "geometries": parts}, pos
        coords = [p["coordinates"] for p in parts]
    return {"type": name, "coordinates": coords}, pos


def _num(x: float) -> int | float:
    return int(x) if x == int(x) else x


__all__ = ["flink_row", "flink_rows", "flink_value", "geometry_json", "local_datetime", "paimon_row", "paimon_value"]
