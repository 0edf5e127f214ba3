//! Reading a CloudCanal message (``transforms/formats/cloudcanal_json.py``): Canal's flat
//! message under other names (``action``, ``before``/``data``, ``db``, ``execTs``/``sendTs``,
//! ``pks``, ``dbValType``/``jdbcType``), read by the Canal reader (``canal::parse_as``) into
//! its ``Message``. What differs is checked here: only the row messages Python reads as the
//! Canal plan reads Canal's are taken (no ``INIT``, ``before`` a full image of each UPDATE
//! row in the row's column order, nothing in ``before`` otherwise), the rest is Python's.

use crate::canal::{self, Message, Names, Row, Text, FIELD_DATA, FIELD_DATABASE, FIELD_ES, FIELD_IS_DDL, FIELD_KIND, FIELD_MYSQL_TYPE, FIELD_OLD, FIELD_PK_NAMES, FIELD_SQL, FIELD_SQL_TYPE, FIELD_TABLE, FIELD_TS};

/// CloudCanal's field names.
pub struct CloudCanal;

impl Names for CloudCanal {
    fn bit(key: &str) -> u16 {
        match key {
            "action" => FIELD_KIND,
            "data" => FIELD_DATA,
            "before" => FIELD_OLD,
            "db" => FIELD_DATABASE,
            "table" => FIELD_TABLE,
            "execTs" => FIELD_ES,
            "sendTs" => FIELD_TS,
            "pks" => FIELD_PK_NAMES,
            "dbValType" => FIELD_MYSQL_TYPE,
            "jdbcType" => FIELD_SQL_TYPE,
            "isDdl" => FIELD_IS_DDL,
            "sql" => FIELD_SQL,
            _ => 0,
        }
    }
}

/// A CloudCanal row message as the Canal reader's ``Message`` (``before`` as ``old``), or
/// ``None`` when Python must read it (DDL, commits, ``INIT``, unusual fields or rows).
pub fn parse(value: &[u8]) -> Option<Message<'_>> {
    let m = canal::parse_as::<CloudCanal>(value)?;
    if !matches!(m.kind.as_deref(), Some("INSERT" | "UPDATE" | "DELETE")) || !fields_as_python_reads_them(&m) {
        return None;
    }
    let data = m.data.as_deref().unwrap_or(&[]);
    let before = m.old.as_deref().unwrap_or(&[]);
    let paired = if m.kind.as_deref() == Some("UPDATE") {
        before.len() == data.len() && before.iter().zip(data).all(|(b, d)| same_columns(b, d))
    } else {
        before.is_empty() // a DELETE's row in ``before`` (or rows in both): Python's
    };
    paired.then_some(m)
}

/// ``entryType`` ROWDATA, the DDL flag false, ``bid`` an integer and ``schema`` the
/// database's name (or absent): the fields Python checks or reads that the Canal reader
/// does not model, each present at most once (Python keeps the last of repeated keys).
fn fields_as_python_reads_them(m: &Message) -> bool {
    let field = |name: &str| {
        let mut found = m.extra.iter().filter(|(k, _)| k == name).map(|(_, raw)| raw.get());
        let first = found.next();
        match found.next() {
            Some(_) => Err(()),
            None => Ok(first),
        }
    };
    let (Ok(entry), Ok(ddl), Ok(bid), Ok(schema)) = (field("entryType"), field("ddl"), field("bid"), field("schema")) else {
        return false;
    };
    let not_ddl = match m.is_ddl {
        Some(raw) => raw.get() == "false",
        None => ddl.is_none_or(|raw| raw == "false"),
    };
    let bid = bid.is_none_or(|raw| raw == "null" || serde_json::from_str::<i64>(raw).is_ok());
    let schema = schema.is_none_or(|raw| {
        raw == "null"
            || serde_json::from_str::<Text>(raw).is_ok_and(|name| m.database.as_deref() == Some(name.0.as_ref()))
    });
    entry == Some("\"ROWDATA\"") && not_ddl && bid && schema
}

/// Do two rows name the same columns in the same order (``before`` overlaid on ``data``
/// then reads as Python's ``before`` image)?
fn same_columns(a: &Row, b: &Row) -> bool {
    a.0.len() == b.0.len() && a.0.iter().zip(&b.0).all(|((x, _), (y, _))| x == y)
}
