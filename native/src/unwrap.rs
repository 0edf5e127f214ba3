//! ``unwrap`` (Debezium's ExtractNewRecordState) in the Debezium writer: an op's row written
//! as the flat image Python's Debezium encoder writes for an ``UNWRAPPED`` event (the
//! converted row, with the Connect schema part under ``schemas_enable``), and the tombstone
//! ``delete_handling`` cuts for a delete (a null value with the row's key).
//!
//! What the op writes is compiled per table by ``transforms/native.py`` from the chain's own
//! probe (``_CanalTables._unwrapped_op``): ``unwrap``'s metadata columns and ``__deleted`` are
//! the table's ``added`` columns, its headers the variants' header edits.

use crate::values::Fallback;
use crate::{canal, row_key, wrap, write_image, OpPlan, Output, TablePlan};

/// The records of an op ``unwrap`` applies to, in order.
pub(crate) struct Unwrapped {
    /// The flat row is written (with the op plan's variant); ``false``: only the tombstone.
    pub row: bool,
    /// The variant of the tombstone written after it (``None``: none).
    pub tombstone: Option<usize>,
}

/// One row's records into ``out``; ``old``: an UPDATE's changed columns (Python types the
/// before-image with the rest when a transform types the row, so their values must read).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    plan: &TablePlan,
    op_plan: &OpPlan,
    unwrapped: &Unwrapped,
    schemas_enable: bool,
    m: &canal::Message,
    i: usize,
    row: &canal::Row,
    old: Option<&canal::Row>,
    out: &mut Vec<Output>,
) -> Result<(), Fallback> {
    let mut scratch = Vec::new();
    for (name, value) in old.map(|o| o.0.as_slice()).unwrap_or(&[]) {
        let column = &plan.columns[*plan.index.get(name.as_ref()).ok_or(Fallback)?];
        if let (true, Some(text)) = (column.validate, value) {
            scratch.clear();
            column.op.write(&mut scratch, text)?;
        }
    }
    let image: Vec<(&str, Option<&str>)> = row.0.iter().map(|(k, v)| (k.as_ref(), v.as_deref())).collect();
    let mut payload = Vec::with_capacity(512);
    let mut spans = vec![None; plan.columns.len()];
    // Without a row (a tombstone only) the image is still written: its key columns, and
    // every value a typing transform reads, must be ones Python reads too.
    write_image(plan, &image, unwrapped.row.then_some((op_plan, m, i)), &mut payload, &mut spans, &mut scratch)?;
    let key = row_key(plan, op_plan, schemas_enable, &spans, &payload)?;
    if unwrapped.row {
        if schemas_enable && plan.columns.iter().zip(&spans).any(|(c, span)| c.out.is_some() && span.is_none()) {
            return Err(Fallback); // the schema part names the row's columns: the probe's has them all
        }
        let value = match &op_plan.envelope_schema {
            Some(schema) if schemas_enable => wrap(schema, &payload),
            _ => payload,
        };
        out.push((Some(value), key.clone(), op_plan.variant));
    }
    if let Some(variant) = unwrapped.tombstone {
        out.push((None, key, variant));
    }
    Ok(())
}
