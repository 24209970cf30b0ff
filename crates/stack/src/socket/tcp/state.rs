//! The connection states of RFC 9293 §3.3.2.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl State {
    /// ESTABLISHED and after: both ISNs known, so sequence checks and
    /// RFC 5961's rules apply (RFC 9293 §3.10.7.4 "synchronized states").
    pub fn is_synchronized(self) -> bool {
        !matches!(
            self,
            State::Closed | State::Listen | State::SynSent | State::SynReceived
        )
    }

    /// The application may still send: nothing closed our direction.
    pub fn can_send(self) -> bool {
        matches!(self, State::Established | State::CloseWait)
    }

    /// The peer may still send: its FIN has not arrived.
    pub fn can_receive(self) -> bool {
        matches!(
            self,
            State::SynReceived | State::Established | State::FinWait1 | State::FinWait2
        )
    }

    /// Our FIN has been queued (we closed our direction).
    pub fn fin_queued(self) -> bool {
        matches!(
            self,
            State::FinWait1 | State::FinWait2 | State::Closing | State::LastAck | State::TimeWait
        )
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Closed => "CLOSED",
            State::Listen => "LISTEN",
            State::SynSent => "SYN-SENT",
            State::SynReceived => "SYN-RECEIVED",
            State::Established => "ESTABLISHED",
            State::FinWait1 => "FIN-WAIT-1",
            State::FinWait2 => "FIN-WAIT-2",
            State::CloseWait => "CLOSE-WAIT",
            State::Closing => "CLOSING",
            State::LastAck => "LAST-ACK",
            State::TimeWait => "TIME-WAIT",
        })
    }
}
