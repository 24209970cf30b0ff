//! Where a point's work meets the targets: how each stack is reached, and
//! the one [`Target`] a point's stack runs on.

use std::path::PathBuf;

use crate::echo::EchoReport;
use crate::error::TrafficError;
use crate::kernel::KernelPath;
use crate::report::TransferReport;
use crate::run::{self, KernelPeer, Target};
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

impl Targets {
    /// Where `stack`'s points run.
    pub fn target(&self, stack: StackKind) -> Target {
        Target::of(
            stack,
            self.kernel_path,
            self.topology.clone(),
            self.ref_link,
        )
    }
}

/// Runs `flows` at the same time on `stack`; one report per flow, in
/// order.
pub fn transfer(
    flows: &[TransferSpec],
    stack: StackKind,
    targets: &Targets,
) -> Result<Vec<TransferReport>, TrafficError> {
    run::transfer(flows, &targets.target(stack), false)
}

/// Runs one echo series (delay mode).
pub fn echo(
    spec: &EchoSpec,
    stack: StackKind,
    targets: &Targets,
) -> Result<EchoReport, TrafficError> {
    run::echo(spec, &targets.target(stack))
}
