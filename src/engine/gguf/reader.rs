//! Maps a GGUF file and validates its header and every tensor before use.
//!
//! Parsing never trusts a count or an offset from the file: every read is bounds-checked,
//! counts are checked against the bytes left, and each tensor's extent must lie inside the
//! data section, be aligned and not overlap another. Opening reads only the header pages;
//! tensor bytes are paged in by the kernel when first touched.

use crate::arch::key::ALIGNMENT;
use super::value::{MetadataValue, ValueType};
use super::{GgmlType, GgufError, DEFAULT_ALIGNMENT, GGUF_MAGIC};
use memmap2::Mmap;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Arrays may nest (the spec allows arrays of arrays) but not deeper than this.
const MAX_ARRAY_DEPTH: usize = 4;
const MAX_DIMS: u32 = 4;

/// Where one tensor lives and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: `dims[0]` is the contiguous (innermost) dimension.
    pub dims: Vec<u64>,
    pub dtype: GgmlType,
    /// Absolute offset of the first byte in the file.
    pub file_offset: u64,
    pub byte_len: u64,
}

impl TensorInfo {
    pub fn elem_count(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The shape in row-major (PyTorch) order: outermost dimension first.
    pub fn shape_rowmajor(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }
}

/// A validated, memory-mapped GGUF file.
pub struct GgufFile {
    mmap: Arc<Mmap>,
    pub version: u32,
    pub alignment: u64,
    pub metadata: BTreeMap<String, MetadataValue>,
    /// Tensors in file order.
    pub tensors: Vec<TensorInfo>,
    index: BTreeMap<String, usize>,
    pub data_offset: u64,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("version", &self.version)
            .field("tensors", &self.tensors.len())
            .field("metadata_keys", &self.metadata.len())
            .finish()
    }
}

impl GgufFile {
    /// Maps `path` and validates it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, GgufError> {
        let path = path.as_ref();
        let io_err = |source| GgufError::Io { path: path.display().to_string(), source };
        let file = std::fs::File::open(path).map_err(io_err)?;
        // SAFETY: the mapping is read-only. If another process truncates the file while it
        // is mapped, touching the lost pages raises SIGBUS; model files are installed
        // atomically (written elsewhere, then renamed), which never truncates a mapped file.
        let mmap = unsafe { Mmap::map(&file) }.map_err(io_err)?;
        Self::from_mmap(Arc::new(mmap))
    }

    /// Validates an existing mapping.
    pub fn from_mmap(mmap: Arc<Mmap>) -> Result<Self, GgufError> {
        let parsed = parse(&mmap)?;
        let mut index = BTreeMap::new();
        for (i, t) in parsed.tensors.iter().enumerate() {
            if index.insert(t.name.clone(), i).is_some() {
                return Err(GgufError::Tensor { name: t.name.clone(), problem: "appears twice".into() });
            }
        }
        Ok(Self {
            mmap,
            version: parsed.version,
            alignment: parsed.alignment,
            metadata: parsed.metadata,
            tensors: parsed.tensors,
            index,
            data_offset: parsed.data_offset,
        })
    }

    pub fn mmap(&self) -> &Arc<Mmap> {
        &self.mmap
    }

    pub fn file_len(&self) -> u64 {
        self.mmap.len() as u64
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }

    /// The tensor, or an error naming it as missing.
    pub fn require(&self, name: &str) -> Result<&TensorInfo, GgufError> {
        self.tensor(name)
            .ok_or_else(|| GgufError::Tensor { name: name.into(), problem: "missing from the file".into() })
    }

    /// The tensor's bytes, straight from the mapping (validated at open).
    pub fn tensor_bytes(&self, info: &TensorInfo) -> &[u8] {
        let start = info.file_offset as usize;
        &self.mmap[start..start + info.byte_len as usize]
    }

    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.metadata.get(key)
    }

    pub fn get_str(&self, key: &str) -> Result<&str, GgufError> {
        self.get(key).and_then(|v| v.as_str()).ok_or_else(|| missing(key, "a string"))
    }

    pub fn get_u64(&self, key: &str) -> Result<u64, GgufError> {
        self.get(key).and_then(|v| v.as_u64()).ok_or_else(|| missing(key, "an unsigned integer"))
    }

    pub fn get_f64(&self, key: &str) -> Result<f64, GgufError> {
        self.get(key).and_then(|v| v.as_f64()).ok_or_else(|| missing(key, "a number"))
    }
}

