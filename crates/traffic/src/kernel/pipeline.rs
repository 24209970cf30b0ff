//! One stage of a pipelined distributed application on the kernel's TCP
//! over loopback: the SunOS study's §4.4.2 and Figure 18
//! (`001_…`: "each application stage runs on a single host and consists
//! of three processes: (1) receive data from the previous stage, (2)
//! compute, and (3) transmit to the next stage").
//!
//! A source thread sends blocks to the stage; the stage's receive thread
//! reads each block and hands it to its compute thread, which does a
//! fixed amount of arithmetic per block and hands it to its transmit
//! thread, which writes it to a sink thread. The stage's three threads are
//! pinned to one CPU (the study's single-processor host), the source and
//! sink to the other, so the three compete for one CPU as the study's
//! processes did. Each thread records when it is "on" — has work to do:
//! from the first byte of a block (receive) or the block's hand-over
//! (compute, transmit) until the block is read, computed or written;
//! waiting for the next process to take a block is off — and before and
//! after each write the transmit socket's send queue (`SIOCOUTQ`: bytes
//! not yet acknowledged), the nearest a loopback path has to the study's
//! send interface queue.
//!
//! Timestamps are `Instant`s from one epoch, read outside every "on"
//! interval's work; recording is a push onto a vector allocated before
//! the run.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::TrafficError;
use crate::spec::Family;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSpec {
    pub family: Family,
    /// Bytes per block the source sends and each process handles whole.
    pub block_bytes: usize,
    /// Blocks through the stage.
    pub blocks: u32,
    /// CPU work per block in the compute process, as time on an idle CPU
    /// (turned into a fixed number of iterations before the run).
    pub compute: Duration,
}

/// The stage's three processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Process {
    Receive,
    Compute,
    Transmit,
}

impl Process {
    pub const ALL: [Process; 3] = [Process::Receive, Process::Compute, Process::Transmit];

    pub fn as_str(self) -> &'static str {
        match self {
            Process::Receive => "receive",
            Process::Compute => "compute",
            Process::Transmit => "transmit",
        }
    }
}

/// One "on" interval of one process: it had a block to handle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Burst {
    pub process: Process,
    /// The block's number.
    pub block: u32,
    /// ns since the run's epoch.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The transmit socket's send queue just before or just after a write.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueueSample {
    pub at_ns: u64,
    pub bytes: u32,
    /// Read after the write returned (else just before it began).
    pub after_write: bool,
}

/// What a run recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineRun {
    pub bursts: Vec<Burst>,
    pub send_queue: Vec<QueueSample>,
    /// From the epoch to the run's end: the sink's last byte or the last
    /// process's end, whichever is later (the transmit process's last
    /// write can return after the sink read its bytes, its thread
    /// descheduled between the send and the clock read).
    pub elapsed_ns: u64,
    /// The CPU the stage's processes were pinned to and the CPU of the
    /// source and sink; `None` where pinning was refused (one CPU, or an
    /// affinity mask that forbids it): the processes then ran wherever the
    /// scheduler put them, and the run says so.
    pub stage_cpu: Option<usize>,
    pub peer_cpu: Option<usize>,
    /// Compute iterations per block (the fixed work).
    pub compute_iterations: u64,
    pub bytes_received_by_sink: u64,
}

