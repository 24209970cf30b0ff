//! What the interop tests share: network namespaces and `stackscope host`
//! processes that clean up after themselves (also when a test fails), the
//! decision to skip where the environment forbids namespaces, running
//! commands in a namespace, and entering one from a test thread so the
//! test can open kernel sockets there.
//!
//! Everything a test makes lives in a namespace of its own
//! (`ss-tap-<pid>-<n>`), so tests run in parallel and never touch the
//! machine's own interfaces. Kernel-side captures and their tshark checks
//! are in [`capture`].

#![allow(dead_code)] // each test file uses what it needs

pub mod capture;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why the interop tests cannot run here, if they cannot: not root, or no
/// TUN/TAP device. Tools that CI installs (`ip`, `ping`) are required,
/// not a reason to skip: as root, their absence is a setup error.
pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "not root: the interop tests create network namespaces and TAP devices".into(),
        );
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun (TUN/TAP support) on this machine".into());
    }
    None
}

/// Panics, naming the package, if `tool` is not on PATH.
pub fn require_tool(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "`{tool}` is not installed: the interop tests need it (Debian package {package})"
    );
}

/// Runs `program args`, returning its output (never panics on failure).
pub fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

/// Runs `program args` and panics with its output if it fails.
pub fn run_ok(program: &str, args: &[&str]) -> String {
    let output = run(program, args);
    assert!(
        output.status.success(),
        "`{program} {}` failed ({}):\n{}{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A network namespace made for one test, deleted when dropped.
pub struct Netns {
    name: String,
}

impl Netns {
    /// Makes `ss-tap-<pid>-<n>`. `Err` says why the kernel refused (the
    /// caller skips).
    pub fn create() -> Result<Netns, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("ss-tap-{}-{n}", std::process::id());
        let output = run("ip", &["netns", "add", &name]);
        if !output.status.success() {
            return Err(format!(
                "`ip netns add {name}` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Netns { name })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NS args...`, which must succeed.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        run_ok("ip", &all)
    }

    /// `ip netns exec NS program args...`, whatever its outcome.
    pub fn exec(&self, program: &str, args: &[&str]) -> Output {
        let mut all = vec!["netns", "exec", &self.name, program];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// A command run in the namespace, to be spawned by the caller. `ip
    /// netns exec` execs the program in place, so the child's pid is the
    /// program's own: signals reach it directly.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.name, program])
            .args(args);
        command
    }

    /// A counter of the interface `dev` in the namespace (`tx_packets`,
    /// `rx_dropped`, ...: `/sys/class/net/DEV/statistics`). Read through
    /// `ip netns exec`, which mounts the namespace's own sysfs.
    pub fn link_stat(&self, dev: &str, stat: &str) -> u64 {
        let path = format!("/sys/class/net/{dev}/statistics/{stat}");
        let output = self.exec("cat", &[&path]);
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{path} in {}", self.name))
    }

    /// Waits until the interface `dev` exists in the namespace.
    pub fn wait_for_link(&self, dev: &str, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let output = run("ip", &["-n", &self.name, "link", "show", "dev", dev]);
            if output.status.success() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{dev} did not appear in {} within {timeout:?}",
                    self.name
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs `body` on a thread that entered this namespace (`setns`), so it
    /// can open kernel sockets there; only that thread moves.
    pub fn within<T: Send + 'static>(&self, body: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            use std::os::fd::AsRawFd;
            // SAFETY: setns takes a descriptor and a flag, no pointers; it
            // moves only this (test-owned) thread into the namespace.
            let entered = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(
                entered,
                0,
                "setns {path}: {}",
                std::io::Error::last_os_error()
            );
            body()
        })
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.name]);
    }
}

/// A running `stackscope host`, killed when dropped. Its stdout is read
/// line by line as it comes.
pub struct HostProcess {
    child: Option<Child>,
    lines: Receiver<String>,
    seen: Vec<String>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr_reader: Option<JoinHandle<String>>,
}

/// How a host ended after [`HostProcess::stop`].
pub struct Stopped {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Stopped {
    /// The number after `name:` on a line of the counters (e.g.
    /// `echo_replies_sent: 12`), or after `name ` inside a line (e.g.
    /// `rx_frames 98`).
    pub fn counter(&self, name: &str) -> u64 {
        self.counter_in(name, None)
    }

    /// Like [`counter`](Self::counter), on the first line containing
    /// `line_has` (e.g. a service's or a link's line).
    pub fn counter_on(&self, line_has: &str, name: &str) -> u64 {
        self.counter_in(name, Some(line_has))
    }

