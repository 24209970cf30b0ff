//! One pipeline stage on the kernel's TCP over loopback (the SunOS
//! study's Figure 18), printed as JSON: its summary, then, with `--bursts`,
//! every on-interval.
//!
//! ```sh
//! cargo run --release -p stackscope-traffic --example pipeline_stage -- [BLOCK_BYTES] [BLOCKS] [COMPUTE_US] [--bursts]
//! ```
use std::time::Duration;

use traffic::kernel::pipeline::{self, PipelineSpec};
use traffic::spec::Family;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| -> Result<u64, Box<dyn std::error::Error>> {
        match args.get(i).filter(|a| !a.starts_with("--")) {
            Some(a) => Ok(a.parse()?),
            None => Ok(default),
        }
    };
    let spec = PipelineSpec {
        family: Family::V6,
        block_bytes: usize::try_from(number(0, 16384)?)?,
        blocks: u32::try_from(number(1, 200)?)?,
        compute: Duration::from_micros(number(2, 1000)?),
    };
    let run = pipeline::run(&spec)?;
    let warmup = (spec.blocks as usize / 10).max(1);
    println!("{}", serde_json::to_string_pretty(&run.summary(warmup))?);
    if args.iter().any(|a| a == "--bursts") {
        println!("{}", serde_json::to_string(&run.bursts)?);
    }
    Ok(())
}
