//! Internet checksum throughput: reference vs optimized, at the sizes the
//! calibrate command reports (a small packet, an Ethernet MTU, a 64 KiB
//! segment) and those the TCP bench sums (a 32-byte header, a 1428-byte
//! payload, a 1460-byte segment), plus a misaligned start.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wire::checksum::{optimized, reference};

fn checksum(c: &mut Criterion) {
    let data: Vec<u8> = (0..65_536 + 1).map(|i| (i * 7 + 3) as u8).collect();
    let mut group = c.benchmark_group("checksum");
    for &len in &[
        32usize, 64, 128, 256, 576, 768, 1024, 1428, 1460, 1500, 65_536,
    ] {
        group.throughput(Throughput::Bytes(len as u64));
        let aligned = &data[..len];
        let misaligned = &data[1..len + 1];
        group.bench_with_input(BenchmarkId::new("reference", len), aligned, |b, d| {
            b.iter(|| reference::sum(black_box(d)))
        });
        group.bench_with_input(BenchmarkId::new("optimized", len), aligned, |b, d| {
            b.iter(|| optimized::sum(black_box(d)))
        });
        group.bench_with_input(BenchmarkId::new("portable", len), aligned, |b, d| {
            b.iter(|| optimized::portable_sum(black_box(d)))
        });
        group.bench_with_input(
            BenchmarkId::new("optimized_misaligned", len),
            misaligned,
            |b, d| b.iter(|| optimized::sum(black_box(d))),
        );
    }
    group.finish();
}

criterion_group!(benches, checksum);
criterion_main!(benches);