fn missing(key: &str, what: &str) -> GgufError {
    GgufError::Metadata { key: key.into(), problem: format!("missing or not {what}") }
}

struct Parsed {
    version: u32,
    alignment: u64,
    metadata: BTreeMap<String, MetadataValue>,
    tensors: Vec<TensorInfo>,
    data_offset: u64,
}

/// A bounds-checked reader over the file bytes.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], GgufError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| GgufError::Truncated(format!("file ends inside {what} at byte {}", self.pos)))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    fn u8(&mut self, what: &str) -> Result<u8, GgufError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, GgufError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }
    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= self.remaining())
            .ok_or_else(|| GgufError::Truncated(format!("{what}: string of {len} bytes exceeds the file")))?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| GgufError::Corrupt(format!("{what} is not valid UTF-8")))
    }

    /// A count of items each at least `min_item` bytes long: checked against the bytes left
    /// so that a hostile count cannot make us allocate or loop beyond the file.
    fn count(&mut self, what: &str, min_item: usize) -> Result<usize, GgufError> {
        let n = self.u64(what)?;
        let max = self.remaining() / min_item.max(1);
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| GgufError::Corrupt(format!("{what} is {n}, more than the file can hold")))
    }

    fn value(&mut self, t: ValueType, key: &str, depth: usize) -> Result<MetadataValue, GgufError> {
        use MetadataValue as V;
        Ok(match t {
            ValueType::U8 => V::U8(self.u8(key)?),
            ValueType::I8 => V::I8(self.u8(key)? as i8),
            ValueType::U16 => V::U16(self.u16(key)?),
            ValueType::I16 => V::I16(self.u16(key)? as i16),
            ValueType::U32 => V::U32(self.u32(key)?),
            ValueType::I32 => V::I32(self.u32(key)? as i32),
            ValueType::F32 => V::F32(f32::from_bits(self.u32(key)?)),
            ValueType::Bool => match self.u8(key)? {
                0 => V::Bool(false),
                1 => V::Bool(true),
                b => return Err(GgufError::Metadata { key: key.into(), problem: format!("bool byte {b}") }),
            },
            ValueType::String => V::String(self.string(key)?),
            ValueType::U64 => V::U64(self.u64(key)?),
            ValueType::I64 => V::I64(self.u64(key)? as i64),
            ValueType::F64 => V::F64(f64::from_bits(self.u64(key)?)),
            ValueType::Array => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufError::Metadata { key: key.into(), problem: "arrays nested too deeply".into() });
                }
                let et_id = self.u32(key)?;
                let et = ValueType::from_id(et_id).ok_or_else(|| GgufError::Metadata {
                    key: key.into(),
                    problem: format!("unknown array element type {et_id}"),
                })?;
                // Strings take at least their 8-byte length, arrays their 12-byte header.
                let min_item = et.scalar_size().unwrap_or(if et == ValueType::String { 8 } else { 12 });
                let n = self.count(key, min_item)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(et, key, depth + 1)?);
                }
                V::Array(et, items)
            }
        })
    }
}

