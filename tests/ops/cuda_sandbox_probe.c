/* cuda_sandbox_probe: can the CUDA driver work inside seqgptd.service's sandbox?
 *
 * Two settings of the unit could break a driver: MemoryDenyWriteExecute=yes (systemd <= 252: a
 * seccomp filter that makes mmap() with PROT_WRITE|PROT_EXEC, mprotect()/pkey_mprotect() with
 * PROT_EXEC and shmat() with SHM_EXEC fail with EPERM) and SystemCallFilter= (every system call
 * outside the unit's allow-list fails with EPERM, SystemCallErrorNumber=EPERM). This program
 * installs both on itself, the same way, except that each refused call is also counted and
 * reported (a SIGSYS trap that then returns EPERM), and then does what seqgptd's CUDA build
 * does: cuInit, a context, a PTX module JIT-compiled by the driver, a kernel launch, a copy
 * back and, given a cuBLAS library, an SGEMM.
 *
 * tests/ops/cuda_sandbox_probe.sh builds it with the allow-list of systemd/seqgptd.service
 * (expanded by systemd-analyze into probe_syscalls.h) and runs it three ways:
 *   cuda_sandbox_probe [--no-filter | --mdwe-only] [path/to/libcublas.so]
 *
 * Exit 0: everything worked (and it prints what was refused, which the driver did without).
 * Exit 1: a CUDA step failed. Exit 2: no CUDA driver. x86_64 and aarch64 (a Jetson: `gcc` is
 * part of JetPack). docs/OPERATIONS.md says what its results on the lent GPU decided.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
#define PROBE_AUDIT_ARCH AUDIT_ARCH_X86_64
#define SET_RETURN(uc, v) ((uc)->uc_mcontext.gregs[REG_RAX] = (v))
#elif defined(__aarch64__)
#define PROBE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#define SET_RETURN(uc, v) ((uc)->uc_mcontext.regs[0] = (v))
#else
#error "x86_64 or aarch64 only"
#endif

/* Refused calls: W+X requests by kind, and system calls outside the allow-list by number. */
static volatile sig_atomic_t blocked_mmap, blocked_mprotect, blocked_shmat;
enum { MAX_NR = 1024 };
static volatile sig_atomic_t blocked_nr[MAX_NR];

static const long allowed[] = {
#include "probe_syscalls.h"
};

static const struct { long nr; const char *name; } names[] = {
#include "probe_names.h"
};

static const char *name_of(long nr) {
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].nr == nr) return names[i].name;
    return "?";
}

static int is_wx(long nr) {
    return nr == SYS_mmap || nr == SYS_mprotect || nr == SYS_pkey_mprotect || nr == SYS_shmat;
}

static int is_allowed(long nr) {
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (allowed[i] == nr) return 1;
    return 0;
}

static void on_sigsys(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    long nr = info->si_syscall;
    if (is_wx(nr) && is_allowed(nr)) {
        if (nr == SYS_mmap) blocked_mmap++;
        else if (nr == SYS_shmat) blocked_shmat++;
        else blocked_mprotect++;
    } else if (nr >= 0 && nr < MAX_NR) {
        blocked_nr[nr]++;
    }
    SET_RETURN((ucontext_t *)ctx, -EPERM);
}

#define ARG2_LO offsetof(struct seccomp_data, args[2])
#define MAX_INSNS 4096

/* MemoryDenyWriteExecute: trap mmap(W|X), mprotect(X), pkey_mprotect(X), shmat(SHM_EXEC).
 * With syscall_filter, also trap every call outside `allowed`; otherwise allow the rest. */
