//! ``NativePlan.run``'s loop (``transforms/native.py``): the output ``Record`` objects made
//! here, and the records the plan did not handle given to the chain's Python path at their
//! place, rather than by the interpreter (its loop was about a fifth of the Python side of a
//! native conversion). Each record exactly as ``Record(value=, key=, topic=, headers=)``
//! makes it in Python; header edits stay Python's (``edit``).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::{ffi, intern};

#[cfg(not(windows))]
extern "C" {
    /// Calls without a keyword dict (``msgspec`` structs take keywords through vectorcall).
    /// In the stable ABI from 3.12; 3.11's libpython (the abi3 floor) exports it too, but not
    /// Windows' ``python3.dll`` before 3.12: there a keyword dict (``keywords``).
    fn PyObject_Vectorcall(callable: *mut ffi::PyObject, args: *const *mut ffi::PyObject, nargsf: usize, kwnames: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

/// ``callable(**dict(zip(names, args)))``.
#[cfg(not(windows))]
fn call_by_keyword<'py>(py: Python<'py>, callable: &Bound<'py, PyAny>, names: &Bound<'py, PyTuple>, args: [&Bound<'py, PyAny>; 4]) -> PyResult<Bound<'py, PyAny>> {
    let args = args.map(|a| a.as_ptr());
    // SAFETY: live arguments, all passed by keyword (``names``, as many); a new reference or NULL.
    unsafe { Bound::from_owned_ptr_or_err(py, PyObject_Vectorcall(callable.as_ptr(), args.as_ptr(), 0, names.as_ptr())) }
}

/// ``callable(**dict(zip(names, args)))``.
#[cfg(windows)]
fn call_by_keyword<'py>(py: Python<'py>, callable: &Bound<'py, PyAny>, names: &Bound<'py, PyTuple>, args: [&Bound<'py, PyAny>; 4]) -> PyResult<Bound<'py, PyAny>> {
    let keywords = pyo3::types::PyDict::new(py);
    for (name, arg) in names.iter().zip(args) {
        keywords.set_item(name, arg)?;
    }
    callable.call((), Some(&keywords))
}

/// For each of ``records`` in order: ``counts[i] < 0``: ``one(record, result)`` (the chain's
/// Python path, which appends to ``result``); else its ``counts[i]`` outputs appended to
/// ``result.outputs``, each ``record_type(value=, key=, topic=, headers=)`` from the plan's
/// next value, key and variant (``table[variant]``: its topic and header edits), its headers
/// a new list of the record's (``list(h) if h else []``: a host may mutate them), edited by
/// ``edit(headers, edits)`` where the variant has edits (Python's, the worker's too).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn place_records<'py>(
    py: Python<'py>,
    record_type: &Bound<'py, PyAny>,
    records: &Bound<'py, PyList>,
    counts: &Bound<'py, PyList>,
    values: &Bound<'py, PyList>,
    keys: &Bound<'py, PyList>,
    table: &Bound<'py, PyList>,
    variants: &Bound<'py, PyList>,
    edit: &Bound<'py, PyAny>,
    one: &Bound<'py, PyAny>,
    result: &Bound<'py, PyAny>,
) -> PyResult<()> {
    if counts.len() != records.len() || keys.len() != values.len() || variants.len() != values.len() {
        return Err(PyValueError::new_err("one count per record, one key and variant per value"));
    }
    // Per variant: its topic, and its header edits (``None``: none).
    let table = table.iter().map(|v| Ok((v.get_item(0)?, Some(v.get_item(1)?).filter(|e| !e.is_none())))).collect::<PyResult<Vec<_>>>()?;
    let outputs = result.getattr(intern!(py, "outputs"))?.downcast_into::<PyList>()?;
    let names = PyTuple::new(py, [intern!(py, "value"), intern!(py, "key"), intern!(py, "topic"), intern!(py, "headers")])?;
    let headers_name = intern!(py, "headers");
    let mut next = 0; // the next output's index in values, keys and variants
    for (record, count) in records.iter().zip(counts.iter()) {
        let count = count.extract::<isize>()?;
        if count < 0 {
            one.call1((&record, result))?;
            continue;
        }
        let source_headers = record.getattr(headers_name)?;
        let copy = source_headers.is_truthy()?;
        for _ in 0..count {
            let mut headers = if copy {
                // SAFETY: PySequence_List returns a new reference or NULL with an exception set.
                unsafe { Bound::from_owned_ptr_or_err(py, ffi::PySequence_List(source_headers.as_ptr()))? }
            } else {
                PyList::empty(py).into_any()
            };
            let variant = variants.get_item(next)?.extract::<usize>()?;
            let (topic, edits) = table.get(variant).ok_or_else(|| PyValueError::new_err("a variant the plan does not have"))?;
            if let Some(edits) = edits {
                headers = edit.call1((headers, edits))?;
            }
            let (value, key) = (values.get_item(next)?, keys.get_item(next)?);
            outputs.append(call_by_keyword(py, record_type, &names, [&value, &key, topic, &headers])?)?;
            next += 1;
        }
    }
    if next != values.len() {
        return Err(PyValueError::new_err("the counts do not add up to the outputs"));
    }
    Ok(())
}
