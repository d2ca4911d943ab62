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
