//! The plan over Arrow arrays, through the Arrow C data interface (PyCapsules).
//!
//! The backfill's ``mapInArrow`` tasks hold their input as Arrow arrays; here a
//! plan converts a whole binary array and answers with Arrow arrays, so no
//! Python object is made per row: per input the number of output records
//! (``-1``: not handled, Python's), and per output record its value (null:
//! tombstone), key and variant. What ``convert`` answers, in columns.

use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};

use arrow_array::builder::{Int32Builder, Int64Builder, LargeBinaryBuilder};
use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, BinaryArray, LargeBinaryArray};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::partition::murmur2_of;
use crate::CanalToDebezium;

/// One exported Arrow array: ``pyarrow.array(obj)`` imports it (``__arrow_c_array__``).
#[pyclass(module = "cdc_smt._native", frozen)]
pub(crate) struct ArrowArray {
    data: ArrayData,
}

#[pymethods]
impl ArrowArray {
    /// The PyCapsule protocol: ``(schema capsule, array capsule)``; the consumer moves the
    /// array out, an unconsumed capsule releases it when collected.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(&self, py: Python<'py>, requested_schema: Option<PyObject>) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // the array has one type; a consumer casts if it wants another
        let (array, schema) = to_ffi(&self.data).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let schema = PyCapsule::new(py, schema, Some(CString::new("arrow_schema").expect("no NUL")))?;
        let array = PyCapsule::new(py, array, Some(CString::new("arrow_array").expect("no NUL")))?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }
}

fn export(data: ArrayData) -> ArrowArray {
    ArrowArray { data }
}

/// An array from any object with ``__arrow_c_array__`` (pyarrow arrays), moved out of its capsule.
pub(crate) fn import(obj: &Bound<'_, PyAny>) -> PyResult<ArrayData> {
    if !obj.hasattr("__arrow_c_array__")? {
        return Err(PyTypeError::new_err("expected an Arrow array (an object with __arrow_c_array__)"));
    }
    let pair = obj.call_method0("__arrow_c_array__")?;
    let (schema, array): (Bound<PyAny>, Bound<PyAny>) = pair.extract()?;
    let schema = schema.downcast::<PyCapsule>()?;
    let array = array.downcast::<PyCapsule>()?;
    let named = |c: &Bound<PyCapsule>, want: &str| -> PyResult<()> {
        match c.name()? {
            Some(n) if n.to_bytes() == want.as_bytes() => Ok(()),
            _ => Err(PyValueError::new_err(format!("expected a PyCapsule named {want:?}"))),
        }
    };
    named(schema, "arrow_schema")?;
    named(array, "arrow_array")?;
    // SAFETY: the capsules are named as the C data interface specifies, so they point at an
    // ArrowSchema and an ArrowArray; the array is moved out (its release cleared in the capsule).
    unsafe {
        let schema = &*(schema.pointer() as *const FFI_ArrowSchema);
        let array = FFI_ArrowArray::from_raw(array.pointer() as *mut FFI_ArrowArray);
        from_ffi(array, schema).map_err(|e| PyValueError::new_err(format!("cannot import the Arrow array: {e}")))
    }
}

/// Binary values by row, for either offset width.
pub(crate) enum Values {
    Binary(BinaryArray),
    Large(LargeBinaryArray),
}

