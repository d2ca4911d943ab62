//! Facts about this process and machine: resident memory, available memory, cgroup limits.

/// A `/proc/self/status` field in bytes (`VmRSS`, `VmHWM`, ...).
fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Resident set size now.
pub fn rss_bytes() -> u64 {
    proc_status_bytes("VmRSS").unwrap_or(0)
}

/// Peak resident set size of this process so far.
pub fn peak_rss_bytes() -> u64 {
    proc_status_bytes("VmHWM").unwrap_or(0)
}

/// `MemAvailable` from /proc/meminfo.
pub fn mem_available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line["MemAvailable:".len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Room left under this process's cgroup v2 `memory.max` (None when unlimited or unknown).
pub fn cgroup_memory_headroom_bytes() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let max: u64 = std::fs::read_to_string(dir.join("memory.max")).ok()?.trim().parse().ok()?;
    let current: u64 = std::fs::read_to_string(dir.join("memory.current")).ok()?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// `MemTotal` from /proc/meminfo.
pub fn mem_total_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line["MemTotal:".len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// The Jetson module and L4T release, when this is a Jetson (device tree model string and
/// /etc/nv_tegra_release), else None.
pub fn jetson_model() -> Option<(String, Option<String>)> {
    let model = std::fs::read_to_string("/proc/device-tree/model").ok()?;
    let model = model.trim_end_matches('\0').trim().to_string();
    let release = std::fs::read_to_string("/etc/nv_tegra_release").ok().and_then(|s| s.lines().next().map(|l| l.trim().to_string()));
    Some((model, release))
}
