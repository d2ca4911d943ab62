//! What each fused kernel is passed: its parameters as kernels.cu declares them, and, per
//! kernel, a struct that checks one call's shapes on the host and gives the scalar arguments
//! in the declared order and the launch shape. `model::cuda` pushes exactly these.

use super::launch::{self, LaunchShape, ATTENTION_THREADS, LAYER_NORM_THREADS, MAX_GRID_X, SHARED_MEM_LIMIT};
use crate::kernels::attention::AttnShape;

/// One kernel of kernels.cu: its name and its parameters, spelled as the source declares
/// them (a test holds this table to the source).
#[derive(Debug)]
pub struct Kernel {
    pub name: &'static str,
    pub params: &'static [&'static str],
}

pub const LAYER_NORM: Kernel = Kernel {
    name: "sg_layer_norm",
    params: &["const __half* x", "const __half* gamma", "const __half* beta", "__half* y", "int n", "float eps"],
};
pub const BIAS_GELU: Kernel = Kernel {
    name: "sg_bias_gelu",
    params: &["const __half* x", "const __half* b", "__half* y", "long total", "int n"],
};
pub const BIAS_RESIDUAL: Kernel = Kernel {
    name: "sg_bias_residual",
    params: &["const __half* x", "const __half* b", "const __half* r", "__half* y", "long total", "int n"],
};
pub const KV_APPEND: Kernel = Kernel {
    name: "sg_kv_append",
    params: &[
        "const __half* qkv", "const __half* bias", "__half* cache", "int batch", "int t", "int heads", "int head_dim",
        "int cap", "int past", "int part",
    ],
};
pub const ATTENTION: Kernel = Kernel {
    name: "sg_attention",
    params: &[
        "const __half* qkv", "const __half* bias", "const __half* kc", "const __half* vc", "const float* kpos",
        "const float* slopes", "__half* out", "int batch", "int t", "int heads", "int head_dim", "int cap", "int past",
        "int total", "float scale",
    ],
};

/// Every kernel the PTX module holds.
pub const KERNELS: [&Kernel; 5] = [&LAYER_NORM, &BIAS_GELU, &BIAS_RESIDUAL, &KV_APPEND, &ATTENTION];

/// A scalar argument in the type the kernel declares (`long` is 64-bit on every target the
/// CUDA path runs on: x86_64 and aarch64 Linux).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    I32(i32),
    I64(i64),
    F32(f32),
}

/// A call the kernel cannot take: its shapes do not fit, or a size overflows the kernel's
/// integer type. Caught on the host, before a launch could read out of bounds.
#[derive(Debug, thiserror::Error)]
#[error("{kernel}: {reason}")]
pub struct ParamError {
    pub kernel: &'static str,
    pub reason: String,
}

fn fail<T>(kernel: &Kernel, reason: String) -> Result<T, ParamError> {
    Err(ParamError { kernel: kernel.name, reason })
}

fn int(kernel: &Kernel, what: &str, v: usize) -> Result<Scalar, ParamError> {
    match i32::try_from(v) {
        Ok(v) => Ok(Scalar::I32(v)),
        Err(_) => fail(kernel, format!("{what} = {v} does not fit the kernel's int")),
    }
}

fn grid(kernel: &Kernel, blocks: usize) -> Result<u32, ParamError> {
    if blocks == 0 || blocks as u64 > MAX_GRID_X {
        return fail(kernel, format!("a grid of {blocks} blocks"));
    }
    Ok(blocks as u32)
}

/// `sg_layer_norm`: `rows` rows of `n` values, one block per row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerNormParams {
    pub rows: usize,
    pub n: usize,
    pub eps: f32,
}

