//! With the `cuda` feature, compiles model/cuda/kernels.cu to PTX with nvcc (as
//! candle-kernels does): the PTX is embedded and JIT-compiled by the driver at load.
//! CUDA_COMPUTE_CAP picks the virtual architecture (default 80; Orin is 87, H200 is 90).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=model/cuda/kernels.cu");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("seqgpt_kernels.ptx");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".into());
    let cap: String = cap.chars().filter(char::is_ascii_digit).collect();
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let status = std::process::Command::new(&nvcc)
        .args(["--ptx", "-O3", "--use_fast_math", &format!("-arch=compute_{cap}"), "-o"])
        .arg(&out)
        .arg("model/cuda/kernels.cu")
        .status()
        .unwrap_or_else(|e| panic!("running {nvcc}: {e} (the cuda feature needs nvcc on PATH)"));
    assert!(status.success(), "nvcc failed on model/cuda/kernels.cu");
}
