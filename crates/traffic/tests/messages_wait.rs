//! The lab's traced messages in both waiting modes of the threaded runner:
//! every message arrives whether the host threads spin before blocking or
//! block at once, and the run says which mode its CPU figures come from.

use std::time::Duration;

use stack::runner::threaded::Poll;
use stack::topology::Topology;
use traffic::reference::messages::{self, MessagesSpec};
use traffic::spec::Protocol;

// Both tests set the global probe gate: one at a time.
static PROBE_MODE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn spec(protocol: Protocol, poll: Poll) -> MessagesSpec {
    MessagesSpec {
        poll,
        ..MessagesSpec::new(protocol, vec![16, 4000], 20, 1 << 16)
    }
}

#[test]
fn messages_arrive_in_both_modes_and_the_run_names_its_mode() {
    let _turn = PROBE_MODE.lock().unwrap_or_else(|e| e.into_inner());
    let topology =
        Topology::from_toml_str(include_str!("../../../topologies/unlimited.toml")).unwrap();
    for protocol in [Protocol::Udp, Protocol::Tcp] {
        for poll in [Poll::Block, Poll::Spin] {
            // The sender learns of each delivery from the receiver's thread
            // (no frame carries it back for UDP): without `wake_peers` a
            // blocked sender would wait out the 10 s `wait` per message.
            let run = messages::run(&topology, &spec(protocol, poll)).expect("the run");
            assert_eq!(run.poll, poll);
            assert_eq!(run.outcomes.len(), 41, "{protocol:?} {poll:?}");
            assert!(
                run.outcomes.iter().all(|o| o.delivered),
                "{protocol:?} {poll:?}"
            );
            assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
            assert!(run.threads.iter().all(|t| !t.records.is_empty()));
        }
    }
}