impl LayerNormParams {
    /// `x_dims`: the input's shape (normalized over its last dimension); `params_len`: the
    /// length of gamma and of beta.
    pub fn new(x_dims: &[usize], params_len: [usize; 2], eps: f32) -> Result<Self, ParamError> {
        let n = *x_dims.last().unwrap_or(&0);
        let elems: usize = x_dims.iter().product();
        if n == 0 || params_len != [n, n] {
            return fail(&LAYER_NORM, format!("input {x_dims:?} against gamma and beta of {params_len:?}"));
        }
        let p = Self { rows: elems / n, n, eps };
        grid(&LAYER_NORM, p.rows)?;
        int(&LAYER_NORM, "n", n)?;
        Ok(p)
    }

    pub fn scalars(&self) -> Vec<Scalar> {
        vec![Scalar::I32(self.n as i32), Scalar::F32(self.eps)]
    }

    pub fn launch(&self) -> LaunchShape {
        LaunchShape { grid: self.rows as u32, block: LAYER_NORM_THREADS, shared_mem_bytes: 0 }
    }
}

/// `sg_bias_gelu` and `sg_bias_residual`: `total` elements in rows of `n` (the bias's length).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BiasParams {
    pub total: usize,
    pub n: usize,
}

impl BiasParams {
    /// `residual`: the residual's element count (`sg_bias_residual`), which must be `x`'s.
    pub fn new(kernel: &Kernel, x_elems: usize, bias_len: usize, residual: Option<usize>) -> Result<Self, ParamError> {
        if let Some(r) = residual {
            if r != x_elems {
                return fail(kernel, format!("residual of {r} elements against {x_elems}"));
            }
        }
        // The kernels index the bias with `i % n`.
        if bias_len == 0 || x_elems % bias_len != 0 {
            return fail(kernel, format!("{x_elems} elements are not rows of the bias's {bias_len}"));
        }
        int(kernel, "n", bias_len)?;
        Ok(Self { total: x_elems, n: bias_len })
    }

    pub fn scalars(&self) -> Vec<Scalar> {
        vec![Scalar::I64(self.total as i64), Scalar::I32(self.n as i32)]
    }

    pub fn launch(&self) -> LaunchShape {
        launch::elementwise(self.total)
    }
}

/// Which part of the fused QKV output (`[Q; K; V]` along the last dimension) a call reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QkvPart {
    Key = 1,
    Value = 2,
}

/// The element counts of the fused QKV output and of its bias for `s`.
fn check_qkv(kernel: &Kernel, s: &AttnShape, qkv_elems: usize, bias_len: usize) -> Result<(), ParamError> {
    let hd = s.heads * s.head_dim;
    if qkv_elems != s.batch * s.t * 3 * hd || bias_len != 3 * hd {
        return fail(kernel, format!("qkv of {qkv_elems} and bias of {bias_len} elements do not fit {s:?}"));
    }
    Ok(())
}

fn check_cache(kernel: &Kernel, s: &AttnShape, cache_dims: &[usize]) -> Result<(), ParamError> {
    if cache_dims != [s.batch, s.heads, s.cap, s.head_dim] || s.total() > s.cap {
        return fail(kernel, format!("cache {cache_dims:?} does not fit {s:?}"));
    }
    Ok(())
}

fn shape_scalars(kernel: &Kernel, s: &AttnShape) -> Result<Vec<Scalar>, ParamError> {
    [("batch", s.batch), ("t", s.t), ("heads", s.heads), ("head_dim", s.head_dim), ("cap", s.cap), ("past", s.past)]
        .into_iter()
        .map(|(what, v)| int(kernel, what, v))
        .collect()
}

/// `sg_kv_append`: K or V of the new positions, bias added, written into a cache
/// `[batch, heads, cap, head_dim]` at positions `past..past + t`.
#[derive(Debug, Clone, Copy)]
pub struct KvAppendParams {
    pub shape: AttnShape,
    pub part: QkvPart,
}

