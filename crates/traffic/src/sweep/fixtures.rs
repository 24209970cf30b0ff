//! Made-up points and reports for the sweep's unit tests: one second per
//! transfer, so bytes × 8 is the rate in bits per second.

use std::time::Duration;

use super::points::{Point, Work};
use crate::echo::EchoReport;
use crate::env::Environment;
use crate::report::{Received, ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::spec::{EchoSpec, Family, Protocol, StackKind, TransferSpec};
use crate::verify::{DatagramCounts, StreamCounts};

/// Point `index`: kernel, IPv6, 1024 B × 10, one circuit.
pub fn point(index: usize, protocol: &str) -> Point {
    Point {
        index,
        stack: StackKind::Kernel,
        protocol: protocol.into(),
        family: Some(Family::V6),
        size_bytes: 1024,
        count: 10,
        sockbuf_bytes: None,
        rate_bps: None,
        circuits: 1,
        load: 0,
        load_on: super::load::LoadOn::Both,
        work: Work::Transfer(Vec::new()),
    }
}

fn report(
    protocol: Protocol,
    port: u16,
    sent: u64,
    received: u64,
    checks: Received,
) -> TransferReport {
    let mut spec = TransferSpec::new(protocol, Family::V6);
    spec.port = port;
    let mut target = Environment::detect(StackKind::Kernel, "loopback");
    if protocol == Protocol::Tcp {
        target.congestion_control = Some("cubic".into());
    }
    let second = Duration::from_secs(1);
    TransferReport::new(
        &spec,
        target,
        Timestamp::now(),
        Vec::new(),
        Some(&SenderSide {
            bytes: sent,
            datagrams: 0,
            elapsed: second,
            cpu: Default::default(),
            retransmits: None,
        }),
        Some(&ReceiverSide {
            bytes: received,
            elapsed: second,
            opening_bytes: 0,
            cpu: Default::default(),
            checks,
            drops: None,
        }),
    )
}

/// A TCP transfer on `port` of which `received` of `sent` bytes arrived
/// (the rest missing).
pub fn tcp(port: u16, sent: u64, received: u64) -> TransferReport {
    let checks = Received::Stream(StreamCounts {
        bytes: received,
        missing_bytes: sent - received,
        ..Default::default()
    });
    report(Protocol::Tcp, port, sent, received, checks)
}

/// A UDP transfer of `bytes` on `port`: `received` datagrams, `lost` and
/// `corrupted` ones.
pub fn udp(port: u16, bytes: u64, received: u64, lost: u64, corrupted: u64) -> TransferReport {
    let checks = Received::Datagrams(DatagramCounts {
        datagrams: received,
        lost,
        corrupted,
        ..Default::default()
    });
    report(Protocol::Udp, port, bytes, bytes, checks)
}

/// An echo series with these round trips.
pub fn echo(rtt_ns: Vec<u64>, lost: u64, corrupted: u64) -> EchoReport {
    EchoReport {
        spec: EchoSpec::new(Protocol::Udp, Family::V6, 16, rtt_ns.len() as u64),
        target: Environment::detect(StackKind::Ref, "reference stack"),
        rtt_ns,
        lost,
        corrupted,
        runner_naps: None,
    }
}
