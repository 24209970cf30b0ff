//! The run's cgroup (v2): the cgroup programs (IP output, transport input,
//! the UDP send call) see the sockets created by the processes of the
//! cgroup they are attached to. A child of the process's own cgroup is
//! made, the process moved in (every thread: a domain cgroup holds whole
//! processes) while probes are started, and on the last release moved back
//! and the child removed. Sockets keep the cgroup they were created in, so
//! a transfer's sockets must be made while the probes run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The process's run cgroup and how many probe sets use it (parallel
/// tests in one process share it).
struct Shared {
    users: usize,
    child: PathBuf,
    previous: PathBuf,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

/// A use of the run cgroup; releases it when dropped.
pub(crate) struct RunCgroup {
    /// The child cgroup's directory, opened for attaching programs.
    pub(crate) dir: File,
}

impl RunCgroup {
    /// Joins (making it on first use) the process's run cgroup. The error
    /// says why the cgroup programs cannot run.
    pub(crate) fn join() -> Result<RunCgroup, String> {
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = shared.as_mut() {
            let dir = open(&s.child)?;
            s.users += 1;
            return Ok(RunCgroup { dir });
        }
        let mount = v2_mount()?;
        let own = own_v2_path()?;
        let previous = mount.join(own.trim_start_matches('/'));
        let child = previous.join(format!("stackscope-{}", std::process::id()));
        match std::fs::create_dir(&child) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("make the cgroup {}: {e}", child.display())),
        }
        if let Err(e) = move_process(&child) {
            let _ = std::fs::remove_dir(&child);
            return Err(e);
        }
        let dir = match open(&child) {
            Ok(dir) => dir,
            Err(e) => {
                let _ = move_process(&previous);
                let _ = std::fs::remove_dir(&child);
                return Err(e);
            }
        };
        *shared = Some(Shared {
            users: 1,
            child,
            previous,
        });
        Ok(RunCgroup { dir })
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        let last = match shared.as_mut() {
            Some(s) => {
                s.users = s.users.saturating_sub(1);
                s.users == 0
            }
            None => false,
        };
        if last {
            if let Some(s) = shared.take() {
                // Best effort: a cgroup left behind is empty and harmless,
                // and a drop cannot report.
                let _ = move_process(&s.previous);
                let _ = std::fs::remove_dir(&s.child);
            }
        }
    }
}

fn open(dir: &Path) -> Result<File, String> {
    File::open(dir).map_err(|e| format!("open the cgroup {}: {e}", dir.display()))
}

fn move_process(cgroup: &Path) -> Result<(), String> {
    let procs = cgroup.join("cgroup.procs");
    std::fs::write(&procs, std::process::id().to_string())
        .map_err(|e| format!("move the process into {}: {e}", procs.display()))
}

/// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// beside v1 controllers), from `/proc/self/mountinfo`.
fn v2_mount() -> Result<PathBuf, String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("read /proc/self/mountinfo: {e}"))?;
    mount_of_v2(&info).ok_or_else(|| "no cgroup v2 file system is mounted".to_string())
}

/// The mount point of the first `cgroup2` line of a mountinfo text.
fn mount_of_v2(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The process's cgroup v2 path (the `0::` line of `/proc/self/cgroup`).
fn own_v2_path() -> Result<String, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("read /proc/self/cgroup: {e}"))?;
    v2_path_of(&text).ok_or_else(|| "the process has no cgroup v2 path".to_string())
}

fn v2_path_of(proc_cgroup: &str) -> Option<String> {
    proc_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_v2_mount_beside_v1() {
        let info = "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                    35 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_of_v2(info),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(mount_of_v2("30 25 0:26 / /x rw - cgroup cgroup rw\n"), None);
        assert_eq!(mount_of_v2("garbage"), None);
    }

    #[test]
    fn reads_the_v2_path() {
        assert_eq!(
            v2_path_of("4:memory:/a\n0::/user.slice/x\n").as_deref(),
            Some("/user.slice/x")
        );
        assert_eq!(v2_path_of("4:memory:/a\n"), None);
    }
}