static int install_filter(int syscall_filter) {
    static struct sock_filter f[MAX_INSNS];
    unsigned n = 0;
#define PUT(insn) (f[n++] = (struct sock_filter)insn)
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_AUDIT_ARCH, 1, 0));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 4, 0));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 6, 0));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pkey_mprotect, 5, 0));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_shmat, 8, 0));
    PUT(BPF_JUMP(BPF_JMP | BPF_JA, 11, 0, 0)); /* to the allow-list */
    /* mmap: (prot & (W|X)) == W|X */
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG2_LO));
    PUT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 7, 8));
    /* mprotect, pkey_mprotect: prot & X */
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG2_LO));
    PUT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_EXEC));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_EXEC, 4, 5));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)); /* unused */
    /* shmat: shmflg & SHM_EXEC */
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG2_LO));
    PUT(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, SHM_EXEC));
    PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SHM_EXEC, 0, 1));
    PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
    /* The W+X calls that passed come here too, with the call number reloaded. */
    PUT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
    if (syscall_filter) {
        for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
            if (n + 3 >= MAX_INSNS) return -1;
            PUT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i], 0, 1));
            PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
        PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
    } else {
        PUT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    }
#undef PUT
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSYS, &sa, NULL) != 0) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The filter itself, checked without CUDA: W+X and exec-gain refused, plain mappings fine;
 * with the syscall filter, a call the unit denies (setpriority, in @resources) refused. */
