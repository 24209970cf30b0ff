//! Where a point's work meets the targets: one flow or several
//! concurrent ones, or an echo series, on the kernel's stack or the
//! reference stack.

use std::path::PathBuf;

use crate::circuits;
use crate::echo::EchoReport;
use crate::error::TrafficError;
use crate::kernel::{self, KernelPath};
use crate::reference;
use crate::reference::kernel_peer::KernelPeer;
use crate::report::TransferReport;
use crate::spec::{EchoSpec, StackKind, TransferSpec};

/// How to reach each stack.
#[derive(Debug, Clone)]
pub struct Targets {
    /// Kernel: loopback or a veth pair between namespaces.
    pub kernel_path: KernelPath,
    /// Reference stack: a topology file (default network when `None`).
    pub topology: Option<PathBuf>,
    /// Reference stack: instead of the topology, one end against the
    /// kernel at the other, over a veth pair or a TAP.
    pub ref_link: Option<KernelPeer>,
}

/// Runs `flows` at the same time on `stack`; one report per flow, in
/// order.
pub fn transfer(
    flows: &[TransferSpec],
    stack: StackKind,
    targets: &Targets,
) -> Result<Vec<TransferReport>, TrafficError> {
    match flows {
        [] => Err(TrafficError::Invalid("a point with no flow".into())),
        [flow] => match stack {
            StackKind::Kernel => kernel::run_pair(flow, targets.kernel_path, false),
            StackKind::Ref => match targets.ref_link {
                Some(_) if flow.cpus.is_some() => Err(unsupported("pinning the sides (--load-on)")),
                Some(peer) => reference::kernel_peer::run_pair(flow, peer, false),
                None => reference::run_pair(flow, targets.topology.as_deref(), false),
            },
        }
        .map(|report| vec![report]),
        _ if stack == StackKind::Ref && targets.ref_link.is_some() => {
            Err(unsupported("concurrent flows"))
        }
        _ => concurrent(flows, stack, targets),
    }
}

/// Several flows at once (`--circuits`, `--mix`); the circuits runner
/// gives flow i port `port + i`.
fn concurrent(
    flows: &[TransferSpec],
    stack: StackKind,
    targets: &Targets,
) -> Result<Vec<TransferReport>, TrafficError> {
    circuits::run(
        flows,
        stack,
        targets.kernel_path,
        targets.topology.as_deref(),
    )
}

/// Runs one echo series (delay mode).
pub fn echo(
    spec: &EchoSpec,
    stack: StackKind,
    targets: &Targets,
) -> Result<EchoReport, TrafficError> {
    match stack {
        StackKind::Kernel => kernel::echo::run_pair(spec, targets.kernel_path),
        StackKind::Ref if targets.ref_link.is_some() => Err(unsupported("the delay mode (echo)")),
        StackKind::Ref => reference::echo::run_pair(spec, targets.topology.as_deref()),
    }
}

fn unsupported(what: &str) -> TrafficError {
    TrafficError::Unsupported(format!(
        "{what} on the reference stack against the kernel (--link) is not \
         built yet: run it on the reference stack's own network (no --link)"
    ))
}
