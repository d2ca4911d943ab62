//! Which code runs a forward step: the fused CUDA kernels, the CPU's own kernels, or
//! candle's ops (the general path: any device and type, a shared prompt prefix). Decided
//! from facts about the step alone, so the choice is tested without a GPU.

use super::params::AttentionParams;
use candle_core::DType;

/// The fused CUDA kernels are on unless `SEQGPT_CUDA_FUSED=0` (then candle's own ops run
/// everything: slower, and the reference the fused path is checked against).
pub fn fused_kernels_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SEQGPT_CUDA_FUSED").map_or(true, |v| v != "0"))
}

/// What runs every block of one forward step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockPath {
    /// kernels.cu: LayerNorm, KV append, attention, bias + GELU, bias + residual.
    CudaFused,
    /// The CPU kernels: matmuls over the mapped weights, attention over the cache in place.
    CpuKernels,
    /// candle's ops.
    CandleOps,
}

/// The facts a step's path depends on.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub on_cpu: bool,
    pub on_cuda: bool,
    /// The activations' type.
    pub dtype: DType,
    /// `SEQGPT_CUDA_FUSED` (`fused_kernels_enabled`).
    pub fused_enabled: bool,
    /// Positions of a prompt prefix shared by all rows (beam search); the fused and CPU
    /// attention kernels read one cache per row only.
    pub shared_len: usize,
    /// Keys each query may see after this step (cached plus new).
    pub total: usize,
    pub head_dim: usize,
}

pub fn block_path(s: &Step) -> BlockPath {
    if s.on_cuda
        && s.dtype == DType::F16
        && s.fused_enabled
        && s.shared_len == 0
        && AttentionParams::fits(s.head_dim, s.total)
    {
        BlockPath::CudaFused
    } else if s.on_cpu && s.shared_len == 0 && s.dtype == DType::F32 {
        BlockPath::CpuKernels
    } else {
        BlockPath::CandleOps
    }
}

/// Whether a LayerNorm runs as the fused kernel (f16 on a GPU): also inside steps on
/// candle's ops, which keeps their LayerNorm one launch.
pub fn fused_layer_norm(on_cuda: bool, dtype: DType, fused_enabled: bool) -> bool {
    on_cuda && dtype == DType::F16 && fused_enabled
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_decode() -> Step {
        Step { on_cpu: false, on_cuda: true, dtype: DType::F16, fused_enabled: true, shared_len: 0, total: 200, head_dim: 64 }
    }

    #[test]
    fn a_gpu_step_in_f16_takes_the_fused_kernels() {
        assert_eq!(block_path(&gpu_decode()), BlockPath::CudaFused);
    }

    #[test]
    fn the_gpu_falls_back_to_candle_ops() {
        let s = gpu_decode();
        assert_eq!(block_path(&Step { fused_enabled: false, ..s }), BlockPath::CandleOps, "SEQGPT_CUDA_FUSED=0");
        assert_eq!(block_path(&Step { dtype: DType::F32, ..s }), BlockPath::CandleOps, "f32 activations");
        assert_eq!(block_path(&Step { shared_len: 16, ..s }), BlockPath::CandleOps, "beams over a shared prefix");
        // The longest context whose scores fit shared memory, and one key more.
        let last = 12 * 1024 - 64 - 32;
        assert_eq!(block_path(&Step { total: last, ..s }), BlockPath::CudaFused);
        assert_eq!(block_path(&Step { total: last + 1, ..s }), BlockPath::CandleOps, "scores beyond 48 KiB");
    }

    #[test]
    fn the_cpu_takes_its_kernels_in_f32_without_a_shared_prefix() {
        let cpu = Step { on_cpu: true, on_cuda: false, dtype: DType::F32, ..gpu_decode() };
        assert_eq!(block_path(&cpu), BlockPath::CpuKernels);
        // The fused switch and the context length are the GPU's business.
        assert_eq!(block_path(&Step { fused_enabled: false, total: 100_000, ..cpu }), BlockPath::CpuKernels);
        assert_eq!(block_path(&Step { shared_len: 8, ..cpu }), BlockPath::CandleOps);
        assert_eq!(block_path(&Step { dtype: DType::F16, ..cpu }), BlockPath::CandleOps, "f16 activations on the CPU");
        assert_eq!(block_path(&Step { dtype: DType::BF16, ..cpu }), BlockPath::CandleOps);
    }

    #[test]
    fn other_devices_take_candle_ops() {
        let metal = Step { on_cpu: false, on_cuda: false, ..gpu_decode() };
        assert_eq!(block_path(&metal), BlockPath::CandleOps);
        assert!(!fused_layer_norm(false, DType::F16, true));
    }

    #[test]
    fn layer_norm_is_fused_for_f16_on_a_gpu_unless_switched_off() {
        assert!(fused_layer_norm(true, DType::F16, true));
        assert!(!fused_layer_norm(true, DType::F16, false));
        assert!(!fused_layer_norm(true, DType::F32, true));
    }
}
