//! Launch shapes: how many blocks of how many threads each fused kernel runs, and how an
//! element-wise kernel's grid-stride loop walks its elements.

/// One launch: a one-dimensional grid of `grid` blocks of `block` threads, with
/// `shared_mem_bytes` of dynamic shared memory per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: u32,
    pub block: u32,
    pub shared_mem_bytes: u32,
}

/// Threads per block of the element-wise kernels (bias + GELU, bias + residual, KV append).
pub const ELEMENTWISE_THREADS: u32 = 256;
/// Their grid is capped: past this many blocks each thread loops over several elements
/// (the kernels' grid-stride loops), which keeps the grid valid on every GPU.
pub const ELEMENTWISE_MAX_BLOCKS: u32 = 65_535;
/// Threads per block of LayerNorm (one block per row).
pub const LAYER_NORM_THREADS: u32 = 256;
/// Threads per block of the attention kernel (one block per row, head and query).
pub const ATTENTION_THREADS: u32 = 128;
/// Dynamic shared memory a block may use without opting in: 48 KiB on every CUDA GPU.
pub const SHARED_MEM_LIMIT: usize = 48 * 1024;
/// The largest x dimension of a grid (2^31 - 1 from compute capability 3.0 on).
pub const MAX_GRID_X: u64 = (1 << 31) - 1;

/// An element-wise kernel over `total` elements: one thread per element up to the block cap.
pub fn elementwise(total: usize) -> LaunchShape {
    let blocks = total.div_ceil(ELEMENTWISE_THREADS as usize).clamp(1, ELEMENTWISE_MAX_BLOCKS as usize);
    LaunchShape { grid: blocks as u32, block: ELEMENTWISE_THREADS, shared_mem_bytes: 0 }
}

/// Calls `body(i)` for every index a grid-stride kernel visits under `shape`, in the order of
/// (block, thread, stride): `i = block * blockDim + thread`, then `i += gridDim * blockDim`
/// while `i < total`. The CPU references run their element-wise kernels through this.
pub fn grid_stride(shape: LaunchShape, total: usize, mut body: impl FnMut(usize)) {
    let (grid, block) = (shape.grid as usize, shape.block as usize);
    for b in 0..grid {
        for t in 0..block {
            let mut i = b * block + t;
            while i < total {
                body(i);
                i += grid * block;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elementwise_grid_covers_every_element_once() {
        // Small, uneven, exactly one block, and past the block cap (each thread loops).
        let cap = (ELEMENTWISE_MAX_BLOCKS * ELEMENTWISE_THREADS) as usize;
        for total in [0, 1, 255, 256, 257, 96 * 3 * 7, cap - 1, cap, cap + 1, 2 * cap + 77] {
            let shape = elementwise(total);
            assert!(shape.grid >= 1 && shape.grid <= ELEMENTWISE_MAX_BLOCKS, "{total}: {shape:?}");
            assert_eq!(shape.block, ELEMENTWISE_THREADS);
            let mut seen = vec![0u8; total];
            grid_stride(shape, total, |i| seen[i] += 1);
            assert!(seen.iter().all(|&n| n == 1), "total {total}: an element visited {:?} times", seen.iter().find(|&&n| n != 1));
        }
    }

    #[test]
    fn elementwise_grid_is_one_thread_per_element_below_the_cap() {
        // SeqGPT-560M's MLP at batch 8, one token: 8 x 4096 elements, 128 full blocks.
        assert_eq!(elementwise(8 * 4096), LaunchShape { grid: 128, block: 256, shared_mem_bytes: 0 });
        assert_eq!(elementwise(1).grid, 1);
        assert_eq!(elementwise(0).grid, 1, "an empty launch still has one block (a grid of 0 is an error)");
        assert_eq!(elementwise(usize::MAX / 2).grid, ELEMENTWISE_MAX_BLOCKS);
    }
}
