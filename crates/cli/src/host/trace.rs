//! `stackscope host --trace FILE`: the reference stack's probes record
//! while the host runs (every flow: pings, the services, an iperf3
//! test), into the host thread's ring; at the stop the records are
//! written as a stackscope trace that `stackscope trace` reads.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The probes of a running host, and where their trace goes.
pub struct Recorder {
    path: PathBuf,
    counter_hz: f64,
    overhead_cycles: f64,
}

/// What a written trace holds.
pub struct Written {
    pub records: usize,
    /// Events the full ring could not hold (the trace's header says so).
    pub dropped: u64,
}

impl Recorder {
    /// Calibrates the probe clock and cost, makes the calling thread's
    /// ring of `capacity` records and opens the gate for every flow. Call
    /// it on the thread that runs the host.
    pub fn start(path: &Path, capacity: usize) -> Result<Recorder> {
        if !probe::ENABLED {
            bail!("--trace: this stackscope was built without probes (the `probes` feature)");
        }
        // Fail now, not after the run, if the file cannot be written.
        File::create(path).with_context(|| format!("--trace: creating {}", path.display()))?;
        let counter_hz = probe::clock::calibrate(Duration::from_millis(200));
        let overhead_cycles = probe::calibrate::overhead(4096).median_cycles;
        probe::init_thread(capacity);
        probe::set_mode(probe::Mode::All);
        Ok(Recorder {
            path: path.to_path_buf(),
            counter_hz,
            overhead_cycles,
        })
    }

    /// Closes the gate and writes the calling thread's records.
    pub fn finish(self, host: &str) -> Result<Written> {
        probe::set_mode(probe::Mode::Off);
        let records = probe::drain_thread();
        let dropped = probe::dropped();
        let description = serde_json::json!({
            "stack": "reference",
            "run": "stackscope host",
            "threads": { probe::thread_id().to_string(): { "host": host, "role": "host" } },
        });
        let written = Written {
            records: records.len(),
            dropped,
        };
        let trace = probe::Trace::new(
            probe::TraceHeader::new(
                self.counter_hz,
                self.overhead_cycles,
                dropped,
                description.to_string(),
            ),
            stack::probes::LOCATIONS,
            records,
        );
        let file = File::create(&self.path)
            .with_context(|| format!("--trace: creating {}", self.path.display()))?;
        trace
            .write(BufWriter::new(file))
            .with_context(|| format!("--trace: writing {}", self.path.display()))?;
        Ok(written)
    }
}
