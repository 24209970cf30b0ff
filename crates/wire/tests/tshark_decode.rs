//! One sample of every message type the wire crate emits, written to a pcapng
//! file and decoded by tshark with checksum validation on: no malformed
//! packet, no bad checksum, and each decoded as the protocol it is.
//!
//! Without tshark the test says so; under CI (`CI` set) it then fails, since
//! CI installs tshark.

mod samples;

use std::path::Path;
use std::process::Command;

use samples::Sample;
use wire::pcapng::{CapturedPacket, LinkType, PcapngWriter};

fn write_pcapng(path: &Path, samples: &[Sample]) {
    let file = std::fs::File::create(path).expect("create pcapng file");
    let mut writer = PcapngWriter::new(std::io::BufWriter::new(file), "stackscope wire tests")
        .expect("section header");
    let eth = writer
        .add_interface("sim0", LinkType::Ethernet, 0)
        .expect("interface");
    for (i, sample) in samples.iter().enumerate() {
        writer
            .write_packet(
                eth,
                &CapturedPacket {
                    timestamp_ns: 1_700_000_000_000_000_000 + i as u64 * 1_000,
                    data: &sample.frame,
                    original_len: None,
                    comment: Some(sample.name),
                    direction: None,
                },
            )
            .expect("packet");
    }
    writer.into_inner().expect("flush");
}

fn tshark_available() -> bool {
    match Command::new("tshark").arg("--version").output() {
        Ok(out) => out.status.success(),
        Err(_) => false,
    }
}

/// Splits `tshark -V` output into one text block per frame.
fn frame_blocks(verbose: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in verbose.lines() {
        if line.starts_with("Frame ") {
            blocks.push(String::new());
        }
        if let Some(block) = blocks.last_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    blocks
}

/// The protocol chain tshark reports for a frame, e.g. `eth:ethertype:ip:udp`.
fn protocols_of(block: &str) -> Vec<String> {
    block
        .lines()
        .find_map(|l| l.trim().strip_prefix("[Protocols in frame: "))
        .map(|p| {
            p.trim_end_matches(']')
                .split(':')
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn tshark_decodes_every_sample_without_errors() {
    if !tshark_available() {
        let message = "tshark is not installed: this test decodes the samples with it \
                       (apt-get install tshark; .ci/run installs it)";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("SKIPPED: {message}");
        return;
    }
    let samples = samples::all();
    let dir = std::env::temp_dir().join(format!("stackscope-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("samples.pcapng");
    write_pcapng(&path, &samples);

    let output = Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args(["-o", "tcp.check_checksum:TRUE"])
        .args(["-o", "udp.check_checksum:TRUE"])
        .args(["-o", "ip.check_checksum:TRUE"])
        .arg("-V")
        .output()
        .expect("run tshark");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tshark failed: {stderr}");

    let blocks = frame_blocks(&stdout);
    assert_eq!(
        blocks.len(),
        samples.len(),
        "tshark saw a different number of frames; stderr: {stderr}"
    );
    let mut failures = Vec::new();
    for (sample, block) in samples.iter().zip(&blocks) {
        let protocols = protocols_of(block);
        let mut problems = Vec::new();
        if block.contains("Malformed") {
            problems.push("malformed".to_string());
        }
        if block.contains("Status: Bad") || block.contains("[Bad Checksum") {
            problems.push("bad checksum".to_string());
        }
        if block.contains("Expert Info (Error") {
            problems.push("expert info error".to_string());
        }
        for expected in sample.protocols {
            if !protocols.iter().any(|p| p == expected) {
                problems.push(format!("not decoded as {expected}"));
            }
        }
        for text in sample.decoded_text {
            if !block.contains(text) {
                problems.push(format!("missing {text:?}"));
            }
        }
        if sample.has_checksum && !block.contains("Status: Good") {
            problems.push("no checksum reported as good".to_string());
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {} (protocols {:?})\n{block}",
                sample.name,
                problems.join(", "),
                protocols
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} samples failed:\n{}",
        failures.len(),
        samples.len(),
        failures.join("\n")
    );
}
