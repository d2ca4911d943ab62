//! `y = x W^T + b` with `W` in any ggml type the engine loads, read in place.
//!
//! Work is split over tiles of weight rows (all cores, rayon); each tile meets every input
//! row while it is in cache. Q4_0/Q4_1/Q8_0 (`qdot`) and Q6_K (`q6k`) weights use integer
//! dot products against activations quantized to 8 bits, like llama.cpp; other types are
//! decoded to f32 per tile into a per-thread buffer and use f32 dot products.

use super::dot::dot_rows;
use super::packed::{self, PackedWeight};
use super::q6k;
use super::qdot::{self, QKind, Q8Row};
use crate::gguf::GgmlType;
use super::weight::WeightView;
use super::SharedOut;
use rayon::prelude::*;
use std::cell::RefCell;

/// Rows of weights decoded per task: small enough to stay in L1/L2 while every input row
/// passes over them.
fn tile_rows(cols: usize) -> usize {
    (16 * 1024 / cols.max(1)).clamp(4, 64)
}

/// Rows per task when decoding: about 8 tasks per worker thread, at least 16 rows.
fn decode_tile(rows: usize) -> usize {
    (rows / (8 * rayon::current_num_threads().max(1))).max(16)
}

thread_local! {
    static TILE: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    static QROWS: RefCell<Vec<Q8Row>> = const { RefCell::new(Vec::new()) };
}

/// Weight types with integer kernels.
#[derive(Clone, Copy, Debug)]
enum IntKind {
    /// 32-value blocks (`qdot`).
    Blocks(QKind),
    /// 256-value superblocks (`q6k`).
    Q6K,
}

fn int_kind(dtype: GgmlType) -> Option<IntKind> {
    match dtype {
        GgmlType::Q4_0 => Some(IntKind::Blocks(QKind::Q4_0)),
        GgmlType::Q4_1 => Some(IntKind::Blocks(QKind::Q4_1)),
        GgmlType::Q8_0 => Some(IntKind::Blocks(QKind::Q8_0)),
        GgmlType::Q6_K => Some(IntKind::Q6K),
        _ => None,
    }
}

#[inline]
fn int_dot(kind: IntKind, w: &[u8], x: &Q8Row) -> f32 {
    match kind {
        IntKind::Blocks(k) => qdot::dot(k, w, x),
        IntKind::Q6K => q6k::dot(w, x),
    }
}

#[inline]
fn int_dot4(kind: IntKind, w: &[u8], xs: [&Q8Row; 4]) -> [f32; 4] {
    match kind {
        IntKind::Blocks(k) => qdot::dot4(k, w, xs),
        IntKind::Q6K => q6k::dot4(w, xs),
    }
}

/// `out[i, j] = sum_k x[i, k] * W[j, k] + bias[j]` for `m` input rows.
/// `x` is `m x W.cols`, `out` is `m x W.rows`, both row-major.
pub fn matmul_t(x: &[f32], m: usize, w: WeightView<'_>, bias: Option<&[f32]>, out: &mut [f32]) {
    let (n, k) = (w.rows, w.cols);
    assert_eq!(x.len(), m * k, "matmul_t: input is not m x cols");
    assert_eq!(out.len(), m * n, "matmul_t: output is not m x rows");
    if let Some(b) = bias {
        assert_eq!(b.len(), n, "matmul_t: bias length");
    }
    if let Some(kind) = int_kind(w.dtype) {
        return matmul_t_int(x, m, w, kind, bias, out);
    }
    if w.dtype == GgmlType::F16 && m <= 4 {
        return matmul_t_f16_rows(x, m, w, bias, out);
    }
    let tile = tile_rows(k);
    let n_tiles = n.div_ceil(tile);
    let out_ptr = SharedOut::new(out);
    let f32_rows = as_f32(w);
    (0..n_tiles).into_par_iter().for_each(|t| {
        let r0 = t * tile;
        let rows = tile.min(n - r0);
        TILE.with(|buf| {
            let mut buf = buf.borrow_mut();
            let wt: &[f32] = match f32_rows {
                Some(all) => &all[r0 * k..(r0 + rows) * k],
                None => {
                    buf.resize(tile * k, 0.0);
                    for r in 0..rows {
                        w.decode_row(r0 + r, &mut buf[r * k..(r + 1) * k]);
                    }
                    &buf[..rows * k]
                }
            };
            let mut acc = [0f32; 64];
            for i in 0..m {
                let acc = &mut acc[..rows];
                dot_rows(&x[i * k..(i + 1) * k], wt, acc);
                if let Some(b) = bias {
                    for (a, bb) in acc.iter_mut().zip(&b[r0..r0 + rows]) {
                        *a += bb;
                    }
                }
                // SAFETY: columns r0..r0+rows of row i belong to this tile alone, and
                // i * n + r0 + rows <= m * n = out.len().
                unsafe {
                    std::ptr::copy_nonoverlapping(acc.as_ptr(), out_ptr.get().add(i * n + r0), rows);
                }
            }
        });
    });
}

