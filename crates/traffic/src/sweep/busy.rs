//! Is the machine busy? A measurement shares its CPUs with whatever else
//! runs, and a busy machine makes every figure slower and noisier. Before
//! a sweep and during each point, the CPU time other processes used is
//! the machine's busy time (/proc/stat) less this process's
//! (/proc/self/stat) and its background load's (its spinners are the
//! experiment, not interference). The 1-minute load average is read too,
//! but only reported: it counts this process's own earlier work (the
//! lab's previous runs), so it cannot say whether others are busy.

use serde::Serialize;

use crate::core_trip::CoreTrips;

/// Load average per core above which the machine is busy before a sweep.
pub const BUSY_LOADAVG_PER_CORE: f64 = 0.5;
/// Fewest ticks (all CPUs together) over which others' CPU is judged.
pub const MIN_TICKS: u64 = 40;
/// How long others' CPU use is sampled before a sweep.
pub const BEFORE_SAMPLE: std::time::Duration = std::time::Duration::from_millis(250);
/// Other processes' CPU during a point, in cores, above which the point
/// ran on a busy machine.
pub const BUSY_OTHERS_CPU: f64 = 0.5;

/// CPU ticks at one moment: the whole machine's and ours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuSample {
    /// All CPUs, every state.
    pub total: u64,
    /// All CPUs, not idle and not waiting for I/O.
    pub busy: u64,
    /// This process's user and system time, plus the background load's.
    pub ours: u64,
}

/// Parses /proc/stat's first line (`cpu  user nice system idle iowait
/// irq softirq steal ...`) into (total, busy) ticks. Interrupt and softirq
/// time is neither busy nor idle here: it is charged to no process, and on
/// the kernel target most of it is the kernel carrying the experiment's
/// own packets, which must not read as others' work.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    if ticks.len() < 5 {
        return None;
    }
    let total: u64 = ticks.iter().sum();
    // idle and iowait are not work; irq and softirq are nobody's.
    let unowned = ticks.get(5).copied().unwrap_or(0) + ticks.get(6).copied().unwrap_or(0);
    Some((total, total - ticks[3] - ticks[4] - unowned))
}

/// Parses a /proc/PID/stat line into its utime + stime ticks (fields 14
/// and 15; the command name in parentheses may hold spaces).
pub fn parse_pid_stat(text: &str) -> Option<u64> {
    let after = text.rsplit_once(") ")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state): utime is field 14.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Parses /proc/loadavg's 1-minute figure.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

impl CpuSample {
    /// Now; `helpers` are the background load's processes. `None` where
    /// /proc cannot be read (not Linux, or hidden).
    pub fn now(helpers: &[libc::pid_t]) -> Option<Self> {
        let (total, busy) = parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)?;
        let mut ours = parse_pid_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
        for pid in helpers {
            // A spinner that is gone used nothing more.
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                ours += parse_pid_stat(&text).unwrap_or(0);
            }
        }
        Some(Self { total, busy, ours })
    }

    /// CPUs' worth of time others used between `self` and `later` on a
    /// machine of `cores`: their share of all ticks times the cores.
    /// `None` under [`MIN_TICKS`]: the kernel counts in ticks (10 ms), and
    /// over a few of them one tick charged late reads as a whole CPU (a
    /// 0.1 s point with nothing else running read 1.00).
    pub fn others_cpu(&self, later: &CpuSample, cores: usize) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        if total < MIN_TICKS {
            return None;
        }
        let busy = later.busy.saturating_sub(self.busy);
        let ours = later.ours.saturating_sub(self.ours);
        let others = busy.saturating_sub(ours);
        Some(others as f64 / total as f64 * cores as f64)
    }
}

/// The machine's load as a sweep saw it: before the start, and the
/// warnings for points that ran beside other work.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadCheck {
    pub cores: usize,
    /// 1-minute load average before the first point (this process's own
    /// earlier work included).
    pub loadavg_before: Option<f64>,
    /// CPUs' worth of time other processes used in the
    /// [`BEFORE_SAMPLE`] before the first point.
    pub others_cpu_before: Option<f64>,
    /// Why the figures may be slower or noisier than the machine can do.
    pub warnings: Vec<String>,
}

impl LoadCheck {
    /// Reads the load average and samples others' CPU for
    /// [`BEFORE_SAMPLE`] (`helpers`, the background load's spinners, are
    /// ours); warns when others used more than [`BUSY_OTHERS_CPU`] CPUs
    /// (or, where /proc/stat cannot say, when the load average is above
    /// [`BUSY_LOADAVG_PER_CORE`] per core).
    pub fn before_start(helpers: &[libc::pid_t]) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let loadavg_before = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| parse_loadavg(&t));
        let first = CpuSample::now(helpers);
        std::thread::sleep(BEFORE_SAMPLE);
        let others_cpu_before = first
            .zip(CpuSample::now(helpers))
            .and_then(|(a, b)| a.others_cpu(&b, cores));
        let mut check = Self {
            cores,
            loadavg_before,
            others_cpu_before,
            warnings: Vec::new(),
        };
        let warning = match others_cpu_before {
            Some(others) => busy_during("before the sweep", Some(others)),
            None => busy_before(loadavg_before, cores),
        };
        check.warnings.extend(warning);
        check
    }

    /// Whether others kept the machine busy before the sweep.
    pub fn busy_before(&self) -> bool {
        match self.others_cpu_before {
            Some(others) => others > BUSY_OTHERS_CPU,
            None => busy_before(self.loadavg_before, self.cores).is_some(),
        }
    }
}

