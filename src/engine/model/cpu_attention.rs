//! The CPU attention path as candle custom ops: K and V appended to the cache in place, and
//! ALiBi attention reading the cache in place (kernels::attention). The cache is f32 or f16.

use crate::kernels::attention::{alibi_attention, append_kv, AttnShape, KvSlice, KvSliceMut};
use candle_core::{CpuStorage, CustomOp3, InplaceOp2, Layout, Result, Shape};

fn f32_slice<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&v[a..b]),
        _ => candle_core::bail!("{what}: expects a contiguous f32 tensor"),
    }
}

/// A whole contiguous f32 or f16 cache tensor.
fn kv_slice<'a>(s: &'a CpuStorage, l: &Layout) -> Result<KvSlice<'a>> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(KvSlice::F32(&v[a..b])),
        (CpuStorage::F16(v), Some((a, b))) => Ok(KvSlice::F16(&v[a..b])),
        _ => candle_core::bail!("attention: expects a contiguous f32 or f16 cache"),
    }
}

/// Writes K (part 1) or V (part 2) of the QKV output into a cache tensor in place.
pub struct AppendKv {
    pub shape: AttnShape,
    pub part: usize,
}

impl InplaceOp2 for AppendKv {
    fn name(&self) -> &'static str {
        "cpu-append-kv"
    }
    fn cpu_fwd(&self, cache: &mut CpuStorage, cl: &Layout, qkv: &CpuStorage, ql: &Layout) -> Result<()> {
        let s = self.shape;
        if cl.dims() != [s.batch, s.heads, s.cap, s.head_dim] || cl.start_offset() != 0 || !cl.is_contiguous() {
            candle_core::bail!("append-kv: cache {:?} does not fit {s:?}", cl.dims());
        }
        let qkv = f32_slice(qkv, ql, "append-kv")?;
        let cache = match cache {
            CpuStorage::F32(c) => KvSliceMut::F32(c),
            CpuStorage::F16(c) => KvSliceMut::F16(c),
            _ => candle_core::bail!("append-kv: the cache must be f32 or f16"),
        };
        append_kv(s, qkv, self.part, cache);
        Ok(())
    }
}

/// ALiBi attention: inputs the QKV output and the K and V caches; key positions (-1 for
/// padding) and slopes ride along. Output `[batch, t, heads * head_dim]`.
pub struct Attention {
    pub shape: AttnShape,
    pub kpos: Vec<f32>,
    pub slopes: Vec<f32>,
    pub scale: f32,
}

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "cpu-alibi-attention"
    }
    fn cpu_fwd(&self, qkv: &CpuStorage, ql: &Layout, k: &CpuStorage, kl: &Layout, v: &CpuStorage, vl: &Layout) -> Result<(CpuStorage, Shape)> {
        let s = self.shape;
        for l in [kl, vl] {
            if l.dims() != [s.batch, s.heads, s.cap, s.head_dim] {
                candle_core::bail!("attention: cache {:?} does not fit {s:?}", l.dims());
            }
        }
        let (qkv, k, v) = (f32_slice(qkv, ql, "attention")?, kv_slice(k, kl)?, kv_slice(v, vl)?);
        if std::mem::discriminant(&k) != std::mem::discriminant(&v) {
            candle_core::bail!("attention: keys and values in different types");
        }
        let mut out = vec![0f32; s.batch * s.t * s.heads * s.head_dim];
        alibi_attention(s, qkv, k, v, &self.kpos, &self.slopes, self.scale, &mut out);
        Ok((CpuStorage::F32(out), Shape::from((s.batch, s.t, s.heads * s.head_dim))))
    }
}