    /// The host ended on its signal with status 0 and printed its
    /// counters.
    pub fn assert_clean_exit(&self) {
        assert!(
            self.status.success() && self.stdout.contains("host counters:"),
            "the host ended with {}:\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
    }

    /// The link `link`'s counters of a healthy run: frames both ways and
    /// none refused, lost or failed on the host's side.
    pub fn assert_link_healthy(&self, link: &str) {
        let line = format!("{link}: tx_frames");
        for moved in ["rx_frames", "tx_frames"] {
            assert!(
                self.counter_on(&line, moved) > 0,
                "no {moved}:\n{}",
                self.stdout
            );
        }
        for zero in [
            "tx_link_down",
            "dropped_too_big",
            "dropped_rx_too_long",
            "dropped_rx_overrun",
            "dropped_link_down",
            "dropped_os_error",
            "tx_errors",
            "rx_errors",
        ] {
            assert_eq!(self.counter_on(&line, zero), 0, "{zero}:\n{}", self.stdout);
        }
    }

    fn counter_in(&self, name: &str, line_has: Option<&str>) -> u64 {
        for line in self.stdout.lines() {
            if line_has.is_some_and(|has| !line.contains(has)) {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                if pair[0] == name || pair[0] == format!("{name}:") {
                    if let Ok(value) = pair[1].parse() {
                        return value;
                    }
                }
            }
        }
        panic!(
            "no counter {name:?} (on a line with {line_has:?}) in:\n{}",
            self.stdout
        )
    }
}

impl HostProcess {
    /// Starts the binary under test with `host args...`.
    pub fn start(args: &[&str]) -> HostProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_stackscope"))
            .arg("host")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start stackscope host");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        let stdout_reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr_reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        HostProcess {
            child: Some(child),
            lines,
            seen: Vec::new(),
            stdout_reader: Some(stdout_reader),
            stderr_reader: Some(stderr_reader),
        }
    }

    /// The host's process id (to read its `/proc` entry), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Waits for a stdout line satisfying `wanted` and returns it; `Err`
    /// has everything printed so far (and the exit status if the host
    /// ended).
    pub fn wait_for_line(
        &mut self,
        wanted: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, String> {
        if let Some(line) = self.seen.iter().find(|l| wanted(l)) {
            return Ok(line.clone());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if wanted(&line) {
                        return Ok(line);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no such line within {timeout:?}; stdout so far:\n{}",
                        self.seen.join("\n")
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.as_mut().and_then(|c| c.wait().ok());
                    let stderr = self.take_stderr();
                    return Err(format!(
                        "the host ended ({status:?}); stdout:\n{}\nstderr:\n{stderr}",
                        self.seen.join("\n")
                    ));
                }
            }
        }
    }

    fn take_stderr(&mut self) -> String {
        self.stderr_reader
            .take()
            .and_then(|r| r.join().ok())
            .unwrap_or_default()
    }

