//! Background CPU load (`--load N`, the SunOS study's "communication vs
//! computation" runs): N child processes that each spin on arithmetic
//! until they are killed. They are killed and reaped when the [`Load`] is
//! dropped, on every path out of a sweep, failures included.
//!
//! Where the load runs ([`LoadOn`], `--load-on`): anywhere (`both`, the
//! scheduler's choice), or on one side of the transfer. The study loaded
//! the server's or the client's machine; here a side is a CPU: the
//! receiver's thread is pinned to the first CPU the process may use, the
//! sender's to the second, and the spinners to the loaded side's.

use std::fmt;

use serde::Serialize;

use crate::affinity::{self, SideCpus};
use crate::error::TrafficError;

/// The most spinners one sweep may start: a typo must not fork-bomb the
/// machine (`--load 1000` started a thousand). The SunOS study's levels
/// were 0-4 on one CPU; 64 on this 2-CPU machine leave the measured sides
/// a 33rd of a CPU each, far past any level worth measuring.
pub const MAX_LOAD: u32 = 64;

/// Where a point's background load runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadOn {
    /// Nothing pinned: the spinners and both sides wherever the scheduler
    /// puts them (the default, and the behaviour before sides existed).
    Both,
    /// On the receiver's (server's) CPU.
    Server,
    /// On the sender's (client's) CPU.
    Client,
}

impl LoadOn {
    pub const NAMES: &'static str = "both, server, client";

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "both" => Some(LoadOn::Both),
            "server" | "receiver" => Some(LoadOn::Server),
            "client" | "sender" => Some(LoadOn::Client),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LoadOn::Both => "both",
            LoadOn::Server => "server",
            LoadOn::Client => "client",
        }
    }

    /// The CPUs of the two sides and of the load, when this pins: the
    /// receiver on the first of `cpus`, the sender on the second.
    pub fn placement(self, cpus: Option<[usize; 2]>) -> Option<(SideCpus, usize)> {
        let [receiver, sender] = cpus?;
        let sides = SideCpus { receiver, sender };
        match self {
            LoadOn::Both => None,
            LoadOn::Server => Some((sides, receiver)),
            LoadOn::Client => Some((sides, sender)),
        }
    }
}

impl fmt::Display for LoadOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The two CPUs a side load uses: the first two this process may run on.
pub fn side_cpus() -> Option<[usize; 2]> {
    affinity::first_two_cpus()
}

/// Running spinner processes; dropping this kills and reaps them.
#[derive(Debug)]
pub struct Load {
    pids: Vec<libc::pid_t>,
    /// The CPU they were pinned to, and whether every pin held.
    pin: Option<(usize, bool)>,
}

impl Load {
    /// Starts `n` spinners (none for 0), each pinned to `cpu` if given.
    pub fn start(n: u32, cpu: Option<usize>) -> Result<Self, TrafficError> {
        if n > MAX_LOAD {
            return Err(TrafficError::Invalid(format!(
                "--load {n} is too many: use at most {MAX_LOAD} background processes"
            )));
        }
        // On an early return the spinners started so far are dropped, so
        // killed, with it.
        let mut load = Self {
            pids: Vec::new(),
            pin: cpu.map(|c| (c, true)),
        };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        for _ in 0..n {
            // SAFETY: after fork in a (possibly) multi-threaded process the
            // child may only do async-signal-safe things: it makes plain
            // system calls (prctl, sched_setaffinity on a set on its
            // stack, getppid), then runs `spin`, which only does register
            // arithmetic (no allocation, no locks, no I/O), and leaves by
            // `_exit`, never running the parent's destructors or atexit
            // handlers.
            match unsafe { libc::fork() } {
                -1 => {
                    return Err(TrafficError::io(
                        "fork a background load process",
                        std::io::Error::last_os_error(),
                    ))
                }
                0 => unsafe {
                    // Die with the parent even if it is killed before it
                    // can drop us; the re-check closes the race where it
                    // died before prctl.
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    // On its CPU before the first spin. A refusal is seen
                    // by the parent, whose own pin below fails alike.
                    if let Some(cpu) = cpu {
                        affinity::pin_process(0, cpu);
                    }
                    if libc::getppid() == parent {
                        spin();
                    }
                    libc::_exit(0)
                },
                pid => {
                    load.pids.push(pid);
                    // The parent pins it too and keeps the verdict: the
                    // child cannot report its own.
                    if let (Some(cpu), Some((_, held))) = (cpu, load.pin.as_mut()) {
                        *held &= affinity::pin_process(pid, cpu);
                    }
                }
            }
        }
        Ok(load)
    }

