//! The results the two ends exchange at a test's end: the server's object
//! (what the client prints as the receiver's line, or the sender's with
//! `-R`) built from its own counts, and what it reads of the client's.

use serde_json::{json, Value};

use crate::cpu::CpuPercent;
use crate::error::TrafficError;

/// One stream's counts on this server, as iperf3's results carry them.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResult {
    pub id: u32,
    /// Received (the server receives) or handed to the stack (it sends).
    pub bytes: u64,
    /// Segments retransmitted (a sending TCP stream whose stack counts
    /// them); `None` is sent as iperf3's -1.
    pub retransmits: Option<u64>,
    /// UDP receiver: interarrival jitter, seconds.
    pub jitter: f64,
    /// UDP receiver: datagrams lost; sender: 0.
    pub errors: u64,
    /// UDP: the highest count received, or datagrams sent.
    pub packets: u64,
    /// Seconds from the test's start to this stream's start and end.
    pub start_time: f64,
    pub end_time: f64,
}

/// The server's results object.
pub fn server_results(
    cpu: CpuPercent,
    sender_has_retransmits: bool,
    congestion: Option<&str>,
    streams: &[StreamResult],
) -> Value {
    let streams: Vec<Value> = streams
        .iter()
        .map(|s| {
            json!({
                "id": s.id,
                "bytes": s.bytes,
                "retransmits": s.retransmits.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX)),
                "jitter": s.jitter,
                "errors": s.errors,
                "omitted_errors": 0,
                "packets": s.packets,
                "omitted_packets": 0,
                "start_time": s.start_time,
                "end_time": s.end_time,
            })
        })
        .collect();
    let mut results = json!({
        "cpu_util_total": cpu.total,
        "cpu_util_user": cpu.user,
        "cpu_util_system": cpu.system,
        "sender_has_retransmits": i32::from(sender_has_retransmits),
        "streams": streams,
    });
    if let Some(name) = congestion {
        results["congestion_used"] = Value::from(name);
    }
    results
}

/// What the client says one of its streams did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientStream {
    pub id: u32,
    /// Bytes it sent (or received, with `-R`).
    pub bytes: u64,
    /// UDP: datagrams it sent (or the highest count it received).
    pub packets: u64,
}

/// The streams of the client's results object.
pub fn client_streams(v: &Value) -> Result<Vec<ClientStream>, TrafficError> {
    let bad =
        |why: &str| TrafficError::Invalid(format!("iperf3 control: the client's results: {why}"));
    let streams = v
        .get("streams")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no streams array"))?;
    streams
        .iter()
        .map(|s| {
            let number = |key: &str| s.get(key).and_then(Value::as_u64);
            Ok(ClientStream {
                id: number("id")
                    .and_then(|id| u32::try_from(id).ok())
                    .ok_or_else(|| bad("a stream without an id"))?,
                bytes: number("bytes").ok_or_else(|| bad("a stream without bytes"))?,
                packets: number("packets").unwrap_or(0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_object_has_every_field_the_client_requires() {
        let cpu = CpuPercent {
            total: 12.5,
            user: 2.5,
            system: 10.0,
        };
        let stream = StreamResult {
            id: 3,
            bytes: 1000,
            retransmits: Some(2),
            jitter: 0.0,
            errors: 0,
            packets: 0,
            start_time: 0.0,
            end_time: 1.5,
        };
        let v = server_results(cpu, true, Some("cubic"), std::slice::from_ref(&stream));
        for key in ["cpu_util_total", "cpu_util_user", "cpu_util_system"] {
            assert!(v[key].is_f64(), "{key}");
        }
        assert_eq!(v["sender_has_retransmits"], 1);
        assert_eq!(v["congestion_used"], "cubic");
        let s = &v["streams"][0];
        for key in ["id", "bytes", "retransmits", "jitter", "errors", "packets"] {
            assert!(!s[key].is_null(), "{key}");
        }
        assert_eq!(
            (s["id"].as_u64(), s["bytes"].as_u64()),
            (Some(3), Some(1000))
        );
        let receiving = StreamResult {
            retransmits: None,
            ..stream
        };
        let v = server_results(cpu, false, None, &[receiving]);
        assert_eq!(v["streams"][0]["retransmits"], -1);
        assert_eq!(v["sender_has_retransmits"], 0);
        assert!(v.get("congestion_used").is_none());
    }

    #[test]
    fn client_results_are_read_and_malformed_ones_refused() {
        let v = serde_json::json!({"cpu_util_total": 1.0, "streams": [
            {"id": 1, "bytes": 5000, "retransmits": 0, "jitter": 0, "errors": 0, "packets": 4},
            {"id": 3, "bytes": 7000, "retransmits": 0, "jitter": 0, "errors": 0, "packets": 0}]});
        let streams = client_streams(&v).unwrap();
        assert_eq!(
            streams,
            [
                ClientStream {
                    id: 1,
                    bytes: 5000,
                    packets: 4
                },
                ClientStream {
                    id: 3,
                    bytes: 7000,
                    packets: 0
                }
            ]
        );
        assert!(client_streams(&serde_json::json!({})).is_err());
        assert!(client_streams(&serde_json::json!({"streams": [{"bytes": 1}]})).is_err());
        assert!(client_streams(&serde_json::json!({"streams": [{"id": 1, "bytes": -1}]})).is_err());
    }
}
