//! The fused CUDA kernels of kernels.cu as candle custom ops (f16 activations).
//!
//! Each op checks shapes and contiguity on the host and launches one kernel; the CPU side of
//! each op is never used (the CPU path has its own kernels) and says so.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaView, LaunchConfig, PinnedHostSlice, PushKernelArg};
use candle_core::cuda_backend::{CudaDevice, CudaStorage, WrapErr};
use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, CustomOp2, CustomOp3, InplaceOp2, Layout, Result, Shape, Storage, Tensor};
use std::sync::Mutex;
// One call's geometry is the CPU kernels' (the same six numbers on either device).
use crate::kernels::attention::AttnShape;
use half::f16;

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/seqgpt_kernels.ptx"));
const MODULE: &str = "seqgpt_kernels";

fn cpu_unused(op: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("{op} is a CUDA kernel; the CPU path does not use it"))
}

fn view<'a>(s: &'a CudaStorage, l: &Layout, what: &str) -> Result<CudaView<'a, f16>> {
    let (a, b) = l
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg(format!("{what}: expects a contiguous f16 tensor")))?;
    Ok(s.as_cuda_slice::<f16>()?.slice(a..b))
}

fn view_f32<'a>(s: &'a CudaStorage, l: &Layout, what: &str) -> Result<CudaView<'a, f32>> {
    let (a, b) = l
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg(format!("{what}: expects a contiguous f32 tensor")))?;
    Ok(s.as_cuda_slice::<f32>()?.slice(a..b))
}

fn elementwise_cfg(total: usize) -> LaunchConfig {
    let threads = 256u32;
    let blocks = (total as u32).div_ceil(threads).clamp(1, 65_535);
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// Runs `f` with the CUDA storage of `t` (an operand passed beside the op's inputs).
fn with_cuda<R>(t: &Tensor, what: &str, f: impl FnOnce(&CudaStorage, &Layout) -> Result<R>) -> Result<R> {
    let (st, l) = t.storage_and_layout();
    match &*st {
        Storage::Cuda(s) => f(s, l),
        _ => candle_core::bail!("{what}: expects a CUDA tensor"),
    }
}

/// LayerNorm over the last dimension: `x`, `gamma`, `beta` in f16.
pub struct LayerNormOp {
    pub eps: f32,
}

impl CustomOp3 for LayerNormOp {
    fn name(&self) -> &'static str {
        "sg-layer-norm"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        Err(cpu_unused(self.name()))
    }
    fn cuda_fwd(&self, x: &CudaStorage, xl: &Layout, g: &CudaStorage, gl: &Layout, b: &CudaStorage, bl: &Layout) -> Result<(CudaStorage, Shape)> {
        let dev = x.device().clone();
        let n = *xl.dims().last().unwrap_or(&0);
        let rows = xl.shape().elem_count() / n.max(1);
        let (xv, gv, bv) = (view(x, xl, "layer-norm")?, view(g, gl, "layer-norm")?, view(b, bl, "layer-norm")?);
        let out = unsafe { dev.alloc::<f16>(rows * n)? };
        let func = dev.get_or_load_custom_func("sg_layer_norm", MODULE, PTX)?;
        let mut args = func.builder();
        let n_i = n as i32;
        args.arg(&xv).arg(&gv).arg(&bv).arg(&out).arg(&n_i).arg(&self.eps);
        let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        unsafe { args.launch(cfg) }.w()?;
        Ok((CudaStorage::wrap_cuda_slice(out, dev), xl.shape().clone()))
    }
}

/// `gelu_tanh(x + bias)`.
pub struct BiasGeluOp;

