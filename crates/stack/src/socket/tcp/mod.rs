//! TCP (RFC 9293) for the reference stack, in pieces with one job each:
//! sequence arithmetic, the round-trip estimator and retransmission timer
//! (RFC 6298), congestion control (RFC 5681, RFC 6582 NewReno, RFC 9438
//! CUBIC), the receive-side reassembler with SACK blocks (RFC 2018) and
//! the sender's SACK scoreboard (RFC 6675), and the record of small
//! segments in flight that path-MTU resends skip (RFC 1191 §6.5).

pub mod assembler;
pub mod congestion;
pub mod connection;
pub mod isn;
pub mod listener;
pub mod options;
pub mod rtt;
pub mod rules;
pub mod scoreboard;
pub mod send_buffer;
pub mod seq;
pub mod small_segments;
pub mod sockets;
pub mod state;
pub mod timers;

use wire::tcp::{TcpFlags, TcpRepr, TcpUnknownOptions, MAX_SACK_BLOCKS};

/// A header between two ports with the given numbers and flags, and no
/// window, options or payload: what every segment starts from.
pub fn bare_header(
    src_port: u16,
    dst_port: u16,
    seq: seq::Seq,
    ack: Option<seq::Seq>,
    flags: TcpFlags,
) -> TcpRepr {
    TcpRepr {
        src_port,
        dst_port,
        seq_number: seq.0,
        ack_number: ack.map(|a| a.0),
        flags,
        window_len: 0,
        urgent_pointer: 0,
        max_seg_size: None,
        window_scale: None,
        sack_permitted: false,
        sack_ranges: [None; MAX_SACK_BLOCKS],
        timestamps: None,
        unknown_options: TcpUnknownOptions::default(),
        payload_len: 0,
    }
}
