//! A weight matrix as the kernels read it: borrowed bytes of the mapped file, in any ggml type.

use crate::gguf::GgmlType;
use crate::quant::dequantize_row;

/// A weight matrix of `rows` x `cols` (PyTorch `[out, in]`) in `dtype`, borrowed bytes.
#[derive(Clone, Copy, Debug)]
pub struct WeightView<'a> {
    pub dtype: GgmlType,
    pub bytes: &'a [u8],
    pub rows: usize,
    pub cols: usize,
}

impl<'a> WeightView<'a> {
    pub fn row_bytes(&self) -> usize {
        self.cols / self.dtype.block_elems() * self.dtype.block_bytes()
    }

    /// Bytes of rows `start..start + count`.
    pub fn rows_bytes(&self, start: usize, count: usize) -> &'a [u8] {
        let rb = self.row_bytes();
        &self.bytes[start * rb..(start + count) * rb]
    }

    /// Decodes row `r` into `out` (`cols` values).
    pub fn decode_row(&self, r: usize, out: &mut [f32]) {
        if self.dtype == GgmlType::F16 {
            return super::dot::f16_to_f32(self.rows_bytes(r, 1), out);
        }
        // Shapes are validated when the weight is loaded; a mismatch here is a bug.
        dequantize_row(self.dtype, self.rows_bytes(r, 1), out).expect("weight row shape validated at load");
    }
}