impl CustomOp2 for BiasGeluOp {
    fn name(&self) -> &'static str {
        "sg-bias-gelu"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        Err(cpu_unused(self.name()))
    }
    fn cuda_fwd(&self, x: &CudaStorage, xl: &Layout, b: &CudaStorage, bl: &Layout) -> Result<(CudaStorage, Shape)> {
        let dev = x.device().clone();
        let total = xl.shape().elem_count();
        let n = bl.shape().elem_count() as i32;
        let (xv, bv) = (view(x, xl, "bias-gelu")?, view(b, bl, "bias-gelu")?);
        let out = unsafe { dev.alloc::<f16>(total)? };
        let func = dev.get_or_load_custom_func("sg_bias_gelu", MODULE, PTX)?;
        let mut args = func.builder();
        let total_l = total as i64;
        args.arg(&xv).arg(&bv).arg(&out).arg(&total_l).arg(&n);
        unsafe { args.launch(elementwise_cfg(total)) }.w()?;
        Ok((CudaStorage::wrap_cuda_slice(out, dev), xl.shape().clone()))
    }
}

/// `x + bias + residual`.
pub struct BiasResidualOp;

impl CustomOp3 for BiasResidualOp {
    fn name(&self) -> &'static str {
        "sg-bias-residual"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        Err(cpu_unused(self.name()))
    }
    fn cuda_fwd(&self, x: &CudaStorage, xl: &Layout, b: &CudaStorage, bl: &Layout, r: &CudaStorage, rl: &Layout) -> Result<(CudaStorage, Shape)> {
        let dev = x.device().clone();
        let total = xl.shape().elem_count();
        if rl.shape().elem_count() != total {
            candle_core::bail!("bias-residual: residual shape {:?} vs {:?}", rl.dims(), xl.dims());
        }
        let n = bl.shape().elem_count() as i32;
        let (xv, bv, rv) = (view(x, xl, "bias-residual")?, view(b, bl, "bias-residual")?, view(r, rl, "bias-residual")?);
        let out = unsafe { dev.alloc::<f16>(total)? };
        let func = dev.get_or_load_custom_func("sg_bias_residual", MODULE, PTX)?;
        let mut args = func.builder();
        let total_l = total as i64;
        args.arg(&xv).arg(&bv).arg(&rv).arg(&out).arg(&total_l).arg(&n);
        unsafe { args.launch(elementwise_cfg(total)) }.w()?;
        Ok((CudaStorage::wrap_cuda_slice(out, dev), xl.shape().clone()))
    }
}

/// Writes K (part 1) or V (part 2) of a fused QKV output, bias added, into a cache tensor
/// `[batch, heads, cap, head_dim]` in place.
pub struct KvAppendOp {
    pub dims: AttnShape,
    pub part: i32,
    pub bias: Tensor,
}

impl InplaceOp2 for KvAppendOp {
    fn name(&self) -> &'static str {
        "sg-kv-append"
    }
    fn cpu_fwd(&self, _: &mut CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<()> {
        Err(cpu_unused(self.name()))
    }
    fn cuda_fwd(&self, cache: &mut CudaStorage, cl: &Layout, qkv: &CudaStorage, ql: &Layout) -> Result<()> {
        let d = self.dims;
        if cl.dims() != [d.batch, d.heads, d.cap, d.head_dim] || d.past + d.t > d.cap {
            candle_core::bail!("kv-append: cache {:?} does not fit {d:?}", cl.dims());
        }
        if cl.start_offset() != 0 || !cl.is_contiguous() {
            candle_core::bail!("kv-append: the cache must be a whole contiguous tensor");
        }
        let dev = qkv.device().clone();
        let qv = view(qkv, ql, "kv-append")?;
        with_cuda(&self.bias, "kv-append bias", |bs, bl| {
            let bv = view(bs, bl, "kv-append bias")?;
            let cache_slice = cache.as_cuda_slice_mut::<f16>()?;
            let func = dev.get_or_load_custom_func("sg_kv_append", MODULE, PTX)?;
            let mut args = func.builder();
            let p = [d.batch, d.t, d.heads, d.head_dim, d.cap, d.past].map(|v| v as i32);
            args.arg(&qv).arg(&bv).arg(cache_slice);
            for v in &p {
                args.arg(v);
            }
            args.arg(&self.part);
            unsafe { args.launch(elementwise_cfg(d.batch * d.t * d.heads * d.head_dim)) }.w()?;
            Ok(())
        })
    }
}