impl KvAppendParams {
    pub fn new(shape: AttnShape, part: QkvPart, cache_dims: &[usize], qkv_elems: usize, bias_len: usize) -> Result<Self, ParamError> {
        check_cache(&KV_APPEND, &shape, cache_dims)?;
        check_qkv(&KV_APPEND, &shape, qkv_elems, bias_len)?;
        shape_scalars(&KV_APPEND, &shape)?;
        Ok(Self { shape, part })
    }

    /// Elements written: one per thread of the grid-stride loop.
    pub fn elements(&self) -> usize {
        let s = &self.shape;
        s.batch * s.t * s.heads * s.head_dim
    }

    pub fn scalars(&self) -> Vec<Scalar> {
        let mut v = shape_scalars(&KV_APPEND, &self.shape).expect("checked in new");
        v.push(Scalar::I32(self.part as i32));
        v
    }

    pub fn launch(&self) -> LaunchShape {
        launch::elementwise(self.elements())
    }
}

/// `sg_attention`: one block per (row, head, query), the query's scores in shared memory.
#[derive(Debug, Clone, Copy)]
pub struct AttentionParams {
    pub shape: AttnShape,
    pub scale: f32,
}

impl AttentionParams {
    /// Shared memory of one block: the query (head_dim floats), its scores (one per key) and
    /// 32 floats of reduction scratch.
    pub fn shared_mem_bytes(head_dim: usize, total: usize) -> usize {
        (head_dim + total + 32) * std::mem::size_of::<f32>()
    }

    /// Whether a query over `total` keys fits one block's shared memory (beyond it the
    /// step runs on candle's ops).
    pub fn fits(head_dim: usize, total: usize) -> bool {
        Self::shared_mem_bytes(head_dim, total) <= SHARED_MEM_LIMIT
    }

    /// `kpos_len`: the key positions' length (`batch * total`); `slopes_len`: one per head.
    pub fn new(
        shape: AttnShape,
        scale: f32,
        cache_dims: [&[usize]; 2],
        qkv_elems: usize,
        bias_len: usize,
        kpos_len: usize,
        slopes_len: usize,
    ) -> Result<Self, ParamError> {
        for dims in cache_dims {
            check_cache(&ATTENTION, &shape, dims)?;
        }
        check_qkv(&ATTENTION, &shape, qkv_elems, bias_len)?;
        if kpos_len != shape.batch * shape.total() || slopes_len != shape.heads {
            return fail(&ATTENTION, format!("{kpos_len} key positions and {slopes_len} slopes for {shape:?}"));
        }
        if !Self::fits(shape.head_dim, shape.total()) {
            return fail(&ATTENTION, format!("{} keys do not fit shared memory", shape.total()));
        }
        shape_scalars(&ATTENTION, &shape)?;
        int(&ATTENTION, "total", shape.total())?;
        grid(&ATTENTION, shape.batch * shape.heads * shape.t)?;
        Ok(Self { shape, scale })
    }

    pub fn scalars(&self) -> Vec<Scalar> {
        let mut v = shape_scalars(&ATTENTION, &self.shape).expect("checked in new");
        v.push(Scalar::I32(self.shape.total() as i32));
        v.push(Scalar::F32(self.scale));
        v
    }

    pub fn launch(&self) -> LaunchShape {
        let s = &self.shape;
        LaunchShape {
            grid: (s.batch * s.heads * s.t) as u32,
            block: ATTENTION_THREADS,
            shared_mem_bytes: Self::shared_mem_bytes(s.head_dim, s.total()) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = include_str!("../cuda/kernels.cu");

    /// Each `extern "C" __global__ void NAME(...)` of the source: its name and parameters,
    /// whitespace collapsed.
    fn declared_kernels() -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        let mut rest = SOURCE;
        while let Some(at) = rest.find("extern \"C\" __global__ void ") {
            rest = &rest[at + "extern \"C\" __global__ void ".len()..];
            let open = rest.find('(').expect("a parameter list");
            let close = rest.find(')').expect("a closed parameter list");
            let name = rest[..open].trim().to_string();
            let params = rest[open + 1..close]
                .split(',')
                .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            out.push((name, params));
            rest = &rest[close..];
        }
        out
    }

    fn scalar_kind(param: &str) -> Option<&'static str> {
        match param.split(' ').next() {
            Some("int") => Some("i32"),
            Some("long") => Some("i64"),
            Some("float") if !param.contains('*') => Some("f32"),
            _ => None,
        }
    }