/// Runs the stage to the end. Errors: sockets that cannot be opened or
/// fail, a thread that panicked, a sink that got fewer bytes than sent.
pub fn run(spec: &PipelineSpec) -> Result<PipelineRun, TrafficError> {
    if spec.block_bytes == 0 || spec.blocks == 0 {
        return Err(TrafficError::Invalid(
            "a pipeline needs at least one block of at least one byte".into(),
        ));
    }
    let cpus = crate::affinity::first_two_cpus();
    let (stage_cpu, peer_cpu) = match cpus {
        Some([peer, stage]) => (Some(stage), Some(peer)),
        None => (None, None),
    };
    let iterations = iterations_for(spec.compute, stage_cpu);
    let ip = match spec.family {
        Family::V4 => std::net::IpAddr::V4(Ipv4Addr::LOCALHOST),
        Family::V6 => std::net::IpAddr::V6(Ipv6Addr::LOCALHOST),
    };
    let listen = |what: &str| {
        TcpListener::bind(SocketAddr::new(ip, 0))
            .map_err(|e| TrafficError::io(format!("listen for the {what} on {ip}"), e))
    };
    let stage_listener = listen("stage")?;
    let sink_listener = listen("sink")?;
    let stage_addr = local(&stage_listener)?;
    let sink_addr = local(&sink_listener)?;
    let total = spec.block_bytes as u64 * u64::from(spec.blocks);
    let epoch = Instant::now();
    let ns = move || epoch.elapsed().as_nanos() as u64;
    let refused = std::sync::atomic::AtomicBool::new(false);
    let refused = &refused;
    let pinned = move |cpu: Option<usize>| {
        if cpu.is_some_and(|cpu| !crate::affinity::pin_current_checked(cpu)) {
            refused.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };

    std::thread::scope(|scope| {
        let sink = scope.spawn(move || -> Result<(u64, u64), TrafficError> {
            pinned(peer_cpu);
            let (mut stream, _) = sink_listener
                .accept()
                .map_err(|e| TrafficError::io("accept the stage at the sink", e))?;
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0u64;
            while got < total {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => got += n as u64,
                    Err(e) => return Err(TrafficError::io("read at the sink", e)),
                }
            }
            Ok((got, ns()))
        });
        let source = scope.spawn(move || -> Result<(), TrafficError> {
            pinned(peer_cpu);
            let mut stream = TcpStream::connect(stage_addr).map_err(|e| {
                TrafficError::io(format!("connect to the stage at {stage_addr}"), e)
            })?;
            let block = vec![0x5au8; spec.block_bytes];
            for _ in 0..spec.blocks {
                stream
                    .write_all(&block)
                    .map_err(|e| TrafficError::io("write from the source", e))?;
            }
            Ok(())
        });
        let (to_compute, compute_in) = sync_channel::<(u32, Vec<u8>)>(1);
        let (to_transmit, transmit_in) = sync_channel::<(u32, Vec<u8>)>(1);
        let receive = scope.spawn(move || {
            pinned(stage_cpu);
            receive_process(&stage_listener, spec, to_compute, ns)
        });
        let compute = scope.spawn(move || {
            pinned(stage_cpu);
            compute_process(compute_in, to_transmit, iterations, spec.blocks, ns)
        });
        let transmit = scope.spawn(move || {
            pinned(stage_cpu);
            transmit_process(sink_addr, transmit_in, spec.blocks, ns)
        });
        let mut bursts = Vec::with_capacity(3 * spec.blocks as usize);
        bursts.extend(joined(receive, "receive")?);
        bursts.extend(joined(compute, "compute")?);
        let (transmitted, send_queue) = joined(transmit, "transmit")?;
        bursts.extend(transmitted);
        joined(source, "source")?;
        let (bytes_received_by_sink, sink_done_ns) = joined(sink, "sink")?;
        let elapsed_ns = bursts.iter().map(|b| b.end_ns).fold(sink_done_ns, u64::max);
        if bytes_received_by_sink != total {
            return Err(TrafficError::Invalid(format!(
                "the sink received {bytes_received_by_sink} of {total} bytes"
            )));
        }
        bursts.sort_by_key(|b| (b.start_ns, b.process));
        let all_pinned = !refused.load(std::sync::atomic::Ordering::Relaxed);
        Ok(PipelineRun {
            bursts,
            send_queue,
            elapsed_ns,
            stage_cpu: stage_cpu.filter(|_| all_pinned),
            peer_cpu: peer_cpu.filter(|_| all_pinned),
            compute_iterations: iterations,
            bytes_received_by_sink,
        })
    })
}

/// Waits for a scoped thread; a panic becomes an error naming it.
fn joined<T>(
    thread: std::thread::ScopedJoinHandle<'_, Result<T, TrafficError>>,
    what: &str,
) -> Result<T, TrafficError> {
    thread
        .join()
        .unwrap_or_else(|_| Err(TrafficError::Invalid(format!("the {what} thread panicked"))))
}

fn local(listener: &TcpListener) -> Result<SocketAddr, TrafficError> {
    listener
        .local_addr()
        .map_err(|e| TrafficError::io("read a listener's address", e))
}

fn receive_process(
    listener: &TcpListener,
    spec: &PipelineSpec,
    out: SyncSender<(u32, Vec<u8>)>,
    ns: impl Fn() -> u64,
) -> Result<Vec<Burst>, TrafficError> {
    let (mut stream, _) = listener
        .accept()
        .map_err(|e| TrafficError::io("accept the source at the stage", e))?;
    let mut bursts = Vec::with_capacity(spec.blocks as usize);
    for block in 0..spec.blocks {
        let mut buf = vec![0u8; spec.block_bytes];
        let mut filled = 0;
        // Off until the block's first byte is there (a blocking peek
        // returns then), so the read's own copy is on.
        let mut one = [0u8; 1];
        let start = match stream.peek(&mut one) {
            Ok(0) => {
                return Err(TrafficError::Invalid(format!(
                    "the source closed after {block} of {} blocks",
                    spec.blocks
                )))
            }
            Ok(_) => ns(),
            Err(e) => return Err(TrafficError::io("wait for data at the stage", e)),
        };
        while filled < buf.len() {
            let n = stream
                .read(&mut buf[filled..])
                .map_err(|e| TrafficError::io("read at the stage", e))?;
            if n == 0 {
                return Err(TrafficError::Invalid(format!(
                    "the source closed after {block} of {} blocks",
                    spec.blocks
                )));
            }
            filled += n;
        }
        let end = ns();
        // Waiting to hand the block over is not work: off. (A closed
        // compute process has failed; its error is reported.)
        let _ = out.send((block, buf));
        bursts.push(Burst {
            process: Process::Receive,
            block,
            start_ns: start,
            end_ns: end,
        });
    }
    Ok(bursts)
}