/// The warning for a load average of `load` on `cores`, if it is busy.
pub fn busy_before(load: Option<f64>, cores: usize) -> Option<String> {
    let load = load?;
    (load > BUSY_LOADAVG_PER_CORE * cores as f64).then(|| {
        format!(
            "the machine was busy before the sweep: load average {load:.2} on {cores} \
             core{} (above {BUSY_LOADAVG_PER_CORE} per core); figures may be slower and \
             noisier than it can do",
            if cores == 1 { "" } else { "s" }
        )
    })
}

/// The warning for a point during which others used `others` CPUs.
pub fn busy_during(point: &str, others: Option<f64>) -> Option<String> {
    let others = others?;
    (others > BUSY_OTHERS_CPU).then(|| {
        format!(
            "{point}: other processes used {others:.2} CPUs during it (above \
             {BUSY_OTHERS_CPU}); its figures may be slower and noisier"
        )
    })
}

/// The warning for a point whose repetitions ran in more than one
/// machine state ([`crate::core_trip`]), or none.
pub fn state_changed(point: &str, trips: Option<CoreTrips>) -> Option<String> {
    let trips = trips.filter(CoreTrips::mixed)?;
    Some(format!(
        "{point}: the machine changed state during its repetitions (core-to-core round trip \
         {:.0} to {:.0} ns); its spread holds that change, not only the stack's",
        trips.min_ns, trips.max_ns
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_of_machine_state_is_warned_about() {
        let trips = |min_ns, max_ns| {
            Some(CoreTrips {
                n: 3,
                min_ns,
                median_ns: min_ns,
                max_ns,
            })
        };
        assert_eq!(state_changed("p", trips(55.0, 70.0)), None);
        assert_eq!(state_changed("p", None), None);
        let w = state_changed("point 2 (kernel udp IPv6 16384 B)", trips(55.0, 340.0)).unwrap();
        assert!(w.starts_with("point 2 (kernel udp IPv6 16384 B): the machine changed state"));
        assert!(w.contains("55 to 340 ns"), "{w}");
    }

    #[test]
    fn proc_files_parse() {
        let stat = "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\n";
        // total 980; busy = total − idle 800 − iowait 20 − irq 3 −
        // softirq 2.
        assert_eq!(parse_proc_stat(stat), Some((980, 155)));
        assert_eq!(parse_proc_stat("nothing"), None);
        let pid = "1234 (a (strange) name) S 1 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 4 0";
        assert_eq!(parse_pid_stat(pid), Some(100));
        assert_eq!(parse_pid_stat("1234 (x) S 1"), None);
        assert_eq!(parse_loadavg("0.83 0.99 1.16 2/345 6789\n"), Some(0.83));
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn before_a_sweep_others_decide_not_the_load_average() {
        let check = |others, load| LoadCheck {
            cores: 2,
            loadavg_before: Some(load),
            others_cpu_before: others,
            warnings: Vec::new(),
        };
        // The lab's own earlier runs raise the load average: not busy.
        assert!(!check(Some(0.1), 1.8).busy_before());
        assert!(check(Some(0.9), 0.2).busy_before());
        // Without /proc/stat the load average is all there is.
        assert!(check(None, 1.8).busy_before());
        assert!(!check(None, 0.4).busy_before());
    }

    #[test]
    fn others_are_the_busy_ticks_that_are_not_ours() {
        let before = CpuSample {
            total: 1000,
            busy: 100,
            ours: 40,
        };
        // 200 ticks over 2 cores; 150 busy of which 50 ours: others used
        // half the ticks, one core's worth.
        let after = CpuSample {
            total: 1200,
            busy: 250,
            ours: 90,
        };
        assert_eq!(before.others_cpu(&after, 2), Some(1.0));
        assert_eq!(before.others_cpu(&before, 2), None, "no time passed");
        // Ten ticks, one of them others': too few to call it a tenth of
        // the machine.
        let soon = CpuSample {
            total: 1010,
            busy: 110,
            ours: 49,
        };
        assert_eq!(before.others_cpu(&soon, 2), None);
        assert!(busy_during("point 1", Some(1.0))
            .unwrap()
            .contains("1.00 CPUs"));
        assert_eq!(busy_during("point 1", Some(0.2)), None);
        assert_eq!(busy_during("point 1", None), None);
    }

    #[test]
    fn a_load_average_above_half_a_core_each_is_busy() {
        assert!(busy_before(Some(1.2), 2)
            .unwrap()
            .contains("load average 1.20 on 2 cores"));
        assert_eq!(busy_before(Some(0.9), 2), None);
        assert_eq!(busy_before(None, 2), None);
    }

    #[test]
    fn this_machine_can_be_sampled() {
        let a = CpuSample::now(&[]).expect("/proc is readable on Linux");
        assert!(a.busy <= a.total);
    }
}