/// f16 weights with few input rows (decoding): each weight row is converted on the fly
/// inside the dot product, never written out as f32.
fn matmul_t_f16_rows(x: &[f32], m: usize, w: WeightView<'_>, bias: Option<&[f32]>, out: &mut [f32]) {
    let (n, k) = (w.rows, w.cols);
    let rb = w.row_bytes();
    let tile = decode_tile(n);
    let out_ptr = SharedOut::new(out);
    (0..n.div_ceil(tile)).into_par_iter().for_each(|t| {
        let r0 = t * tile;
        let count = tile.min(n - r0);
        let wt = w.rows_bytes(r0, count);
        for i in 0..m {
            let xi = &x[i * k..(i + 1) * k];
            for r in 0..count {
                let v = super::dot::dot_f16(&wt[r * rb..(r + 1) * rb], xi) + bias.map_or(0.0, |b| b[r0 + r]);
                // SAFETY: this tile owns columns r0..r0+count of every output row.
                unsafe { *out_ptr.get().add(i * n + r0 + r) = v };
            }
        }
    });
}

/// Runs `f` on the `m` rows of `x` (`m x k`) quantized to 8 bits, in this thread's buffers.
/// The buffers are taken out of the thread-local while `f` runs, not borrowed: `f` runs in
/// parallel, and a rayon worker waiting for it may steal another matmul that needs buffers
/// of its own on this same thread (that one then allocates).
fn with_q8_rows<R>(x: &[f32], m: usize, k: usize, f: impl FnOnce(&[Q8Row]) -> R) -> R {
    let mut rows = QROWS.with(|r| std::mem::take(&mut *r.borrow_mut()));
    if rows.len() < m {
        rows.resize_with(m, Q8Row::default);
    }
    let part = &mut rows[..m];
    if m * k >= 1 << 16 {
        part.par_iter_mut().enumerate().for_each(|(i, q)| q.quantize(&x[i * k..(i + 1) * k]));
    } else {
        part.iter_mut().enumerate().for_each(|(i, q)| q.quantize(&x[i * k..(i + 1) * k]));
    }
    let out = f(part);
    QROWS.with(|r| {
        let mut r = r.borrow_mut();
        // Keep the larger set (a nested call may have put its own back meanwhile).
        if rows.len() > r.len() {
            *r = rows;
        }
    });
    out
}

/// `matmul_t` for a weight repacked for the interleaved kernels (`packed`).
pub fn matmul_t_packed(x: &[f32], m: usize, w: &PackedWeight, bias: Option<&[f32]>, out: &mut [f32]) {
    assert_eq!(x.len(), m * w.cols, "matmul_t: input is not m x cols");
    if w.kind.is_float() {
        return packed::matmul_f32(x, m, w, bias, out);
    }
    with_q8_rows(x, m, w.cols, |rows| packed::matmul(rows, w, bias, out));
}

