//! CPU kernels that read weights straight from the mapped model file.
//!
//! `matmul` computes `y = x W^T (+ b)` for every weight type the engine loads, using all
//! cores (rayon). `norm` holds LayerNorm. Each kernel has a plain reference version in its
//! tests that it must agree with.

pub mod attention;
pub mod dot;
pub mod gelu;
pub mod matmul;
pub mod norm;
pub mod packed;
pub mod q6k;
pub mod qdot;

pub use matmul::{matmul_t, matmul_t_packed, WeightView};
pub use norm::layer_norm_rows;