    /// Sends `signal` and waits (up to `timeout`, then kills it) for the
    /// host to end; returns its status and everything it printed.
    pub fn stop(mut self, signal: libc::c_int, timeout: Duration) -> Stopped {
        let mut child = self.child.take().expect("a running host");
        // SAFETY: kill takes a pid and a signal number, no pointers; the
        // pid is our own child's, not yet reaped (so not reused).
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the host") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let status = child.wait().expect("wait for the killed host");
                panic!(
                    "the host did not end within {timeout:?} of signal {signal} (killed: {status}); stdout:\n{}",
                    self.seen.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if let Some(reader) = self.stdout_reader.take() {
            let _ = reader.join();
        }
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        Stopped {
            status,
            stdout: self.seen.join("\n"),
            stderr: self.take_stderr(),
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A child process killed (and reaped) when dropped, so a failing test
/// leaves none behind.
pub struct Reaped(Option<Child>);

impl Reaped {
    pub fn spawn(command: &mut Command) -> Reaped {
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
        Reaped(Some(child))
    }

    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("a running child")
    }

    /// Sends `signal` unless the child has been reaped already (its pid
    /// may then be another process's). A child that ended but is not yet
    /// reaped keeps its pid, so the signal cannot reach anyone else.
    pub fn signal(&mut self, signal: libc::c_int) {
        let child = self.child();
        if matches!(child.try_wait(), Ok(None)) {
            // SAFETY: kill takes a pid and a signal number, no pointers.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        }
    }

    /// Waits up to `limit` for the child to end; kills it after that.
    pub fn wait(&mut self, limit: Duration, what: &str) -> ExitStatus {
        self.wait_or_kill(limit)
            .unwrap_or_else(|| panic!("{what} did not finish within {limit:?} (killed)"))
    }

    /// Sends `signal`, then waits up to `limit` for the child to end;
    /// `None` if it had to be killed.
    pub fn stop(&mut self, signal: libc::c_int, limit: Duration) -> Option<ExitStatus> {
        self.signal(signal);
        self.wait_or_kill(limit)
    }

    fn wait_or_kill(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child().try_wait().expect("wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = self.child().kill();
                let _ = self.child().wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The rest of the child's piped stderr.
    pub fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut stderr) = self.child().stderr.take() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A directory of one test's own (captures, data), removed when dropped,
/// also when the test fails; `STACKSCOPE_INTEROP_KEEP=1` keeps it to look
/// at the captures.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Makes `ss-<label>-<pid>-<n>` in the temporary directory.
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("ss-{label}-{}-{n}", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path of `name` in the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("STACKSCOPE_INTEROP_KEEP").is_some() {
            eprintln!("kept {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A path as the `&str` a command line takes.
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A TCP connection to `to` from this thread's namespace, with 5 s read
/// and write timeouts so a wedged peer fails the test instead of hanging it.
pub fn connect(to: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&to, Duration::from_secs(3))
        .unwrap_or_else(|e| panic!("connect {to}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// Writes `data` (from another thread) while reading the echo back.
pub fn tcp_echo(to: SocketAddr, data: Vec<u8>) {
    let stream = connect(to);
    let mut writer = stream.try_clone().expect("clone");
    let len = data.len();
    let sending = std::thread::spawn(move || {
        writer.write_all(&data).expect("write to echo");
        writer.shutdown(Shutdown::Write).expect("shutdown");
        data
    });
    let mut back = Vec::with_capacity(len);
    let mut reader = stream;
    reader
        .read_to_end(&mut back)
        .unwrap_or_else(|e| panic!("echo from {to}: {e} after {} bytes", back.len()));
    let sent = sending.join().expect("writer");
    assert_eq!(back.len(), sent.len(), "echoed bytes from {to}");
    assert!(back == sent, "echoed bytes from {to} differ");
}

/// Waits for the TAP `tap` of a starting `stackscope host` to appear in
/// `ns` (failing with what the host printed if it does not), then gives the
/// kernel's side the addresses the TAP tests use for the kernel,
/// 2001:db8:77::1/64 (no DAD) and 192.0.2.1/24, and brings it and the
/// namespace's loopback up.
pub fn configure_kernel_side(ns: &Netns, host: &mut HostProcess, tap: &str) {
    if let Err(why) = ns.wait_for_link(tap, Duration::from_secs(5)) {
        let printed = host
            .wait_for_line(|_| false, Duration::from_millis(200))
            .unwrap_err();
        panic!("{why}\n{printed}");
    }
    ns.ip(&["addr", "add", "2001:db8:77::1/64", "dev", tap, "nodad"]);
    ns.ip(&["addr", "add", "192.0.2.1/24", "dev", tap]);
    ns.ip(&["link", "set", tap, "up"]);
    ns.ip(&["link", "set", "lo", "up"]);
}

/// A namespace of the test's own with a `stackscope host` on the TAP
/// `tap` there, run with `args` after `--netns` and `--tap`, the kernel's
/// side configured ([`configure_kernel_side`]) and the host ready; `None`,
/// having said why the test is skipped, where namespaces are refused.
/// Bound as `let (ns, host)`, the host drops (is killed) before the
/// namespace is deleted.
pub fn host_in_netns(tap: &str, args: &[&str]) -> Option<(Netns, HostProcess)> {
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(why) => {
            eprintln!("skipped: network namespaces are refused here: {why}");
            return None;
        }
    };
    let mut all = vec!["--netns", ns.name(), "--tap", tap];
    all.extend_from_slice(args);
    let mut host = HostProcess::start(&all);
    configure_kernel_side(&ns, &mut host, tap);
    host.wait_for_line(|l| l == "ready", Duration::from_secs(5))
        .unwrap_or_else(|why| panic!("the host never became ready: {why}"));
    Some((ns, host))
}

/// The host's addresses of the TAP tests without DAD (they are the
/// test's own, on a link of its own): with [`host_in_netns`].
pub const NO_DAD_ADDRESSES: [&str; 6] = [
    "--addr",
    "2001:db8:77::2/64",
    "--addr",
    "192.0.2.2/24",
    "--dad-transmits",
    "0",
];
