//! Kafka v2 record batches (``RecordBatch``, magic 2, no compression) written from a
//! list of output rows in one call, byte for byte as aiokafka's own
//! ``DefaultRecordBatchBuilder`` writes them: the worker hands these bytes to aiokafka's
//! producer as a ready batch instead of appending record by record in Python.
//!
//! A row is ``(key, value, timestamp_ms | None, headers)``, ``headers`` a sequence of
//! ``(str, bytes | None)``. The batch header is written by :meth:`KafkaBatch.build`, at
//! the moment the producer drains the batch: an idempotent or transactional producer
//! stamps its producer id, epoch and base sequence then (they are covered by the CRC).
//! ``connector/kafka/produce.py`` (``NativeBatch``) wraps it as aiokafka's ``BatchBuilder``;
//! ``tests/test_kafka_batch.py`` holds the bytes equal to aiokafka's builder's.
//!
//! The backfill's Kafka sink writes its converted records from Arrow columns instead
//! (``arrow_parts``: an Arrow record batch grouped by topic and partition, each group an
//! ``ArrowPart`` that ``append`` takes where it takes a row list): the same record bytes,
//! with no Python object per record.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, ListArray, StringArray, StructArray};
use arrow_schema::DataType;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};

use crate::arrow::{import, Values};

/// ``>qiibIhiqqqhii``: base offset .. record count.
const HEADER_SIZE: usize = 61;
const LENGTH_OFFSET: usize = 8;
/// The batch length counts the bytes after the length field.
const AFTER_LENGTH: usize = 12;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const TRANSACTIONAL: i16 = 0x10;

/// Kafka's (zigzag) varint of ``value``.
fn put_varint(buf: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn varint_size(value: i64) -> usize {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// ``bytes`` or ``bytearray`` contents, ``None`` for ``None``; anything else is a ``TypeError``
/// naming ``what`` (aiokafka's builder refuses the same).
fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Option<&'a [u8]>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(Some(b.as_bytes()));
    }
    if let Ok(b) = obj.downcast::<PyByteArray>() {
        // SAFETY: the slice is read (copied into the batch) before any Python code runs.
        return Ok(Some(unsafe { b.as_bytes() }));
    }
    Err(PyTypeError::new_err(format!("Not supported type for {what}: {}", obj.get_type().name()?)))
}

/// A header's ``(name, value)``: a tuple, or any sequence of two.
fn header_pair<'py>(header: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if header.len().ok() != Some(2) {
        return Err(PyTypeError::new_err("a header is a (name, value) pair"));
    }
    if let Ok(t) = header.downcast::<PyTuple>() {
        return Ok((t.get_item(0)?, t.get_item(1)?));
    }
    Ok((header.get_item(0)?, header.get_item(1)?))
}

/// A header: its name's length and bytes, then its value.
fn put_header(buf: &mut Vec<u8>, name: &[u8], value: Option<&[u8]>) {
    put_varint(buf, name.len() as i64);
    buf.extend_from_slice(name);
    put_bytes(buf, value);
}

