//! Choosing where the model runs: `auto`, `cpu` or `cuda:N`.

use candle_core::Device;

#[derive(Debug, thiserror::Error)]
#[error("device '{spec}': {reason}")]
pub struct DeviceError {
    pub spec: String,
    pub reason: String,
}

/// `auto` takes the first CUDA device when this build has CUDA and one answers, else the
/// CPU (saying so once in the log); `cuda:N` fails if that device is not there.
pub fn select(spec: &str) -> Result<Device, DeviceError> {
    let err = |reason: String| DeviceError { spec: spec.to_string(), reason };
    match spec {
        "cpu" => Ok(Device::Cpu),
        "auto" => {
            if candle_core::utils::cuda_is_available() {
                match Device::new_cuda(0) {
                    Ok(d) => return Ok(d),
                    Err(e) => tracing::warn!("no CUDA device answered ({e}); running on the CPU"),
                }
            }
            Ok(Device::Cpu)
        }
        s => {
            let n = s
                .strip_prefix("cuda:")
                .or_else(|| (s == "cuda").then_some("0"))
                .ok_or_else(|| err("expected auto, cpu or cuda:N".into()))?;
            let n: usize = n.parse().map_err(|_| err("expected auto, cpu or cuda:N".into()))?;
            if !candle_core::utils::cuda_is_available() {
                return Err(err("this build has no CUDA support (build with --features cuda)".into()));
            }
            Device::new_cuda(n).map_err(|e| err(e.to_string()))
        }
    }
}

/// A short name for logs and D-Bus: `cpu` or `cuda:N`.
pub fn describe(device: &Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(_) => match device.location() {
            candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
            _ => "cuda".into(),
        },
        _ => format!("{:?}", device.location()),
    }
}

/// What a device is: name, compute capability and memory (GPU), for `seqgpt info` and logs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    pub device: String,
    pub name: String,
    pub compute_capability: Option<(i32, i32)>,
    pub total_memory_bytes: Option<u64>,
    pub free_memory_bytes: Option<u64>,
}

pub fn info(device: &Device) -> DeviceInfo {
    #[allow(unused_mut)] // filled in further with the cuda feature
    let mut out = DeviceInfo {
        device: describe(device),
        name: cpu_name(),
        compute_capability: None,
        total_memory_bytes: crate::sysinfo::mem_total_bytes(),
        free_memory_bytes: crate::sysinfo::mem_available_bytes(),
    };
    #[cfg(feature = "cuda")]
    if let Device::Cuda(d) = device {
        let stream = d.cuda_stream();
        let ctx = stream.context();
        out.name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        out.compute_capability = ctx.compute_capability().ok();
        if let Ok((free, total)) = ctx.mem_get_info() {
            out.free_memory_bytes = Some(free as u64);
            out.total_memory_bytes = Some(total as u64);
        }
    }
    out
}

/// Free memory on `device` (GPU memory on CUDA, MemAvailable on the CPU).
pub fn free_memory_bytes(device: &Device) -> Option<u64> {
    info(device).free_memory_bytes
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Sets the size of the CPU kernels' thread pool (once per process; 0 leaves rayon's default,
/// all cores the process may use).
pub fn init_threads(threads: usize) {
    if threads > 0 {
        // Fails only if the pool was already built, which keeps the first setting.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    }
}
