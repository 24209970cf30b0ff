//! CPU affinity: which CPUs a thread or process may run on, and pinning
//! one to a single CPU. Shared by the core-to-core round trip
//! ([`crate::core_trip`]) and the per-side background load of a sweep
//! (`--load-on`, [`crate::sweep::load`]), which puts a transfer's
//! receiver on one CPU, its sender on the other and the spinners on the
//! loaded side's.

use serde::{Deserialize, Serialize};

/// An empty set, or `None` for a CPU number beyond the set's bits.
fn only(cpu: usize) -> Option<libc::cpu_set_t> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return None;
    }
    // SAFETY: an all-zero cpu_set_t is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    Some(set)
}

/// The CPUs the calling thread may run on, in order; `None` when the
/// kernel will not say.
pub fn allowed() -> Option<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid, empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size given; pid 0 is the
    // calling thread.
    let got = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if got != 0 {
        return None;
    }
    Some(
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| {
                // SAFETY: `cpu` is below CPU_SETSIZE, inside the set's bits.
                unsafe { libc::CPU_ISSET(cpu, &set) }
            })
            .collect(),
    )
}

/// The first two CPUs in the calling thread's affinity mask; `None` on a
/// machine (or cpuset) with one.
pub fn first_two_cpus() -> Option<[usize; 2]> {
    match allowed()?.as_slice() {
        [a, b, ..] => Some([*a, *b]),
        _ => None,
    }
}

/// Pins the calling thread to `cpu`; false when the kernel refused (a CPU
/// outside the cpuset, or offline) or the number is out of range.
pub fn pin_current(cpu: usize) -> bool {
    let Some(set) = only(cpu) else {
        return false;
    };
    // SAFETY: `set` is a live cpu_set_t of the size given; pid 0 is the
    // calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 }
}

/// Pins the calling thread to `cpu` and reads the mask back: true only
/// when the thread may now run on `cpu` alone.
pub fn pin_current_checked(cpu: usize) -> bool {
    pin_current(cpu) && allowed().as_deref() == Some(&[cpu])
}

/// Pins process (or thread) `pid` to `cpu`, from outside it. Makes one
/// system call on a set built on the stack, so a freshly forked child may
/// call it on itself (`pid` 0) before it does anything else: it is
/// async-signal-safe.
pub fn pin_process(pid: libc::pid_t, cpu: usize) -> bool {
    let Some(set) = only(cpu) else {
        return false;
    };
    // SAFETY: `set` is a live cpu_set_t of the size given; `pid` is a
    // plain integer (0: the caller), the kernel checks it.
    unsafe { libc::sched_setaffinity(pid, std::mem::size_of_val(&set), &set) == 0 }
}

/// Where a transfer's two sides were asked to run, and whether both pins
/// held (a run's record: [`crate::env::Environment::placement`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The receiver's (server's) CPU.
    pub receiver_cpu: usize,
    /// The sender's (client's) CPU.
    pub sender_cpu: usize,
    /// Both sides' threads were pinned and read back on their CPU; false
    /// when the kernel refused either.
    pub held: bool,
}

/// The CPUs a transfer's sides are to be pinned to (`TransferSpec::cpus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideCpus {
    pub receiver: usize,
    pub sender: usize,
}

impl SideCpus {
    /// The record once the sides tried: `held` when both pins held.
    pub fn placement(self, receiver_held: bool, sender_held: bool) -> Placement {
        Placement {
            receiver_cpu: self.receiver,
            sender_cpu: self.sender,
            held: receiver_held && sender_held,
        }
    }
}

/// `Cpus_allowed_list` of `/proc/<pid>/status` (or of a thread's status
/// file, `/proc/<pid>/task/<tid>/status`), expanded (`0-2,5` is 0, 1, 2,
/// 5): how the kernel itself reports the mask, for tests and checks.
pub fn cpus_allowed_list(status: &str) -> Option<Vec<usize>> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut cpus = Vec::new();
    for item in list.split(',') {
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > libc::CPU_SETSIZE as usize {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(item.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_status() -> String {
        std::fs::read_to_string("/proc/thread-self/status").unwrap()
    }

    #[test]
    fn the_kernels_list_is_read() {
        let status = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-2,5\n";
        assert_eq!(cpus_allowed_list(status), Some(vec![0, 1, 2, 5]));
        assert_eq!(cpus_allowed_list("Cpus_allowed_list:\t1\n"), Some(vec![1]));
        assert_eq!(cpus_allowed_list("Name: x\n"), None);
        assert_eq!(cpus_allowed_list("Cpus_allowed_list:\t3-1\n"), None);
        assert_eq!(cpus_allowed_list("Cpus_allowed_list:\tx\n"), None);
    }

    #[test]
    fn a_pinned_thread_runs_on_that_cpu_alone_as_the_kernel_says() {
        let before = allowed().expect("the mask");
        assert_eq!(cpus_allowed_list(&thread_status()), Some(before.clone()));
        let last = *before.last().unwrap();
        // A scratch thread: pinning the test's own would outlive the test.
        std::thread::spawn(move || {
            assert!(pin_current_checked(last));
            assert_eq!(cpus_allowed_list(&thread_status()), Some(vec![last]));
            // Out of range is refused, and leaves the mask as it was.
            assert!(!pin_current(libc::CPU_SETSIZE as usize));
            assert_eq!(allowed(), Some(vec![last]));
        })
        .join()
        .unwrap();
        match before.as_slice() {
            [a, b, ..] => assert_eq!(first_two_cpus(), Some([*a, *b])),
            _ => assert_eq!(first_two_cpus(), None),
        }
    }
}
