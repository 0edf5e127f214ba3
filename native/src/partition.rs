//! Kafka's default partitioner for keyed records: ``(murmur2(key) & 0x7fffffff) % n``,
//! as the Java client (``org.apache.kafka.common.utils.Utils.murmur2``) computes it.
//!
//! The worker hashes every output key of a batch in one call instead of one Python
//! call per record; ``connector/kafka/partitioner.py`` stays the reference (the
//! differential test holds the two equal).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

const M: u32 = 0x5bd1_e995;
const SEED: u32 = 0x9747_b28c;

/// Kafka's murmur2 of ``data``, unsigned (Java's ``int`` read as ``u32``).
pub fn murmur2_of(data: &[u8]) -> u32 {
    let length = data.len();
    let mut h: u32 = SEED ^ (length as u32);
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        let mut k = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        if rest.len() == 3 {
            h ^= (rest[2] as u32) << 16;
        }
        if rest.len() >= 2 {
            h ^= (rest[1] as u32) << 8;
        }
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// ``murmur2(data)`` as ``connector.kafka.partitioner.murmur2`` returns it.
#[pyfunction]
pub fn murmur2(data: &[u8]) -> u32 {
    murmur2_of(data)
}

/// The partition of each key for a topic of ``n`` partitions: the Java client's
/// ``(murmur2(key) & 0x7fffffff) % n``; a ``None`` key gets ``keyless % n``.
#[pyfunction]
#[pyo3(signature = (keys, n, keyless=0))]
pub fn partitions(keys: &Bound<'_, PyList>, n: u32, keyless: u32) -> PyResult<Vec<u32>> {
    if n == 0 {
        return Err(PyValueError::new_err("a topic has at least one partition"));
    }
    let mut out = Vec::with_capacity(keys.len());
    for key in keys.iter() {
        let p = if key.is_none() {
            keyless % n
        } else {
            let b = key.downcast::<PyBytes>()?;
            (murmur2_of(b.as_bytes()) & 0x7fff_ffff) % n
        };
        out.push(p);
    }
    Ok(out)
}