fn put_bytes(buf: &mut Vec<u8>, data: Option<&[u8]>) {
    match data {
        None => put_varint(buf, -1),
        Some(d) => {
            put_varint(buf, d.len() as i64);
            buf.extend_from_slice(d);
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// One uncompressed v2 record batch being filled (see the module docs).
#[pyclass(module = "cdc_smt._native")]
pub struct KafkaBatch {
    /// The records, after ``HEADER_SIZE`` bytes left for the header.
    buf: Vec<u8>,
    /// One record's body, reused.
    record: Vec<u8>,
    batch_size: usize,
    transactional: bool,
    count: i64,
    first_timestamp: Option<i64>,
    max_timestamp: i64,
}

impl KafkaBatch {
    /// Start a record in ``self.record`` (without its length): attributes, timestamp and offset
    /// deltas, key and value; its headers follow (``put_header``).
    fn begin_record(&mut self, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) {
        let delta = self.first_timestamp.map_or(0, |first| timestamp - first);
        let rec = &mut self.record;
        rec.clear();
        rec.push(0); // attributes
        put_varint(rec, delta);
        put_varint(rec, self.count);
        put_bytes(rec, key);
        put_bytes(rec, value);
    }

    /// Encode one row into ``self.record`` (without its length); its timestamp.
    fn encode_row(&mut self, row: &Bound<'_, PyAny>) -> PyResult<i64> {
        let row = row.downcast::<PyTuple>().map_err(|_| PyTypeError::new_err("a row is a (key, value, timestamp, headers) tuple"))?;
        if row.len() != 4 {
            return Err(PyTypeError::new_err("a row is a (key, value, timestamp, headers) tuple"));
        }
        let key_obj = row.get_borrowed_item(0)?;
        let value_obj = row.get_borrowed_item(1)?;
        let ts_obj = row.get_borrowed_item(2)?;
        let headers = row.get_borrowed_item(3)?;
        let timestamp = if ts_obj.is_none() { now_ms() } else { ts_obj.extract::<i64>()? };
        self.begin_record(timestamp, bytes_of(&key_obj, "key")?, bytes_of(&value_obj, "value")?);
        let rec = &mut self.record;
        if headers.is_none() {
            put_varint(rec, 0);
        } else {
            put_varint(rec, headers.len()? as i64);
            for header in headers.try_iter()? {
                let header = header?;
                let (name, value) = header_pair(&header)?;
                let name = name.downcast::<PyString>().map_err(|_| PyTypeError::new_err("a header's name is a str"))?;
                put_header(rec, name.to_str()?.as_bytes(), bytes_of(&value, "header value")?);
            }
        }
        Ok(timestamp)
    }

    /// Encode row ``row`` of Arrow ``records`` into ``self.record``, as ``encode_row`` the same
    /// record as a row tuple (a null timestamp: now); its timestamp.
    fn encode_arrow_row(&mut self, records: &ArrowRecords, row: usize) -> PyResult<i64> {
        let timestamp = if records.timestamps.is_valid(row) { records.timestamps.value(row) } else { now_ms() };
        self.begin_record(timestamp, records.keys.get(row), records.values.get(row));
        let rec = &mut self.record;
        if records.headers.is_null(row) {
            put_varint(rec, 0);
            return Ok(timestamp);
        }
        let offsets = records.headers.value_offsets();
        let (from, to) = (offsets[row] as usize, offsets[row + 1] as usize);
        put_varint(rec, (to - from) as i64);
        for h in from..to {
            if records.header_pairs.is_null(h) || records.header_names.is_null(h) {
                return Err(PyTypeError::new_err("a header's name is a str"));
            }
            put_header(rec, records.header_names.value(h).as_bytes(), records.header_values.get(h));
        }
        Ok(timestamp)
    }

    /// Take the record in ``self.record`` (of ``timestamp``) when it fits; ``false``: the batch is full.
    fn take_record(&mut self, timestamp: i64) -> bool {
        let length = self.record.len();
        let required = length + varint_size(length as i64);
        // aiokafka's C builder (the one its wheels use) starts a new batch when the record
        // would reach ``batch_size`` (its pure-Python twin only past it); a first record
        // always goes in.
        if self.count > 0 && required + self.buf.len() >= self.batch_size {
            return false;
        }
        match self.first_timestamp {
            None => {
                self.first_timestamp = Some(timestamp);
                self.max_timestamp = timestamp;
            }
            Some(_) => self.max_timestamp = self.max_timestamp.max(timestamp),
        }
        put_varint(&mut self.buf, length as i64);
        self.buf.extend_from_slice(&self.record);
        self.count += 1;
        true
    }
}

#[pymethods]
impl KafkaBatch {
    /// An empty batch of less than ``batch_size`` bytes (a first record larger than that
    /// is still taken, as aiokafka takes it).
    #[new]
    #[pyo3(signature = (batch_size, transactional=false))]
    fn new(batch_size: usize, transactional: bool) -> Self {
        KafkaBatch {
            buf: vec![0; HEADER_SIZE],
            record: Vec::with_capacity(1024),
            batch_size,
            transactional,
            count: 0,
            first_timestamp: None,
            max_timestamp: 0,
        }
    }

    /// Append ``rows[start:]`` while they fit; the index of the first row not taken
    /// (``len(rows)`` when all were). ``rows``: a list of row tuples, or an ``ArrowPart``
    /// (one topic partition's rows of an Arrow batch, ``arrow_parts``).
    #[pyo3(signature = (rows, start=0))]
    fn append(&mut self, rows: &Bound<'_, PyAny>, start: usize) -> PyResult<usize> {
        if let Ok(part) = rows.downcast::<ArrowPart>() {
            let part = part.get();
            for (i, &row) in part.rows.iter().enumerate().skip(start) {
                let timestamp = self.encode_arrow_row(&part.records, row)?;
                if !self.take_record(timestamp) {
                    return Ok(i);
                }
            }
            return Ok(part.rows.len());
        }
        let rows = rows.downcast::<PyList>().map_err(|_| PyTypeError::new_err("rows are a list of row tuples or an ArrowPart"))?;
        let n = rows.len();
        for i in start..n {
            let timestamp = self.encode_row(&rows.get_item(i)?)?;
            if !self.take_record(timestamp) {
                return Ok(i);
            }
        }
        Ok(n)
    }

    /// How many records the batch holds.
    fn record_count(&self) -> i64 {
        self.count
    }

    /// Bytes written so far, the header included.
    fn size(&self) -> usize {
        self.buf.len()
    }

    /// The finished batch with the producer's id, epoch and base sequence (``-1, -1, 0``
    /// for a producer without idempotence).
    #[pyo3(signature = (producer_id=-1, producer_epoch=-1, base_sequence=0))]
    fn build<'py>(&self, py: Python<'py>, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> PyResult<Bound<'py, PyBytes>> {
        if self.count == 0 {
            return Err(PyValueError::new_err("an empty batch is not sent"));
        }
        PyBytes::new_with(py, self.buf.len(), |out| {
            out[HEADER_SIZE..].copy_from_slice(&self.buf[HEADER_SIZE..]);
            let mut h = Vec::with_capacity(HEADER_SIZE);
            h.extend_from_slice(&0i64.to_be_bytes()); // base offset: the broker's
            h.extend_from_slice(&((self.buf.len() - AFTER_LENGTH) as i32).to_be_bytes());
            h.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
            h.push(2); // magic
            h.extend_from_slice(&0u32.to_be_bytes()); // crc, below
            h.extend_from_slice(&(if self.transactional { TRANSACTIONAL } else { 0 }).to_be_bytes());
            h.extend_from_slice(&((self.count - 1) as i32).to_be_bytes()); // last offset delta
            h.extend_from_slice(&self.first_timestamp.unwrap_or(0).to_be_bytes());
            h.extend_from_slice(&self.max_timestamp.to_be_bytes());
            h.extend_from_slice(&producer_id.to_be_bytes());
            h.extend_from_slice(&producer_epoch.to_be_bytes());
            h.extend_from_slice(&base_sequence.to_be_bytes());
            h.extend_from_slice(&(self.count as i32).to_be_bytes());
            debug_assert_eq!(h.len(), HEADER_SIZE);
            debug_assert_eq!(&h[LENGTH_OFFSET..LENGTH_OFFSET + 4], &((self.buf.len() - AFTER_LENGTH) as i32).to_be_bytes());
            out[..HEADER_SIZE].copy_from_slice(&h);
            let crc = crc32c::crc32c(&out[ATTRIBUTES_OFFSET..]);
            out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
            Ok(())
        })
    }
}

/// The columns of converted records a batch is written from (the backfill's
/// ``process.KAFKA_OUTPUT_SCHEMA``: ``key``, ``value``, ``headers``, ``timestamp``).
struct ArrowRecords {
    keys: Values,
    values: Values,
    /// Epoch milliseconds; null: the time of writing (as aiokafka's ``timestamp=None``).
    timestamps: Int64Array,
    /// Per record a list of ``{key, value}`` structs, unpacked into its three arrays below.
    headers: ListArray,
    header_pairs: StructArray,
    header_names: StringArray,
    header_values: Values,
}

/// One topic partition's records of an Arrow batch, in batch order: what
/// ``KafkaBatch.append`` takes instead of a row list (``arrow_parts`` makes them).
#[pyclass(module = "cdc_smt._native", frozen)]
pub struct ArrowPart {
    records: Arc<ArrowRecords>,
    rows: Vec<usize>,
    #[pyo3(get)]
    topic: String,
    #[pyo3(get)]
    partition: i32,
}

#[pymethods]
impl ArrowPart {
    fn __len__(&self) -> usize {
        self.rows.len()
    }
}

/// A named column of ``batch``, or a ``TypeError`` naming it.
fn column<'a>(batch: &'a StructArray, name: &str) -> PyResult<&'a ArrayRef> {
    batch.column_by_name(name).ok_or_else(|| PyTypeError::new_err(format!("the records have no {name:?} column")))
}

