//! Weights repacked so that one SIMD register holds one value group of several weight rows:
//! 16 rows per 512-bit register (AVX-512 VNNI), 8 per 256-bit register (AVX2) or 4 per
//! 128-bit register (aarch64 NEON with the dot-product extension, the Jetson's CPU).
//!
//! The row-at-a-time kernels (`qdot`, `q6k`) sum every output across SIMD lanes and turn
//! each 32-value block product into f32 separately per (weight row, input row): most of
//! their instructions are bookkeeping rather than multiply-adds (the profile in
//! docs/BENCHMARKS.md). Here a register holds 4 consecutive values of each of `L` weight
//! rows, one row per 32-bit lane; `vpdpbusd` against 4 activation bytes broadcast to every
//! lane adds into `L` outputs at once. No horizontal sums, and one conversion plus two FMAs
//! per block serve `L` outputs. An input tile of several rows shares each unpacked block.
//!
//! The layout is one layout with a lane count `L` ([`Family::lanes`]): 16 for AVX-512, 8
//! for AVX2, 4 for NEON, so that a line of `4 L` bytes is one register each time. AVX2 has no
//! `vpdpbusd`: `vpmaddubsw` (u8 x i8, pairs summed in i16) and `vpmaddwd` against ones (to
//! i32) stand in for it, and where the values are small the i16 stage sums several weight
//! vectors before one widening (the `avx2` module). CPUs with AVX-VNNI run the same AVX2
//! kernels with `vpdpbusd` on 256 bits. The family is chosen once, at run time: AVX-512
//! VNNI first, then AVX2 with AVX-VNNI, then AVX2 with FMA and F16C; on aarch64 NEON with
//! `sdot` (the `neon` module, integer types only); without these the row-at-a-time kernels
//! run.
//!
//! A weight is repacked once, the first time the CPU multiplies by it (`Linear` keeps the
//! result); the packed copy is the same size as the file's bytes. Layouts, per group of `L`
//! rows (each group starts on a 64-byte line), with `nb` 32-value blocks per row:
//! - Q4_0: `nb` x `16 L` bytes of nibbles, then `nb` x `L` f16 scales. Nibble line `c`
//!   (0..4) of block `b` holds, in lane `j`, row `j`'s `qs[4c..4c + 4]`: its low nibbles are
//!   the values `4c..4c + 4` of the block, its high nibbles the values `16 + 4c..`.
//! - Q6_K: `nb` x `24 L` bytes (four lines of low nibbles as for Q4_0, then two lines of
//!   high bit pairs: line `h`, lane `j`, byte `t`, bits `2i..2i + 2` are the high bits of
//!   value `16h + 4i + t`), then `nb` x `2 L` i8 sub-block scales (first the `L` rows' scale
//!   of values 0..16, then of 16..32), then `nb / 8` x `L` f16 superblock scales.
//! - Q8_0: `nb` x `32 L` bytes (line `v` (0..8), lane `j`: row `j`'s values `4v..4v + 4`),
//!   then `nb` x `L` f16 scales, then `nb` x `L` i16 sums of each row's block. `vpdpbusd`
//!   takes unsigned bytes on one side: the AVX-512 kernel takes the activations offset by
//!   128 (`Q8Row::qu`) and the sum `128 * sum(w)` back out. The AVX2 kernel, whose i16
//!   pairs would overflow with offset activations, multiplies `|w|` by the activations
//!   carrying `w`'s sign instead, and leaves the sums unread.
//! - F16 / F32: `cols` x `L` values (value `c` of the `L` rows), multiplied with f32 inputs
//!   (F16C conversion, FMA). Both run the same kernel in the same order, so an f16 file and
//!   the f32 file of its decoded values give the same logits.

use super::qdot::{Q8Row, QK};
use super::q6k;
use super::WeightView;
use crate::gguf::GgmlType;
use super::SharedOut;
use rayon::prelude::*;

/// Most input rows per kernel call (the AVX-512 tile; decoding batches up to this many
/// rows take the decoding work split).
const TILE_M: usize = 8;

/// Which packed kernels run: the instruction set, which fixes the lane count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// AVX-512 with VNNI: 16 rows per register, `vpdpbusd`.
    Avx512Vnni,
    /// AVX2 with AVX-VNNI: 8 rows per register, 256-bit `vpdpbusd`.
    Avx2Vnni,
    /// AVX2, FMA and F16C: 8 rows per register, `vpmaddubsw` + `vpmaddwd`.
    Avx2,
    /// aarch64 NEON with the dot-product extension: 4 rows per register, `sdot` by element.
    NeonDot,
}

impl Family {
    /// Weight rows per group: one per 32-bit lane of the family's register.
    pub fn lanes(self) -> usize {
        match self {
            Family::Avx512Vnni => 16,
            Family::Avx2Vnni | Family::Avx2 => 8,
            Family::NeonDot => 4,
        }
    }

    /// Whether this family has kernels for `kind`: NEON leaves float weights to the row
    /// kernels, AVX-512 leaves q4_1 (AutoAWQ imports) to them.
    fn packs(self, kind: PackedKind) -> bool {
        match self {
            Family::NeonDot => !kind.is_float(),
            Family::Avx512Vnni => kind != PackedKind::Q4_1,
            Family::Avx2 | Family::Avx2Vnni => true,
        }
    }

    /// Input rows per kernel call. AVX2 has 16 registers, half of AVX-512's 32: a block's 8
    /// unpacked weight vectors and 4 rows' accumulators and partial sums fill them.
    fn tile_m(self) -> usize {
        match self {
            // 32 registers, as AVX-512: 8 weight vectors and 8 rows' accumulators.
            Family::Avx512Vnni | Family::NeonDot => TILE_M,
            Family::Avx2Vnni | Family::Avx2 => 4,
        }
    }

