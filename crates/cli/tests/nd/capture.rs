//! Reading the kernel-side capture of an ND test (`support::capture`
//! makes it and checks it is clean): the fields of each frame that the
//! Neighbour Discovery and ARP checks look at.

use std::path::Path;

use crate::support::capture::tshark;

/// The fields of one captured frame that the tests look at (empty when
/// the frame has no such field).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub time: f64,
    pub eth_src: String,
    pub eth_dst: String,
    pub ip6_src: String,
    pub ip6_dst: String,
    pub hop_limit: String,
    pub icmp6_type: String,
    pub ns_target: String,
    pub na_target: String,
    pub na_solicited: bool,
    pub na_override: bool,
    pub na_router: bool,
    /// ND option types in order (1 SLLA, 2 TLLA, 14 nonce, ...).
    pub option_types: Vec<String>,
    /// Link-layer addresses of the SLLA/TLLA options.
    pub option_macs: Vec<String>,
    /// Multicast addresses of an MLDv2 report's records.
    pub mld_groups: Vec<String>,
    pub prefix: String,
    pub arp_opcode: String,
    pub arp_sender_mac: String,
    pub arp_sender_ip: String,
    pub arp_target_ip: String,
}

const FRAME_FIELDS: [&str; 20] = [
    "frame.time_epoch",
    "eth.src",
    "eth.dst",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.hlim",
    "icmpv6.type",
    "icmpv6.nd.ns.target_address",
    "icmpv6.nd.na.target_address",
    "icmpv6.nd.na.flag.s",
    "icmpv6.nd.na.flag.o",
    "icmpv6.nd.na.flag.r",
    "icmpv6.opt.type",
    "icmpv6.opt.linkaddr",
    "icmpv6.mldr.mar.multicast_address",
    "icmpv6.opt.prefix",
    "arp.opcode",
    "arp.src.hw_mac",
    "arp.src.proto_ipv4",
    "arp.dst.proto_ipv4",
];

impl Frame {
    fn from_fields(values: &[&str]) -> Frame {
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect()
        };
        let flag = |s: &str| matches!(s, "1" | "True" | "true");
        let first = |s: &str| s.split(',').next().unwrap_or("").to_string();
        Frame {
            time: values[0].parse().unwrap_or(0.0),
            eth_src: values[1].to_string(),
            eth_dst: values[2].to_string(),
            ip6_src: first(values[3]),
            ip6_dst: first(values[4]),
            hop_limit: first(values[5]),
            icmp6_type: first(values[6]),
            ns_target: values[7].to_string(),
            na_target: values[8].to_string(),
            na_solicited: flag(values[9]),
            na_override: flag(values[10]),
            na_router: flag(values[11]),
            option_types: list(values[12]),
            option_macs: list(values[13]),
            mld_groups: list(values[14]),
            prefix: values[15].to_string(),
            arp_opcode: values[16].to_string(),
            arp_sender_mac: values[17].to_string(),
            arp_sender_ip: values[18].to_string(),
            arp_target_ip: values[19].to_string(),
        }
    }

    pub fn is_ns(&self) -> bool {
        self.icmp6_type == "135"
    }

    pub fn is_na(&self) -> bool {
        self.icmp6_type == "136"
    }
}

/// Every frame of the capture, in order.
pub fn read_frames(capture: &Path) -> Vec<Frame> {
    let mut args = vec!["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"];
    for field in FRAME_FIELDS {
        args.extend(["-e", field]);
    }
    let text = tshark(capture, &args);
    text.lines()
        .map(|line| {
            let values: Vec<&str> = line.split('\t').collect();
            assert_eq!(values.len(), FRAME_FIELDS.len(), "tshark line {line:?}");
            Frame::from_fields(&values)
        })
        .collect()
}

/// Lines of the frames, for assertion messages.
pub fn show(frames: &[&Frame]) -> String {
    frames
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}
