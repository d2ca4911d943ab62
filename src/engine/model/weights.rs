//! Tensors of the model file, borrowed from the mapping, checked against the shapes the
//! model expects.

use crate::gguf::{GgmlType, GgufError, GgufFile, TensorInfo};
use crate::kernels::WeightView;
use crate::quant::dequantize_row;
use memmap2::Mmap;
use std::sync::Arc;

/// One tensor inside the mapped file: cheap to clone, bytes paged in on first touch.
#[derive(Clone)]
pub struct MappedTensor {
    mmap: Arc<Mmap>,
    offset: usize,
    len: usize,
    pub name: String,
    pub dtype: GgmlType,
    /// Row-major shape (PyTorch order).
    pub shape: Vec<usize>,
}

impl std::fmt::Debug for MappedTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?} {}", self.name, self.shape, self.dtype)
    }
}

impl MappedTensor {
    pub fn new(file: &GgufFile, info: &TensorInfo) -> Self {
        Self {
            mmap: file.mmap().clone(),
            offset: info.file_offset as usize,
            len: info.byte_len as usize,
            name: info.name.clone(),
            dtype: info.dtype,
            shape: info.shape_rowmajor(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.mmap[self.offset..self.offset + self.len]
    }

    /// Byte range of this tensor within the file.
    pub fn file_range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.len
    }

    pub fn mmap(&self) -> &Arc<Mmap> {
        &self.mmap
    }

    /// Gives this tensor's pages of the mapping back to the kernel (after uploading it to a
    /// GPU). On Jetson the CPU and GPU share DRAM: without this the weights are paid twice.
    /// Only whole pages inside the tensor are released; a later read pages them back in.
    pub fn release_pages(&self) {
        let page = 4096usize;
        let start = self.offset.div_ceil(page) * page;
        let end = (self.offset + self.len) / page * page;
        if end > start {
            // SAFETY: the mapping is read-only and file-backed: MADV_DONTNEED drops the
            // page-cache references, and any later access re-reads the same bytes.
            let _ = unsafe { self.mmap.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
        }
    }

    /// This tensor as a `rows x cols` matrix (it must be 2-D).
    pub fn matrix(&self) -> WeightView<'_> {
        WeightView { dtype: self.dtype, bytes: self.bytes(), rows: self.shape[0], cols: self.shape[1] }
    }

    /// All values as f32 (for small tensors: norms and biases).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        let n: usize = self.shape.iter().product();
        let mut out = vec![0f32; n];
        dequantize_row(self.dtype, self.bytes(), &mut out).expect("tensor size validated at open");
        out
    }
}

/// Looks tensors up by name and checks their shapes.
pub struct WeightLoader<'a> {
    pub file: &'a GgufFile,
}

impl<'a> WeightLoader<'a> {
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<MappedTensor, GgufError> {
        let info = self.file.require(name)?;
        let t = MappedTensor::new(self.file, info);
        if t.shape != shape {
            return Err(GgufError::Tensor {
                name: name.into(),
                problem: format!("has shape {:?}, the model config needs {:?}", t.shape, shape),
            });
        }
        Ok(t)
    }

    /// A 1-D tensor (norm gains, biases) that must be stored unquantized.
    pub fn vector(&self, name: &str, len: usize) -> Result<MappedTensor, GgufError> {
        let t = self.get(name, &[len])?;
        if t.dtype.is_quantized() {
            return Err(GgufError::Tensor { name: name.into(), problem: format!("is {}, vectors must be f32/f16", t.dtype) });
        }
        Ok(t)
    }

    pub fn optional(&self, name: &str, shape: &[usize]) -> Result<Option<MappedTensor>, GgufError> {
        match self.file.tensor(name) {
            None => Ok(None),
            Some(_) => self.get(name, shape).map(Some),
        }
    }
}
