//! How a sweep reaches each stack, and the one [`Target`] a point's stack
//! runs on.

use std::path::PathBuf;

use crate::kernel::KernelPath;
use crate::run::{KernelPeer, Target};
use crate::spec::StackKind;

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
