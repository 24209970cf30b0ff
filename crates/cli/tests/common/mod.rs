//! What the binary's end-to-end tests share: running `stackscope` and
//! reading its JSON.

use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary under test with `args`.
pub fn stackscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stackscope"))
        .args(args)
        .output()
        .expect("run stackscope")
}

/// Its stdout as JSON, after checking that it succeeded.
pub fn stdout_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stackscope failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}
