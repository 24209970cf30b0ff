//! The test an iperf3 client asks for: its parameters object, checked.
//! Options this server does not carry out are refused with iperf3's own
//! error numbers (the client prints its message for them) rather than
//! silently measuring something else.

use serde_json::Value;

/// iperf3's error numbers (`i_errno`) this server sends back.
pub mod code {
    /// "Number of parallel streams too large".
    pub const NUM_STREAMS: i32 = 6;
    /// "Block size too large".
    pub const BLOCK_SIZE: i32 = 7;
    /// "Not implemented yet".
    pub const UNIMPLEMENTED: i32 = 13;
    /// "Block size invalid" (UDP).
    pub const UDP_BLOCK_SIZE: i32 = 20;
}

/// iperf3's stream limit.
pub const MAX_STREAMS: u64 = 128;
/// iperf3's block size limit (TCP).
pub const MAX_BLOCK: u64 = 1 << 20;
/// The largest UDP payload over IPv4 (RFC 791), which both families carry.
pub const MAX_UDP_BLOCK: u64 = 65_507;
/// iperf3's UDP rate when the client gives none (bits per second).
pub const DEFAULT_UDP_RATE: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        }
    }
}

/// What the client asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub protocol: Protocol,
    /// `-R`: the server sends.
    pub reverse: bool,
    /// `-P`.
    pub parallel: usize,
    /// `-l`: bytes per write (TCP) or per datagram (UDP).
    pub len: usize,
    /// `-b`: bits per second per stream; `None`: as fast as it goes.
    pub rate: Option<u64>,
    /// `-n` (or `-k` × `-l`): the bytes the senders stop after, all
    /// streams together.
    pub bytes: Option<u64>,
    /// `-t`, seconds (the client ends the test; kept for the record).
    pub time: u64,
    /// `--udp-counters-64bit`: UDP headers carry a 64-bit count.
    pub counters_64bit: bool,
    pub client_version: Option<String>,
}

/// Why a test is refused: iperf3's error number and our words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i32,
    pub why: String,
}

fn refuse(code: i32, why: impl Into<String>) -> Refusal {
    Refusal {
        code,
        why: why.into(),
    }
}

/// A boolean the client writes as `true` or as a non-zero number.
fn flag(v: &Value, key: &str) -> bool {
    match v.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        _ => false,
    }
}

/// A non-negative whole number, if present; an error if present and not one.
fn count(v: &Value, key: &str) -> Result<Option<u64>, Refusal> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(x), _) => Ok(Some(x)),
            // cJSON writes large integers as doubles.
            (None, Some(x)) if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 => Ok(Some(x as u64)),
            _ => Err(refuse(
                code::UNIMPLEMENTED,
                format!("parameter {key} = {n} is not a count"),
            )),
        },
        Some(other) => Err(refuse(
            code::UNIMPLEMENTED,
            format!("parameter {key} = {other} is not a number"),
        )),
    }
}

