/* Read bandwidth of this machine: the best of 5 passes over 1 GiB, split over
 * OMP_NUM_THREADS threads; 256-bit loads with AVX2, else two 64-bit loads per 32 bytes (every
 * cache line is read either way). Decode reads every weight once per token, so
 * (file bytes per token) / (this bandwidth) bounds decode tok/s from above.
 *   gcc -O3 -mavx2 -fopenmp benches/read_bandwidth.c -o /tmp/read_bandwidth   (x86_64)
 *   gcc -O3 -fopenmp benches/read_bandwidth.c -o /tmp/read_bandwidth          (aarch64)
 *   OMP_NUM_THREADS=2 /tmp/read_bandwidth */
#ifdef __AVX2__
#include <immintrin.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(void) {
    size_t n = (size_t)1 << 27; /* u64 words: 1 GiB, far above any cache */
    uint64_t *a = aligned_alloc(64, n * 8);
    if (!a) { fprintf(stderr, "no 1 GiB to allocate\n"); return 1; }
    for (size_t i = 0; i < n; i++) a[i] = i; /* touch every page before timing */
    double best = 0;
    uint64_t s = 0;
    for (int pass = 0; pass < 5; pass++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
#pragma omp parallel for reduction(+ : s)
        for (size_t i = 0; i < n; i += 4) {
#ifdef __AVX2__
            __m256i v = _mm256_load_si256((const __m256i *)(a + i));
            s += (uint64_t)_mm256_extract_epi64(v, 0) ^ (uint64_t)_mm256_extract_epi64(v, 3);
#else
            s += a[i] ^ a[i + 3];
#endif
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
        if (n * 8 / dt / 1e9 > best) best = n * 8 / dt / 1e9;
    }
    /* The checksum keeps the loads from being optimized away. */
    printf("%.1f GB/s (checksum %llu)\n", best, (unsigned long long)s);
    free(a);
    return 0;
}
