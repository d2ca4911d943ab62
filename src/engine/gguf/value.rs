//! GGUF metadata values: the typed key/value pairs in the file's header.

/// The value type ids of the GGUF spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl ValueType {
    pub fn from_id(id: u32) -> Option<Self> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// Size in the file of one scalar of this type (None for strings and arrays).
    pub fn scalar_size(self) -> Option<usize> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }
}

/// One metadata value. Arrays keep their element type so that an empty array
/// round-trips with the type it was written with.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(ValueType, Vec<MetadataValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl MetadataValue {
    pub fn value_type(&self) -> ValueType {
        match self {
            MetadataValue::U8(_) => ValueType::U8,
            MetadataValue::I8(_) => ValueType::I8,
            MetadataValue::U16(_) => ValueType::U16,
            MetadataValue::I16(_) => ValueType::I16,
            MetadataValue::U32(_) => ValueType::U32,
            MetadataValue::I32(_) => ValueType::I32,
            MetadataValue::F32(_) => ValueType::F32,
            MetadataValue::Bool(_) => ValueType::Bool,
            MetadataValue::String(_) => ValueType::String,
            MetadataValue::Array(..) => ValueType::Array,
            MetadataValue::U64(_) => ValueType::U64,
            MetadataValue::I64(_) => ValueType::I64,
            MetadataValue::F64(_) => ValueType::F64,
        }
    }

    /// Any non-negative integer value as u64 (GGUF writers differ in which width they use).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetadataValue::U8(v) => Some(v as u64),
            MetadataValue::U16(v) => Some(v as u64),
            MetadataValue::U32(v) => Some(v as u64),
            MetadataValue::U64(v) => Some(v),
            MetadataValue::I8(v) => u64::try_from(v).ok(),
            MetadataValue::I16(v) => u64::try_from(v).ok(),
            MetadataValue::I32(v) => u64::try_from(v).ok(),
            MetadataValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetadataValue::F32(v) => Some(v as f64),
            MetadataValue::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetadataValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetadataValue::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[MetadataValue]> {
        match self {
            MetadataValue::Array(_, items) => Some(items),
            _ => None,
        }
    }

    /// Encodes the value (without its type id) the way GGUF stores it.
    pub(crate) fn write_payload(&self, out: &mut Vec<u8>) {
        match self {
            MetadataValue::U8(v) => out.push(*v),
            MetadataValue::I8(v) => out.push(*v as u8),
            MetadataValue::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::Bool(v) => out.push(*v as u8),
            MetadataValue::String(s) => write_string(out, s),
            MetadataValue::Array(t, items) => {
                out.extend_from_slice(&(*t as u32).to_le_bytes());
                out.extend_from_slice(&(items.len() as u64).to_le_bytes());
                for item in items {
                    item.write_payload(out);
                }
            }
            MetadataValue::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
            MetadataValue::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
}

pub(crate) fn write_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl From<u32> for MetadataValue {
    fn from(v: u32) -> Self {
        MetadataValue::U32(v)
    }
}
impl From<i32> for MetadataValue {
    fn from(v: i32) -> Self {
        MetadataValue::I32(v)
    }
}
impl From<f32> for MetadataValue {
    fn from(v: f32) -> Self {
        MetadataValue::F32(v)
    }
}
impl From<bool> for MetadataValue {
    fn from(v: bool) -> Self {
        MetadataValue::Bool(v)
    }
}
impl From<&str> for MetadataValue {
    fn from(v: &str) -> Self {
        MetadataValue::String(v.to_string())
    }
}
impl From<String> for MetadataValue {
    fn from(v: String) -> Self {
        MetadataValue::String(v)
    }
}
