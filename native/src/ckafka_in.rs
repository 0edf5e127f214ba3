//! The CKafka reader: a ckafka-json (format 1) DML message read as ``CKafkaJson`` reads
//! it (``transforms/formats/ckafka_json.py``), its values typed through the schema catalog.
//!
//! Format 1 carries no column types: the decoder types a row by the catalog's current
//! schema of its table (the columns the row names, in row order; columns the schema lacks
//! as ``longtext``). So a table layout is (database, table, the row's column names), and
//! per layout Python compiles the writer's table once from the catalog
//! (``transforms/native_catalog.py``): ``None`` when the catalog has no schema for the
//! table (Python keeps the values strings and warns once). The values are MySQL's own
//! text (ENUM and SET as labels), as CloudCanal's, and reach the writer as such.
//!
//! The catalog. DDL in the stream (Canal-shaped, ``isDdl``) changes it, and only Python
//! applies DDL: a message that is not a DML message for certain (no ``TYPE``, not a JSON
//! object, too large) *closes* the batch (``closed_at``): it and every later record are
//! Python's, and ``NativePlan.run`` (as ``DataWorksNativePlan.run``) converts again from
//! the record after it. Each ``convert`` starts by comparing the catalog's version with
//! the one the tables were compiled at, and forgets them when it changed.
//!
//! The same reader follows the catalog for TDSQL's positional rows (``tdsql`` set: its
//! messages read by ``tdsql_in``, its layouts keyed by the row's width).
//!
//! To Debezium, the source block's binlog position (``server_id``, ``gtid``, ``file``,
//! ``pos``) is the message's: the writer's source block (the probe's, without one) gets
//! it written in.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;
use serde::de::MapAccess;
use serde_json::value::RawValue;

use crate::canal::{self, Checked, Row, FIELD_DATABASE, FIELD_ES, FIELD_OLD, FIELD_PK_NAMES, FIELD_TABLE, FIELD_TS};
use crate::dataworks_in::Zone;
use crate::typed_in::{now_ms, parse, text, writer_table, Fields};
use crate::{canal_out, json, CanalToDebezium, Encoder, OpEntry, Output, Reader as PlanReader, Table};

/// The fields of a format-1 DML message the plan reads.
#[derive(Default)]
struct Message<'a> {
    /// ``TYPE`` was present (whatever its value): a DML message, which never changes the catalog.
    dml: bool,
    kind: Option<Cow<'a, str>>,
    database: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
    new: Option<Row<'a>>,
    old: Option<Row<'a>>,
    time: Option<Cow<'a, str>>,
    file: Option<Cow<'a, str>>,
    pos: Option<i64>,
    gtid: Option<Cow<'a, str>>,
    /// ``EVENT_SERVER_ID`` as the decoder keeps it: an integer (``None``: null or not an integer).
    server_id: Option<i64>,
    /// An ``EVENT_SERVER_ID`` integer past 64 bits: Python's.
    wide_server_id: bool,
}

impl<'de> Fields<'de> for Message<'de> {
    const WHAT: &'static str = "a CKafka message";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "TYPE" => {
                self.dml = true;
                self.kind = text(map)?;
            }
            "DATABASE" => self.database = text(map)?,
            "TABLE" => self.table = text(map)?,
            "NEW_VALUES" => self.new = map.next_value()?,
            "OLD_VALUES" => self.old = map.next_value()?,
            "TIME" => self.time = text(map)?,
            "BINLOG_NAME" => self.file = text(map)?,
            "BINLOG_POS" => self.pos = map.next_value()?,
            "GLOBAL_ID" => self.gtid = text(map)?,
            "EVENT_SERVER_ID" => {
                let raw: &'de RawValue = map.next_value()?;
                let t = raw.get();
                serde_json::from_str::<Checked>(t).map_err(serde::de::Error::custom)?;
                let integer = t.bytes().next().is_some_and(|b| b == b'-' || b.is_ascii_digit()) && !t.contains(['.', 'e', 'E']);
                if integer {
                    match t.parse::<i64>() {
                        Ok(n) => self.server_id = Some(n),
                        Err(_) => self.wide_server_id = true,
                    }
                }
            }
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

/// Is ``value`` a JSON object with a ``TYPE`` field (a DML message, whatever else is wrong
/// with it)? Read leniently: only for messages the plan does not read.
fn has_type(value: &[u8]) -> bool {
    serde_json::from_slice::<HashMap<Cow<str>, serde::de::IgnoredAny>>(value).is_ok_and(|m| m.contains_key("TYPE"))
}

