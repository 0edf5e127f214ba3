//! A JSON value re-written as ``orjson.dumps(orjson.loads(raw))`` writes it: what the
//! Python path does to a field it copies from the input message. Only values whose
//! round trip this module knows for certain are written (strings, integers in 64 bits,
//! booleans, null, and arrays/objects of them without repeated keys); anything else
//! (floats, huge integers, a repeated key whose Python dict keeps the last value) is an
//! error, and the record goes to Python.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::canal::Text;
use crate::json;

/// ``raw`` (one JSON value) re-written into ``out``; ``Err`` when it is not one this module writes.
pub fn write(out: &mut Vec<u8>, raw: &str) -> Result<(), ()> {
    let mut de = serde_json::Deserializer::from_str(raw);
    let start = out.len();
    let ok = Canon(out).deserialize(&mut de).is_ok() && de.end().is_ok();
    if !ok {
        out.truncate(start);
        return Err(());
    }
    Ok(())
}

/// The re-written bytes of ``raw`` (see [`write`]).
pub fn of(raw: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    write(&mut out, raw).ok().map(|_| out)
}

struct Canon<'o>(&'o mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Canon<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Canon<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value of strings, integers, booleans and nulls")
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        json::write_int(self.0, v);
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        json::write_int(self.0, v);
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom("a float (or an integer beyond 64 bits): Python's round trip decides"))
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        json::write_str(self.0, v);
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'[');
        let mut first = true;
        loop {
            let mark = out.len();
            if !first {
                out.push(b',');
            }
            if seq.next_element_seed(Canon(&mut *out))?.is_none() {
                out.truncate(mark);
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'{');
        let mut keys: Vec<Text<'de>> = Vec::new();
        while let Some(k) = map.next_key::<Text<'de>>()? {
            if keys.iter().any(|seen| seen.0 == k.0) {
                return Err(de::Error::custom("repeated key"));
            }
            if !keys.is_empty() {
                out.push(b',');
            }
            json::write_str(out, &k.0);
            out.push(b':');
            map.next_value_seed(Canon(&mut *out))?;
            keys.push(k);
        }
        out.push(b'}');
        Ok(())
    }
}
