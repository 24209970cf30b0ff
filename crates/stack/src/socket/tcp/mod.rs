//! TCP (RFC 9293) for the reference stack, in pieces with one job each:
//! sequence arithmetic, the round-trip estimator and retransmission timer
//! (RFC 6298), congestion control (RFC 5681, RFC 6582 NewReno, RFC 9438
//! CUBIC), the receive-side reassembler with SACK blocks (RFC 2018) and
//! the sender's SACK scoreboard (RFC 6675).

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
pub mod state;
pub mod timers;