/// ``column`` as the concrete array type ``T`` (``what``: its type, for the error).
fn typed<'a, T: 'static>(array: &'a ArrayRef, name: &str, what: &str) -> PyResult<&'a T> {
    array.as_any().downcast_ref::<T>().ok_or_else(|| PyTypeError::new_err(format!("the {name:?} column is not {what}")))
}

impl ArrowRecords {
    fn of(batch: &StructArray) -> PyResult<Self> {
        let headers = typed::<ListArray>(column(batch, "headers")?, "headers", "a list of {key, value} structs")?.clone();
        let header_pairs = typed::<StructArray>(headers.values(), "headers", "a list of {key, value} structs")?.clone();
        let header_names = typed::<StringArray>(column(&header_pairs, "key")?, "headers", "keyed by strings")?.clone();
        let header_values = Values::of(column(&header_pairs, "value")?.to_data())?;
        Ok(ArrowRecords {
            keys: Values::of(column(batch, "key")?.to_data())?,
            values: Values::of(column(batch, "value")?.to_data())?,
            timestamps: typed::<Int64Array>(column(batch, "timestamp")?, "timestamp", "int64")?.clone(),
            headers,
            header_pairs,
            header_names,
            header_values,
        })
    }
}

/// ``arrow_parts(records, partitions)``: the records of an Arrow record batch (``topic``,
/// ``key``, ``value``, ``headers``, ``timestamp`` columns, as ``process.KAFKA_OUTPUT_SCHEMA``)
/// grouped by topic and partition (``partitions``: an int32 array, one per record), each group
/// in batch order, the groups in the order of their first records. A record without a topic or
/// a partition is a ``ValueError``.
#[pyfunction]
pub fn arrow_parts(records: &Bound<'_, PyAny>, partitions: &Bound<'_, PyAny>) -> PyResult<Vec<ArrowPart>> {
    let batch = import(records)?;
    if !matches!(batch.data_type(), DataType::Struct(_)) {
        return Err(PyTypeError::new_err("expected an Arrow record batch (a struct array)"));
    }
    let batch = StructArray::from(batch);
    let partitions = import(partitions)?;
    if partitions.data_type() != &DataType::Int32 {
        return Err(PyTypeError::new_err("the partitions are an int32 array"));
    }
    let partitions = Int32Array::from(partitions);
    if partitions.len() != batch.len() {
        return Err(PyValueError::new_err("one partition per record"));
    }
    let topics = typed::<StringArray>(column(&batch, "topic")?, "topic", "a string array")?;
    let records = Arc::new(ArrowRecords::of(&batch)?);
    let mut groups: Vec<(String, i32, Vec<usize>)> = Vec::new();
    let mut index: HashMap<(&str, i32), usize> = HashMap::new();
    for row in 0..batch.len() {
        if topics.is_null(row) {
            return Err(PyValueError::new_err("a record to produce needs a topic"));
        }
        if partitions.is_null(row) {
            return Err(PyValueError::new_err("a record to produce needs a partition"));
        }
        let (topic, partition) = (topics.value(row), partitions.value(row));
        let at = *index.entry((topic, partition)).or_insert_with(|| {
            groups.push((topic.to_owned(), partition, Vec::new()));
            groups.len() - 1
        });
        groups[at].2.push(row);
    }
    Ok(groups
        .into_iter()
        .map(|(topic, partition, rows)| ArrowPart { records: Arc::clone(&records), rows, topic, partition })
        .collect())
}

/// Every output of a fetched batch into its partition's row list, as the worker produces
/// them: output ``j`` (``keys[j]``, ``values[j]``) of message ``i`` (``counts[i]`` outputs
/// each, in order) becomes ``(key, value, timestamp, headers)`` appended to
/// ``rows[parts[j]]``, with the message's ``timestamp`` (negative: ``None``) and a copy of its
/// ``headers`` (a new list per output). One call instead of a Python tuple and append per output.
#[pyfunction]
pub fn place_rows(
    rows: &Bound<'_, PyList>,
    parts: Vec<usize>,
    messages: &Bound<'_, PyAny>,
    counts: Vec<i64>,
    keys: &Bound<'_, PyList>,
    values: &Bound<'_, PyList>,
) -> PyResult<()> {
    let py = rows.py();
    let n = keys.len();
    if values.len() != n || parts.len() != n || counts.iter().map(|&c| c.max(0)).sum::<i64>() as usize != n {
        return Err(PyValueError::new_err("place_rows: keys, values, parts and counts do not agree"));
    }
    let targets: Vec<Bound<'_, PyList>> = rows.iter().map(|r| r.downcast_into::<PyList>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
    let timestamp_name = pyo3::intern!(py, "timestamp");
    let headers_name = pyo3::intern!(py, "headers");
    let mut j = 0;
    for (message, &count) in messages.try_iter()?.zip(counts.iter()) {
        if count <= 0 {
            continue;
        }
        let message = message?;
        let mut timestamp = message.getattr(timestamp_name)?;
        if !timestamp.is_none() && timestamp.extract::<i64>()? < 0 {
            timestamp = py.None().into_bound(py);
        }
        let source_headers = message.getattr(headers_name)?;
        let has_headers = !source_headers.is_none() && source_headers.len()? > 0;
        for _ in 0..count {
            let headers = if has_headers { PyList::new(py, source_headers.try_iter()?.collect::<PyResult<Vec<_>>>()?)? } else { PyList::empty(py) };
            let row = PyTuple::new(py, [keys.get_item(j)?, values.get_item(j)?, timestamp.clone(), headers.into_any()])?;
            let target = targets.get(parts[j]).ok_or_else(|| PyValueError::new_err("place_rows: a partition past the row lists"))?;
            target.append(row)?;
            j += 1;
        }
    }
    if j != n {
        return Err(PyValueError::new_err("place_rows: fewer messages than counts"));
    }
    Ok(())
}