static int self_test(int syscall_filter) {
    void *rw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *wx = mmap(NULL, 4096, PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int wx_errno = errno;
    int mp = mprotect(rw, 4096, PROT_READ | PROT_EXEC);
    int mp_errno = errno;
    int ok = rw != MAP_FAILED && wx == MAP_FAILED && wx_errno == EPERM && mp == -1 && mp_errno == EPERM;
    munmap(rw, 4096);
    if (syscall_filter) {
        errno = 0;
        int r = setpriority(PRIO_PROCESS, 0, 1);
        ok = ok && r == -1 && errno == EPERM && blocked_nr[SYS_setpriority] == 1;
        blocked_nr[SYS_setpriority] = 0;
    }
    blocked_mmap = blocked_mprotect = blocked_shmat = 0;
    return ok ? 0 : -1;
}

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

static const char *PTX =
    ".version 7.0\n.target sm_50\n.address_size 64\n"
    ".visible .entry fill(.param .u64 out, .param .u32 n)\n{\n"
    "  .reg .pred p; .reg .b32 r<5>; .reg .b64 rd<4>; .reg .f32 f<2>;\n"
    "  ld.param.u64 rd1, [out]; ld.param.u32 r1, [n];\n"
    "  mov.u32 r2, %ctaid.x; mov.u32 r3, %ntid.x; mov.u32 r4, %tid.x;\n"
    "  mad.lo.s32 r2, r2, r3, r4; setp.ge.u32 p, r2, r1; @p ret;\n"
    "  cvt.rn.f32.u32 f1, r2; cvta.to.global.u64 rd2, rd1;\n"
    "  mul.wide.u32 rd3, r2, 4; add.s64 rd2, rd2, rd3; st.global.f32 [rd2], f1;\n"
    "  ret;\n}\n";

#define LOAD(lib, name) \
    do { \
        *(void **)(&name) = dlsym(lib, #name); \
        if (!name) { fprintf(stderr, "missing symbol %s\n", #name); return 1; } \
    } while (0)
#define CHECK(step, call) \
    do { \
        CUresult r_ = (call); \
        printf("%-22s %s (%d)\n", step, r_ == 0 ? "ok" : "FAILED", r_); \
        if (r_ != 0) return 1; \
    } while (0)

static int run_cuda(const char *cublas_path) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { fprintf(stderr, "no CUDA driver: %s\n", dlerror()); return 2; }
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuCtxCreate_v2)(CUcontext *, unsigned, CUdevice);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuCtxSynchronize)(void);
    LOAD(cuda, cuInit); LOAD(cuda, cuDeviceGet); LOAD(cuda, cuCtxCreate_v2);
    LOAD(cuda, cuModuleLoadData); LOAD(cuda, cuModuleGetFunction); LOAD(cuda, cuMemAlloc_v2);
    LOAD(cuda, cuMemcpyDtoH_v2); LOAD(cuda, cuMemcpyHtoD_v2); LOAD(cuda, cuLaunchKernel);
    LOAD(cuda, cuCtxSynchronize);

    CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction fn; CUdeviceptr out;
    unsigned n = 1024;
    CHECK("cuInit", cuInit(0));
    CHECK("cuDeviceGet", cuDeviceGet(&dev, 0));
    CHECK("cuCtxCreate", cuCtxCreate_v2(&ctx, 0, dev));
    CHECK("cuModuleLoadData(PTX)", cuModuleLoadData(&mod, PTX));
    CHECK("cuModuleGetFunction", cuModuleGetFunction(&fn, mod, "fill"));
    CHECK("cuMemAlloc", cuMemAlloc_v2(&out, n * sizeof(float)));
    void *args[] = {&out, &n};
    CHECK("cuLaunchKernel", cuLaunchKernel(fn, n / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CHECK("cuCtxSynchronize", cuCtxSynchronize());
    float host[1024];
    CHECK("cuMemcpyDtoH", cuMemcpyDtoH_v2(host, out, sizeof host));
    for (unsigned i = 0; i < n; i++)
        if (host[i] != (float)i) { printf("kernel result WRONG at %u\n", i); return 1; }
    printf("%-22s ok\n", "kernel result");

    if (!cublas_path) return 0;
    void *cublas = dlopen(cublas_path, RTLD_NOW);
    if (!cublas) { printf("cublas: cannot load %s: %s\n", cublas_path, dlerror()); return 1; }
    int (*cublasCreate_v2)(void **);
    int (*cublasSgemm_v2)(void *, int, int, int, int, int, const float *, const float *, int,
                          const float *, int, const float *, float *, int);
    LOAD(cublas, cublasCreate_v2); LOAD(cublas, cublasSgemm_v2);
    void *handle;
    CHECK("cublasCreate", cublasCreate_v2(&handle));
    enum { M = 64 };
    static float a[M * M], c[M * M];
    for (int i = 0; i < M * M; i++) a[i] = (float)(i % 7) - 3.0f;
    CUdeviceptr da, dc;
    CHECK("cuMemAlloc(A,C)", cuMemAlloc_v2(&da, sizeof a) | cuMemAlloc_v2(&dc, sizeof c));
    CHECK("cuMemcpyHtoD", cuMemcpyHtoD_v2(da, a, sizeof a));
    const float one = 1.0f, zero = 0.0f;
    CHECK("cublasSgemm", cublasSgemm_v2(handle, 0, 0, M, M, M, &one, (const float *)da, M,
                                        (const float *)da, M, &zero, (float *)dc, M));
    CHECK("cuCtxSynchronize", cuCtxSynchronize());
    CHECK("cuMemcpyDtoH", cuMemcpyDtoH_v2(c, dc, sizeof c));
    for (int col = 0; col < M; col++)
        for (int row = 0; row < M; row++) {
            float want = 0;
            for (int k = 0; k < M; k++) want += a[k * M + row] * a[col * M + k];
            if (c[col * M + row] != want) { printf("sgemm result WRONG\n"); return 1; }
        }
    printf("%-22s ok\n", "sgemm result");
    return 0;
}

int main(int argc, char **argv) {
    int mdwe = 1, syscall_filter = 1;
    const char *cublas = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-filter") == 0) mdwe = syscall_filter = 0;
        else if (strcmp(argv[i], "--mdwe-only") == 0) syscall_filter = 0;
        else cublas = argv[i];
    }
    if (mdwe) {
        if (install_filter(syscall_filter) != 0 || self_test(syscall_filter) != 0) {
            perror("cannot install or verify the filter");
            return 1;
        }
        printf("filter: MemoryDenyWriteExecute%s (systemd semantics), self-tested\n",
               syscall_filter ? " + the unit's SystemCallFilter" : "");
    } else {
        printf("filter: none\n");
    }
    int rc = run_cuda(cublas);
    printf("refused W+X requests: mmap %d, mprotect %d, shmat %d\n", (int)blocked_mmap,
           (int)blocked_mprotect, (int)blocked_shmat);
    printf("refused system calls:");
    int any = 0;
    for (int nr = 0; nr < MAX_NR; nr++)
        if (blocked_nr[nr]) { printf(" %s(%d) x%d", name_of(nr), nr, (int)blocked_nr[nr]); any = 1; }
    printf("%s\n", any ? "" : " none");
    printf("result: %s\n", rc == 0 ? "PASS" : rc == 2 ? "NO-CUDA" : "FAIL");
    return rc;
}
