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
pub mod weight;

pub use matmul::{matmul_t, matmul_t_packed};
pub use weight::WeightView;

/// The output buffer of a parallel kernel, shared by its rayon tasks, each of which writes
/// only its own disjoint part (every user says which part at its writes).
pub(crate) struct SharedOut(*mut f32);

// SAFETY: tasks never write the same element (the users' invariant, stated at each write).
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    pub(crate) fn new(out: &mut [f32]) -> Self {
        Self(out.as_mut_ptr())
    }

    // A method (not the field) so closures capture the Sync wrapper, not the raw pointer.
    pub(crate) fn get(&self) -> *mut f32 {
        self.0
    }
}
pub use norm::layer_norm_rows;