impl Params {
    pub fn parse(v: &Value) -> Result<Params, Refusal> {
        if !v.is_object() {
            return Err(refuse(
                code::UNIMPLEMENTED,
                "the parameters are not an object",
            ));
        }
        let protocol = match (flag(v, "tcp"), flag(v, "udp")) {
            (_, true) => Protocol::Udp,
            (true, false) => Protocol::Tcp,
            _ if flag(v, "sctp") => {
                return Err(refuse(code::UNIMPLEMENTED, "SCTP is not served"));
            }
            _ => Protocol::Tcp,
        };
        if flag(v, "bidirectional") {
            return Err(refuse(
                code::UNIMPLEMENTED,
                "--bidir is not served (use -R for the other direction)",
            ));
        }
        if count(v, "omit")?.unwrap_or(0) > 0 {
            return Err(refuse(code::UNIMPLEMENTED, "--omit is not served"));
        }
        let parallel = count(v, "parallel")?.unwrap_or(1);
        if parallel == 0 || parallel > MAX_STREAMS {
            return Err(refuse(
                code::NUM_STREAMS,
                format!("-P {parallel}: 1 to {MAX_STREAMS} streams"),
            ));
        }
        let counters_64bit = flag(v, "udp_counters_64bit");
        let len = count(v, "len")?.unwrap_or(match protocol {
            Protocol::Tcp => 128 * 1024,
            Protocol::Udp => 1460,
        });
        match protocol {
            Protocol::Tcp if len == 0 || len > MAX_BLOCK => {
                return Err(refuse(
                    code::BLOCK_SIZE,
                    format!("-l {len}: 1 to {MAX_BLOCK} bytes"),
                ));
            }
            Protocol::Udp => {
                let header = super::udp::header_len(counters_64bit) as u64;
                if len < header || len > MAX_UDP_BLOCK {
                    return Err(refuse(
                        code::UDP_BLOCK_SIZE,
                        format!("-u -l {len}: {header} to {MAX_UDP_BLOCK} bytes"),
                    ));
                }
            }
            Protocol::Tcp => {}
        }
        let rate = match (count(v, "bandwidth")?, protocol) {
            (Some(0) | None, Protocol::Udp) => Some(DEFAULT_UDP_RATE),
            (Some(0) | None, Protocol::Tcp) => None,
            (Some(r), _) => Some(r),
        };
        let bytes = match (count(v, "num")?, count(v, "blockcount")?) {
            (Some(n), _) if n > 0 => Some(n),
            (_, Some(k)) if k > 0 => Some(k.saturating_mul(len)),
            _ => None,
        };
        Ok(Params {
            protocol,
            reverse: flag(v, "reverse"),
            parallel: parallel as usize,
            len: len as usize,
            rate,
            bytes,
            time: count(v, "time")?.unwrap_or(0),
            counters_64bit,
            client_version: v
                .get("client_version")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// One line for the host's log.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} {} stream{} of {} B writes",
            self.protocol.name(),
            self.parallel,
            if self.parallel == 1 { "" } else { "s" },
            self.len
        );
        text.push_str(if self.reverse {
            ", server sends (-R)"
        } else {
            ", client sends"
        });
        if let Some(rate) = self.rate {
            text.push_str(&format!(", {rate} bit/s per stream"));
        }
        match self.bytes {
            Some(bytes) => text.push_str(&format!(", {bytes} bytes")),
            None => text.push_str(&format!(", {} s", self.time)),
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_default_tcp_test_and_a_udp_test_parse() {
        let p = Params::parse(&json!({"tcp": true, "omit": 0, "time": 10, "num": 0,
            "blockcount": 0, "parallel": 1, "len": 131072, "pacing_timer": 1000,
            "client_version": "3.12"}))
        .unwrap();
        assert_eq!(p.protocol, Protocol::Tcp);
        assert_eq!(
            (p.parallel, p.len, p.rate, p.bytes),
            (1, 131_072, None, None)
        );
        assert_eq!(p.client_version.as_deref(), Some("3.12"));
        let p = Params::parse(&json!({"udp": true, "time": 2, "parallel": 2,
            "reverse": true, "len": 1448, "bandwidth": 50000000}))
        .unwrap();
        assert_eq!(p.protocol, Protocol::Udp);
        assert!(p.reverse);
        assert_eq!((p.parallel, p.rate), (2, Some(50_000_000)));
        let p = Params::parse(&json!({"udp": true, "len": 100, "blockcount": 7})).unwrap();
        assert_eq!((p.rate, p.bytes), (Some(DEFAULT_UDP_RATE), Some(700)));
    }

    #[test]
    fn what_is_not_served_is_refused_with_iperf3s_numbers() {
        let refused = |v: Value| Params::parse(&v).unwrap_err().code;
        assert_eq!(refused(json!({"tcp": true, "bidirectional": true})), 13);
        assert_eq!(refused(json!({"tcp": true, "omit": 2})), 13);
        assert_eq!(refused(json!({"tcp": true, "parallel": 129})), 6);
        assert_eq!(refused(json!({"tcp": true, "parallel": 0})), 6);
        assert_eq!(refused(json!({"tcp": true, "len": 2_000_000})), 7);
        assert_eq!(refused(json!({"udp": true, "len": 11})), 20);
        assert_eq!(
            refused(json!({"udp": true, "len": 12, "udp_counters_64bit": 1})),
            20
        );
        assert_eq!(refused(json!({"udp": true, "len": 70000})), 20);
        assert_eq!(refused(json!({"tcp": true, "time": "ten"})), 13);
        assert_eq!(refused(json!({"tcp": true, "time": -1})), 13);
        assert_eq!(refused(json!([1, 2])), 13);
    }
}