    /// A short name for benchmarks and logs.
    pub fn name(self) -> &'static str {
        match self {
            Family::Avx512Vnni => "avx512-vnni packed",
            Family::Avx2Vnni => "avx2+avx-vnni packed",
            Family::Avx2 => "avx2 packed",
            Family::NeonDot => "neon-dotprod packed",
        }
    }

    /// The families this CPU can run, best first (tests run every one of them).
    #[cfg_attr(not(test), allow(dead_code))]
    fn all_available() -> Vec<Family> {
        #[cfg(target_arch = "x86_64")]
        {
            let mut v = Vec::new();
            if super::qdot::avx512_available() {
                v.push(Family::Avx512Vnni);
            }
            if avx2::has_vnni() {
                v.push(Family::Avx2Vnni);
            }
            if avx2::available() {
                v.push(Family::Avx2);
            }
            v
        }
        #[cfg(target_arch = "aarch64")]
        {
            if neon::available() {
                return vec![Family::NeonDot];
            }
            Vec::new()
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            Vec::new()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackedKind {
    Q4_0,
    Q4_1,
    Q6K,
    Q8_0,
    F16,
    F32,
}

impl PackedKind {
    /// Float weights: f32 inputs, no 8-bit activations.
    pub fn is_float(self) -> bool {
        matches!(self, PackedKind::F16 | PackedKind::F32)
    }

    /// Packed bytes per group of 16 rows and 32-value block (a group of `L` rows takes
    /// `L / 16` of it).
    fn block_bytes(self) -> usize {
        match self {
            PackedKind::Q4_0 => 256 + 32,
            PackedKind::Q4_1 => 256 + 32 + 32,
            PackedKind::Q6K => 384 + 32 + 4,
            PackedKind::Q8_0 => 512 + 32 + 32,
            PackedKind::F16 => 32 * 32,
            PackedKind::F32 => 32 * 64,
        }
    }
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// A weight matrix in the interleaved layout above.
pub struct PackedWeight {
    pub kind: PackedKind,
    pub family: Family,
    pub rows: usize,
    pub cols: usize,
    data: Vec<Line>,
}

/// The packed kernels this CPU runs, if any. `SEQGPT_CPU_PACKED=0` turns them off, to
/// compare with the row-at-a-time kernels in one benchmark run.
pub fn family() -> Option<Family> {
    use std::sync::OnceLock;
    static ON: OnceLock<Option<Family>> = OnceLock::new();
    *ON.get_or_init(|| {
        if std::env::var("SEQGPT_CPU_PACKED").is_ok_and(|v| v == "0") {
            return None;
        }
        Family::all_available().first().copied()
    })
}

/// Whether this CPU runs the packed kernels (`family()` is some).
pub fn available() -> bool {
    family().is_some()
}

/// Which CPU matmul kernels this machine runs, in words: the packed family, or the
/// row-at-a-time kernels' instruction set. Benchmarks print it next to their figures.
pub fn kernel_family() -> &'static str {
    if let Some(f) = family() {
        return f.name();
    }
    #[cfg(target_arch = "x86_64")]
    {
        if super::qdot::avx512_available() {
            return "avx512 row-at-a-time";
        }
        if super::dot::has_avx2_fma() {
            return "avx2 row-at-a-time";
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("dotprod") {
            return "neon-dotprod row-at-a-time";
        }
    }
    "scalar row-at-a-time"
}

impl PackedWeight {
    /// Repacks `w` when this CPU has the kernels and the type and shape fit them; `None`
    /// leaves the weight to the row-at-a-time kernels.
    pub fn pack(w: WeightView<'_>) -> Option<Self> {
        Self::pack_for(w, family()?)
    }

    /// `pack` for the kernels of `family` (which this CPU must run).
    fn pack_for(w: WeightView<'_>, family: Family) -> Option<Self> {
        let lanes = family.lanes();
        if w.rows % lanes != 0 {
            return None;
        }
        let kind = match w.dtype {
            GgmlType::Q4_0 if w.cols % QK == 0 => PackedKind::Q4_0,
            GgmlType::Q4_1 if w.cols % QK == 0 => PackedKind::Q4_1,
            GgmlType::Q6_K if w.cols % q6k::QK_K == 0 => PackedKind::Q6K,
            GgmlType::Q8_0 if w.cols % QK == 0 => PackedKind::Q8_0,
            GgmlType::F16 if w.cols % QK == 0 => PackedKind::F16,
            GgmlType::F32 if w.cols % QK == 0 => PackedKind::F32,
            _ => return None,
        };
        if !family.packs(kind) {
            return None;
        }
        let nb = w.cols / QK;
        let group_lines = Self::group_bytes_of(kind, lanes, w.cols) / 64;
        let mut data = vec![Line([0; 64]); w.rows / lanes * group_lines];
        data.par_chunks_mut(group_lines).enumerate().for_each(|(g, lines)| {
            // SAFETY: `Line` is 64 plain bytes; the slice covers exactly `lines`.
            let dst = unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr() as *mut u8, lines.len() * 64) };
            let src = w.rows_bytes(g * lanes, lanes);
            match kind {
                PackedKind::Q4_0 => pack_q4_0(src, nb, lanes, dst),
                PackedKind::Q4_1 => pack_q4_1(src, nb, lanes, dst),
                PackedKind::Q6K => pack_q6k(src, nb, lanes, dst),
                PackedKind::Q8_0 => pack_q8_0(src, nb, lanes, dst),
                PackedKind::F16 => pack_interleaved::<2>(src, nb * QK, lanes, dst),
                PackedKind::F32 => pack_interleaved::<4>(src, nb * QK, lanes, dst),
            }
        });
        Some(Self { kind, family, rows: w.rows, cols: w.cols, data })
    }

    /// Bytes of one group of `lanes` rows, rounded up to whole lines.
    fn group_bytes_of(kind: PackedKind, lanes: usize, cols: usize) -> usize {
        (cols / QK * kind.block_bytes() * lanes / 16).div_ceil(64) * 64
    }

    fn group_bytes(&self) -> usize {
        Self::group_bytes_of(self.kind, self.lanes(), self.cols)
    }

    /// Weight rows per group.
    pub fn lanes(&self) -> usize {
        self.family.lanes()
    }

    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    fn group(&self, g: usize) -> *const u8 {
        // SAFETY (callers): g < rows / lanes, so the group lies inside `data`.
        unsafe { (self.data.as_ptr() as *const u8).add(g * self.group_bytes()) }
    }

    pub fn bytes(&self) -> usize {
        self.data.len() * 64
    }
}

fn pack_q4_0(src: &[u8], nb: usize, l: usize, dst: &mut [u8]) {
    let rb = nb * 18;
    for j in 0..l {
        for b in 0..nb {
            let blk = &src[j * rb + b * 18..][..18];
            for c in 0..4 {
                dst[b * 16 * l + c * 4 * l + j * 4..][..4].copy_from_slice(&blk[2 + 4 * c..2 + 4 * c + 4]);
            }
            dst[nb * 16 * l + b * 2 * l + j * 2..][..2].copy_from_slice(&blk[..2]);
        }
    }
}

/// As Q4_0, with each block's minimum `m` after the scales: `nb` x `l` f16 `d`, then `nb`
/// x `l` f16 `m` (a Q4_1 block is `d`, `m`, then the nibbles).
fn pack_q4_1(src: &[u8], nb: usize, l: usize, dst: &mut [u8]) {
    let rb = nb * 20;
    for j in 0..l {
        for b in 0..nb {
            let blk = &src[j * rb + b * 20..][..20];
            for c in 0..4 {
                dst[b * 16 * l + c * 4 * l + j * 4..][..4].copy_from_slice(&blk[4 + 4 * c..4 + 4 * c + 4]);
            }
            dst[nb * 16 * l + b * 2 * l + j * 2..][..2].copy_from_slice(&blk[..2]);
            dst[nb * 18 * l + b * 2 * l + j * 2..][..2].copy_from_slice(&blk[2..4]);
        }
    }
}

/// Float weights of `E` bytes: value `c` of the `l` rows side by side.
fn pack_interleaved<const E: usize>(src: &[u8], k: usize, l: usize, dst: &mut [u8]) {
    for j in 0..l {
        for c in 0..k {
            dst[(c * l + j) * E..][..E].copy_from_slice(&src[(j * k + c) * E..][..E]);
        }
    }
}

fn pack_q8_0(src: &[u8], nb: usize, l: usize, dst: &mut [u8]) {
    let rb = nb * 34;
    for j in 0..l {
        for b in 0..nb {
            let blk = &src[j * rb + b * 34..][..34];
            for v in 0..8 {
                dst[b * 32 * l + v * 4 * l + j * 4..][..4].copy_from_slice(&blk[2 + 4 * v..2 + 4 * v + 4]);
            }
            dst[nb * 32 * l + b * 2 * l + j * 2..][..2].copy_from_slice(&blk[..2]);
            let sum: i16 = blk[2..].iter().map(|&w| w as i8 as i16).sum();
            dst[nb * 34 * l + b * 2 * l + j * 2..][..2].copy_from_slice(&sum.to_le_bytes());
        }
    }
}

fn pack_q6k(src: &[u8], nb: usize, l: usize, dst: &mut [u8]) {
    let per_sb = q6k::QK_K / QK;
    let rb = nb / per_sb * q6k::BLOCK_BYTES;
    let (scales_at, d_at) = (nb * 24 * l, nb * 26 * l);
    for j in 0..l {
        for s in 0..nb / per_sb {
            let sb = &src[j * rb + s * q6k::BLOCK_BYTES..][..q6k::BLOCK_BYTES];
            dst[d_at + s * 2 * l + j * 2..][..2].copy_from_slice(&sb[208..210]);
            for bi in 0..per_sb {
                let b = s * per_sb + bi;
                let v = q6k::values(sb, bi / 4, bi % 4);
                let out = &mut dst[b * 24 * l..][..24 * l];
                for c in 0..4 {
                    for t in 0..4 {
                        out[c * 4 * l + j * 4 + t] = (v[4 * c + t] & 15) | ((v[16 + 4 * c + t] & 15) << 4);
                    }
                }
                for h in 0..2 {
                    for t in 0..4 {
                        let bits = (0..4).fold(0u8, |acc, i| acc | (((v[16 * h + 4 * i + t] >> 4) & 3) << (2 * i)));
                        out[16 * l + h * 4 * l + j * 4 + t] = bits;
                    }
                }
                dst[scales_at + b * 2 * l + j] = sb[192 + 2 * bi];
                dst[scales_at + b * 2 * l + l + j] = sb[192 + 2 * bi + 1];
            }
        }
    }
}

/// `out[i, j] = sum_k x_i[k] * W[j, k] + bias[j]`, `x` already quantized (one `Q8Row` per
/// input row), `out` is `rows.len() x w.rows`. For the integer kinds.
pub fn matmul(rows: &[Q8Row], w: &PackedWeight, bias: Option<&[f32]>, out: &mut [f32]) {
    assert!(!w.kind.is_float(), "packed matmul: f16/f32 weights take f32 inputs");
    assert!(rows.iter().all(|r| r.q.len() == w.cols), "packed matmul: input width");
    for_each_tile(rows.len(), w, bias, out, |g, i, r, o| {
        // SAFETY: as `for_each_tile` promises: group g exists, rows i..i+r exist, `o` is
        // this task's columns of row i.
        unsafe { kernel(w, g, &rows[i..i + r], bias, o, w.rows) }
    });
}

/// As `matmul` for f16 weights, with `x` (`m x cols`) in f32.
pub fn matmul_f32(x: &[f32], m: usize, w: &PackedWeight, bias: Option<&[f32]>, out: &mut [f32]) {
    assert!(w.kind.is_float(), "packed matmul_f32: only f16/f32 weights");
    assert_eq!(x.len(), m * w.cols, "packed matmul: input is not m x cols");
    let k = w.cols;
    for_each_tile(m, w, bias, out, |g, i, r, o| {
        // SAFETY: as in `matmul`.
        unsafe { kernel_float(w, g, &x[i * k..(i + r) * k], r, bias, o, w.rows) }
    });
}

/// Calls `f(group, first_row, rows, out)` for every group of weight rows and every tile of
/// input rows (at most the family's `tile_m`), in parallel over groups; `out` points at the
/// tile's first output.
fn for_each_tile(m: usize, w: &PackedWeight, bias: Option<&[f32]>, out: &mut [f32], f: impl Fn(usize, usize, usize, *mut f32) + Sync) {
    let n = w.rows;
    assert_eq!(out.len(), m * n, "packed matmul: output is not m x rows");
    if let Some(b) = bias {
        assert_eq!(b.len(), n, "packed matmul: bias length");
    }
    let (lanes, tile_m) = (w.lanes(), w.family.tile_m());
    let groups = n / lanes;
    // Decoding (up to batch 8): about 8 tasks per thread. With more input rows, a task
    // takes a few groups and the rows come in chunks of about 256 KB of 8-bit activations,
    // so that a chunk stays in L2 while every group's weights pass.
    let (per_task, chunk) = if m <= TILE_M {
        ((groups / (8 * rayon::current_num_threads().max(1))).max(1), m)
    } else {
        ((8192 / w.group_bytes()).clamp(1, 4), (256 * 1024 / w.cols).max(tile_m) / tile_m * tile_m)
    };
    let out_ptr = SharedOut::new(out);
    for c0 in (0..m).step_by(chunk) {
        let c1 = (c0 + chunk).min(m);
        (0..groups.div_ceil(per_task)).into_par_iter().for_each(|t| {
            for g in t * per_task..((t + 1) * per_task).min(groups) {
                let mut i = c0;
                while i < c1 {
                    let r = (c1 - i).min(tile_m);
                    // SAFETY: i * n + g * lanes + lanes <= m * n; this task alone writes
                    // columns g*lanes..(g+1)*lanes of every output row.
                    f(g, i, r, unsafe { out_ptr.get().add(i * n + g * lanes) });
                    i += r;
                }
            }
        });
    }
}

/// One group of f16 or f32 weight rows against `r` f32 input rows (`x`).
unsafe fn kernel_float(w: &PackedWeight, g: usize, x: &[f32], r: usize, bias: Option<&[f32]>, out: *mut f32, stride: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bias = bias.map(|b| b.as_ptr().add(g * w.lanes()));
        let (p, k) = (w.group(g), w.cols);
        // Short tiles split the sum over k into independent accumulators (FMA latency).
        macro_rules! go {
            ($m:ident, $f16:literal) => {
                match r {
                    1 => $m::float::<1, 4, $f16>(p, k, x, bias, out, stride),
                    2 => $m::float::<2, 2, $f16>(p, k, x, bias, out, stride),
                    3 => $m::float::<3, 2, $f16>(p, k, x, bias, out, stride),
                    4 => $m::float::<4, 1, $f16>(p, k, x, bias, out, stride),
                    5 => $m::float::<5, 1, $f16>(p, k, x, bias, out, stride),
                    6 => $m::float::<6, 1, $f16>(p, k, x, bias, out, stride),
                    7 => $m::float::<7, 1, $f16>(p, k, x, bias, out, stride),
                    8 => $m::float::<8, 1, $f16>(p, k, x, bias, out, stride),
                    _ => unreachable!("tile of 1..=8 rows"),
                }
            };
        }
        match (w.family, w.kind == PackedKind::F16) {
            (Family::Avx512Vnni, true) => go!(avx512, true),
            (Family::Avx512Vnni, false) => go!(avx512, false),
            (Family::Avx2 | Family::Avx2Vnni, true) => go!(avx2, true),
            (Family::Avx2 | Family::Avx2Vnni, false) => go!(avx2, false),
            (Family::NeonDot, _) => unreachable!("NEON packs no float weights"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, g, x, r, bias, out, stride);
        unreachable!("packed weights exist only where `available()`");
    }
}

/// One group of weight rows against `xs` (1..=8 input rows, at most the family's tile);
/// writes one value per weight row and input row at `out + r * stride`.
unsafe fn kernel(w: &PackedWeight, g: usize, xs: &[Q8Row], bias: Option<&[f32]>, out: *mut f32, stride: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bias = bias.map(|b| b.as_ptr().add(g * w.lanes()));
        let (p, nb) = (w.group(g), w.cols / QK);
        macro_rules! go {
            ($($r:literal)*) => {
                match xs.len() {
                    $($r => match (w.family, w.kind) {
                        (Family::Avx512Vnni, PackedKind::Q4_0) => avx512::q4_0::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx512Vnni, PackedKind::Q6K) => avx512::q6k::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx512Vnni, PackedKind::Q8_0) => avx512::q8_0::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2, PackedKind::Q4_0) => avx2::q4_0::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2, PackedKind::Q4_1) => avx2::q4_1::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2, PackedKind::Q6K) => avx2::q6k::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2, PackedKind::Q8_0) => avx2::q8_0::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2Vnni, PackedKind::Q4_0) => avx2::q4_0_vnni::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2Vnni, PackedKind::Q4_1) => avx2::q4_1_vnni::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx512Vnni, PackedKind::Q4_1) => unreachable!("AVX-512 packs no q4_1"),
                        (Family::Avx2Vnni, PackedKind::Q6K) => avx2::q6k_vnni::<$r>(p, nb, xs, bias, out, stride),
                        (Family::Avx2Vnni, PackedKind::Q8_0) => avx2::q8_0_vnni::<$r>(p, nb, xs, bias, out, stride),
                        (Family::NeonDot, _) => unreachable!("NEON kernels exist on aarch64 only"),
                        (_, PackedKind::F16 | PackedKind::F32) => unreachable!("float weights take kernel_float"),
                    },)*
                    _ => unreachable!("tile of 1..=8 rows"),
                }
            };
        }
        go!(1 2 3 4 5 6 7 8)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let bias = bias.map(|b| b.as_ptr().add(g * w.lanes()));
        let (p, nb) = (w.group(g), w.cols / QK);
        macro_rules! go {
            ($($r:literal)*) => {
                match xs.len() {
                    $($r => match w.kind {
                        PackedKind::Q4_0 => neon::q4_0::<$r>(p, nb, xs, bias, out, stride),
                        PackedKind::Q4_1 => neon::q4_1::<$r>(p, nb, xs, bias, out, stride),
                        PackedKind::Q6K => neon::q6k::<$r>(p, nb, xs, bias, out, stride),
                        PackedKind::Q8_0 => neon::q8_0::<$r>(p, nb, xs, bias, out, stride),
                        PackedKind::F16 | PackedKind::F32 => unreachable!("NEON packs no float weights"),
                    },)*
                    _ => unreachable!("tile of 1..=8 rows"),
                }
            };
        }
        go!(1 2 3 4 5 6 7 8)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (w, g, xs, bias, out, stride);
        unreachable!("packed weights exist only where `available()`");
    }
}