    /// How many spinners run.
    pub fn processes(&self) -> usize {
        self.pids.len()
    }

    /// Their process ids.
    pub fn pids(&self) -> &[libc::pid_t] {
        &self.pids
    }

    /// The CPU the spinners were pinned to and whether every pin held;
    /// `None` when they were not pinned.
    pub fn pin(&self) -> Option<(usize, bool)> {
        self.pin
    }
}

/// Burns CPU until killed.
fn spin() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    loop {
        // xorshift: cheap, never optimised away (black_box), no memory.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::hint::black_box(x);
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for &pid in &self.pids {
            // SAFETY: `pid` is our own unreaped child, so the id cannot have
            // been reused by another process; kill and waitpid take plain
            // integers and a pointer to a local.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                let mut status = 0;
                while libc::waitpid(pid, &mut status, 0) == -1
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                {
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state letter of `pid` in /proc (R running, S sleeping, Z zombie);
    /// `None` once it is gone.
    fn state(pid: libc::pid_t) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The state follows the parenthesised command name.
        stat.rsplit_once(") ")?.1.chars().next()
    }

    #[test]
    fn spinners_run_until_dropped_then_are_reaped() {
        let load = Load::start(2, None).unwrap();
        assert_eq!(load.processes(), 2);
        let pids = load.pids().to_vec();
        for &pid in &pids {
            let s = state(pid);
            assert!(matches!(s, Some('R' | 'S')), "pid {pid} state {s:?}");
        }
        drop(load);
        for &pid in &pids {
            // Reaped: no zombie left behind, the id no longer exists.
            assert_eq!(state(pid), None, "pid {pid} still there");
        }
    }

    #[test]
    fn no_load_forks_nothing_and_too_much_is_refused() {
        assert_eq!(Load::start(0, None).unwrap().processes(), 0);
        let err = Load::start(MAX_LOAD + 1, None).unwrap_err().to_string();
        assert!(err.contains("at most 64"), "{err}");
    }

    fn allowed_of(pid: libc::pid_t) -> Option<Vec<usize>> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        affinity::cpus_allowed_list(&status)
    }

    #[test]
    fn pinned_spinners_run_on_that_cpu_alone_as_the_kernel_says() {
        let Some([_, second]) = side_cpus() else {
            return; // one CPU: no side to load (the sweep says so per point)
        };
        let load = Load::start(3, Some(second)).unwrap();
        assert_eq!(load.pin(), Some((second, true)));
        for &pid in load.pids() {
            assert_eq!(allowed_of(pid), Some(vec![second]), "pid {pid}");
        }
        // Unpinned spinners keep the parent's mask.
        let free = Load::start(1, None).unwrap();
        assert_eq!(free.pin(), None);
        assert_eq!(allowed_of(free.pids()[0]), affinity::allowed());
        // A CPU the kernel refuses is said, not hidden.
        let refused = Load::start(1, Some(libc::CPU_SETSIZE as usize)).unwrap();
        assert_eq!(refused.pin(), Some((libc::CPU_SETSIZE as usize, false)));
    }

    #[test]
    fn sides_put_the_load_on_the_receivers_or_the_senders_cpu() {
        let cpus = Some([2, 5]);
        let sides = SideCpus {
            receiver: 2,
            sender: 5,
        };
        assert_eq!(LoadOn::Server.placement(cpus), Some((sides, 2)));
        assert_eq!(LoadOn::Client.placement(cpus), Some((sides, 5)));
        assert_eq!(LoadOn::Both.placement(cpus), None);
        assert_eq!(LoadOn::Server.placement(None), None);
        assert_eq!(LoadOn::parse("receiver"), Some(LoadOn::Server));
        assert_eq!(LoadOn::parse("client"), Some(LoadOn::Client));
        assert_eq!(LoadOn::parse("left"), None);
    }
}
