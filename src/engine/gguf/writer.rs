//! Streams a GGUF v3 file: header and tensor table first, then each tensor's bytes in order.
//!
//! Every tensor's name, shape and type are declared up front, so offsets are known before
//! any data exists; a converter can then produce (and drop) one tensor at a time.

use crate::arch::key::ALIGNMENT;
use super::value::{write_string, MetadataValue};
use super::{GgmlType, GgufError, DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VERSION};
use std::io::Write;

/// A tensor to be written: its name, ggml dims (innermost first) and type.
#[derive(Debug, Clone)]
pub struct TensorSpec {
    pub name: String,
    pub dims: Vec<u64>,
    pub dtype: GgmlType,
}

impl TensorSpec {
    /// A tensor of row-major `shape` (PyTorch order, e.g. `[out, in]` for a weight).
    pub fn new(name: impl Into<String>, shape: &[usize], dtype: GgmlType) -> Self {
        Self { name: name.into(), dims: shape.iter().rev().map(|&d| d as u64).collect(), dtype }
    }

    pub fn byte_len(&self) -> Result<u64, GgufError> {
        let elems: u64 = self.dims.iter().product();
        self.dtype.bytes_for(elems).ok_or_else(|| GgufError::Tensor {
            name: self.name.clone(),
            problem: format!("{} elements are not whole {} blocks", elems, self.dtype),
        })
    }
}

/// Writes one GGUF file to `W`.
pub struct GgufWriter<W: Write> {
    out: W,
    specs: Vec<TensorSpec>,
    offsets: Vec<u64>,
    next: usize,
    written: u64,
    alignment: u64,
}

impl<W: Write> GgufWriter<W> {
    /// Writes the header, the metadata and the tensor table. Tensor data must follow
    /// with [`write_tensor`](Self::write_tensor), in the order of `specs`.
    pub fn new(mut out: W, metadata: &[(String, MetadataValue)], specs: Vec<TensorSpec>) -> Result<Self, GgufError> {
        let mut head = Vec::new();
        head.extend_from_slice(&GGUF_MAGIC.to_le_bytes());
        head.extend_from_slice(&GGUF_VERSION.to_le_bytes());
        head.extend_from_slice(&(specs.len() as u64).to_le_bytes());
        let has_alignment = metadata.iter().any(|(k, _)| k == ALIGNMENT);
        let n_kv = metadata.len() + usize::from(!has_alignment);
        head.extend_from_slice(&(n_kv as u64).to_le_bytes());
        let mut alignment = DEFAULT_ALIGNMENT;
        for (key, value) in metadata {
            if key == ALIGNMENT {
                alignment = value.as_u64().filter(|a| a.is_power_of_two() && *a >= 8).ok_or_else(|| {
                    GgufError::Metadata { key: key.clone(), problem: "must be a power of two >= 8".into() }
                })?;
            }
            write_string(&mut head, key);
            head.extend_from_slice(&(value.value_type() as u32).to_le_bytes());
            value.write_payload(&mut head);
        }
        if !has_alignment {
            write_string(&mut head, ALIGNMENT);
            let v = MetadataValue::U32(alignment as u32);
            head.extend_from_slice(&(v.value_type() as u32).to_le_bytes());
            v.write_payload(&mut head);
        }
        let mut offsets = Vec::with_capacity(specs.len());
        let mut offset = 0u64;
        for spec in &specs {
            write_string(&mut head, &spec.name);
            head.extend_from_slice(&(spec.dims.len() as u32).to_le_bytes());
            for d in &spec.dims {
                head.extend_from_slice(&d.to_le_bytes());
            }
            head.extend_from_slice(&spec.dtype.id().to_le_bytes());
            head.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + spec.byte_len()?).div_ceil(alignment) * alignment;
        }
        let pad = (head.len() as u64).div_ceil(alignment) * alignment - head.len() as u64;
        head.resize(head.len() + pad as usize, 0);
        out.write_all(&head)?;
        Ok(Self { out, specs, offsets, next: 0, written: 0, alignment })
    }

    /// The specs still to be written, in order.
    pub fn pending(&self) -> &[TensorSpec] {
        &self.specs[self.next..]
    }

    /// Writes the next tensor's bytes; `name` must be the next declared tensor.
    pub fn write_tensor(&mut self, name: &str, data: &[u8]) -> Result<(), GgufError> {
        let spec = self.specs.get(self.next).ok_or_else(|| GgufError::Tensor {
            name: name.into(),
            problem: "written after all declared tensors".into(),
        })?;
        if spec.name != name {
            return Err(GgufError::Tensor {
                name: name.into(),
                problem: format!("written out of order (expected '{}')", spec.name),
            });
        }
        let expected = spec.byte_len()?;
        if data.len() as u64 != expected {
            return Err(GgufError::Tensor {
                name: name.into(),
                problem: format!("has {} bytes, its declared shape needs {expected}", data.len()),
            });
        }
        let pad = self.offsets[self.next] - self.written;
        self.out.write_all(&vec![0u8; pad as usize])?;
        self.out.write_all(data)?;
        self.written = self.offsets[self.next] + expected;
        self.next += 1;
        Ok(())
    }

    /// Checks that every declared tensor was written and flushes.
    pub fn finish(mut self) -> Result<W, GgufError> {
        if let Some(spec) = self.specs.get(self.next) {
            return Err(GgufError::Tensor { name: spec.name.clone(), problem: "declared but never written".into() });
        }
        // Pad the last tensor like the others: some readers size the data section that way.
        if let (Some(&offset), Some(spec)) = (self.offsets.last(), self.specs.last()) {
            let end = offset + spec.byte_len()?;
            let padded = end.div_ceil(self.alignment) * self.alignment;
            self.out.write_all(&vec![0u8; (padded - end) as usize])?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}
