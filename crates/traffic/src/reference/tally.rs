//! Drop counting on the reference stack: a monitor on every node takes
//! its drop counters when the first data datagram goes and again when
//! every datagram receiver is done; the differences, summed over the
//! nodes, are the run's drops by place (see [`crate::losses`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use stack::iface::host::Host;
use stack::runner::threaded::{Progress, Workload, WorkloadFactory};

use crate::losses;

/// Says when every datagram receiver has its end (or a side failed).
pub(crate) type Over = Box<dyn Fn() -> bool + Send + Sync>;

/// The run's datagram flows and the drops counted so far.
pub(crate) struct Accounts {
    flows: usize,
    over: Over,
    drops: Mutex<BTreeMap<String, u64>>,
}

impl Accounts {
    /// Counts over `flows` datagram flows until `over` says they ended.
    pub(crate) fn new(flows: usize, over: Over) -> Self {
        Self {
            flows,
            over,
            drops: Mutex::new(BTreeMap::new()),
        }
    }

    fn over(&self) -> bool {
        (self.over)()
    }

    /// The drops by place when the run had one datagram flow.
    pub(crate) fn drops_if_alone(&self) -> Option<BTreeMap<String, u64>> {
        (self.flows == 1).then(|| self.drops.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// A node's drop counters by place: its links' (wire loss and device
/// queue), its interfaces' queues and its own drop reasons, control
/// traffic's left out.
pub(crate) fn snapshot(host: &Host) -> BTreeMap<String, u64> {
    let mut places = BTreeMap::new();
    let mut count = |place: &str, n: u64| {
        if n > 0 {
            *places.entry(place.to_string()).or_insert(0) += n;
        }
    };
    for interface in host.interfaces() {
        let link = interface.link.stats();
        count("wire_loss", link.dropped_loss);
        count("device_queue_full", link.dropped_queue_full);
        count("too_big_for_link", link.dropped_too_big);
        count(
            "device_receive",
            link.dropped_rx_too_long + link.dropped_rx_overrun,
        );
        count(
            "device_other",
            link.dropped_link_down + link.dropped_unsupported + link.dropped_os_error,
        );
        count("interface_queue_full", interface.counters.queue_drops);
    }
    for (reason, &n) in host.drops() {
        if let Some(place) = losses::stack_place(reason) {
            count(&place, n);
        }
    }
    places
}

/// The monitor workload of one node: its counters when the workloads
/// start (before the first datagram, so none of the data's drops is
/// missed: a snapshot taken when data had started lost the drops made
/// before the monitor ran, 26 000 receive-ring overruns of 221 000 in one
/// full-lab point) and when every receiver has ended. What the start and
/// end sentinels lost is counted too; attribution shares the places out
/// when they count more than the lost datagrams.
pub(crate) fn monitor(accounts: Arc<Accounts>) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let before = snapshot(host);
        Box::new(move |host: &mut Host, _now| {
            // The receivers ending comes by `wake_peers`.
            if !accounts.over() {
                return Progress::WAITING;
            }
            let grown = losses::delta(&before, &snapshot(host));
            losses::add(
                &mut accounts.drops.lock().unwrap_or_else(|e| e.into_inner()),
                &grown,
            );
            Progress::Done
        })
    })
}
