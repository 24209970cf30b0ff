//! Background CPU load (`--load N`, the SunOS study's "communication vs
//! computation" runs): N child processes that each spin on arithmetic
//! until they are killed. They are killed and reaped when the [`Load`] is
//! dropped, on every path out of a sweep, failures included.

use crate::error::TrafficError;

/// The most spinners one sweep may start: a typo must not fork-bomb the
/// machine.
pub const MAX_LOAD: u32 = 1024;

/// Running spinner processes; dropping this kills and reaps them.
#[derive(Debug)]
pub struct Load {
    pids: Vec<libc::pid_t>,
}

impl Load {
    /// Starts `n` spinners (none for 0).
    pub fn start(n: u32) -> Result<Self, TrafficError> {
        if n > MAX_LOAD {
            return Err(TrafficError::Invalid(format!(
                "--load {n} is too many: use at most {MAX_LOAD} background processes"
            )));
        }
        // On an early return the spinners started so far are dropped, so
        // killed, with it.
        let mut load = Self { pids: Vec::new() };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        for _ in 0..n {
            // SAFETY: after fork in a (possibly) multi-threaded process the
            // child may only do async-signal-safe things: it makes two
            // system calls (prctl, getppid), then runs `spin`, which only
            // does register arithmetic (no allocation, no locks, no I/O),
            // and leaves by `_exit`, never running the parent's destructors
            // or atexit handlers.
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
                    if libc::getppid() == parent {
                        spin();
                    }
                    libc::_exit(0)
                },
                pid => load.pids.push(pid),
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
        let load = Load::start(2).unwrap();
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
        assert_eq!(Load::start(0).unwrap().processes(), 0);
        let err = Load::start(MAX_LOAD + 1).unwrap_err().to_string();
        assert!(err.contains("at most 1024"), "{err}");
    }
}