/// ``TIME`` (``yyyyMMddHHmmss`` in ``source_timezone``) as epoch milliseconds, or ``None``
/// (Python's): not 14 ASCII digits, no such date and time, a wall clock the zone skips or
/// repeats, years outside those where the zone databases are compared.
fn epoch_ms(text: &str, zone: Zone) -> Option<i64> {
    use chrono::{Datelike, NaiveDate, TimeZone};
    let b = text.as_bytes();
    if b.len() != 14 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = |a: usize, z: usize| text[a..z].parse::<u32>().ok();
    let date = NaiveDate::from_ymd_opt(n(0, 4)? as i32, n(4, 6)?, n(6, 8)?)?;
    let wall = date.and_hms_opt(n(8, 10)?, n(10, 12)?, n(12, 14)?)?;
    let utc = match zone {
        Zone::Utc if wall.year() >= 1 => wall.and_utc(),
        Zone::Tz(tz) if (1901..=2037).contains(&wall.year()) => tz.from_local_datetime(&wall).single()?.to_utc(),
        _ => return None,
    };
    Some(utc.timestamp_millis())
}

/// A row's column names, or ``None`` when it has none or repeats one (Python's dict keeps
/// the last value: Python's).
fn names<'b>(row: &'b Row) -> Option<Vec<&'b str>> {
    let names: Vec<&str> = row.0.iter().map(|(k, _)| k.as_ref()).collect();
    if names.is_empty() || names.iter().enumerate().any(|(n, k)| names[..n].contains(k)) {
        return None;
    }
    Some(names)
}

/// A table layout: database, table and the row's column names in row order (CKafka), or
/// the row's width and whether its GTID is MariaDB's (TDSQL's positional rows: ``tdsql_in``).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Layout {
    database: String,
    table: String,
    columns: Vec<String>,
    positional: Option<(usize, bool)>,
}

impl Layout {
    fn matches(&self, database: &str, table: &str, columns: &[&str], positional: Option<(usize, bool)>) -> bool {
        self.database == database
            && self.table == table
            && self.positional == positional
            && self.columns.len() == columns.len()
            && self.columns.iter().zip(columns).all(|(a, b)| a == b)
    }
}

/// A layout's compiled table, the primary key the catalog gives it and, for positional
/// rows, the catalog's column names and each column's literal class (``tdsql_in::class``).
pub(crate) struct Compiled {
    pub table: Arc<Table>,
    pub pk: Vec<String>,
    pub names: Vec<String>,
    pub classes: Vec<u8>,
}

const CACHE_SIZE: usize = 1024;

/// The reader: its compiler, the codec (whose catalog's version it follows), the zone of
/// ``TIME``, the compiled tables and where the batch closed.
pub(crate) struct Reader {
    compile: PyObject,
    codec: PyObject,
    zone: Zone,
    /// The catalog version the tables were compiled at.
    version: Option<i64>,
    tables: HashMap<Layout, Option<Arc<Compiled>>>,
    last: Option<(Layout, Option<Arc<Compiled>>)>,
    /// Inside ``convert``: the index of the current record.
    pub batch: Option<usize>,
    /// Where the batch went to Python (from there on every record is Python's).
    pub closed_at: Option<usize>,
    /// The dialect read: TDSQL's positional binlog rows (``tdsql_in``), else CKafka's format 1.
    pub tdsql: bool,
    /// The last ``TIME`` read and its epoch milliseconds (rows share seconds).
    time: (String, i64),
}

impl Reader {
    pub fn new(compile: PyObject, codec: PyObject, zone: Zone, tdsql: bool) -> Reader {
        Reader { compile, codec, zone, version: None, tables: HashMap::new(), last: None, batch: None, closed_at: None, tdsql, time: (String::new(), 0) }
    }

    pub fn clear(&mut self) {
        self.tables.clear();
        self.last = None;
    }

    /// A batch starts: the tables are forgotten when the catalog changed since they were compiled.
    pub fn begin(&mut self, py: Python) -> PyResult<()> {
        let version: i64 = self.codec.bind(py).getattr("catalog")?.getattr("version")?.extract()?;
        if self.version != Some(version) {
            self.clear();
            self.version = Some(version);
        }
        self.closed_at = None;
        self.batch = Some(0);
        Ok(())
    }

    /// The batch's record ``i`` is next.
    pub fn at(&mut self, i: usize) {
        self.batch = Some(i);
    }

