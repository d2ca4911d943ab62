//! The fused CUDA kernels (model/cuda/kernels.cu), their device-independent half: what each
//! launch passes (`params`), the grid it runs on (`launch`), what each kernel computes, on the
//! CPU (`reference`), and which path a forward step takes (`path`).
//!
//! Only `model::cuda` (feature `cuda`) talks to a GPU; it takes every number it passes from
//! here. So all of this builds and is tested without nvcc, and a change to it is seen by the
//! CPU-only test suite instead of waiting for a GPU.

pub mod launch;
pub mod params;
pub mod path;
pub mod reference;
