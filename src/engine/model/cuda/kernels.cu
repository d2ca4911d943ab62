// Fused CUDA kernels for BLOOM decoding (f16 activations, f32 arithmetic).
//
// Small models on a GPU are bound by kernel launches, not by FLOPs: these kernels fold
// what candle would run as several launches into one (LayerNorm; bias + GELU;
// bias + residual; QKV bias + KV-cache append; ALiBi attention with its mask and softmax).
#include <cuda_fp16.h>
#include <stdint.h>

#define WARP 32

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}

// Sum over the block; every thread gets the result. `scratch` holds 32 floats.
__device__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + WARP - 1) / WARP;
    v = (threadIdx.x < nw) ? scratch[threadIdx.x] : 0.f;
    if (wid == 0) v = warp_sum(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    float r = scratch[0];
    __syncthreads();
    return r;
}

__device__ float block_max(float v, float* scratch) {
    int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + WARP - 1) / WARP;
    v = (threadIdx.x < nw) ? scratch[threadIdx.x] : -INFINITY;
    if (wid == 0) v = warp_max(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    float r = scratch[0];
    __syncthreads();
    return r;
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta, one block per row of n values.
extern "C" __global__ void sg_layer_norm(const __half* x, const __half* gamma, const __half* beta,
                                         __half* y, int n, float eps) {
    __shared__ float scratch[32];
    const __half* xr = x + (size_t)blockIdx.x * n;
    __half* yr = y + (size_t)blockIdx.x * n;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += __half2float(xr[i]);
    float mean = block_sum(s, scratch) / n;
    float v = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float d = __half2float(xr[i]) - mean;
        v += d * d;
    }
    float inv = rsqrtf(block_sum(v, scratch) / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float d = (__half2float(xr[i]) - mean) * inv;
        yr[i] = __float2half(d * __half2float(gamma[i]) + __half2float(beta[i]));
    }
}

// y = gelu_tanh(x + b) over rows of n values (BLOOM's tanh approximation).
extern "C" __global__ void sg_bias_gelu(const __half* x, const __half* b, __half* y, long total, int n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        float v = __half2float(x[i]) + __half2float(b[i % n]);
        float g = 0.5f * v * (1.f + tanhf(0.7978845608028654f * v * (1.f + 0.044715f * v * v)));
        y[i] = __float2half(g);
    }
}

// y = x + b + r over rows of n values: a linear layer's bias and the residual connection.
extern "C" __global__ void sg_bias_residual(const __half* x, const __half* b, const __half* r, __half* y,
                                            long total, int n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        y[i] = __float2half(__half2float(x[i]) + __half2float(b[i % n]) + __half2float(r[i]));
    }
}

// Appends part `part` (1 = K, 2 = V) of the fused QKV output (plus its bias) to a cache
// laid out [batch, heads, cap, head_dim], at positions past..past+t.
// qkv: [batch, t, 3 * heads * head_dim], [Q; K; V].
extern "C" __global__ void sg_kv_append(const __half* qkv, const __half* bias, __half* cache, int batch,
                                        int t, int heads, int head_dim, int cap, int past, int part) {
    long hd = (long)heads * head_dim;
    long total = (long)batch * t * hd;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
        int d = i % head_dim;
        int h = (i / head_dim) % heads;
        int ti = (i / hd) % t;
        int b = i / (hd * t);
        long src = ((long)b * t + ti) * 3 * hd + part * hd + (long)h * head_dim + d;
        float v = __half2float(qkv[src]) + __half2float(bias[part * hd + (long)h * head_dim + d]);
        long dst = (((long)b * heads + h) * cap + past + ti) * head_dim + d;
        cache[dst] = __float2half(v);
    }
}

// ALiBi attention for one (row, head, query) per block.
// score_j = q.k_j * scale + slope_h * kpos[row, j]; key j is visible when kpos >= 0
// (not padding) and j <= past + i (causal). Softmax in f32, output [batch, t, heads * head_dim].
// Shared memory: head_dim + total + 32 floats.
extern "C" __global__ void sg_attention(const __half* qkv, const __half* bias, const __half* kc,
                                        const __half* vc, const float* kpos, const float* slopes,
                                        __half* out, int batch, int t, int heads, int head_dim,
                                        int cap, int past, int total, float scale) {
    extern __shared__ float smem[];
    float* q = smem;
    float* sc = smem + head_dim;
    float* scratch = sc + total;
    int i = blockIdx.x % t;
    int h = (blockIdx.x / t) % heads;
    int b = blockIdx.x / (t * heads);
    long hd = (long)heads * head_dim;
    const __half* qsrc = qkv + ((long)b * t + i) * 3 * hd + (long)h * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x)
        q[d] = __half2float(qsrc[d]) + __half2float(bias[(long)h * head_dim + d]);
    __syncthreads();
    const __half* kb = kc + ((long)b * heads + h) * cap * head_dim;
    const __half* vb = vc + ((long)b * heads + h) * cap * head_dim;
    const float* kp = kpos + (long)b * total;
    float slope = slopes[h];
    int qpos = past + i;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < total; j += blockDim.x) {
        float s = -INFINITY;
        if (j <= qpos && kp[j] >= 0.f) {
            const __half* kr = kb + (long)j * head_dim;
            float acc = 0.f;
            for (int d = 0; d < head_dim; ++d) acc += q[d] * __half2float(kr[d]);
            s = acc * scale + slope * kp[j];
        }
        sc[j] = s;
        m = fmaxf(m, s);
    }
    m = block_max(m, scratch);
    float l = 0.f;
    for (int j = threadIdx.x; j < total; j += blockDim.x) {
        float p = (m == -INFINITY) ? 0.f : __expf(sc[j] - m);
        sc[j] = p;
        l += p;
    }
    l = block_sum(l, scratch);
    float inv = l > 0.f ? 1.f / l : 0.f;
    __half* o = out + ((long)b * t + i) * hd + (long)h * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float acc = 0.f;
        for (int j = 0; j < total; ++j) {
            float p = sc[j];
            if (p != 0.f) acc += p * __half2float(vb[(long)j * head_dim + d]);
        }
        o[d] = __float2half(acc * inv);
    }
}