fn compute_process(
    input: Receiver<(u32, Vec<u8>)>,
    out: SyncSender<(u32, Vec<u8>)>,
    iterations: u64,
    blocks: u32,
    ns: impl Fn() -> u64,
) -> Result<Vec<Burst>, TrafficError> {
    let mut bursts = Vec::with_capacity(blocks as usize);
    while let Ok((block, data)) = input.recv() {
        let start = ns();
        std::hint::black_box(work(iterations));
        let end = ns();
        let _ = out.send((block, data));
        bursts.push(Burst {
            process: Process::Compute,
            block,
            start_ns: start,
            end_ns: end,
        });
    }
    Ok(bursts)
}

fn transmit_process(
    sink: SocketAddr,
    input: Receiver<(u32, Vec<u8>)>,
    blocks: u32,
    ns: impl Fn() -> u64,
) -> Result<(Vec<Burst>, Vec<QueueSample>), TrafficError> {
    let mut stream = TcpStream::connect(sink)
        .map_err(|e| TrafficError::io(format!("connect to the sink at {sink}"), e))?;
    let mut bursts = Vec::with_capacity(blocks as usize);
    let mut queue = Vec::with_capacity(2 * blocks as usize);
    while let Ok((block, data)) = input.recv() {
        // What the previous blocks left unacknowledged, read before the
        // write's window opens.
        let before = send_queue(&stream);
        let start = ns();
        stream
            .write_all(&data)
            .map_err(|e| TrafficError::io("write from the stage", e))?;
        let end = ns();
        bursts.push(Burst {
            process: Process::Transmit,
            block,
            start_ns: start,
            end_ns: end,
        });
        if let Some(bytes) = before {
            queue.push(QueueSample {
                at_ns: start,
                bytes,
                after_write: false,
            });
        }
        if let Some(bytes) = send_queue(&stream) {
            queue.push(QueueSample {
                at_ns: end,
                bytes,
                after_write: true,
            });
        }
    }
    Ok((bursts, queue))
}

/// Bytes in the socket's send queue not yet acknowledged (`SIOCOUTQ`).
fn send_queue(stream: &TcpStream) -> Option<u32> {
    let mut bytes: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (= TIOCOUTQ) writes one int through the pointer,
    // which points at a live c_int; the descriptor is the stream's own,
    // open for the whole call.
    let got = unsafe { libc::ioctl(stream.as_raw_fd(), libc::TIOCOUTQ, &mut bytes) };
    (got == 0).then(|| u32::try_from(bytes).unwrap_or(0))
}

/// The fixed CPU work: `iterations` rounds of xorshift.
fn work(iterations: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Iterations that take `compute` on an idle CPU (`cpu`, pinned there
/// for the calibration when given): the median of five timings of a
/// million.
fn iterations_for(compute: Duration, cpu: Option<usize>) -> u64 {
    if compute.is_zero() {
        return 0;
    }
    const PROBE: u64 = 1_000_000;
    let per_probe = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(cpu) = cpu {
                    crate::affinity::pin_current(cpu);
                }
                let mut times: Vec<Duration> = (0..5)
                    .map(|_| {
                        let t = Instant::now();
                        std::hint::black_box(work(std::hint::black_box(PROBE)));
                        t.elapsed()
                    })
                    .collect();
                times.sort();
                times[2]
            })
            .join()
            .unwrap_or(Duration::from_millis(1))
    });
    let per_probe = per_probe.as_secs_f64().max(1e-9);
    ((compute.as_secs_f64() / per_probe) * PROBE as f64)
        .round()
        .max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_passes_each_process_once_in_order() {
        let spec = PipelineSpec {
            family: Family::V4,
            block_bytes: 4096,
            blocks: 40,
            compute: Duration::from_micros(50),
        };
        let run = run(&spec).expect("the pipeline");
        assert_eq!(run.bytes_received_by_sink, 4096 * 40);
        assert!(run.compute_iterations > 0);
        for process in Process::ALL {
            let mine: Vec<&Burst> = run.bursts.iter().filter(|b| b.process == process).collect();
            assert_eq!(mine.len(), 40, "{process:?}");
            for (i, b) in mine.iter().enumerate() {
                assert_eq!(b.block, i as u32);
                assert!(b.start_ns <= b.end_ns);
                assert!(b.end_ns <= run.elapsed_ns);
            }
        }
        // A block is computed after it was received and sent after it
        // was computed.
        let of = |p: Process, block: u32| {
            *run.bursts
                .iter()
                .find(|b| b.process == p && b.block == block)
                .unwrap()
        };
        for block in 0..40 {
            let (r, c, t) = (
                of(Process::Receive, block),
                of(Process::Compute, block),
                of(Process::Transmit, block),
            );
            assert!(r.start_ns <= c.start_ns && c.start_ns <= t.start_ns);
        }
        assert_eq!(run.send_queue.len(), 80);
        assert!(run.send_queue.iter().all(|q| q.bytes <= 40 * 4096));
    }

    #[test]
    fn nothing_to_send_is_refused() {
        let spec = PipelineSpec {
            family: Family::V6,
            block_bytes: 0,
            blocks: 3,
            compute: Duration::ZERO,
        };
        assert!(matches!(run(&spec), Err(TrafficError::Invalid(_))));
    }
}
