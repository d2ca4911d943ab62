//! Small, panic-free accessors for lopdf objects: dereference, look up, convert.

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

/// Follow references (lopdf bounds the chain); a dangling reference reads as `Null`.
pub(crate) fn deref<'a>(doc: &'a Document, o: &'a Object) -> &'a Object {
    match o {
        Object::Reference(_) => doc.dereference(o).map(|(_, o)| o).unwrap_or(&Object::Null),
        _ => o,
    }
}

/// `d[key]`, dereferenced; `None` when absent or null.
pub(crate) fn get<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    match deref(doc, d.get(key).ok()?) {
        Object::Null => None,
        o => Some(o),
    }
}

/// The dictionary of a dictionary or stream object.
pub(crate) fn dict_of<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Dictionary> {
    match deref(doc, o) {
        Object::Dictionary(d) => Some(d),
        Object::Stream(s) => Some(&s.dict),
        _ => None,
    }
}

pub(crate) fn get_dict<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a Dictionary> {
    dict_of(doc, d.get(key).ok()?)
}

pub(crate) fn get_stream<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a Stream> {
    match get(doc, d, key)? {
        Object::Stream(s) => Some(s),
        _ => None,
    }
}

pub(crate) fn get_array<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a [Object]> {
    match get(doc, d, key)? {
        Object::Array(a) => Some(a),
        _ => None,
    }
}

pub(crate) fn get_name<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a [u8]> {
    match get(doc, d, key)? {
        Object::Name(n) => Some(n),
        _ => None,
    }
}

pub(crate) fn get_num(doc: &Document, d: &Dictionary, key: &[u8]) -> Option<f64> {
    num(deref(doc, d.get(key).ok()?))
}

/// A number (integer or real), finite.
pub(crate) fn num(o: &Object) -> Option<f64> {
    let v = match o {
        Object::Integer(i) => *i as f64,
        Object::Real(r) => f64::from(*r),
        _ => return None,
    };
    v.is_finite().then_some(v)
}

pub(crate) fn num_deref(doc: &Document, o: &Object) -> Option<f64> {
    num(deref(doc, o))
}

/// The id an object refers to, if it is a reference.
pub(crate) fn ref_id(o: &Object) -> Option<ObjectId> {
    match o {
        Object::Reference(id) => Some(*id),
        _ => None,
    }
}

/// A 6-number matrix array, if well-formed.
pub(crate) fn matrix(doc: &Document, o: Option<&Object>) -> Option<[f64; 6]> {
    let arr = match deref(doc, o?) {
        Object::Array(a) => a,
        _ => return None,
    };
    if arr.len() != 6 {
        return None;
    }
    let mut m = [0.0; 6];
    for (slot, v) in m.iter_mut().zip(arr) {
        *slot = num_deref(doc, v)?;
    }
    Some(m)
}

/// A rectangle array normalised to (x0, y0, x1, y1) with x0 <= x1, y0 <= y1.
pub(crate) fn rect(doc: &Document, o: Option<&Object>) -> Option<[f64; 4]> {
    let arr = match deref(doc, o?) {
        Object::Array(a) => a,
        _ => return None,
    };
    if arr.len() != 4 {
        return None;
    }
    let mut r = [0.0; 4];
    for (slot, v) in r.iter_mut().zip(arr) {
        *slot = num_deref(doc, v)?;
    }
    Some([r[0].min(r[2]), r[1].min(r[3]), r[0].max(r[2]), r[1].max(r[3])])
}