/// Runs `$body` for `$r` in `0..$R` (`$R <= 8`) with constant indices, so that the
/// per-row accumulators stay in registers: LLVM leaves the larger kernel bodies rolled,
/// and then keeps the accumulators in memory.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! for_rows {
    ($R:ident, $r:ident, $body:block) => {
        for_rows!(@ $R, $r, $body, 0 1 2 3 4 5 6 7)
    };
    (@ $R:ident, $r:ident, $body:block, $($i:literal)*) => {
        $( if $i < $R { let $r: usize = $i; $body } )*
    };
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Q8Row, QK};
    use std::arch::x86_64::*;

    const LANES: usize = 16;

    /// How far ahead of the block in hand the kernels ask for weights. They stream from DRAM
    /// once per step, and the hardware prefetcher alone leaves the kernels waiting: with the
    /// weights out of cache (262144 x 1024, `packed_speed`), 8 KB ahead took q4_0 from 14.4
    /// to 19-23 GB/s at one input row and from 105-113 to 148-159 GMAC/s at eight; Q6_K from
    /// 13.5-14.3 to 18-20 GB/s and 86-95 to 101-126 GMAC/s. 2 KB gained less, 16-32 KB no more.
    pub(super) const PREFETCH_AHEAD: usize = 8192;

    /// Prefetches the `len` bytes at `p + PREFETCH_AHEAD`; past the end of the weights this
    /// touches nothing (prefetches do not fault).
    #[inline(always)]
    pub(super) unsafe fn prefetch(p: *const u8, len: usize) {
        for off in (0..len).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_AHEAD + off) as *const i8);
        }
    }

    /// Adds the bias (if any) and stores 16 outputs per input row.
    #[inline(always)]
    unsafe fn store<const R: usize>(acc: [__m512; R], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let b = match bias {
            Some(p) => _mm512_loadu_ps(p),
            None => _mm512_setzero_ps(),
        };
        for (r, a) in acc.into_iter().enumerate() {
            _mm512_storeu_ps(out.add(r * stride), _mm512_add_ps(a, b));
        }
    }

    /// `vpdpbusd` of 4 packed weight vectors with the 4-byte activation groups at `x`.
    #[inline(always)]
    unsafe fn dot4(w: &[__m512i], x: *const i32) -> __m512i {
        let mut s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], _mm512_set1_epi32(*x));
        s = _mm512_dpbusd_epi32(s, w[1], _mm512_set1_epi32(*x.add(1)));
        s = _mm512_dpbusd_epi32(s, w[2], _mm512_set1_epi32(*x.add(2)));
        _mm512_dpbusd_epi32(s, w[3], _mm512_set1_epi32(*x.add(3)))
    }

    /// Per input row, `vpdpbusd` of the unpacked weight vectors `w` (4 values of each of 16
    /// rows apiece) with that row's 4-byte activation groups from group `4 * w.len() * at`
    /// on. Emitted vector by vector across the rows: the rows' sums are independent chains,
    /// and issuing each row's whole chain before the next row's kept the CPU's scheduler
    /// full of waiting multiply-adds (1.03-1.19x at 8 and 64 rows, side by side). One or two
    /// rows get two chains each, since one 8-long chain would wait on its own latency.
    #[inline(always)]
    unsafe fn sums<const R: usize>(w: &[__m512i], xs: &[Q8Row], at: usize) -> [__m512i; R] {
        let mut s = [_mm512_setzero_si512(); R];
        let group = |r: usize| (xs.get_unchecked(r).q.as_ptr() as *const i32).add(at * w.len());
        if R <= 2 && w.len() == 8 {
            for_rows!(R, r, {
                s[r] = _mm512_add_epi32(dot4(&w[..4], group(r)), dot4(&w[4..], group(r).add(4)));
            });
            return s;
        }
        for (c, wc) in w.iter().enumerate() {
            for_rows!(R, r, {
                s[r] = _mm512_dpbusd_epi32(s[r], *wc, _mm512_set1_epi32(*group(r).add(c)));
            });
        }
        s
    }

    /// Q4_0: `sum_b d_w * (d_x * sum(n * x_q) - 8 d_x sum(x_q))` with `n` the 0..15 nibbles.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn q4_0<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = _mm512_set1_epi8(0x0f);
        let scales = group.add(nb * 256);
        let mut acc = [_mm512_setzero_ps(); R];
        for b in 0..nb {
            let p = group.add(b * 256);
            prefetch(p, 256);
            let mut w = [_mm512_setzero_si512(); 8];
            for c in 0..4 {
                let line = _mm512_load_si512(p.add(c * 64) as *const __m512i);
                w[c] = _mm512_and_si512(line, m4);
                w[4 + c] = _mm512_and_si512(_mm512_srli_epi16(line, 4), m4);
            }
            let dw = _mm512_cvtph_ps(_mm256_loadu_si256(scales.add(b * 32) as *const __m256i));
            let s = sums::<R>(&w, xs, b);
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), _mm512_set1_ps(*x.d.get_unchecked(b)), _mm512_set1_ps(*x.q4_offset.get_unchecked(b)));
                acc[r] = _mm512_fmadd_ps(t, dw, acc[r]);
            });
        }
        store(acc, bias, out, stride);
    }

    /// f16 (`F16`) or f32 weights, f32 inputs: `acc_r += w[c] * x_r[c]`, 16 rows per FMA;
    /// `U` accumulators per input row over interleaved values of k.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn float<const R: usize, const U: usize, const F16: bool>(group: *const u8, k: usize, x: &[f32], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let mut acc = [[_mm512_setzero_ps(); U]; R];
        let xp = x.as_ptr();
        let mut c = 0;
        let elem = if F16 { 2 } else { 4 };
        while c + U <= k {
            prefetch(group.add(c * LANES * elem), U * LANES * elem);
            for u in 0..U {
                let w = if F16 {
                    _mm512_cvtph_ps(_mm256_load_si256(group.add((c + u) * 32) as *const __m256i))
                } else {
                    _mm512_load_ps(group.add((c + u) * 64) as *const f32)
                };
                for (r, a) in acc.iter_mut().enumerate() {
                    a[u] = _mm512_fmadd_ps(w, _mm512_set1_ps(*xp.add(r * k + c + u)), a[u]);
                }
            }
            c += U;
        }
        // k is a multiple of 32, U of 1, 2 or 4: nothing is left over.
        let sums: [__m512; R] = std::array::from_fn(|r| acc[r].iter().fold(_mm512_setzero_ps(), |s, a| _mm512_add_ps(s, *a)));
        store(sums, bias, out, stride);
    }

    /// Q8_0: `sum_b d_w * d_x * (sum((x_q + 128) * w) - 128 * sum(w))`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn q8_0<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let (scales, sums) = (group.add(nb * 512), group.add(nb * 544));
        let mut acc = [_mm512_setzero_ps(); R];
        for b in 0..nb {
            let p = group.add(b * 512);
            prefetch(p, 512);
            let w: [__m512i; 8] = std::array::from_fn(|v| _mm512_load_si512(p.add(v * 64) as *const __m512i));
            let dw = _mm512_cvtph_ps(_mm256_loadu_si256(scales.add(b * 32) as *const __m256i));
            let offset = _mm512_slli_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256(sums.add(b * 32) as *const __m256i)), 7);
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let xu = x.qu.as_ptr().add(b * QK) as *const i32;
                let mut s = _mm512_setzero_si512();
                for (v, wv) in w.iter().enumerate() {
                    s = _mm512_dpbusd_epi32(s, _mm512_set1_epi32(*xu.add(v)), *wv);
                }
                let f = _mm512_cvtepi32_ps(_mm512_sub_epi32(s, offset));
                acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(f, _mm512_set1_ps(*x.d.get_unchecked(b))), dw, acc[r]);
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q6_K: per 16-value sub-block, `d * sc * (d_x * sum(q * x_q) - 32 d_x sum(x_q))` with
    /// `q` the 0..63 values.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma,avx2")]
    pub unsafe fn q6k<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = _mm512_set1_epi8(0x0f);
        let m30 = _mm512_set1_epi8(0x30);
        let (scales, supers) = (group.add(nb * 384), group.add(nb * 416));
        let mut acc = [_mm512_setzero_ps(); R];
        let mut d = _mm512_setzero_ps();
        for b in 0..nb {
            if b % 8 == 0 {
                d = _mm512_cvtph_ps(_mm256_loadu_si256(supers.add(b / 8 * 32) as *const __m256i));
            }
            let p = group.add(b * 384);
            prefetch(p, 384);
            let hi = [_mm512_load_si512(p.add(256) as *const __m512i), _mm512_load_si512(p.add(320) as *const __m512i)];
            let mut w = [_mm512_setzero_si512(); 8];
            for c in 0..4 {
                let line = _mm512_load_si512(p.add(c * 64) as *const __m512i);
                let lo = [_mm512_and_si512(line, m4), _mm512_and_si512(_mm512_srli_epi16(line, 4), m4)];
                for h in 0..2 {
                    // Bits 2c, 2c + 1 of the high line, moved to bits 4, 5.
                    let bits = match c {
                        0 => _mm512_slli_epi16(hi[h], 4),
                        1 => _mm512_slli_epi16(hi[h], 2),
                        2 => hi[h],
                        _ => _mm512_srli_epi16(hi[h], 2),
                    };
                    // lo | (bits & 0x30)
                    w[4 * h + c] = _mm512_ternarylogic_epi32(lo[h], bits, m30, 0xF8);
                }
            }
            let sc = scales.add(b * 32) as *const __m128i;
            let fs0 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(sc))));
            let fs1 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(sc.add(1)))));
            // Sub-block by sub-block, so that its sums for all rows fit in registers.
            for (h, fs) in [fs0, fs1].into_iter().enumerate() {
                let s = sums::<R>(&w[4 * h..4 * h + 4], xs, 2 * b + h);
                for_rows!(R, r, {
                    let x = xs.get_unchecked(r);
                    let t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), _mm512_set1_ps(*x.d.get_unchecked(b)), _mm512_set1_ps(*x.q6_offset.get_unchecked(2 * b + h)));
                    acc[r] = _mm512_fmadd_ps(t, fs, acc[r]);
                });
            }
        }
        store(acc, bias, out, stride);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! 8 weight rows per 256-bit register. `vpdpbusd` (u8 x i8, four products into each i32
    //! lane) is emulated by `vpmaddubsw` (u8 x i8, pairs summed into i16) and `vpmaddwd`
    //! against ones (i16 pairs into i32). The widening is an instruction of its own, so the
    //! i16 stage sums as many weight vectors as cannot overflow before one widening: each
    //! i16 holds products of 2 values per vector, |x_q| <= 127 (`Q8Row` never makes -128),
    //! so q4_0 nibbles (<= 15) take all 8 vectors of a block (16 x 15 x 127 = 30480), Q6_K's
    //! 6-bit values (<= 63) 2 vectors (4 x 63 x 127 = 32004), q8_0 one (2 x 128 x 127 =
    //! 32512). With AVX-VNNI every kernel body is compiled again with `vpdpbusd` itself.
    //! Scales and offsets are applied as in the AVX-512 kernels, so both give the same sums
    //! up to f32 rounding order.
    use super::Q8Row;
    use std::arch::x86_64::*;

    const LANES: usize = 8;

    /// As the AVX-512 kernels' prefetch, twice as far ahead: on the AVX2 machine (a 2-core
    /// AMD EPYC VM) batch-1 decoding ran at medians of 55.1 tok/s with 8 KB, 57.5 with 16 KB,
    /// 57.0 with 24 KB and 38 with none (four alternating rounds of `seqgpt bench
    /// --prompt-tokens 1 --gen-tokens 65`, 2 threads, the q4_0+q6_K file).
    const PREFETCH_AHEAD: usize = 16384;

    /// Prefetches the `len` bytes at `p + PREFETCH_AHEAD` (past the end: touches nothing).
    #[inline(always)]
    unsafe fn prefetch(p: *const u8, len: usize) {
        for off in (0..len).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH_AHEAD + off) as *const i8);
        }
    }

    /// AVX2, FMA and F16C: what every kernel here needs.
    pub fn available() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| super::super::dot::has_avx2_fma() && is_x86_feature_detected!("f16c"))
    }

    /// AVX-VNNI on top of `available()`.
    pub fn has_vnni() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| available() && is_x86_feature_detected!("avxvnni"))
    }

    /// Adds the bias (if any) and stores 8 outputs per input row.
    #[inline(always)]
    unsafe fn store<const R: usize>(acc: [__m256; R], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let b = match bias {
            Some(p) => _mm256_loadu_ps(p),
            None => _mm256_setzero_ps(),
        };
        for (r, a) in acc.into_iter().enumerate() {
            _mm256_storeu_ps(out.add(r * stride), _mm256_add_ps(a, b));
        }
    }

    /// The 4 activation bytes of group `c` at `x`, in every lane.
    #[inline(always)]
    unsafe fn bcast(x: *const u8, c: usize) -> __m256i {
        _mm256_set1_epi32((x.add(4 * c) as *const i32).read_unaligned())
    }

    /// Per input row, `sum_c dot4(u[c], x_c)` in i32 lanes, with `x_c` activation group
    /// `c` of the row's block `at` (`u.len()` groups of 4 bytes per block), made signed by
    /// `sign[c]` if given (q8_0: `|w| * (x sign w)`, the unsigned operand must be the
    /// weight). Without VNNI, `I16` vectors' products are summed in i16 before widening
    /// (module doc). Vector by vector across the rows, as the AVX-512 `sums`: the rows'
    /// sums are independent chains.
    #[inline(always)]
    unsafe fn sums<const R: usize, const VNNI: bool, const I16: usize>(u: &[__m256i], sign: Option<&[__m256i]>, xs: &[Q8Row], at: usize) -> [__m256i; R] {
        let ones = _mm256_set1_epi16(1);
        let mut s = [_mm256_setzero_si256(); R];
        let x = |r: usize, c: usize| {
            let v = bcast(xs.get_unchecked(r).q.as_ptr().add(at * 4 * u.len()) as *const u8, c);
            match sign {
                Some(sg) => _mm256_sign_epi8(v, *sg.get_unchecked(c)),
                None => v,
            }
        };
        if VNNI {
            for (c, uc) in u.iter().enumerate() {
                for_rows!(R, r, {
                    s[r] = _mm256_dpbusd_avx_epi32(s[r], *uc, x(r, c));
                });
            }
            return s;
        }
        for c0 in (0..u.len()).step_by(I16) {
            let mut p = [_mm256_setzero_si256(); R];
            for c in c0..(c0 + I16).min(u.len()) {
                for_rows!(R, r, {
                    let m = _mm256_maddubs_epi16(*u.get_unchecked(c), x(r, c));
                    p[r] = if c == c0 { m } else { _mm256_add_epi16(p[r], m) };
                });
            }
            for_rows!(R, r, {
                s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(p[r], ones));
            });
        }
        s
    }

    /// A block's 4 nibble lines at `p` as 8 vectors of 0..15: low nibbles (values 0..16),
    /// then high (16..32).
    #[inline(always)]
    unsafe fn nibbles(p: *const u8, m4: __m256i) -> [__m256i; 8] {
        let mut w = [_mm256_setzero_si256(); 8];
        for c in 0..4 {
            let line = _mm256_load_si256(p.add(c * 32) as *const __m256i);
            w[c] = _mm256_and_si256(line, m4);
            w[4 + c] = _mm256_and_si256(_mm256_srli_epi16(line, 4), m4);
        }
        w
    }

    /// Q4_0: `sum_b d_w * (d_x * sum(n * x_q) - 8 d_x sum(x_q))` with `n` the 0..15 nibbles.
    #[inline(always)]
    unsafe fn q4_0_body<const R: usize, const VNNI: bool>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = _mm256_set1_epi8(0x0f);
        let scales = group.add(nb * 16 * LANES);
        let mut acc = [_mm256_setzero_ps(); R];
        for b in 0..nb {
            let p = group.add(b * 16 * LANES);
            prefetch(p, 16 * LANES);
            let w = nibbles(p, m4);
            let dw = _mm256_cvtph_ps(_mm_loadu_si128(scales.add(b * 2 * LANES) as *const __m128i));
            let s = sums::<R, VNNI, 8>(&w, None, xs, b);
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]), _mm256_set1_ps(*x.d.get_unchecked(b)), _mm256_set1_ps(*x.q4_offset.get_unchecked(b)));
                acc[r] = _mm256_fmadd_ps(t, dw, acc[r]);
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q4_1: `sum_b d_w * d_x * sum(n * x_q) + m_w * d_x * sum(x_q)` with `n` the 0..15 nibbles.
    #[inline(always)]
    unsafe fn q4_1_body<const R: usize, const VNNI: bool>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = _mm256_set1_epi8(0x0f);
        let (scales, mins) = (group.add(nb * 16 * LANES), group.add(nb * 18 * LANES));
        let mut acc = [_mm256_setzero_ps(); R];
        for b in 0..nb {
            let p = group.add(b * 16 * LANES);
            prefetch(p, 16 * LANES);
            let w = nibbles(p, m4);
            let dw = _mm256_cvtph_ps(_mm_loadu_si128(scales.add(b * 2 * LANES) as *const __m128i));
            let mw = _mm256_cvtph_ps(_mm_loadu_si128(mins.add(b * 2 * LANES) as *const __m128i));
            let s = sums::<R, VNNI, 8>(&w, None, xs, b);
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let t = _mm256_mul_ps(_mm256_cvtepi32_ps(s[r]), _mm256_set1_ps(*x.d.get_unchecked(b)));
                acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(*x.ds.get_unchecked(b)), mw, _mm256_fmadd_ps(t, dw, acc[r]));
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q8_0: `sum_b d_w * d_x * sum(|w| * (x_q sign w))`.
    #[inline(always)]
    unsafe fn q8_0_body<const R: usize, const VNNI: bool>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let scales = group.add(nb * 32 * LANES);
        let mut acc = [_mm256_setzero_ps(); R];
        for b in 0..nb {
            let p = group.add(b * 32 * LANES);
            prefetch(p, 32 * LANES);
            let w: [__m256i; 8] = std::array::from_fn(|v| _mm256_load_si256(p.add(v * 32) as *const __m256i));
            let u: [__m256i; 8] = std::array::from_fn(|v| _mm256_abs_epi8(w[v]));
            let dw = _mm256_cvtph_ps(_mm_loadu_si128(scales.add(b * 2 * LANES) as *const __m128i));
            let s = sums::<R, VNNI, 1>(&u, Some(&w), xs, b);
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let f = _mm256_cvtepi32_ps(s[r]);
                acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(f, _mm256_set1_ps(*x.d.get_unchecked(b))), dw, acc[r]);
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q6_K: per 16-value sub-block, `d * sc * (d_x * sum(q * x_q) - 32 d_x sum(x_q))` with
    /// `q` the 0..63 values.
    #[inline(always)]
    unsafe fn q6k_body<const R: usize, const VNNI: bool>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = _mm256_set1_epi8(0x0f);
        let m30 = _mm256_set1_epi8(0x30);
        let (scales, supers) = (group.add(nb * 24 * LANES), group.add(nb * 26 * LANES));
        let mut acc = [_mm256_setzero_ps(); R];
        let mut d = _mm256_setzero_ps();
        for b in 0..nb {
            if b % 8 == 0 {
                d = _mm256_cvtph_ps(_mm_loadu_si128(supers.add(b / 8 * 2 * LANES) as *const __m128i));
            }
            let p = group.add(b * 24 * LANES);
            prefetch(p, 24 * LANES);
            let hi = [_mm256_load_si256(p.add(16 * LANES) as *const __m256i), _mm256_load_si256(p.add(20 * LANES) as *const __m256i)];
            let mut w = [_mm256_setzero_si256(); 8];
            for c in 0..4 {
                let line = _mm256_load_si256(p.add(c * 32) as *const __m256i);
                let lo = [_mm256_and_si256(line, m4), _mm256_and_si256(_mm256_srli_epi16(line, 4), m4)];
                for h in 0..2 {
                    // Bits 2c, 2c + 1 of the high line, moved to bits 4, 5.
                    let bits = match c {
                        0 => _mm256_slli_epi16(hi[h], 4),
                        1 => _mm256_slli_epi16(hi[h], 2),
                        2 => hi[h],
                        _ => _mm256_srli_epi16(hi[h], 2),
                    };
                    w[4 * h + c] = _mm256_or_si256(lo[h], _mm256_and_si256(bits, m30));
                }
            }
            let sc = scales.add(b * 2 * LANES) as *const i64;
            let sc_f = |i: usize| _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_set1_epi64x(sc.add(i).read_unaligned()))));
            // Sub-block by sub-block, so that its sums for all rows fit in registers.
            for h in 0..2 {
                let fs = sc_f(h);
                let s = sums::<R, VNNI, 2>(&w[4 * h..4 * h + 4], None, xs, 2 * b + h);
                for_rows!(R, r, {
                    let x = xs.get_unchecked(r);
                    let t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]), _mm256_set1_ps(*x.d.get_unchecked(b)), _mm256_set1_ps(*x.q6_offset.get_unchecked(2 * b + h)));
                    acc[r] = _mm256_fmadd_ps(t, fs, acc[r]);
                });
            }
        }
        store(acc, bias, out, stride);
    }

    /// The entry points: each body compiled for AVX2 and for AVX2 with AVX-VNNI.
    macro_rules! entries {
        ($($body:ident => $plain:ident, $vnni:ident;)*) => {$(
            #[target_feature(enable = "avx2,fma,f16c")]
            pub unsafe fn $plain<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
                $body::<R, false>(group, nb, xs, bias, out, stride)
            }

            #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
            pub unsafe fn $vnni<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
                $body::<R, true>(group, nb, xs, bias, out, stride)
            }
        )*};
    }

    entries! {
        q4_0_body => q4_0, q4_0_vnni;
        q4_1_body => q4_1, q4_1_vnni;
        q8_0_body => q8_0, q8_0_vnni;
        q6k_body => q6k, q6k_vnni;
    }

    /// f16 (`F16`) or f32 weights, f32 inputs: `acc_r += w[c] * x_r[c]`, 8 rows per FMA;
    /// `U` accumulators per input row over interleaved values of k.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn float<const R: usize, const U: usize, const F16: bool>(group: *const u8, k: usize, x: &[f32], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let mut acc = [[_mm256_setzero_ps(); U]; R];
        let xp = x.as_ptr();
        let mut c = 0;
        let elem = if F16 { 2 } else { 4 };
        while c + U <= k {
            prefetch(group.add(c * LANES * elem), U * LANES * elem);
            for u in 0..U {
                let w = if F16 {
                    _mm256_cvtph_ps(_mm_load_si128(group.add((c + u) * 16) as *const __m128i))
                } else {
                    _mm256_load_ps(group.add((c + u) * 32) as *const f32)
                };
                for (r, a) in acc.iter_mut().enumerate() {
                    a[u] = _mm256_fmadd_ps(w, _mm256_set1_ps(*xp.add(r * k + c + u)), a[u]);
                }
            }
            c += U;
        }
        // k is a multiple of 32, U of 1, 2 or 4: nothing is left over.
        let sums: [__m256; R] = std::array::from_fn(|r| acc[r].iter().fold(_mm256_setzero_ps(), |s, a| _mm256_add_ps(s, *a)));
        store(sums, bias, out, stride);
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    //! 4 weight rows per 128-bit register (aarch64 with the dot-product extension). `sdot` by
    //! element multiplies a line (4 values of each of the 4 rows) by the 4 activation bytes
    //! in one 32-bit lane of an activation register and adds the 4 products into each row's
    //! i32 lane: the activations need no broadcast, and a block's 16 (or 32) activation
    //! bytes are one (two) loads per input row. The operands are both signed, so q8_0 needs
    //! no sign trick; q4_0's nibbles and Q6_K's 6-bit values go in unsigned (0..15, 0..63,
    //! valid i8) with the offset terms applied as in the AVX2 kernels, which thus give the
    //! same sums up to f32 rounding order. Stable Rust has no `sdot` intrinsic (nor one for
    //! f16 -> f32 vectors): both are inline assembly. Float weights are not packed here.
    use super::Q8Row;
    use std::arch::aarch64::*;

    const LANES: usize = 4;

    pub fn available() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| std::arch::is_aarch64_feature_detected!("dotprod"))
    }

    /// `$acc + sdot($w, lane $i of $x)`: each i32 lane `j` of the result adds the products
    /// of bytes `4j..4j + 4` of `$w` with bytes `4 $i..4 $i + 4` of `$x`. A macro so that
    /// the instruction lands in the `dotprod`-enabled entry function.
    macro_rules! sdot_lane {
        ($acc:expr, $w:expr, $x:expr, $i:literal) => {{
            let mut r: int32x4_t = $acc;
            std::arch::asm!(concat!("sdot {r:v}.4s, {w:v}.16b, {x:v}.4b[", $i, "]"), r = inout(vreg) r, w = in(vreg) $w, x = in(vreg) $x, options(pure, nomem, nostack));
            r
        }};
    }

    /// The 4 f16 values at `p` as f32 (`fcvtl`, base ARMv8).
    #[inline(always)]
    unsafe fn f16x4(p: *const u8) -> float32x4_t {
        let h = vld1_u16(p as *const u16);
        let r: float32x4_t;
        std::arch::asm!("fcvtl {r:v}.4s, {h:v}.4h", r = out(vreg) r, h = in(vreg) h, options(pure, nomem, nostack));
        r
    }

    /// Adds the bias (if any) and stores 4 outputs per input row.
    #[inline(always)]
    unsafe fn store<const R: usize>(acc: [float32x4_t; R], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let b = match bias {
            Some(p) => vld1q_f32(p),
            None => vdupq_n_f32(0.0),
        };
        for (r, a) in acc.into_iter().enumerate() {
            vst1q_f32(out.add(r * stride), vaddq_f32(a, b));
        }
    }

    /// `sum_c sdot(w[c], lane c of x)` for the 4 lines `w` against the 16 activation bytes `x`.
    #[inline(always)]
    unsafe fn sum4(w: &[int8x16_t], x: int8x16_t) -> int32x4_t {
        let s = sdot_lane!(vdupq_n_s32(0), w[0], x, 0);
        let s = sdot_lane!(s, w[1], x, 1);
        let s = sdot_lane!(s, w[2], x, 2);
        sdot_lane!(s, w[3], x, 3)
    }

    /// The 16 activation bytes of row `x` from value `at` on.
    #[inline(always)]
    unsafe fn x16(x: &Q8Row, at: usize) -> int8x16_t {
        vld1q_s8(x.q.as_ptr().add(at))
    }

    /// A block's 4 nibble lines at `p` as 0..15 values: the low nibbles (values 0..16), the
    /// high ones (16..32).
    #[inline(always)]
    unsafe fn nibbles(p: *const u8, m4: uint8x16_t) -> ([int8x16_t; 4], [int8x16_t; 4]) {
        let mut lo = [vdupq_n_s8(0); 4];
        let mut hi = [vdupq_n_s8(0); 4];
        for c in 0..4 {
            let line = vld1q_u8(p.add(c * 16));
            lo[c] = vreinterpretq_s8_u8(vandq_u8(line, m4));
            hi[c] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(line));
        }
        (lo, hi)
    }

    /// Q4_0: `sum_b d_w * (d_x * sum(n * x_q) - 8 d_x sum(x_q))` with `n` the 0..15 nibbles.
    #[inline(always)]
    unsafe fn q4_0_body<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = vdupq_n_u8(0x0f);
        let scales = group.add(nb * 16 * LANES);
        let mut acc = [vdupq_n_f32(0.0); R];
        for b in 0..nb {
            let p = group.add(b * 16 * LANES);
            let (lo, hi) = nibbles(p, m4);
            let dw = f16x4(scales.add(b * 2 * LANES));
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let s = vaddq_s32(sum4(&lo, x16(x, b * 32)), sum4(&hi, x16(x, b * 32 + 16)));
                let t = vfmaq_n_f32(vdupq_n_f32(*x.q4_offset.get_unchecked(b)), vcvtq_f32_s32(s), *x.d.get_unchecked(b));
                acc[r] = vfmaq_f32(acc[r], t, dw);
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q4_1: `sum_b d_w * d_x * sum(n * x_q) + m_w * d_x * sum(x_q)` with `n` the 0..15 nibbles.
    #[inline(always)]
    unsafe fn q4_1_body<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = vdupq_n_u8(0x0f);
        let (scales, mins) = (group.add(nb * 16 * LANES), group.add(nb * 18 * LANES));
        let mut acc = [vdupq_n_f32(0.0); R];
        for b in 0..nb {
            let p = group.add(b * 16 * LANES);
            let (lo, hi) = nibbles(p, m4);
            let (dw, mw) = (f16x4(scales.add(b * 2 * LANES)), f16x4(mins.add(b * 2 * LANES)));
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let s = vaddq_s32(sum4(&lo, x16(x, b * 32)), sum4(&hi, x16(x, b * 32 + 16)));
                let t = vmulq_n_f32(vcvtq_f32_s32(s), *x.d.get_unchecked(b));
                acc[r] = vfmaq_n_f32(vfmaq_f32(acc[r], t, dw), mw, *x.ds.get_unchecked(b));
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q8_0: `sum_b d_w * d_x * sum(w * x_q)`.
    #[inline(always)]
    unsafe fn q8_0_body<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let scales = group.add(nb * 32 * LANES);
        let mut acc = [vdupq_n_f32(0.0); R];
        for b in 0..nb {
            let p = group.add(b * 32 * LANES);
            let w: [int8x16_t; 8] = std::array::from_fn(|v| vld1q_s8(p.add(v * 16) as *const i8));
            let dw = f16x4(scales.add(b * 2 * LANES));
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                let s = vaddq_s32(sum4(&w[..4], x16(x, b * 32)), sum4(&w[4..], x16(x, b * 32 + 16)));
                acc[r] = vfmaq_f32(acc[r], vmulq_n_f32(vcvtq_f32_s32(s), *x.d.get_unchecked(b)), dw);
            });
        }
        store(acc, bias, out, stride);
    }

    /// Q6_K: per 16-value sub-block, `d * sc * (d_x * sum(q * x_q) - 32 d_x sum(x_q))` with
    /// `q` the 0..63 values.
    #[inline(always)]
    unsafe fn q6k_body<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
        let m4 = vdupq_n_u8(0x0f);
        let m30 = vdupq_n_u8(0x30);
        let (scales, supers) = (group.add(nb * 24 * LANES), group.add(nb * 26 * LANES));
        let mut acc = [vdupq_n_f32(0.0); R];
        let mut d = vdupq_n_f32(0.0);
        for b in 0..nb {
            if b % 8 == 0 {
                d = f16x4(supers.add(b / 8 * 2 * LANES));
            }
            let p = group.add(b * 24 * LANES);
            let hi = [vld1q_u8(p.add(16 * LANES)), vld1q_u8(p.add(20 * LANES))];
            let mut w = [vdupq_n_s8(0); 8];
            for c in 0..4 {
                let line = vld1q_u8(p.add(c * 16));
                let lo = [vandq_u8(line, m4), vshrq_n_u8::<4>(line)];
                for h in 0..2 {
                    // Bits 2c, 2c + 1 of the high line, moved to bits 4, 5.
                    let bits = match c {
                        0 => vshlq_n_u8::<4>(hi[h]),
                        1 => vshlq_n_u8::<2>(hi[h]),
                        2 => hi[h],
                        _ => vshrq_n_u8::<2>(hi[h]),
                    };
                    w[4 * h + c] = vreinterpretq_s8_u8(vorrq_u8(lo[h], vandq_u8(bits, m30)));
                }
            }
            // The 2 x 4 sub-block scales (i8): first of values 0..16, then of 16..32.
            let sc = vmovl_s8(vld1_s8(scales.add(b * 2 * LANES) as *const i8));
            let fs = [vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_low_s16(sc)))), vmulq_f32(d, vcvtq_f32_s32(vmovl_high_s16(sc)))];
            for_rows!(R, r, {
                let x = xs.get_unchecked(r);
                for h in 0..2 {
                    let s = sum4(&w[4 * h..4 * h + 4], x16(x, b * 32 + 16 * h));
                    let t = vfmaq_n_f32(vdupq_n_f32(*x.q6_offset.get_unchecked(2 * b + h)), vcvtq_f32_s32(s), *x.d.get_unchecked(b));
                    acc[r] = vfmaq_f32(acc[r], t, fs[h]);
                }
            });
        }
        store(acc, bias, out, stride);
    }

    macro_rules! entries {
        ($($body:ident => $name:ident;)*) => {$(
            #[target_feature(enable = "neon,dotprod")]
            pub unsafe fn $name<const R: usize>(group: *const u8, nb: usize, xs: &[Q8Row], bias: Option<*const f32>, out: *mut f32, stride: usize) {
                $body::<R>(group, nb, xs, bias, out, stride)
            }
        )*};
    }

    entries! {
        q4_0_body => q4_0;
        q4_1_body => q4_1;
        q8_0_body => q8_0;
        q6k_body => q6k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{dequantize_row, quantize_row};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// `rows` weight rows of `k` values as raw random blocks of `dtype`: every bit pattern
    /// the kernels may meet (q8_0 weights of -128, Q6_K scales of either sign, all nibbles),
    /// with finite f16 scales of varied size, some of them zero.
    fn random_blocks(dtype: GgmlType, rows: usize, k: usize, rng: &mut StdRng) -> Vec<u8> {
        let scale = |rng: &mut StdRng| {
            let v = if rng.random_range(0..16) == 0 { 0.0 } else { rng.random_range(-1.0f32..1.0) * 10f32.powi(rng.random_range(-3..1)) };
            half::f16::from_f32(v).to_le_bytes()
        };
        let (elems, bytes) = (dtype.block_elems(), dtype.block_bytes());
        let mut out = Vec::with_capacity(rows * k / elems * bytes);
        for _ in 0..rows * k / elems {
            let mut blk: Vec<u8> = (0..bytes).map(|_| rng.random()).collect();
            match dtype {
                GgmlType::Q4_0 | GgmlType::Q8_0 => blk[..2].copy_from_slice(&scale(rng)),
                GgmlType::Q4_1 => {
                    blk[..2].copy_from_slice(&scale(rng));
                    blk[2..4].copy_from_slice(&scale(rng));
                }
                GgmlType::Q6_K => blk[208..210].copy_from_slice(&scale(rng)),
                _ => unreachable!("integer types only"),
            }
            out.extend_from_slice(&blk);
        }
        out
    }

    /// The row-at-a-time scalar reference for one weight row.
    fn scalar_row(dtype: GgmlType, w: &[u8], x: &Q8Row) -> f32 {
        use super::super::qdot::{scalar_dot, QKind};
        match dtype {
            GgmlType::Q6_K => q6k::scalar_dot(w, x),
            GgmlType::Q8_0 => scalar_dot(QKind::Q8_0, w, x),
            GgmlType::Q4_0 => scalar_dot(QKind::Q4_0, w, x),
            GgmlType::Q4_1 => scalar_dot(QKind::Q4_1, w, x),
            _ => unreachable!("integer types only"),
        }
    }

    fn quantized_rows(x: &[f32], k: usize) -> Vec<Q8Row> {
        x.chunks(k)
            .map(|r| {
                let mut q = Q8Row::default();
                q.quantize(r);
                q
            })
            .collect()
    }

    /// Every packed family this CPU runs, against the scalar row-at-a-time reference (same
    /// 8-bit activations) on random blocks: every integer type, odd block counts, groups
    /// that are not a multiple of the larger lane count, every tile height, tails of tiles
    /// and more than one chunk of rows.
    #[test]
    fn packed_matches_scalar_reference_on_random_blocks() {
        let families = Family::all_available();
        if families.is_empty() {
            assert!(std::env::var_os("CI").is_none(), "CI is set and this CPU runs no packed kernels (AVX2, AVX-512, NEON dotprod)");
            eprintln!("SKIPPED: no AVX2, AVX-512 or NEON dotprod: packed kernels not exercised");
            return;
        }
        let mut rng = StdRng::seed_from_u64(28);
        // (type, k): 3 blocks (odd), 5 blocks, 32 blocks; Q6_K: 1 and 4 superblocks.
        let shapes = [(GgmlType::Q4_0, 96), (GgmlType::Q4_0, 160), (GgmlType::Q4_0, 1024), (GgmlType::Q4_1, 96), (GgmlType::Q4_1, 1024), (GgmlType::Q8_0, 96), (GgmlType::Q8_0, 160), (GgmlType::Q8_0, 1024), (GgmlType::Q6_K, 256), (GgmlType::Q6_K, 1024)];
        for family in families {
            for (dtype, k) in shapes {
                // 40 rows: five AVX2 groups, not a whole number of AVX-512 groups.
                for n in [40, 48] {
                    let bytes = random_blocks(dtype, n, k, &mut rng);
                    let view = WeightView { dtype, bytes: &bytes, rows: n, cols: k };
                    let Some(packed) = PackedWeight::pack_for(view, family) else {
                        assert!(n % family.lanes() != 0 || (dtype == GgmlType::Q4_1 && !family.packs(PackedKind::Q4_1)), "{family:?} {dtype} {n}x{k}: not packed");
                        continue;
                    };
                    let lanes = family.lanes();
                    assert_eq!(packed.bytes(), n / lanes * (k / QK * packed.kind.block_bytes() * lanes / 16).div_ceil(64) * 64);
                    let mut decoded = vec![0f32; n * k];
                    for (j, d) in decoded.chunks_mut(k).enumerate() {
                        dequantize_row(dtype, view.rows_bytes(j, 1), d).unwrap();
                    }
                    let bias: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
                    for m in [1, 2, 3, 4, 5, 7, 8, 9, 11, 300] {
                        if m == 300 && k != 1024 {
                            continue;
                        }
                        let x: Vec<f32> = (0..m * k).map(|_| rng.random_range(-4.0f32..4.0) * if rng.random_range(0..8) == 0 { 0.01 } else { 1.0 }).collect();
                        let rows = quantized_rows(&x, k);
                        let mut got = vec![0f32; m * n];
                        matmul(&rows, &packed, Some(&bias), &mut got);
                        for (i, xq) in rows.iter().enumerate() {
                            let xd: Vec<f32> = (0..k).map(|c| xq.q[c] as f32 * xq.d[c / QK]).collect();
                            for j in 0..n {
                                let want = scalar_row(dtype, view.rows_bytes(j, 1), xq) + bias[j];
                                // The kernels add the same products in another order (and split
                                // off offset terms): f32 rounding relative to the terms' size.
                                let wr = &decoded[j * k..(j + 1) * k];
                                let wmax = wr.iter().fold(0f32, |a, v| a.max(v.abs()));
                                let mag: f32 = xd.iter().zip(wr).map(|(x, w)| x.abs() * (w.abs() + wmax)).sum();
                                let a = got[i * n + j];
                                assert!((a - want).abs() <= 1e-5 * mag + 1e-4 * (1.0 + bias[j].abs()), "{family:?} {dtype} n={n} k={k} m={m} [{i},{j}]: {a} vs {want} (terms {mag})");
                            }
                        }
                    }
                }
            }
        }
    }

    /// The packed kernels against the row-at-a-time ones (same 8-bit activations) on
    /// quantized smooth weights, and the float kinds against f64 sums, for every family.
    #[test]
    fn packed_matches_row_kernels() {
        let families = Family::all_available();
        if families.is_empty() {
            assert!(std::env::var_os("CI").is_none(), "CI is set and this CPU runs no packed kernels (AVX2, AVX-512, NEON dotprod)");
            eprintln!("SKIPPED: no AVX2, AVX-512 or NEON dotprod: packed kernels not exercised");
            return;
        }
        for family in families {
            for (dtype, k) in [(GgmlType::Q4_0, 96), (GgmlType::Q4_0, 1024), (GgmlType::Q4_1, 1024), (GgmlType::Q6_K, 512), (GgmlType::Q8_0, 96), (GgmlType::Q8_0, 1024), (GgmlType::F16, 96), (GgmlType::F32, 96), (GgmlType::F16, 160)] {
                let n = 48;
                let wf: Vec<f32> = (0..n * k).map(|i| (((i as u32).wrapping_mul(2654435761) >> 7) % 1000) as f32 / 300.0 - 1.6).collect();
                let mut bytes = Vec::new();
                for row in wf.chunks(k) {
                    quantize_row(dtype, row, &mut bytes).unwrap();
                }
                let view = WeightView { dtype, bytes: &bytes, rows: n, cols: k };
                let kind = match dtype {
                    GgmlType::Q4_1 => PackedKind::Q4_1,
                    GgmlType::F16 => PackedKind::F16,
                    GgmlType::F32 => PackedKind::F32,
                    _ => PackedKind::Q4_0,
                };
                if !family.packs(kind) {
                    assert!(PackedWeight::pack_for(view, family).is_none(), "{family:?} packed {dtype}");
                    continue;
                }
                let packed = PackedWeight::pack_for(view, family).expect("packable");
                let data = n / 16 * k / QK * packed.kind.block_bytes();
                // q4_0, q4_1, Q6_K, f16, f32: the file's bytes exactly, rearranged; q8_0 adds block sums.
                assert_eq!(data, if dtype == GgmlType::Q8_0 { bytes.len() + n * k / QK * 2 } else { bytes.len() });
                let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 3.0).collect();
                // 300 rows: more than one chunk of rows at k = 1024.
                for m in [1, 3, 4, 8, 11, 300] {
                    let x: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0).collect();
                    let rows = quantized_rows(&x, k);
                    let mut want = vec![0f32; m * n];
                    let mut got = vec![0f32; m * n];
                    if matches!(dtype, GgmlType::F16 | GgmlType::F32) {
                        // f32 inputs: against f64 sums over the decoded weights.
                        for i in 0..m {
                            for j in 0..n {
                                let mut wr = vec![0f32; k];
                                view.decode_row(j, &mut wr);
                                let s: f64 = (0..k).map(|c| x[i * k + c] as f64 * wr[c] as f64).sum();
                                want[i * n + j] = s as f32 + bias[j];
                            }
                        }
                        matmul_f32(&x, m, &packed, Some(&bias), &mut got);
                    } else {
                        for (i, xq) in rows.iter().enumerate() {
                            for j in 0..n {
                                want[i * n + j] = scalar_row(dtype, view.rows_bytes(j, 1), xq) + bias[j];
                            }
                        }
                        matmul(&rows, &packed, Some(&bias), &mut got);
                    }
                    for (a, b) in got.iter().zip(&want) {
                        assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{family:?} {dtype} k={k} m={m}: {a} vs {b}");
                    }
                }
            }
        }
    }

    /// The family chosen at run time is the best this CPU has, AVX-512 first.
    #[test]
    fn family_is_the_best_available() {
        if std::env::var("SEQGPT_CPU_PACKED").is_ok_and(|v| v == "0") {
            return;
        }
        assert_eq!(family(), Family::all_available().first().copied());
        #[cfg(target_arch = "x86_64")]
        if super::super::qdot::avx512_available() {
            assert_eq!(family(), Some(Family::Avx512Vnni));
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;
    use crate::quant::quantize_row;

    /// `n x k` weights for `family`, every row the same quantized pattern.
    fn packed_weights(dtype: GgmlType, n: usize, k: usize, family: Family) -> PackedWeight {
        let wf: Vec<f32> = (0..k).map(|i| (i % 13) as f32 - 6.0).collect();
        let mut row = Vec::new();
        quantize_row(dtype, &wf, &mut row).expect("quantize the pattern row");
        let bytes: Vec<u8> = row.iter().cycle().take(row.len() * n).cloned().collect();
        PackedWeight::pack_for(WeightView { dtype, bytes: &bytes, rows: n, cols: k }, family).expect("a packable type and shape")
    }

    /// `m` 8-bit input rows of width `k`.
    fn input_rows(m: usize, k: usize) -> Vec<Q8Row> {
        (0..m)
            .map(|i| {
                let mut q = Q8Row::default();
                q.quantize(&(0..k).map(|c| ((c + i) % 7) as f32).collect::<Vec<_>>());
                q
            })
            .collect()
    }

    /// Kernel throughput alone, every family this CPU runs: `cargo test --release --lib
    /// packed_speed -- --ignored --nocapture`.
    #[test]
    #[ignore = "kernel benchmark, seconds to minutes: cargo test --release -p seqgpt-engine --lib packed_speed -- --ignored --nocapture"]
    fn packed_speed() {
        for family in Family::all_available() {
            // 262144 rows: the weights do not fit in cache, as in a model.
            for (dtype, n, k) in [(GgmlType::Q4_0, 4096, 1024), (GgmlType::Q4_0, 262144, 1024), (GgmlType::Q6_K, 262144, 1024)] {
                let packed = packed_weights(dtype, n, k, family);
                for m in [1, 8, 64] {
                    let rows = input_rows(m, k);
                    let mut out = vec![0f32; m * n];
                    matmul(&rows, &packed, None, &mut out);
                    let reps = (2_000_000_000 / (m * n * k)).max(2);
                    let t = std::time::Instant::now();
                    for _ in 0..reps {
                        matmul(&rows, &packed, None, &mut out);
                    }
                    let s = t.elapsed().as_secs_f64() / reps as f64;
                    println!("{} {dtype} n={n} k={k} m={m}: {:.2} ms  {:.1} GMAC/s  {:.1} GB/s of weights", family.name(), s * 1e3, (m * n * k) as f64 / s / 1e9, packed.bytes() as f64 / s / 1e9);
                }
            }
        }
    }

    /// The kernels' instruction throughput with nothing waiting on memory: one group of
    /// weight rows (5-13 KB, stays in L1) against 1-8 input rows, on the calling thread, no
    /// rayon. Against `packed_speed` this separates the kernel's own issue rate from the
    /// memory hierarchy and threading. `cargo test --release --lib packed_kernel_in_l1 --
    /// --ignored --nocapture`
    #[test]
    #[ignore = "kernel benchmark: cargo test --release -p seqgpt-engine --lib packed_kernel_in_l1 -- --ignored --nocapture"]
    fn packed_kernel_in_l1() {
        for family in Family::all_available() {
            let (n, k) = (family.lanes(), 1024);
            for dtype in [GgmlType::Q4_0, GgmlType::Q6_K, GgmlType::Q8_0] {
                let packed = packed_weights(dtype, n, k, family);
                for m in 1..=8 {
                    let rows = input_rows(m, k);
                    let mut out = vec![0f32; m * n];
                    let reps = 400_000 / m;
                    let mut best = f64::INFINITY;
                    for _ in 0..5 {
                        let t = std::time::Instant::now();
                        for _ in 0..reps {
                            // SAFETY: group 0 exists; `out` holds m rows of n (stride n).
                            unsafe { kernel(&packed, 0, &rows, None, out.as_mut_ptr(), n) };
                            std::hint::black_box(&mut out);
                        }
                        best = best.min(t.elapsed().as_secs_f64() / reps as f64);
                    }
                    let macs = (m * n * k) as f64;
                    println!("{} {dtype} in L1, one thread, m={m}: {:.1} GMAC/s (best of 5)", family.name(), macs / best / 1e9);
                }
            }
        }
    }
}
