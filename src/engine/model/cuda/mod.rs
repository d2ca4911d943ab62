//! The fused CUDA kernels of kernels.cu as candle custom ops (f16 activations).
//!
//! Each op checks its call through `fused::params` (shapes, integer ranges), takes the
//! scalar arguments and the launch shape from there, and launches one kernel; this module
//! only moves device pointers. The CPU side of each op is never used (the CPU path has its
//! own kernels) and says so.

use super::fused::launch::LaunchShape;
use super::fused::params::{self, AttentionParams, BiasParams, KvAppendParams, LayerNormParams, ParamError, QkvPart, Scalar};
use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaView, LaunchArgs, LaunchConfig, PinnedHostSlice, PushKernelArg};
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

fn refused(e: ParamError) -> candle_core::Error {
    candle_core::Error::Msg(e.to_string())
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

fn config(s: LaunchShape) -> LaunchConfig {
    LaunchConfig { grid_dim: (s.grid, 1, 1), block_dim: (s.block, 1, 1), shared_mem_bytes: s.shared_mem_bytes }
}

/// Pushes the scalar arguments after the pointers, in the kernel's declared order.
fn push_scalars<'a>(args: &mut LaunchArgs<'a>, scalars: &'a [Scalar]) {
    for s in scalars {
        match s {
            Scalar::I32(v) => args.arg(v),
            Scalar::I64(v) => args.arg(v),
            Scalar::F32(v) => args.arg(v),
        };
    }
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
        let p = LayerNormParams::new(xl.dims(), [gl.shape().elem_count(), bl.shape().elem_count()], self.eps).map_err(refused)?;
        let (xv, gv, bv) = (view(x, xl, "layer-norm")?, view(g, gl, "layer-norm")?, view(b, bl, "layer-norm")?);
        let out = unsafe { dev.alloc::<f16>(p.rows * p.n)? };
        let scalars = p.scalars();
        let func = dev.get_or_load_custom_func(params::LAYER_NORM.name, MODULE, PTX)?;
        let mut args = func.builder();
        args.arg(&xv).arg(&gv).arg(&bv).arg(&out);
        push_scalars(&mut args, &scalars);
        unsafe { args.launch(config(p.launch())) }.w()?;
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
        let p = BiasParams::new(&params::BIAS_GELU, xl.shape().elem_count(), bl.shape().elem_count(), None).map_err(refused)?;
        let (xv, bv) = (view(x, xl, "bias-gelu")?, view(b, bl, "bias-gelu")?);
        let out = unsafe { dev.alloc::<f16>(p.total)? };
        let scalars = p.scalars();
        let func = dev.get_or_load_custom_func(params::BIAS_GELU.name, MODULE, PTX)?;
        let mut args = func.builder();
        args.arg(&xv).arg(&bv).arg(&out);
        push_scalars(&mut args, &scalars);
        unsafe { args.launch(config(p.launch())) }.w()?;
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
        let (total, n) = (xl.shape().elem_count(), bl.shape().elem_count());
        let p = BiasParams::new(&params::BIAS_RESIDUAL, total, n, Some(rl.shape().elem_count())).map_err(refused)?;
        let (xv, bv, rv) = (view(x, xl, "bias-residual")?, view(b, bl, "bias-residual")?, view(r, rl, "bias-residual")?);
        let out = unsafe { dev.alloc::<f16>(p.total)? };
        let scalars = p.scalars();
        let func = dev.get_or_load_custom_func(params::BIAS_RESIDUAL.name, MODULE, PTX)?;
        let mut args = func.builder();
        args.arg(&xv).arg(&bv).arg(&rv).arg(&out);
        push_scalars(&mut args, &scalars);
        unsafe { args.launch(config(p.launch())) }.w()?;
        Ok((CudaStorage::wrap_cuda_slice(out, dev), xl.shape().clone()))
    }
}

/// Writes K (part 1) or V (part 2) of a fused QKV output, bias added, into a cache tensor
/// `[batch, heads, cap, head_dim]` in place.
pub struct KvAppendOp {
    pub dims: AttnShape,
    pub part: QkvPart,
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
        if cl.start_offset() != 0 || !cl.is_contiguous() {
            candle_core::bail!("kv-append: the cache must be a whole contiguous tensor");
        }
        let dev = qkv.device().clone();
        let qv = view(qkv, ql, "kv-append")?;
        with_cuda(&self.bias, "kv-append bias", |bs, bl| {
            let p = KvAppendParams::new(self.dims, self.part, cl.dims(), ql.shape().elem_count(), bl.shape().elem_count())
                .map_err(refused)?;
            let bv = view(bs, bl, "kv-append bias")?;
            let cache_slice = cache.as_cuda_slice_mut::<f16>()?;
            let scalars = p.scalars();
            let func = dev.get_or_load_custom_func(params::KV_APPEND.name, MODULE, PTX)?;
            let mut args = func.builder();
            args.arg(&qv).arg(&bv).arg(cache_slice);
            push_scalars(&mut args, &scalars);
            unsafe { args.launch(config(p.launch())) }.w()?;
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
        let (nb, nk, ns) = (self.qkv_bias.elem_count(), self.kpos.elem_count(), self.slopes.elem_count());
        let p = AttentionParams::new(d, self.scale, [kl.dims(), vl.dims()], ql.shape().elem_count(), nb, nk, ns).map_err(refused)?;
        let dev: CudaDevice = qkv.device().clone();
        let (qv, kv, vv) = (view(qkv, ql, "attention")?, view(k, kl, "attention")?, view(v, vl, "attention")?);
        let out = unsafe { dev.alloc::<f16>(d.batch * d.t * d.heads * d.head_dim)? };
        with_cuda(&self.qkv_bias, "attention bias", |bs, bl| {
            with_cuda(&self.kpos, "attention kpos", |ps, pl| {
                with_cuda(&self.slopes, "attention slopes", |ss, sl| {
                    let bv = view(bs, bl, "attention bias")?;
                    let pv = view_f32(ps, pl, "attention kpos")?;
                    let sv = view_f32(ss, sl, "attention slopes")?;
                    let scalars = p.scalars();
                    let func = dev.get_or_load_custom_func(params::ATTENTION.name, MODULE, PTX)?;
                    let mut args = func.builder();
                    args.arg(&qv).arg(&bv).arg(&kv).arg(&vv).arg(&pv).arg(&sv).arg(&out);
                    push_scalars(&mut args, &scalars);
                    unsafe { args.launch(config(p.launch())) }.w()?;
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
