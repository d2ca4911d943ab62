//! The building blocks of the model: linear layers and LayerNorm.
//!
//! On the CPU both run as custom candle ops over the mapped file (no copy of the weights);
//! on a GPU the weights are uploaded once and candle's own kernels run them.

use super::placement::tied_head_type;
use super::weights::MappedTensor;
use crate::kernels::packed::PackedWeight;
use crate::kernels::{layer_norm_rows, matmul_t, matmul_t_packed};
use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{CpuStorage, CustomOp1, DType, Device, Layout, Module, Result, Shape, Tensor, D};
use std::borrow::Cow;
use std::sync::OnceLock;

/// The contiguous f32 data of a CPU tensor passed to a custom op.
fn f32_input<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> Result<&'a [f32]> {
    let data = match storage {
        CpuStorage::F32(v) => v.as_slice(),
        _ => candle_core::bail!("{op}: expects f32 input"),
    };
    match layout.contiguous_offsets() {
        Some((start, end)) => Ok(&data[start..end]),
        None => candle_core::bail!("{op}: expects a contiguous input"),
    }
}

/// A weight uploaded to a GPU: kept quantized (candle's quantized matmul) or dense.
enum DeviceWeight {
    Quantized(QMatMul),
    Dense(Tensor),
}

/// `y = x W^T + b` over the last dimension.
pub struct Linear {
    weight: MappedTensor,
    bias: Vec<f32>,
    device: Option<(DeviceWeight, Tensor)>,
    /// CPU: the weight repacked for the interleaved kernels, made on first use (`None`
    /// inside when the CPU, type or shape does not fit them).
    packed: OnceLock<Option<PackedWeight>>,
}

impl Linear {
    /// `weight` is `[out, in]`, `bias` is `[out]`. On a GPU the weight is uploaded now and
    /// its pages of the mapping are given back (the CPU never reads them again).
    pub fn new(weight: MappedTensor, bias: Option<&MappedTensor>, device: &Device, act_dtype: DType) -> Result<Self> {
        let out = weight.shape[0];
        let bias = bias.map_or_else(|| vec![0f32; out], MappedTensor::to_f32_vec);
        let device_weight = match device {
            Device::Cpu => None,
            _ => {
                let w = if weight.dtype.is_quantized() {
                    DeviceWeight::Quantized(QMatMul::from_arc(std::sync::Arc::new(upload(&weight, device)?))?)
                } else {
                    let dense = Tensor::from_vec(weight.to_f32_vec(), weight.shape.as_slice(), &Device::Cpu)?;
                    DeviceWeight::Dense(dense.to_device(device)?.to_dtype(act_dtype)?)
                };
                weight.release_pages();
                let b = Tensor::from_slice(&bias, out, device)?.to_dtype(act_dtype)?;
                Some((w, b))
            }
        };
        Ok(Self { weight, bias, device: device_weight, packed: OnceLock::new() })
    }

    /// A GPU head from a tied embedding: dense embeddings are quantized on the way
    /// (`placement::tied_head_type`: the head is the largest matrix and decoding reads all of
    /// it every token).
    pub fn tied_head(embedding: &MappedTensor, device: &Device, act_dtype: DType) -> Result<Self> {
        if device.is_cpu() || embedding.dtype.is_quantized() {
            return Self::new(embedding.clone(), None, device, act_dtype);
        }
        let dense = Tensor::from_vec(embedding.to_f32_vec(), embedding.shape.as_slice(), &Device::Cpu)?;
        let q = QTensor::quantize_onto(&dense, candle_type(tied_head_type(embedding.dtype)), device)?;
        let out = embedding.shape[0];
        let b = Tensor::zeros(out, act_dtype, device)?;
        Ok(Self {
            weight: embedding.clone(),
            bias: vec![0f32; out],
            device: Some((DeviceWeight::Quantized(QMatMul::from_arc(std::sync::Arc::new(q))?), b)),
            packed: OnceLock::new(),
        })
    }

    pub fn out_features(&self) -> usize {
        self.weight.shape[0]
    }

    pub fn weight(&self) -> &MappedTensor {
        &self.weight
    }

    /// The bias on the GPU (None on the CPU).
    pub fn device_bias(&self) -> Option<&Tensor> {
        self.device.as_ref().map(|(_, b)| b)
    }

    /// The packed copy of the weight, made the first time; the mapping's pages are given back
    /// once it exists (the embedding rows of a tied head page back in as they are read).
    fn packed(&self) -> Option<&PackedWeight> {
        self.packed
            .get_or_init(|| {
                let p = PackedWeight::pack(self.weight.matrix());
                if p.is_some() {
                    self.weight.release_pages();
                }
                p
            })
            .as_ref()
    }

    fn cpu_op(&self, with_bias: bool) -> CpuLinear<'_> {
        CpuLinear { weight: &self.weight, packed: self.packed(), bias: if with_bias { &self.bias } else { &[] } }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match &self.device {
            None => x.contiguous()?.apply_op1_no_bwd(&self.cpu_op(true)),
            Some((_, b)) => self.forward_no_bias(x)?.broadcast_add(b),
        }
    }

    /// `x W^T` without the bias (GPU: fused kernels add it together with what follows).
    pub fn forward_no_bias(&self, x: &Tensor) -> Result<Tensor> {
        match &self.device {
            None => x.contiguous()?.apply_op1_no_bwd(&self.cpu_op(false)),
            Some((DeviceWeight::Quantized(w), _)) => w.forward(&x.contiguous()?),
            Some((DeviceWeight::Dense(w), _)) => x.broadcast_matmul(&w.t()?),
        }
    }
}

