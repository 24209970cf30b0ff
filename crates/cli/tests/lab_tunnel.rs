//! The lab over 6-over-4 (issue 20): a recipe's traced messages on the
//! `fast-ethernet-6over4` link profile reach the receiver through the
//! hosts' own IPv4, the run's path MTU is the tunnel's 1480 and its
//! per-packet payload follows from it, every window holds the tunnel's
//! rows (its encapsulation under link, its IPv4 under network) while the
//! native twin's hold none, and the report has the section that sets
//! them side by side.

// Shared with the other CLI tests; this file reads files, not stdout JSON.
#[allow(dead_code)]
mod common;

use std::path::PathBuf;

use common::stackscope;
use serde_json::Value;

const RECIPE: &str = r#"
name = "tunnel_check"
title = "Traced messages over 6-over-4 beside native IPv6"
source = "000_0fc38da232342d4f.txt"

[[run]]
id = "tcp"
kind = "messages"
protocol = "tcp"
family = "ipv6"
link = "fast-ethernet"
sizes = "1000,4000"
reps = 2
warmup = 3
sockbuf = "8760"
probes = "functions"

[[run]]
id = "tcp-6over4"
kind = "messages"
protocol = "tcp"
family = "ipv6"
link = "fast-ethernet-6over4"
sizes = "1000,4000"
reps = 2
warmup = 3
sockbuf = "8760"
probes = "functions"

[[run]]
id = "udp-6over4"
kind = "messages"
protocol = "udp"
family = "ipv6"
link = "fast-ethernet-6over4"
sizes = "1000,4000"
reps = 2
warmup = 3
probes = "functions"
"#;

/// A directory of its own under the system's temporary one, removed at
/// the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mean(part: &Value) -> f64 {
    part["mean"].as_f64().unwrap_or(0.0)
}

#[test]
fn traced_messages_over_6over4_carry_the_tunnels_rows_beside_native() {
    let scratch = Scratch(std::env::temp_dir().join(format!("lab-tunnel-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).unwrap();
    let recipe = scratch.0.join("recipe.toml");
    std::fs::write(&recipe, RECIPE).unwrap();
    let out = scratch.0.join("out");
    let output = stackscope(&[
        "run",
        recipe.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "stackscope run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let runs = summary["experiments"][0]["runs"].as_array().unwrap();
    let run = |id: &str| runs.iter().find(|r| r["id"] == id).unwrap();

    let native = run("tcp");
    assert_eq!(native["path_mtu"], 1500);
    assert_eq!(native["segment_bytes"], 1420.0);
    for (id, segment) in [("tcp-6over4", 1400.0), ("udp-6over4", 1432.0)] {
        let tunnel = run(id);
        assert_eq!(tunnel["path_mtu"], 1480, "{id}");
        assert_eq!(tunnel["segment_bytes"], segment, "{id}");
        assert_eq!(tunnel["delivered"], tunnel["sent"], "{id}");
        let points = tunnel["points"].as_array().unwrap();
        assert_eq!(points.len(), 2, "{id}");
        for point in points {
            for side in ["send", "receive"] {
                let split = &point[side]["stop_split"];
                let inside = &split["tunnel"];
                let at = format!("{id} {} B {side}", point["size"]);
                assert!(
                    mean(&inside["link"]) > 0.0,
                    "{at}: no encapsulation: {split}"
                );
                assert!(mean(&inside["network"]) > 0.0, "{at}: no IPv4: {split}");
                // Per layer, outside and inside the tunnel make the layer.
                for (layer, part) in split["layers"].as_object().unwrap() {
                    let sum = mean(&split["outside_tunnel"][layer]) + mean(&inside[layer]);
                    assert!(
                        (sum - mean(part)).abs() <= 1e-6 * mean(part).max(1.0),
                        "{at}: {layer}"
                    );
                }
                let share = mean(&split["tunnel_share"]);
                assert!(share > 0.0 && share < 1.0, "{at}: share {share}");
            }
        }
        // TCP: a 4000-byte message is three 1400-byte segments over the
        // tunnel.
        if id == "tcp-6over4" {
            let frames = points[1]["send"]["frames"].as_f64().unwrap();
            assert!(frames >= 3.0, "{frames} frames for 4000 B");
        }
    }
    for point in native["points"].as_array().unwrap() {
        assert!(point["send"]["stop_split"].get("tunnel").is_none());
        assert!(point["send"]["stop_split"].get("tunnel_total").is_none());
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"tunnel_check-over-tunnel\""));
    assert!(html.contains("tunnel: encapsulation") && html.contains("tunnel: IPv4"));
    assert!(
        !html.contains("does not add up"),
        "a layer table does not add up"
    );
}