/// ALiBi attention over the cache: inputs are the fused QKV output and the K and V caches;
/// `qkv_bias` (f16), `kpos` (`[batch, total]` f32, -1 for padding) and `slopes` (`[heads]`
/// f32) ride along. Output `[batch, t, heads * head_dim]`.
pub struct AttentionOp {
    pub dims: AttnShape,
    pub qkv_bias: Tensor,
    pub kpos: Tensor,
    pub slopes: Tensor,
    pub scale: f32,
}

impl CustomOp3 for AttentionOp {
    fn name(&self) -> &'static str {
        "sg-attention"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        Err(cpu_unused(self.name()))
    }
    fn cuda_fwd(&self, qkv: &CudaStorage, ql: &Layout, k: &CudaStorage, kl: &Layout, v: &CudaStorage, vl: &Layout) -> Result<(CudaStorage, Shape)> {
        let d = self.dims;
        let total = d.past + d.t;
        for l in [kl, vl] {
            if l.dims() != [d.batch, d.heads, d.cap, d.head_dim] {
                candle_core::bail!("attention: cache {:?} does not fit {d:?}", l.dims());
            }
        }
        let dev: CudaDevice = qkv.device().clone();
        let (qv, kv, vv) = (view(qkv, ql, "attention")?, view(k, kl, "attention")?, view(v, vl, "attention")?);
        let out = unsafe { dev.alloc::<f16>(d.batch * d.t * d.heads * d.head_dim)? };
        with_cuda(&self.qkv_bias, "attention bias", |bs, bl| {
            with_cuda(&self.kpos, "attention kpos", |ps, pl| {
                with_cuda(&self.slopes, "attention slopes", |ss, sl| {
                    let bv = view(bs, bl, "attention bias")?;
                    let pv = view_f32(ps, pl, "attention kpos")?;
                    let sv = view_f32(ss, sl, "attention slopes")?;
                    let func = dev.get_or_load_custom_func("sg_attention", MODULE, PTX)?;
                    let mut args = func.builder();
                    args.arg(&qv).arg(&bv).arg(&kv).arg(&vv).arg(&pv).arg(&sv).arg(&out);
                    let p = [d.batch, d.t, d.heads, d.head_dim, d.cap, d.past, total].map(|x| x as i32);
                    for x in &p {
                        args.arg(x);
                    }
                    args.arg(&self.scale);
                    let smem = ((d.head_dim + total + 32) * 4) as u32;
                    let cfg = LaunchConfig {
                        grid_dim: ((d.batch * d.heads * d.t) as u32, 1, 1),
                        block_dim: (128, 1, 1),
                        shared_mem_bytes: smem,
                    };
                    unsafe { args.launch(cfg) }.w()?;
                    Ok(())
                })
            })
        })?;
        Ok((CudaStorage::wrap_cuda_slice(out, dev), Shape::from((d.batch, d.t, d.heads * d.head_dim))))
    }
}

/// Uploads hidden states (gathered on the CPU from the mapped embeddings) through a
/// page-locked buffer, so the copy is a DMA straight from it. The buffer is reused while the
/// size stays the same (every decoding step), reallocated when it changes.
#[derive(Default)]
pub struct PinnedStaging {
    buf: Mutex<Option<PinnedHostSlice<f32>>>,
}

impl PinnedStaging {
    pub fn upload(&self, data: &[f32], shape: &[usize], dev: &CudaDevice) -> Result<Tensor> {
        let mut guard = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().map_or(true, |b| b.len() != data.len()) {
            let ctx = dev.cuda_stream().context().clone();
            // SAFETY: the buffer is fully written below before any copy reads it.
            *guard = Some(unsafe { ctx.alloc_pinned::<f32>(data.len()) }.w()?);
        }
        let pinned = guard.as_mut().expect("allocated above");
        // as_mut_slice waits for the previous copy out of this buffer to finish.
        pinned.as_mut_slice().w()?.copy_from_slice(data);
        let mut dst = unsafe { dev.alloc::<f32>(data.len())? };
        dev.cuda_stream().memcpy_htod(&*pinned, &mut dst).w()?;
        let storage = Storage::Cuda(CudaStorage::wrap_cuda_slice(dst, dev.clone()));
        Ok(Tensor::from_storage(storage, shape, BackpropOp::none(), false))
    }
}
