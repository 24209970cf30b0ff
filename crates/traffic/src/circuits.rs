//! Several transfers at the same time — circuits of one protocol or a mix
//! of protocols, as the XTP study ran two circuits, and XTP beside TCP —
//! each reported on its own; the caller sums them for the aggregate.

use std::path::Path;

use crate::error::TrafficError;
use crate::kernel::{self, KernelPath, PathSetup};
use crate::reference;
use crate::report::TransferReport;
use crate::spec::{Protocol, StackKind, TransferSpec};

/// Most flows one run takes.
pub const MAX_CIRCUITS: usize = 64;

/// Runs `flows` concurrently on `stack`. Flow `i` gets port `port + i`
/// and circuit number `i`, so the flows stay apart whatever they share.
pub fn run(
    flows: &[TransferSpec],
    stack: StackKind,
    path: KernelPath,
    topology: Option<&Path>,
) -> Result<Vec<TransferReport>, TrafficError> {
    if flows.is_empty() || flows.len() > MAX_CIRCUITS {
        return Err(TrafficError::Invalid(format!(
            "{} concurrent flows is impossible: use 1 to {MAX_CIRCUITS}",
            flows.len()
        )));
    }
    let flows: Vec<TransferSpec> = flows
        .iter()
        .enumerate()
        .map(|(i, flow)| {
            let mut flow = flow.clone();
            flow.port = flow.port.checked_add(i as u16).ok_or_else(|| {
                TrafficError::Invalid(format!(
                    "port {} + {i} circuits runs past 65535: pick a lower -p",
                    flow.port
                ))
            })?;
            flow.circuit = i as u8;
            flow.validate()?;
            Ok(flow)
        })
        .collect::<Result<_, TrafficError>>()?;
    match stack {
        StackKind::Ref => reference::run_flows(&flows, topology, false),
        StackKind::Kernel => run_kernel(&flows, path),
    }
}

fn run_kernel(
    flows: &[TransferSpec],
    path: KernelPath,
) -> Result<Vec<TransferReport>, TrafficError> {
    if flows.len() == 1 {
        return kernel::run_pair(&flows[0], path, false).map(|r| vec![r]);
    }
    if flows.iter().any(|f| f.protocol == Protocol::Raw) {
        return Err(TrafficError::Unsupported(
            "raw frames on the kernel target run one circuit at a time: use --stack ref \
             for concurrent raw circuits"
                .into(),
        ));
    }
    let setup = PathSetup::new(path)?;
    let results: Vec<Result<TransferReport, TrafficError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = flows
            .iter()
            .map(|flow| {
                let setup = &setup;
                scope.spawn(move || kernel::run_pair_on(flow, setup, false))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(TrafficError::Invalid("a circuit panicked".into())))
            })
            .collect()
    });
    let mut reports: Vec<TransferReport> = results.into_iter().collect::<Result<_, _>>()?;
    // The kernel's counters are the namespace's: with several datagram
    // flows each would see the others' drops, so none says where.
    let datagram_flows = flows.iter().filter(|f| f.protocol != Protocol::Tcp).count();
    if datagram_flows > 1 {
        for report in &mut reports {
            if let Some(d) = report
                .end
                .sum_received
                .as_mut()
                .and_then(|r| r.datagrams.as_mut())
            {
                d.lost_where = None;
                d.drops_counted = None;
            }
        }
    }
    Ok(reports)
}