/// The integer path: quantize the input rows once, then integer dot products per tile.
fn matmul_t_int(x: &[f32], m: usize, w: WeightView<'_>, kind: IntKind, bias: Option<&[f32]>, out: &mut [f32]) {
    let n = w.rows;
    with_q8_rows(x, m, w.cols, |rows| {
        let rb = w.row_bytes();
        // Decoding (few rows): about 8 tasks per thread, enough for work stealing to even
        // out, few enough that scheduling costs nothing next to the rows (the 250880-row
        // head would otherwise be 15000 tasks). Prefill: a tile stays in L1/L2 while every
        // input row passes over it.
        let tile = if m < 4 { decode_tile(n) } else { (32 * 1024 / rb.max(1)).clamp(4, 64) };
        let n_tiles = n.div_ceil(tile);
        let out_ptr = SharedOut::new(out);
        (0..n_tiles).into_par_iter().for_each(|t| {
            let r0 = t * tile;
            let count = tile.min(n - r0);
            let wt = w.rows_bytes(r0, count);
            let bias_of = |r: usize| bias.map_or(0.0, |b| b[r0 + r]);
            // SAFETY (both writes): this tile owns columns r0..r0+count of every output row.
            let put = |i: usize, r: usize, v: f32| unsafe { *out_ptr.get().add(i * n + r0 + r) = v };
            // Four input rows at a time share each unpacked weight block.
            let mut i = 0;
            while i + 4 <= m {
                let xs = [&rows[i], &rows[i + 1], &rows[i + 2], &rows[i + 3]];
                let mut r = 0;
                // Weight rows two at a time where the kernel has a 2 x 4 tile.
                if let IntKind::Blocks(k) = kind {
                    while r + 2 <= count {
                        let v = qdot::dot4x2(k, [&wt[r * rb..(r + 1) * rb], &wt[(r + 1) * rb..(r + 2) * rb]], xs);
                        for (dr, v) in v.into_iter().enumerate() {
                            for (j, v) in v.into_iter().enumerate() {
                                put(i + j, r + dr, v + bias_of(r + dr));
                            }
                        }
                        r += 2;
                    }
                }
                for r in r..count {
                    let v = int_dot4(kind, &wt[r * rb..(r + 1) * rb], xs);
                    for (j, v) in v.into_iter().enumerate() {
                        put(i + j, r, v + bias_of(r));
                    }
                }
                i += 4;
            }
            for (i, xq) in rows.iter().enumerate().skip(i) {
                for r in 0..count {
                    put(i, r, int_dot(kind, &wt[r * rb..(r + 1) * rb], xq) + bias_of(r));
                }
            }
        });
    });
}

/// The weight as an f32 slice when it is f32 and suitably aligned (always, when mapped).
fn as_f32(w: WeightView<'_>) -> Option<&[f32]> {
    if w.dtype != GgmlType::F32 {
        return None;
    }
    // SAFETY: any bit pattern is a valid f32; align_to only yields the aligned middle.
    let (pre, mid, post) = unsafe { w.bytes.align_to::<f32>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::quantize_row;

    fn reference(x: &[f32], m: usize, w: &[f32], n: usize, k: usize, bias: &[f32]) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k).map(|t| x[i * k + t] as f64 * w[j * k + t] as f64).sum();
                out[i * n + j] = s as f32 + bias[j];
            }
        }
        out
    }

    #[test]
    fn every_type_matches_reference_on_decoded_weights() {
        // m = 5: one group of four rows and a rest; k = 96 (blocks of 32), 256 (Q6_K)
        every_type_matches_reference(5, 70, 96, &[GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1]);
        every_type_matches_reference(5, 70, 512, &[GgmlType::Q6_K, GgmlType::Q8_0]);
        every_type_matches_reference(1, 300, 256, &[GgmlType::Q6_K]);
    }

    fn every_type_matches_reference(m: usize, n: usize, k: usize, types: &[GgmlType]) {
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 31 % 23) as f32 - 11.0) / 7.0).collect();
        let wf: Vec<f32> = (0..n * k).map(|i| ((i * 17 % 29) as f32 - 14.0) / 9.0).collect();
        let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.01).collect();
        for &dtype in types {
            let mut bytes = Vec::new();
            for row in wf.chunks(k) {
                quantize_row(dtype, row, &mut bytes).unwrap();
            }
            let view = WeightView { dtype, bytes: &bytes, rows: n, cols: k };
            let mut decoded = vec![0f32; n * k];
            for r in 0..n {
                view.decode_row(r, &mut decoded[r * k..(r + 1) * k]);
            }
            // Integer paths see 8-bit activations: compare with those exactly.
            let xs: Vec<f32> = if int_kind(dtype).is_some() {
                x.chunks(k)
                    .flat_map(|row| {
                        let mut q = Q8Row::default();
                        q.quantize(row);
                        (0..k).map(move |i| q.q[i] as f32 * q.d[i / 32]).collect::<Vec<_>>()
                    })
                    .collect()
            } else {
                x.clone()
            };
            let want = reference(&xs, m, &decoded, n, k, &bias);
            let mut got = vec![0f32; m * n];
            matmul_t(&x, m, view, Some(&bias), &mut got);
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{dtype}: {a} vs {b}");
            }
        }
    }
}
