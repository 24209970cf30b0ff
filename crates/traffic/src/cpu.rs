//! CPU time of the calling thread (getrusage RUSAGE_THREAD), so each side
//! of a transfer run in one process is charged its own CPU, as iperf3
//! charges each of its processes.

use std::time::{Duration, Instant};

use serde::Serialize;

/// User and system CPU time consumed so far by the calling thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTime {
    /// The calling thread's CPU time; zero if the kernel refuses (never on
    /// Linux).
    pub fn thread() -> Self {
        // SAFETY: getrusage writes one `rusage` into the zeroed struct we
        // own; RUSAGE_THREAD is valid on Linux since 2.6.26.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_THREAD, &mut usage) != 0 {
                return Self::default();
            }
            usage
        };
        let to_duration = |t: libc::timeval| {
            Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000)
        };
        Self {
            user: to_duration(usage.ru_utime),
            system: to_duration(usage.ru_stime),
        }
    }
}

/// Measures a thread's CPU share over a stretch of wall time.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    cpu: CpuTime,
    wall: Instant,
}

impl CpuMeter {
    /// Starts measuring the calling thread.
    pub fn start() -> Self {
        Self {
            cpu: CpuTime::thread(),
            wall: Instant::now(),
        }
    }

    /// The calling thread's CPU use since `start` (call it on the same
    /// thread).
    pub fn stop(&self) -> CpuUsage {
        let now = CpuTime::thread();
        CpuUsage {
            wall: self.wall.elapsed(),
            user: now.user.saturating_sub(self.cpu.user),
            system: now.system.saturating_sub(self.cpu.system),
        }
    }
}

/// CPU consumed over a stretch of wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUsage {
    pub wall: Duration,
    pub user: Duration,
    pub system: Duration,
}

/// Percentages of wall time, as iperf3 reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuPercent {
    pub total: f64,
    pub user: f64,
    pub system: f64,
}

impl CpuUsage {
    pub fn percent(&self) -> CpuPercent {
        let wall = self.wall.as_secs_f64();
        if wall <= 0.0 {
            return CpuPercent::default();
        }
        let user = self.user.as_secs_f64() / wall * 100.0;
        let system = self.system.as_secs_f64() / wall * 100.0;
        CpuPercent {
            total: user + system,
            user,
            system,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_is_charged_user_time() {
        let meter = CpuMeter::start();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let usage = meter.stop();
        assert!(
            usage.user + usage.system >= Duration::from_millis(10),
            "{usage:?}"
        );
        assert!(usage.percent().total > 0.0);
    }
}