    fn kinds(scalars: &[Scalar]) -> Vec<&'static str> {
        scalars
            .iter()
            .map(|s| match s {
                Scalar::I32(_) => "i32",
                Scalar::I64(_) => "i64",
                Scalar::F32(_) => "f32",
            })
            .collect()
    }

    fn declared_scalars(k: &Kernel) -> Vec<&'static str> {
        k.params.iter().filter_map(|p| scalar_kind(p)).collect()
    }

    #[test]
    fn kernel_table_matches_the_cuda_source() {
        let declared = declared_kernels();
        assert_eq!(declared.len(), KERNELS.len(), "kernels.cu declares {:?}", declared.iter().map(|d| &d.0).collect::<Vec<_>>());
        for k in KERNELS {
            let (_, params) = declared.iter().find(|(n, _)| n == k.name).unwrap_or_else(|| panic!("{} is not in kernels.cu", k.name));
            assert_eq!(params, &k.params.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{}'s parameters", k.name);
        }
    }

    fn shape() -> AttnShape {
        AttnShape { batch: 2, t: 3, heads: 4, head_dim: 16, cap: 40, past: 5 }
    }

    #[test]
    fn scalar_arguments_follow_the_declared_order_and_types() {
        let s = shape();
        let hd = s.heads * s.head_dim;
        let ln = LayerNormParams::new(&[2, 3, 64], [64, 64], 1e-5).unwrap();
        assert_eq!(kinds(&ln.scalars()), declared_scalars(&LAYER_NORM));
        assert_eq!(ln.scalars(), [Scalar::I32(64), Scalar::F32(1e-5)]);
        let gelu = BiasParams::new(&BIAS_GELU, 6 * 256, 256, None).unwrap();
        assert_eq!(kinds(&gelu.scalars()), declared_scalars(&BIAS_GELU));
        assert_eq!(gelu.scalars(), [Scalar::I64(6 * 256), Scalar::I32(256)]);
        let res = BiasParams::new(&BIAS_RESIDUAL, 6 * 64, 64, Some(6 * 64)).unwrap();
        assert_eq!(kinds(&res.scalars()), declared_scalars(&BIAS_RESIDUAL));
        let cache = [s.batch, s.heads, s.cap, s.head_dim];
        let qkv = s.batch * s.t * 3 * hd;
        let kv = KvAppendParams::new(s, QkvPart::Value, &cache, qkv, 3 * hd).unwrap();
        assert_eq!(kinds(&kv.scalars()), declared_scalars(&KV_APPEND));
        assert_eq!(kv.scalars(), [2, 3, 4, 16, 40, 5, 2].map(Scalar::I32));
        let at = AttentionParams::new(s, 0.25, [&cache, &cache], qkv, 3 * hd, s.batch * 8, s.heads).unwrap();
        assert_eq!(kinds(&at.scalars()), declared_scalars(&ATTENTION));
        let mut want = [2, 3, 4, 16, 40, 5, 8].map(Scalar::I32).to_vec();
        want.push(Scalar::F32(0.25));
        assert_eq!(at.scalars(), want);
    }

    #[test]
    fn launch_shapes_of_each_kernel() {
        let s = shape();
        let hd = s.heads * s.head_dim;
        let cache = [s.batch, s.heads, s.cap, s.head_dim];
        let qkv = s.batch * s.t * 3 * hd;
        // LayerNorm: one block per row.
        let ln = LayerNormParams::new(&[8, 1, 1024], [1024, 1024], 1e-5).unwrap();
        assert_eq!(ln.launch(), LaunchShape { grid: 8, block: 256, shared_mem_bytes: 0 });
        // KV append: one thread per written element.
        let kv = KvAppendParams::new(s, QkvPart::Key, &cache, qkv, 3 * hd).unwrap();
        assert_eq!(kv.launch(), launch::elementwise(2 * 3 * 4 * 16));
        // Attention: one block per (row, head, query); query, scores and scratch in shared memory.
        let at = AttentionParams::new(s, 0.25, [&cache, &cache], qkv, 3 * hd, s.batch * 8, s.heads).unwrap();
        assert_eq!(at.launch(), LaunchShape { grid: 2 * 4 * 3, block: 128, shared_mem_bytes: (16 + 8 + 32) * 4 });
    }

    #[test]
    fn shared_memory_bound_is_the_one_the_fused_path_had() {
        // 12 Ki floats = 48 KiB: the old `len + t + head_dim + 32 <= 12 * 1024`.
        for head_dim in [16, 64, 128] {
            let last = 12 * 1024 - head_dim - 32;
            assert!(AttentionParams::fits(head_dim, last));
            assert!(!AttentionParams::fits(head_dim, last + 1));
        }
    }

    #[test]
    fn calls_that_do_not_fit_are_refused_before_a_launch() {
        let s = shape();
        let hd = s.heads * s.head_dim;
        let cache = [s.batch, s.heads, s.cap, s.head_dim];
        let qkv = s.batch * s.t * 3 * hd;
        assert!(LayerNormParams::new(&[2, 64], [32, 64], 1e-5).is_err(), "gamma of the wrong length");
        assert!(LayerNormParams::new(&[0, 64], [64, 64], 1e-5).is_err(), "no rows: a grid of 0");
        assert!(BiasParams::new(&BIAS_RESIDUAL, 128, 64, Some(64)).is_err(), "residual of another size");
        assert!(BiasParams::new(&BIAS_GELU, 100, 64, None).is_err(), "not whole rows of the bias");
        assert!(BiasParams::new(&BIAS_GELU, 100, 0, None).is_err(), "an empty bias (i % 0)");
        let full = AttnShape { past: 38, ..s };
        assert!(KvAppendParams::new(full, QkvPart::Key, &cache, qkv, 3 * hd).is_err(), "past + t beyond the cache");
        assert!(KvAppendParams::new(s, QkvPart::Key, &[2, 4, 16, 40], qkv, 3 * hd).is_err(), "cache transposed");
        assert!(KvAppendParams::new(s, QkvPart::Key, &cache, qkv - 1, 3 * hd).is_err(), "qkv too short");
        assert!(AttentionParams::new(s, 0.25, [&cache, &cache], qkv, 3 * hd, 7, s.heads).is_err(), "key positions");
        assert!(AttentionParams::new(s, 0.25, [&cache, &cache], qkv, 3 * hd, 16, 3).is_err(), "slopes");
        // 64 + 12_192 + 32 floats fill 48 KiB exactly; one key more does not fit.
        let lc = [1, 1, 20_000, 64];
        let long = |past| AttnShape { batch: 1, t: 1, heads: 1, head_dim: 64, cap: 20_000, past };
        assert!(AttentionParams::new(long(12_191), 0.125, [&lc, &lc], 3 * 64, 3 * 64, 12_192, 1).is_ok());
        assert!(AttentionParams::new(long(12_192), 0.125, [&lc, &lc], 3 * 64, 3 * 64, 12_193, 1).is_err(), "shared memory");
        let huge = AttnShape { batch: 1, t: 1, heads: 1, head_dim: 1 << 31, cap: 1, past: 0 };
        assert!(shape_scalars(&KV_APPEND, &huge).is_err(), "head_dim beyond i32");
    }
}
