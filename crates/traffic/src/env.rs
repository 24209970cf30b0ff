//! What a run ran on (issue: "every run records what it ran on"), so a
//! result can be reproduced and compared: the target and path, kernel,
//! CPU, the socket buffers the OS actually granted and the congestion
//! control in use.

use serde::Serialize;

use crate::spec::StackKind;

/// Buffer sizes the OS granted (Linux doubles a requested SO_SNDBUF /
/// SO_RCVBUF for its bookkeeping and caps it at `net.core.*mem_max`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GrantedBuffers {
    pub send: Option<usize>,
    pub recv: Option<usize>,
}

/// The machine and target of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Environment {
    pub stack: StackKind,
    /// The path the traffic took, e.g. `loopback`, `veth between network
    /// namespaces`, `reference stack: host-a -> host-b (default topology)`.
    pub path: String,
    /// `uname -r` and `uname -v`.
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    /// The TCP congestion control the sender's socket used (kernel), or
    /// the reference stack's.
    pub congestion_control: Option<String>,
    pub sockbuf_granted: GrantedBuffers,
    /// The path's MTU, where known.
    pub mtu: Option<u32>,
    /// The slowest link's rate where the path has one (the reference
    /// stack's rate-limited wires): no payload rate can exceed it.
    pub link_rate_bps: Option<u64>,
    /// Where the two sides' threads were pinned, when the run asked
    /// (`TransferSpec::cpus`), and whether the pins held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::affinity::Placement>,
    pub stackscope_version: &'static str,
}

impl Environment {
    /// The machine's facts for a run on `stack` over `path`; buffers and
    /// congestion control are filled in by the runner once sockets exist.
    pub fn detect(stack: StackKind, path: impl Into<String>) -> Self {
        Self {
            stack,
            path: path.into(),
            kernel: kernel_version(),
            cpu_model: cpu_model(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            congestion_control: None,
            sockbuf_granted: GrantedBuffers::default(),
            mtu: None,
            link_rate_bps: None,
            placement: None,
            stackscope_version: env!("CARGO_PKG_VERSION"),
        }
    }
}

fn kernel_version() -> String {
    // SAFETY: uname fills the zeroed struct we own; its fields are
    // NUL-terminated C strings within their arrays.
    let name = unsafe {
        let mut name: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut name) != 0 {
            return "unknown".into();
        }
        name
    };
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        field(&name.sysname),
        field(&name.release),
        field(&name.version)
    )
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_described() {
        let env = Environment::detect(StackKind::Kernel, "loopback");
        assert!(env.kernel.starts_with("Linux "), "{}", env.kernel);
        assert!(!env.cpu_model.is_empty());
        assert!(env.cpus >= 1);
    }
}