/// Uploads a mapped weight to `device` as a candle QTensor of the same ggml type.
pub fn upload(w: &MappedTensor, device: &Device) -> Result<QTensor> {
    let storage = QStorage::from_data(Cow::Borrowed(w.bytes()), device, candle_type(w.dtype))?;
    QTensor::new(storage, w.shape.as_slice())
}

/// candle's name for a ggml type.
fn candle_type(t: crate::gguf::GgmlType) -> GgmlDType {
    use crate::gguf::GgmlType as G;
    match t {
        G::F32 => GgmlDType::F32,
        G::F16 => GgmlDType::F16,
        G::BF16 => GgmlDType::BF16,
        G::Q4_0 => GgmlDType::Q4_0,
        G::Q4_1 => GgmlDType::Q4_1,
        G::Q5_0 => GgmlDType::Q5_0,
        G::Q5_1 => GgmlDType::Q5_1,
        G::Q8_0 => GgmlDType::Q8_0,
        G::Q6_K => GgmlDType::Q6K,
    }
}

struct CpuLinear<'a> {
    weight: &'a MappedTensor,
    packed: Option<&'a PackedWeight>,
    bias: &'a [f32],
}

impl CustomOp1 for CpuLinear<'_> {
    fn name(&self) -> &'static str {
        "mapped-linear"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = f32_input(storage, layout, self.name())?;
        let w = self.weight.matrix();
        let dims = layout.dims();
        let k = *dims.last().unwrap_or(&0);
        if k != w.cols {
            candle_core::bail!("{}: input has {k} features, weight '{}' expects {}", self.name(), self.weight.name, w.cols);
        }
        let m = x.len() / k.max(1);
        let mut out = vec![0f32; m * w.rows];
        let bias = (!self.bias.is_empty()).then_some(self.bias);
        match self.packed {
            Some(p) => matmul_t_packed(x, m, p, bias, &mut out),
            None => matmul_t(x, m, w, bias, &mut out),
        }
        let mut out_dims = dims.to_vec();
        *out_dims.last_mut().expect("rank >= 1") = w.rows;
        Ok((CpuStorage::F32(out), Shape::from(out_dims)))
    }
}

/// LayerNorm over the last dimension with gain and bias.
pub struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
    device_params: Option<(Tensor, Tensor)>,
}

impl LayerNorm {
    pub fn new(gamma: &MappedTensor, beta: &MappedTensor, eps: f32, device: &Device, act_dtype: DType) -> Result<Self> {
        let (gamma, beta) = (gamma.to_f32_vec(), beta.to_f32_vec());
        let device_params = match device {
            Device::Cpu => None,
            _ => Some((
                Tensor::from_slice(&gamma, gamma.len(), device)?.to_dtype(act_dtype)?,
                Tensor::from_slice(&beta, beta.len(), device)?.to_dtype(act_dtype)?,
            )),
        };
        Ok(Self { gamma, beta, eps, device_params })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match &self.device_params {
            None => x.contiguous()?.apply_op1_no_bwd(self),
            #[cfg(feature = "cuda")]
            Some((g, b)) if super::fused::path::fused_layer_norm(x.device().is_cuda(), x.dtype(), super::fused_kernels_enabled()) => {
                x.contiguous()?.apply_op3_no_bwd(g, b, &super::cuda::LayerNormOp { eps: self.eps })
            }
            Some((g, b)) => {
                // Statistics in f32 whatever the activation type, as PyTorch does.
                let dtype = x.dtype();
                let x32 = x.to_dtype(DType::F32)?;
                let mean = x32.mean_keepdim(D::Minus1)?;
                let centred = x32.broadcast_sub(&mean)?;
                let var = centred.sqr()?.mean_keepdim(D::Minus1)?;
                let normed = centred.broadcast_div(&(var + self.eps as f64)?.sqrt()?)?;
                normed.to_dtype(dtype)?.broadcast_mul(g)?.broadcast_add(b)
            }
        }
    }
}

impl CustomOp1 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = f32_input(storage, layout, self.name())?;
        if layout.dims().last() != Some(&self.gamma.len()) {
            candle_core::bail!("layer-norm: input {:?} does not end in {}", layout.dims(), self.gamma.len());
        }
        let mut out = vec![0f32; x.len()];
        layer_norm_rows(x, &self.gamma, &self.beta, self.eps, &mut out);
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}

/// BLOOM's tanh-GELU in place on a CPU f32 tensor ([`crate::kernels::gelu`]); other
/// devices and types use candle's `gelu`.
pub fn gelu(x: Tensor) -> Result<Tensor> {
    if x.device().is_cpu() && x.dtype() == DType::F32 && x.is_contiguous() {
        x.inplace_op1(&GeluInPlace)?;
        Ok(x)
    } else {
        x.gelu()
    }
}

struct GeluInPlace;

impl candle_core::InplaceOp1 for GeluInPlace {
    fn name(&self) -> &'static str {
        "gelu-tanh"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let (CpuStorage::F32(v), Some((start, end))) = (storage, layout.contiguous_offsets()) else {
            candle_core::bail!("gelu-tanh: a contiguous f32 tensor is expected");
        };
        crate::kernels::gelu::gelu_in_place(&mut v[start..end]);
        Ok(())
    }
}
