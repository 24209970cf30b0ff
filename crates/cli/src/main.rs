//! `stackscope`: measure where time goes inside a network protocol stack.

mod calibrate;
mod throughput;

use clap::{Parser, Subcommand};

/// Measure where time goes inside a network protocol stack: per-layer and
/// per-category cost, queueing, latency and throughput, for a reference
/// stack and for the operating system's own.
#[derive(Debug, Parser)]
#[command(name = "stackscope", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure the figures every measurement rests on: cycle-counter
    /// frequency, probe cost and overhead (subtracted by the analysis),
    /// checksum and memcpy throughput.
    Calibrate(calibrate::CalibrateArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Calibrate(args) => calibrate::run(args),
    }
}
