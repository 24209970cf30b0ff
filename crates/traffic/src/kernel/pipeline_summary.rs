//! What a pipeline stage's run says (the SunOS study's Figure 18 in
//! numbers): per process, how long it is on for each block and its duty
//! cycle; how promptly each process starts once the one before it has
//! handed a block over; the stage's block period. Every figure is over
//! the steady blocks only (the first `warmup` are left out: connection
//! set-up and slow start) and carries n and its 95 % interval.

use serde::Serialize;
use stats::Estimate;

use super::pipeline::{Burst, PipelineRun, Process};

/// One process's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessFigures {
    pub process: Process,
    /// Time on per block, µs (window: from the block's first byte at
    /// the stage, or its hand-over to this process, to the block read,
    /// computed or written).
    pub on_us: Option<Estimate>,
    /// Share of the steady window the process was on, 0–1.
    pub duty: f64,
}

/// The run's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineSummary {
    /// Blocks counted (after the warm-up).
    pub blocks: usize,
    pub warmup: usize,
    /// The steady window: from the first counted block's first byte at the
    /// stage to the last block's write returning, µs.
    pub window_us: f64,
    pub processes: Vec<ProcessFigures>,
    /// From the compute process finishing a block to the transmit
    /// process starting to write it, µs.
    pub compute_to_transmit_us: Option<Estimate>,
    /// From the receive process having read a block to the compute
    /// process starting on it, µs (includes the wait for the compute
    /// process to finish the block before).
    pub receive_to_compute_us: Option<Estimate>,
    /// Between successive blocks' writes returning, µs.
    pub period_us: Option<Estimate>,
    /// The transmit socket's send queue just before and just after each
    /// counted write, bytes.
    pub send_queue_before_write_bytes: Option<Estimate>,
    pub send_queue_after_write_bytes: Option<Estimate>,
}

impl PipelineRun {
    /// The figures over the blocks after the first `warmup`.
    pub fn summary(&self, warmup: usize) -> PipelineSummary {
        let of = |p: Process| -> Vec<&Burst> {
            self.bursts
                .iter()
                .filter(|b| b.process == p && b.block as usize >= warmup)
                .collect()
        };
        let [receive, compute, transmit] = Process::ALL.map(of);
        let begin = receive.iter().map(|b| b.start_ns).min().unwrap_or(0);
        let end = transmit.iter().map(|b| b.end_ns).max().unwrap_or(begin);
        let window = end.saturating_sub(begin);
        let us = |ns: u64| ns as f64 / 1e3;
        let processes = [
            (Process::Receive, &receive),
            (Process::Compute, &compute),
            (Process::Transmit, &transmit),
        ]
        .into_iter()
        .map(|(process, bursts)| {
            let on: Vec<f64> = bursts.iter().map(|b| us(b.end_ns - b.start_ns)).collect();
            let inside: u64 = bursts
                .iter()
                .map(|b| b.end_ns.min(end).saturating_sub(b.start_ns.max(begin)))
                .sum();
            ProcessFigures {
                process,
                on_us: Estimate::of(&on),
                duty: if window > 0 {
                    inside as f64 / window as f64
                } else {
                    0.0
                },
            }
        })
        .collect();
        // Hand-over to start, block by block (each list is in block order).
        let gaps = |from: &[&Burst], to: &[&Burst]| -> Vec<f64> {
            from.iter()
                .zip(to)
                .filter(|(a, b)| a.block == b.block)
                .map(|(a, b)| us(b.start_ns.saturating_sub(a.end_ns)))
                .collect()
        };
        let periods: Vec<f64> = transmit
            .windows(2)
            .map(|w| us(w[1].end_ns.saturating_sub(w[0].end_ns)))
            .collect();
        let queue = |after: bool| -> Vec<f64> {
            self.send_queue
                .iter()
                .filter(|q| q.at_ns >= begin && q.after_write == after)
                .map(|q| f64::from(q.bytes))
                .collect()
        };
        PipelineSummary {
            blocks: transmit.len(),
            warmup,
            window_us: us(window),
            processes,
            compute_to_transmit_us: Estimate::of(&gaps(&compute, &transmit)),
            receive_to_compute_us: Estimate::of(&gaps(&receive, &compute)),
            period_us: Estimate::of(&periods),
            send_queue_before_write_bytes: Estimate::of(&queue(false)),
            send_queue_after_write_bytes: Estimate::of(&queue(true)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::pipeline::QueueSample;

    fn burst(process: Process, block: u32, start_ns: u64, end_ns: u64) -> Burst {
        Burst {
            process,
            block,
            start_ns,
            end_ns,
        }
    }

    /// Blocks every 1000 ns: receive 0–100, compute 150–650, transmit
    /// 700–800 (+1000 per block).
    fn regular(blocks: u32) -> PipelineRun {
        let mut bursts = Vec::new();
        for k in 0..blocks {
            let t = 1000 * u64::from(k);
            bursts.push(burst(Process::Receive, k, t, t + 100));
            bursts.push(burst(Process::Compute, k, t + 150, t + 650));
            bursts.push(burst(Process::Transmit, k, t + 700, t + 800));
        }
        PipelineRun {
            send_queue: (0..blocks)
                .flat_map(|k| {
                    let t = 1000 * u64::from(k);
                    [(t + 700, 0, false), (t + 800, 4096, true)]
                })
                .map(|(at_ns, bytes, after_write)| QueueSample {
                    at_ns,
                    bytes,
                    after_write,
                })
                .collect(),
            bursts,
            elapsed_ns: 1000 * u64::from(blocks),
            stage_cpu: Some(1),
            peer_cpu: Some(0),
            compute_iterations: 1,
            bytes_received_by_sink: 0,
        }
    }

    #[test]
    fn a_regular_stage_gives_its_duty_cycles_and_hand_over_delays() {
        let s = regular(12).summary(2);
        assert_eq!((s.blocks, s.warmup), (10, 2));
        // From block 2's receive start (2000) to block 11's write (11800).
        assert!((s.window_us - 9.8).abs() < 1e-9);
        let duty: Vec<f64> = s.processes.iter().map(|p| p.duty).collect();
        for (got, want) in duty
            .iter()
            .zip([1000.0 / 9800.0, 5000.0 / 9800.0, 1000.0 / 9800.0])
        {
            assert!((got - want).abs() < 1e-9, "{duty:?}");
        }
        let on = s.processes[1].on_us.as_ref().unwrap();
        assert_eq!(on.n, 10);
        assert!((on.mean - 0.5).abs() < 1e-9);
        let ct = s.compute_to_transmit_us.unwrap();
        assert!((ct.mean - 0.05).abs() < 1e-9);
        let rc = s.receive_to_compute_us.unwrap();
        assert!((rc.mean - 0.05).abs() < 1e-9);
        let period = s.period_us.unwrap();
        assert_eq!(period.n, 9);
        assert!((period.mean - 1.0).abs() < 1e-9);
        let after = s.send_queue_after_write_bytes.unwrap();
        assert_eq!((after.n, after.mean), (10, 4096.0));
        assert_eq!(s.send_queue_before_write_bytes.unwrap().mean, 0.0);
    }

    #[test]
    fn a_run_shorter_than_its_warm_up_has_no_figures() {
        let s = regular(3).summary(5);
        assert_eq!(s.blocks, 0);
        assert!(s.period_us.is_none() && s.compute_to_transmit_us.is_none());
        assert!(s
            .processes
            .iter()
            .all(|p| p.on_us.is_none() && p.duty == 0.0));
    }
}
