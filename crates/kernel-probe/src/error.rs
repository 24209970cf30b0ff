//! Why the kernel probes could not run, in words a user can act on.

/// A failure of the probe set as a whole. A single hook that cannot attach
/// is not an error: it is reported in [`crate::ProbeStatus`] and the rest
/// run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelProbeError {
    #[error("kernel probes need BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF) to relocate against the running kernel: {0}")]
    NoBtf(String),
    #[error("kernel probes need root (CAP_BPF and CAP_PERFMON) to load eBPF programs: {0}")]
    NotPermitted(String),
    #[error("loading the kernel probes' eBPF object failed: {0}")]
    Load(String),
    #[error("the eBPF object has no map {0:?}: rebuild it with crates/kernel-probe/bpf/build.sh")]
    MissingMap(&'static str),
    #[error("kernel probe map {map}: {message}")]
    Map { map: &'static str, message: String },
    #[error("no kernel probe could be attached: {0}")]
    NothingAttached(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the ring poller thread panicked")]
    PollerPanicked,
}
