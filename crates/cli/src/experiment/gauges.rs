//! The machine's gauges around a run's repetitions: each measured
//! between repetitions (never inside a measured window) and summarised as
//! the report's [`MachineGauges`].

use report::model::MachineGauges;
use traffic::core_trip::{CoreTrip, CoreTrips};
use traffic::sweep::busy::CpuSample;

/// The readings so far.
#[derive(Debug, Default)]
pub struct Readings {
    core: Vec<CoreTrip>,
    wake: Vec<f64>,
    cpu: Vec<f64>,
    /// The CPU time counters at the first reading and the last.
    first: Option<CpuSample>,
    last: Option<CpuSample>,
    /// Processes whose CPU time is the run's own (a background load's).
    own: Vec<libc::pid_t>,
    /// Times the gauges were read.
    readings: u32,
}

impl Readings {
    /// Counts the CPU time of `pids` (a background load's processes) as
    /// the run's, not other processes'.
    pub fn count_as_own(&mut self, pids: &[libc::pid_t]) {
        self.own.extend_from_slice(pids);
    }

    /// Reads every gauge once (a few milliseconds).
    pub fn measure(&mut self) {
        self.readings = self.readings.saturating_add(1);
        let sample = CpuSample::now(&self.own);
        if self.first.is_none() {
            self.first = sample;
        }
        self.last = sample.or(self.last);
        self.core.extend(traffic::core_trip::measure());
        self.wake.extend(traffic::wake_trip::measure());
        self.cpu.extend(traffic::cpu_speed::measure());
    }

    /// The median, least and greatest of each gauge.
    pub fn summary(&self) -> MachineGauges {
        let core = CoreTrips::of(&self.core);
        let wake = CoreTrips::of_ns(self.wake.iter().copied());
        let cpu = CoreTrips::of_ns(self.cpu.iter().copied());
        MachineGauges {
            core_trip_ns: core.map(|t| t.median_ns),
            core_trip_min_ns: core.map(|t| t.min_ns),
            core_trip_max_ns: core.map(|t| t.max_ns),
            wake_trip_ns: wake.map(|t| t.median_ns),
            wake_trip_min_ns: wake.map(|t| t.min_ns),
            wake_trip_max_ns: wake.map(|t| t.max_ns),
            cpu_speed_ns_per_kib: cpu.map(|t| t.median_ns),
            cpu_speed_min_ns_per_kib: cpu.map(|t| t.min_ns),
            cpu_speed_max_ns_per_kib: cpu.map(|t| t.max_ns),
            others_cpu: self.first.zip(self.last).and_then(|(first, last)| {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                first.others_cpu(&last, cores)
            }),
            gauge_readings: (self.readings > 0).then_some(self.readings),
        }
    }
}
