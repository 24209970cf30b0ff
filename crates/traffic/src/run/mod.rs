//! Where a run's ends are, chosen in one place: both on the kernel's
//! stack, both on the reference stack's network, or one on each across a
//! link the tool makes. Every program ([`crate::program`]) runs on every
//! target; a target only says where each end's programs run
//! (`kernel`, `network`, `cross`) and what it records.

mod cross;
mod flow;
pub mod host;
mod kernel;
mod link_path;
mod network;
mod one_end;
pub(crate) mod role;
mod transfer;

use std::path::PathBuf;

use crate::kernel::KernelPath;

use crate::spec::StackKind;
pub use role::{address_grace, echo_roles, transfer_roles, EndPlan};

pub use link_path::{KernelPeer, PeerLink, RefEnd};
pub use one_end::{
    attached, kernel as one_kernel_end, program_attached, program_on_kernel, OneEnd,
};
pub use transfer::{echo, echoes, pair, transfer, MAX_CIRCUITS};

/// Where the two ends of a run are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Both on the kernel's stack: loopback, or a veth pair between two
    /// namespaces the tool makes.
    Kernel(KernelPath),
    /// Both on the reference stack: the first and last host of a topology
    /// (the default network when `None`), each node a thread.
    Reference(Option<PathBuf>),
    /// The same on the simulator: one thread, a virtual clock, seeded
    /// randomness, so a run replays exactly (rates and times are the
    /// simulated links', CPU figures are the simulation's own).
    Simulated(Option<PathBuf>),
    /// The reference stack at one end, the kernel's at the other.
    Cross(KernelPeer),
}

impl Target {
    /// The target of `stack`, given how each stack is reached.
    pub fn of(
        stack: StackKind,
        kernel_path: KernelPath,
        topology: Option<PathBuf>,
        ref_link: Option<KernelPeer>,
    ) -> Self {
        match (stack, ref_link) {
            (StackKind::Kernel, _) => Target::Kernel(kernel_path),
            (StackKind::Ref, Some(peer)) => Target::Cross(peer),
            (StackKind::Ref, None) => Target::Reference(topology),
        }
    }

    /// The stacks its ends run on.
    pub fn stacks(&self) -> &'static [StackKind] {
        match self {
            Target::Kernel(_) => &[StackKind::Kernel],
            Target::Reference(_) | Target::Simulated(_) => &[StackKind::Ref],
            Target::Cross(_) => &[StackKind::Kernel, StackKind::Ref],
        }
    }

    /// The stack the report names (the reference stack for a cross run).
    pub fn stack(&self) -> StackKind {
        match self {
            Target::Kernel(_) => StackKind::Kernel,
            Target::Reference(_) | Target::Simulated(_) | Target::Cross(_) => StackKind::Ref,
        }
    }
}