fn parse(buf: &[u8]) -> Result<Parsed, GgufError> {
    let mut c = Cursor { buf, pos: 0 };
    let magic = c.u32("the magic number").map_err(|_| GgufError::Truncated("file is shorter than a GGUF header".into()))?;
    if magic != GGUF_MAGIC {
        return Err(GgufError::BadMagic(magic));
    }
    let version = c.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::BadVersion(version));
    }
    // Tensor infos take at least 8 (name len) + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset).
    let n_tensors = c.u64("the tensor count")?;
    let n_kv = c.u64("the metadata count")?;
    if n_tensors > (c.remaining() / 32) as u64 {
        return Err(GgufError::Corrupt(format!("tensor count {n_tensors} is more than the file can hold")));
    }
    if n_kv > (c.remaining() / 13) as u64 {
        return Err(GgufError::Corrupt(format!("metadata count {n_kv} is more than the file can hold")));
    }

    let mut metadata = BTreeMap::new();
    for _ in 0..n_kv {
        let key = c.string("a metadata key")?;
        let t_id = c.u32(&key)?;
        let t = ValueType::from_id(t_id)
            .ok_or_else(|| GgufError::Metadata { key: key.clone(), problem: format!("unknown value type {t_id}") })?;
        let value = c.value(t, &key, 0)?;
        if metadata.insert(key.clone(), value).is_some() {
            return Err(GgufError::Metadata { key, problem: "appears twice".into() });
        }
    }

    let alignment = match metadata.get(ALIGNMENT) {
        None => DEFAULT_ALIGNMENT,
        Some(v) => match v.as_u64() {
            Some(a) if a >= 8 && a.is_power_of_two() && a <= 1 << 20 => a,
            _ => {
                return Err(GgufError::Metadata {
                    key: ALIGNMENT.into(),
                    problem: format!("{v:?} is not a power of two between 8 and 1 MiB"),
                })
            }
        },
    };

    struct RawInfo {
        name: String,
        dims: Vec<u64>,
        dtype: GgmlType,
        offset: u64,
    }
    let mut raw = Vec::with_capacity(n_tensors as usize);
    for _ in 0..n_tensors {
        let name = c.string("a tensor name")?;
        let tensor_err = |problem: String| GgufError::Tensor { name: name.clone(), problem };
        let n_dims = c.u32(&name)?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(tensor_err(format!("{n_dims} dimensions (1 to {MAX_DIMS} allowed)")));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = c.u64(&name)?;
            if d == 0 {
                return Err(tensor_err("has a zero-sized dimension".into()));
            }
            dims.push(d);
        }
        let type_id = c.u32(&name)?;
        let dtype = GgmlType::from_id(type_id)
            .ok_or_else(|| tensor_err(format!("unsupported ggml type id {type_id}")))?;
        let offset = c.u64(&name)?;
        raw.push(RawInfo { name, dims, dtype, offset });
    }

    let data_offset = (c.pos as u64).div_ceil(alignment) * alignment;
    let file_len = buf.len() as u64;
    if data_offset > file_len {
        return Err(GgufError::Truncated("file ends before its data section".into()));
    }

    let mut tensors = Vec::with_capacity(raw.len());
    for r in raw {
        let tensor_err = |problem: String| GgufError::Tensor { name: r.name.clone(), problem };
        let elems = r
            .dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| tensor_err("element count overflows".into()))?;
        if r.dims[0] % r.dtype.block_elems() as u64 != 0 {
            return Err(tensor_err(format!(
                "row length {} is not a multiple of the {} block size {}",
                r.dims[0],
                r.dtype,
                r.dtype.block_elems()
            )));
        }
        let byte_len = r.dtype.bytes_for(elems).ok_or_else(|| tensor_err("byte size overflows".into()))?;
        if r.offset % alignment != 0 {
            return Err(tensor_err(format!("offset {} is not aligned to {alignment}", r.offset)));
        }
        let start = data_offset.checked_add(r.offset).ok_or_else(|| tensor_err("offset overflows".into()))?;
        let end = start.checked_add(byte_len).ok_or_else(|| tensor_err("extent overflows".into()))?;
        if end > file_len {
            return Err(GgufError::Truncated(format!(
                "tensor '{}' needs bytes {start}..{end} but the file has {file_len}",
                r.name
            )));
        }
        tensors.push(TensorInfo { name: r.name, dims: r.dims, dtype: r.dtype, file_offset: start, byte_len });
    }

    // No two tensors may share bytes: a crafted file could otherwise alias weights.
    let mut extents: Vec<(u64, u64, &str)> =
        tensors.iter().map(|t| (t.file_offset, t.file_offset + t.byte_len, t.name.as_str())).collect();
    extents.sort_unstable();
    for w in extents.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(GgufError::Corrupt(format!("tensors '{}' and '{}' overlap", w[0].2, w[1].2)));
        }
    }

    Ok(Parsed { version, alignment, metadata, tensors, data_offset })
}
