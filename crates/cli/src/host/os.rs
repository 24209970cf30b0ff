//! What `stackscope host` asks of the operating system: entering a network
//! namespace, and catching SIGINT and SIGTERM.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{bail, Result};

/// Moves the calling thread into the network namespace `name` (the one
/// `ip netns add NAME` made, bound at /run/netns/NAME). Only this thread
/// moves: call it before opening links and before spawning any thread
/// (threads inherit the namespace of the thread that creates them).
pub fn enter_netns(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        bail!("--netns {name:?}: not a namespace name (see `ip netns list`)");
    }
    let path = format!("/run/netns/{name}");
    let c_path = CString::new(path.clone())
        .map_err(|_| anyhow::anyhow!("--netns {name:?}: the name contains a NUL byte"))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the
    // call; `open` has no other memory effects.
    let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if raw < 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::NotFound {
            bail!("network namespace {name:?} does not exist ({path} is missing; create it with `ip netns add {name}`)");
        }
        bail!("network namespace {name:?}: opening {path}: {error}");
    }
    // SAFETY: `raw` was just returned by `open` and is owned by nothing
    // else; the OwnedFd closes it once, after setns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: setns takes a descriptor and a flag, no pointers; it changes
    // only the calling thread's network namespace.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::PermissionDenied {
            bail!("entering network namespace {name:?}: permission denied (setns needs CAP_SYS_ADMIN: run as root)");
        }
        bail!("entering network namespace {name:?}: {error} ({path} is not a network namespace?)");
    }
    Ok(())
}

/// Set by the signal handler.
static STOP: AtomicBool = AtomicBool::new(false);
/// The signal that asked to stop.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(signal: libc::c_int) {
    // Only lock-free atomic stores: async-signal-safe.
    SIGNAL.store(signal, Ordering::Relaxed);
    STOP.store(true, Ordering::Relaxed);
}

/// Catches SIGINT and SIGTERM: the host stops at its next turn of the
/// loop (a sleeping `ppoll` is interrupted) and prints its counters.
pub fn catch_stop_signals() -> Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sigaction` is plain data (integers, a signal set and a
        // handler address), for which all-zero bytes are valid.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // No SA_RESTART: a sleeping ppoll returns EINTR at once.
        action.sa_flags = 0;
        // SAFETY: `action.sa_mask` is a valid sigset_t to initialize.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is a fully initialized sigaction that outlives
        // the call; the handler only stores to atomics (async-signal-
        // safe); the old action is not wanted (null).
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            bail!(
                "installing a handler for signal {signal}: {}",
                io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived, and which.
pub fn stop_requested() -> Option<&'static str> {
    if !STOP.load(Ordering::Relaxed) {
        return None;
    }
    Some(match SIGNAL.load(Ordering::Relaxed) {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    })
}
