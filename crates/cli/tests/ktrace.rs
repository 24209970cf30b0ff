//! `stackscope ktrace` end to end: as root, a traced TCP and UDP transfer
//! across a veth pair written as a trace `stackscope trace info` reads;
//! without root, a clear error naming the missing permission.

use std::process::{Command, Output};

/// Runs the binary under test (tests/common's helper without its JSON
/// reader, which this file does not use).
fn stackscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stackscope"))
        .args(args)
        .output()
        .expect("run stackscope")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ktrace_writes_a_kernel_trace_or_says_why_not() {
    let path = std::env::temp_dir().join(format!("stackscope-ktrace-{}.trace", std::process::id()));
    let file = path.to_str().expect("utf-8 temp path");
    if !is_root() {
        let out = stackscope(&["ktrace", "-n", "1", "-o", file]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains("need root"), "{err}");
        return;
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        println!("skipped: no kernel BTF");
        return;
    }
    for udp in [false, true] {
        let mut args = vec!["ktrace", "-n", "5", "-l", "512", "-o", file];
        if udp {
            args.push("-u");
        }
        let out = stackscope(&args);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        let protocol = if udp { "UDP" } else { "TCP" };
        assert!(
            stdout.contains(&format!("{protocol}: 5 of 5 messages of 512 B received")),
            "{stdout}"
        );
        let info = stackscope(&["trace", "info", file]);
        let info = text(&info.stdout);
        assert!(info.contains("kernel.net_dev_queue"), "{info}");
        assert!(
            info.contains(&format!("stackscope ktrace: {protocol}")),
            "{info}"
        );
    }
    let _ = std::fs::remove_file(&path);
}
