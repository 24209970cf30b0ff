//! iperf3's control connection: one signed byte per state change, and
//! JSON objects (the test's parameters, each side's results) framed by a
//! 4-byte big-endian length. Reads and writes never block: bytes wait in
//! an inbox and an outbox until the stack takes or delivers them.

use serde_json::Value;

use crate::error::TrafficError;
use crate::transport::{Read, Transport};

/// The states iperf3's two ends send each other on the control
/// connection, one signed byte each (the values of iperf3's `iperf_api.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    pub fn byte(self) -> u8 {
        let value: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        value as u8
    }

    /// The state a received byte names; `None` for one this server never
    /// expects from a client.
    pub fn from_byte(byte: u8) -> Option<State> {
        [
            State::TestStart,
            State::TestRunning,
            State::TestEnd,
            State::ParamExchange,
            State::CreateStreams,
            State::ServerTerminate,
            State::ClientTerminate,
            State::ExchangeResults,
            State::DisplayResults,
            State::IperfDone,
            State::AccessDenied,
            State::ServerError,
        ]
        .into_iter()
        .find(|s| s.byte() == byte)
    }
}

/// The longest JSON object a client may send (its parameters or results;
/// a few hundred bytes in practice): more is refused, not buffered.
pub const MAX_JSON: usize = 1 << 20;

/// The control connection of a test.
#[derive(Debug)]
pub struct Control<S> {
    pub stream: S,
    inbox: Vec<u8>,
    outbox: Vec<u8>,
    /// The client closed its side.
    pub closed: bool,
}

impl<S: Copy> Control<S> {
    pub fn new(stream: S) -> Self {
        Self {
            stream,
            inbox: Vec::new(),
            outbox: Vec::new(),
            closed: false,
        }
    }

    /// Sends what is queued and reads what arrived; true if anything moved.
    pub fn pump<N: Transport<Stream = S>>(
        &mut self,
        net: &mut N,
        buf: &mut [u8],
    ) -> Result<bool, TrafficError> {
        let mut moved = self.flush(net)?;
        while !self.closed && self.inbox.len() <= MAX_JSON + 4 {
            match net.recv(self.stream, buf)? {
                Read::Data(n) => {
                    self.inbox.extend_from_slice(&buf[..n]);
                    moved = true;
                }
                Read::Nothing => break,
                Read::End => {
                    self.closed = true;
                    moved = true;
                }
            }
        }
        Ok(moved)
    }

    /// Hands the stack what it takes of the outbox.
    pub fn flush<N: Transport<Stream = S>>(&mut self, net: &mut N) -> Result<bool, TrafficError> {
        let mut moved = false;
        while !self.outbox.is_empty() {
            let n = net.send(self.stream, &self.outbox)?;
            if n == 0 {
                break;
            }
            self.outbox.drain(..n);
            moved = true;
        }
        Ok(moved)
    }

    /// Queues bytes as they are (a connection's cookie).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.outbox.extend_from_slice(bytes);
    }

    pub fn send_state(&mut self, state: State) {
        self.outbox.push(state.byte());
    }

    /// SERVER_ERROR with iperf3's error number (its `i_errno`) and no
    /// system error: the client prints the message it has for `code`.
    pub fn send_error(&mut self, code: i32) {
        self.send_state(State::ServerError);
        self.outbox.extend_from_slice(&code.to_be_bytes());
        self.outbox.extend_from_slice(&0i32.to_be_bytes());
    }

    pub fn send_json(&mut self, value: &Value) {
        let text = value.to_string();
        // Our own objects are a few kilobytes: the length always fits.
        let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
        self.outbox.extend_from_slice(&len.to_be_bytes());
        self.outbox.extend_from_slice(text.as_bytes());
    }

    /// The next state byte, if one arrived.
    pub fn take_byte(&mut self) -> Option<u8> {
        if self.inbox.is_empty() {
            return None;
        }
        Some(self.inbox.remove(0))
    }

    /// The next length-framed JSON object, once all of it arrived.
    pub fn take_json(&mut self) -> Result<Option<Value>, TrafficError> {
        let Some(header) = self.inbox.get(..4) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if len > MAX_JSON {
            return Err(TrafficError::Invalid(format!(
                "iperf3 control: the client announced {len} bytes of JSON (at most {MAX_JSON})"
            )));
        }
        if self.inbox.len() < 4 + len {
            return Ok(None);
        }
        let value: Value = serde_json::from_slice(&self.inbox[4..4 + len]).map_err(|e| {
            TrafficError::Invalid(format!("iperf3 control: the client's JSON: {e}"))
        })?;
        self.inbox.drain(..4 + len);
        Ok(Some(value))
    }

    pub fn flushed(&self) -> bool {
        self.outbox.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_bytes() {
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::ServerError.byte(), 0xfe);
        assert_eq!(State::ParamExchange.byte(), 9);
        assert_eq!(State::IperfDone.byte(), 16);
        for byte in 0..=255u8 {
            if let Some(state) = State::from_byte(byte) {
                assert_eq!(state.byte(), byte);
            }
        }
        assert_eq!(State::from_byte(3), None);
    }

    #[test]
    fn json_waits_for_its_whole_length_and_refuses_huge_ones() {
        let mut control = Control::new(0u8);
        let text = br#"{"tcp":true,"time":3}"#;
        control
            .inbox
            .extend_from_slice(&(text.len() as u32).to_be_bytes());
        control.inbox.extend_from_slice(&text[..5]);
        assert!(control.take_json().unwrap().is_none());
        control.inbox.extend_from_slice(&text[5..]);
        control.inbox.push(State::TestEnd.byte());
        let value = control.take_json().unwrap().unwrap();
        assert_eq!(value["time"], 3);
        assert_eq!(control.take_byte(), Some(4));
        control
            .inbox
            .extend_from_slice(&((MAX_JSON + 1) as u32).to_be_bytes());
        assert!(control.take_json().is_err());
        let mut control = Control::new(0u8);
        control
            .inbox
            .extend_from_slice(&[0, 0, 0, 3, b'{', b'x', b'}']);
        assert!(control.take_json().is_err(), "malformed JSON is an error");
    }

    #[test]
    fn errors_carry_the_code_big_endian() {
        let mut control = Control::new(0u8);
        control.send_error(13);
        assert_eq!(control.outbox, [0xfe, 0, 0, 0, 13, 0, 0, 0, 0]);
    }
}