    pub fn end(&mut self) {
        self.batch = None;
    }

    /// The layout's table and key (``None``: Python's), compiled once by
    /// ``compile(database, table, columns)`` (positional rows: ``compile(database, table,
    /// width, mariadb)``) into ``None`` or ``(key_names, spec)`` (positional: ``(key_names,
    /// spec, names, classes)``).
    pub(crate) fn table(&mut self, py: Python, database: &str, table: &str, columns: &[&str], positional: Option<(usize, bool)>, encoder: &Encoder) -> PyResult<Option<Arc<Compiled>>> {
        if let Some((layout, compiled)) = &self.last {
            if layout.matches(database, table, columns, positional) {
                return Ok(compiled.clone());
            }
        }
        let layout = Layout { database: database.to_owned(), table: table.to_owned(), columns: columns.iter().map(|c| (*c).to_owned()).collect(), positional };
        let compiled = match self.tables.get(&layout) {
            Some(compiled) => compiled.clone(),
            None => {
                let compile = self.compile.bind(py);
                let got = match positional {
                    Some((width, mariadb)) => compile.call1((database, table, width, mariadb))?,
                    None => compile.call1((database, table, layout.columns.clone()))?,
                };
                let compiled = if got.is_none() {
                    None
                } else if positional.is_some() {
                    let (pk, spec, names, classes): (Vec<String>, Bound<PyAny>, Vec<String>, Vec<u8>) = got.extract()?;
                    writer_table(&spec, encoder)?.map(|t| Arc::new(Compiled { table: Arc::new(t), pk, names, classes }))
                } else {
                    let (pk, spec): (Vec<String>, Bound<PyAny>) = got.extract()?;
                    writer_table(&spec, encoder)?.map(|t| Arc::new(Compiled { table: Arc::new(t), pk, names: Vec::new(), classes: Vec::new() }))
                };
                if self.tables.len() >= CACHE_SIZE {
                    self.tables.clear();
                }
                self.tables.insert(layout.clone(), compiled.clone());
                compiled
            }
        };
        self.last = Some((layout, compiled.clone()));
        Ok(compiled)
    }

    fn time(&mut self, text: &str) -> Option<i64> {
        if self.time.0 != text {
            self.time = (text.to_owned(), epoch_ms(text, self.zone)?);
        }
        Some(self.time.1)
    }
}

/// The source block's binlog position as the probe's (without one) is written.
const NO_POSITION: &[u8] = b",\"server_id\":0,\"gtid\":null,\"file\":\"\",\"pos\":0,\"row\":";

/// A binlog position as the Debezium encoder writes it (each field when set: ``server_id``/
/// ``pos`` non-zero, ``file`` non-empty, ``gtid`` not null); ``None``: the probe's.
pub(crate) fn position(server_id: Option<i64>, gtid: Option<&str>, file: Option<&str>, pos: Option<i64>) -> Option<Vec<u8>> {
    let file = file.filter(|f| !f.is_empty());
    let (server_id, pos) = (server_id.filter(|s| *s != 0), pos.filter(|p| *p != 0));
    if server_id.is_none() && gtid.is_none() && file.is_none() && pos.is_none() {
        return None;
    }
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b",\"server_id\":");
    json::write_int(&mut out, server_id.unwrap_or(0));
    out.extend_from_slice(b",\"gtid\":");
    match gtid {
        Some(g) => json::write_str(&mut out, g),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"file\":");
    json::write_str(&mut out, file.unwrap_or(""));
    out.extend_from_slice(b",\"pos\":");
    json::write_int(&mut out, pos.unwrap_or(0));
    out.extend_from_slice(b",\"row\":");
    Some(out)
}

/// ``position`` written into each change event of ``records`` (the Debezium writer's, of op
/// ``op``): its source block is the last place the op plan's source middle appears (only
/// ``op``, ``ts_ms`` and ``transaction`` follow it). ``false``: not this writer's shape.
fn place_position(table: &Table, op: usize, position: &[u8], records: &mut [Output]) -> bool {
    let Table::Debezium(plan) = table else { return false };
    let OpEntry::Plan(op_plan) = &plan.ops[op] else { return true };
    if op_plan.unwrap.is_some() {
        return true; // the flat row: no source block (its position fields are Python's)
    }
    let middle = &op_plan.source.1;
    if !middle.ends_with(NO_POSITION) {
        return false;
    }
    for (value, _, _) in records.iter_mut() {
        let Some(v) = value else { continue };
        let Some(at) = v.windows(middle.len()).rposition(|w| w == middle.as_slice()) else { return false };
        let start = at + middle.len() - NO_POSITION.len();
        v.splice(start..at + middle.len(), position.iter().copied());
    }
    true
}