impl Values {
    pub(crate) fn of(data: ArrayData) -> PyResult<Self> {
        match data.data_type() {
            DataType::Binary => Ok(Values::Binary(BinaryArray::from(data))),
            DataType::LargeBinary => Ok(Values::Large(LargeBinaryArray::from(data))),
            other => Err(PyTypeError::new_err(format!("expected a binary or large_binary array, got {other}"))),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Values::Binary(a) => a.len(),
            Values::Large(a) => a.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        match self {
            Values::Binary(a) => a.is_valid(i).then(|| a.value(i)),
            Values::Large(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// ``convert_arrow(plan, values, keys=None)``: ``plan.convert`` over a binary (or
/// large_binary) Arrow array. Returns ``(counts, values, keys, variants)`` as Arrow arrays
/// (int32, large_binary, large_binary, int32): per input the number of output records
/// (``-1``: not handled, Python's), then the output records in order. A null input (a
/// tombstone) is not handled, as in ``convert``. ``keys``: the records' keys as a binary
/// array of the same length (null: a record without a key), for plans that ``needs_keys``
/// (the Debezium reader takes the primary key from them); without it such a plan handles
/// nothing, as ``convert`` without keys.
#[pyfunction]
#[pyo3(signature = (plan, values, keys=None))]
pub(crate) fn convert_arrow<'py>(
    py: Python<'py>,
    plan: &Bound<'py, CanalToDebezium>,
    values: &Bound<'py, PyAny>,
    keys: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let input = Values::of(import(values)?)?;
    let keys = keys.filter(|k| !k.is_none()).map(|k| import(k).and_then(Values::of)).transpose()?;
    if keys.as_ref().is_some_and(|k| k.len() != input.len()) {
        return Err(PyValueError::new_err("one key per value"));
    }
    let mut plan = plan.borrow_mut();
    let n = input.len();
    let mut counts = Int32Builder::with_capacity(n);
    let mut out_values = LargeBinaryBuilder::with_capacity(n, 0);
    let mut out_keys = LargeBinaryBuilder::with_capacity(n, 0);
    let mut out_variants = Int32Builder::with_capacity(n);
    let mut records = Vec::new();
    for i in 0..n {
        records.clear();
        let handled = match input.get(i) {
            // A panic (a bug) must not reach Python: the record goes to the Python path.
            Some(value) => match catch_unwind(AssertUnwindSafe(|| match &keys {
                Some(k) => plan.message_keyed(py, value, Some(k.get(i)), &mut records),
                None => plan.message(py, value, &mut records),
            })) {
                Ok(handled) => handled?,
                Err(_) => false,
            },
            None => false,
        };
        if !handled {
            counts.append_value(-1);
            continue;
        }
        counts.append_value(i32::try_from(records.len()).map_err(|_| PyValueError::new_err("too many records from one message"))?);
        for (value, key, variant) in records.drain(..) {
            out_values.append_option(value);
            out_keys.append_option(key);
            out_variants.append_value(i32::try_from(variant).map_err(|_| PyValueError::new_err("variant out of range"))?);
        }
    }
    let arrays = [
        export(counts.finish().into_data()),
        export(out_values.finish().into_data()),
        export(out_keys.finish().into_data()),
        export(out_variants.finish().into_data()),
    ];
    PyTuple::new(py, arrays.into_iter().map(|a| Bound::new(py, a)).collect::<PyResult<Vec<_>>>()?)
}

/// ``key_partitions(keys, n)``: Kafka's default partition of each key of a binary Arrow
/// array for a topic of ``n`` partitions (``(murmur2(key) & 0x7fffffff) % n``, as
/// ``connector.kafka.partitioner.partition_for``), ``-1`` for a null key (the caller
/// places keyless records by their source partition). An int32 Arrow array.
#[pyfunction]
pub(crate) fn key_partitions(keys: &Bound<'_, PyAny>, n: u32) -> PyResult<ArrowArray> {
    if n == 0 {
        return Err(PyValueError::new_err("a topic has at least one partition"));
    }
    let keys = Values::of(import(keys)?)?;
    let mut out = Int32Builder::with_capacity(keys.len());
    for i in 0..keys.len() {
        out.append_value(match keys.get(i) {
            Some(k) => ((murmur2_of(k) & 0x7fff_ffff) % n) as i32,
            None => -1,
        });
    }
    Ok(export(out.finish().into_data()))
}

const WHITESPACE: &[u8] = b" \t\n\r\x0b\x0c";
const BOM: &[u8] = b"\xef\xbb\xbf";

/// ``split_lines(data, end, first_line)``: the lines of ``data[:end]`` as the backfill reads a
/// JSON Lines file (``connector.framing.read_lines``: line end and one ``\r`` cut, a BOM cut
/// from line 1, blank lines skipped), as Arrow arrays ``(values, line numbers)``
/// (large_binary, int64), and the number of the line after them. ``data[:end]`` ends at a
/// line end, or at the end of the file.
#[pyfunction]
pub(crate) fn split_lines<'py>(py: Python<'py>, data: &[u8], end: usize, first_line: i64) -> PyResult<Bound<'py, PyTuple>> {
    let data = data.get(..end).ok_or_else(|| PyValueError::new_err("end is past the data"))?;
    let mut values = LargeBinaryBuilder::with_capacity(data.len() / 512 + 1, data.len());
    let mut lines = Int64Builder::with_capacity(data.len() / 512 + 1);
    let mut lineno = first_line;
    for raw in data.split_inclusive(|b| *b == b'\n') {
        let mut line = raw.strip_suffix(b"\n").unwrap_or(raw);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        if lineno == 1 {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if !line.iter().all(|b| WHITESPACE.contains(b)) {
            values.append_value(line);
            lines.append_value(lineno);
        }
        lineno += 1;
    }
    let values = Bound::new(py, export(values.finish().into_data()))?;
    let lines = Bound::new(py, export(lines.finish().into_data()))?;
    PyTuple::new(py, [values.into_any(), lines.into_any(), lineno.into_pyobject(py)?.into_any()])
}