impl CanalToDebezium {
    /// One CKafka message into ``out``; ``false`` when Python must process it.
    pub(crate) fn ckafka_message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::CKafka(reader) = &mut self.reader else { return Ok(false) };
        if reader.tdsql {
            return self.tdsql_message(py, value, out);
        }
        let Some(i) = reader.batch else { return Ok(false) }; // outside a batch (the Arrow path): the catalog is Python's
        if reader.closed_at.is_some() {
            return Ok(false);
        }
        let parsed = if value.len() > self.max_message_bytes { None } else { parse::<Message>(value) };
        let dml = match &parsed {
            Some(m) => m.dml,
            None => value.len() <= self.max_message_bytes && has_type(value),
        };
        if !dml {
            reader.closed_at = Some(i); // DDL (or not certainly DML): Python applies it to the catalog
            return Ok(false);
        }
        let Some(m) = parsed else { return Ok(false) };
        let op = match m.kind.as_deref() {
            Some("I") if m.new.is_some() && m.old.is_none() => 0,
            Some("U") if m.new.is_some() && m.old.is_some() => 1,
            Some("D") if m.new.is_none() && m.old.is_some() => 2,
            _ => return Ok(false),
        };
        if m.wide_server_id {
            return Ok(false);
        }
        let (Some(database), Some(table_name), Some(time)) = (m.database.as_deref(), m.table.as_deref(), m.time.as_deref()) else { return Ok(false) };
        let Some(es) = reader.time(time) else { return Ok(false) };
        let row = if op == 2 { m.old.as_ref() } else { m.new.as_ref() };
        let Some(row) = row else { return Ok(false) };
        let Some(columns) = names(row) else { return Ok(false) };
        if op == 1 && m.old.as_ref().and_then(names) != Some(columns.clone()) {
            return Ok(false); // an update whose images name other columns (or another order): Python's
        }
        let Some(compiled) = reader.table(py, database, table_name, &columns, None, &self.encoder)? else { return Ok(false) };
        let position = position(m.server_id, m.gtid.as_deref(), m.file.as_deref(), m.pos);
        let (row, old) = if op == 2 { (m.old, None) } else { (m.new, m.old) };
        Ok(self.write_row(&compiled, op, row, old, (database, table_name), es, position, out))
    }

    /// One row of a catalog-typed table (``old``: an update's before-image) through the
    /// plan's writer: to canal-json with Python's current time as ``ts`` (neither format has
    /// a processing time), to Debezium with ``position`` in its source block; ``false``: Python's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_row(&self, compiled: &Compiled, op: usize, row: Option<Row>, old: Option<Row>, (database, table_name): (&str, &str), es: i64, position: Option<Vec<u8>>, out: &mut Vec<Output>) -> bool {
        let table = &compiled.table;
        let canal_out = matches!(self.encoder, Encoder::Canal { .. });
        let message = canal::Message {
            data: row.map(|r| vec![r]),
            old: old.map(|o| vec![o]),
            database: Some(Cow::Borrowed(database)),
            table: Some(Cow::Borrowed(table_name)),
            es: Some(es),
            ts: if canal_out { now_ms() } else { None },
            pk_names: Some(compiled.pk.iter().map(|k| Cow::Borrowed(k.as_str())).collect()),
            seen: FIELD_DATABASE | FIELD_TABLE | FIELD_ES | FIELD_TS | FIELD_PK_NAMES | if op == 1 { FIELD_OLD } else { 0 },
            ..Default::default()
        };
        let start = out.len();
        if canal_out {
            let Table::Canal(t) = &**table else { return false };
            if message.ts.is_none() {
                return false;
            }
            let written = match t.ops[op] {
                canal_out::Entry::Write(variant) => canal_out::write(t, &message, op, variant, false, out).is_ok(),
                canal_out::Entry::Python => false,
                canal_out::Entry::Dropped => true,
            };
            if !written {
                out.truncate(start);
            }
            return written;
        }
        if !self.write_event(table, op, &message, || None, out) {
            return false;
        }
        if let Some(position) = position {
            if !place_position(table, op, &position, &mut out[start..]) {
                out.truncate(start);
                return false;
            }
        }
        true
    }
}
