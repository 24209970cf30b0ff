//! XTP's character-driver interface (Taler 1992 §3.4.2) between reference
//! hosts: a write lends its buffer and is over only once the peer's
//! reader took every byte; a read posts its buffer and arrivals fill it.

use crate::xtp_support;

use std::time::Duration;

use bytes::Bytes;
use stack::iface::host::XtpError;
use stack::runner::Simulator;
use stack::socket::xtp::{XtpConfig, XtpHandle};
use xtp_support::*;

/// Sends `data` from a in `write_len` driver writes while b reads it in
/// `read_len` driver reads; returns what b read. Checks at every write's
/// end that b's reader already held all of it, and that a long write's
/// buffer came back to the writer unshared (referenced, never copied).
fn driver_transfer(
    sim: &mut Simulator,
    (a, b): (XtpHandle, XtpHandle),
    data: &Bytes,
    write_len: usize,
    read_len: usize,
    limit: Duration,
) -> Vec<u8> {
    let mut written = 0;
    let mut writing: Option<Bytes> = None;
    let mut got: Vec<u8> = Vec::new();
    let mut posted = false;
    let mut spare = Vec::new();
    let mut shut = false;
    let mut eof = false;
    let done = sim.run_until_with(limit, |sim| {
        let h = host_mut(sim, "host-a");
        loop {
            if let Some(lent) = &writing {
                match h.xtp_driver_write_done(a) {
                    Ok(n) => {
                        assert_eq!(n, lent.len());
                        written += n;
                        let lent = writing.take().unwrap();
                        if lent.len() >= stack::socket::xtp::driver::DRIVER_COPY_BELOW {
                            assert!(lent.is_unique(), "the lent buffer is released when done");
                        }
                    }
                    Err(XtpError::WouldBlock) => break,
                    Err(e) => panic!("write done: {e}"),
                }
            }
            if written == data.len() {
                if !shut {
                    h.xtp_shutdown(a).unwrap();
                    shut = true;
                }
                break;
            }
            // A buffer of its own, so that whether the stream still
            // references it shows.
            let piece =
                Bytes::copy_from_slice(&data[written..(written + write_len).min(data.len())]);
            h.xtp_driver_write(a, piece.clone()).unwrap();
            writing = Some(piece);
        }
        let h = host_mut(sim, "host-b");
        while !eof {
            if !posted {
                h.xtp_driver_read(b, std::mem::take(&mut spare), read_len)
                    .unwrap();
                posted = true;
            }
            match h.xtp_driver_read_done(b) {
                Ok(buf) if buf.is_empty() => eof = true,
                Ok(buf) => {
                    // A read ends full or at a write's end (EOM), not at
                    // a status request within the write.
                    let left = data.len() - got.len();
                    let expected = read_len.min(write_len).min(left);
                    assert_eq!(buf.len(), expected, "a read of {read_len} B");
                    got.extend_from_slice(&buf);
                    spare = buf;
                    posted = false;
                }
                Err(XtpError::WouldBlock) => break,
                Err(e) => panic!("read done: {e}"),
            }
        }
        // "Delivered and acknowledged": no write ends before its bytes
        // reached the reader.
        assert!(got.len() >= written, "a write ended before b read it");
        shut && eof
    });
    assert!(
        done,
        "driver transfer did not finish in {limit:?}: wrote {written}, read {}",
        got.len()
    );
    got
}

#[test]
fn driver_writes_and_reads_are_byte_exact_and_end_on_delivery() {
    for (write_len, read_len, buffer) in [
        (16 * 1024, 4096, 256 * 1024),
        (4096, 16 * 1024, 256 * 1024),
        (100, 64 * 1024, 256 * 1024),
        // Status requests every quarter of the 16 KiB buffer, within
        // each 64 KiB write.
        (64 * 1024, 64 * 1024, 16 * 1024),
    ] {
        let mut sim = default_network();
        let config = XtpConfig {
            send_buffer: buffer,
            recv_buffer: buffer,
            ..XtpConfig::default()
        };
        let ends = associate(&mut sim, true, config);
        let data = Bytes::from(pattern(512 * 1024 + 77, 5));
        let got = driver_transfer(
            &mut sim,
            ends,
            &data,
            write_len,
            read_len,
            Duration::from_secs(60),
        );
        assert_same(
            &got,
            &data,
            &format!("{write_len} B writes, {read_len} B reads"),
        );
        let counters = sim
            .host("host-a")
            .unwrap()
            .xtp_association(ends.0)
            .unwrap()
            .counters();
        assert!(counters.dreq_sent > 0, "driver writes ask for delivery");
        // FIRST left before the first driver write, with SREQ.
        assert!(counters.sreq_sent <= 1, "and not for mere receipt");
    }
}

#[test]
fn driver_transfers_survive_loss_and_reordering() {
    for seed in [3, 11] {
        let mut sim = network_of(&impaired_topology(seed), None);
        let ends = associate(&mut sim, true, XtpConfig::default());
        let data = Bytes::from(pattern(256 * 1024, seed as u8));
        let got = driver_transfer(&mut sim, ends, &data, 8192, 8192, Duration::from_secs(600));
        assert_same(&got, &data, &format!("impaired seed {seed}"));
    }
}

#[test]
fn a_driver_write_waits_for_a_socket_reader_to_read() {
    let mut sim = default_network();
    let (a, b) = associate(&mut sim, false, XtpConfig::default());
    let data = Bytes::from(pattern(8192, 1));
    host_mut(&mut sim, "host-a")
        .xtp_driver_write(a, data.clone())
        .unwrap();
    assert_eq!(
        host_mut(&mut sim, "host-a").xtp_driver_write(a, data.clone()),
        Err(XtpError::WouldBlock),
        "one write at a time"
    );
    // The data arrive and are acknowledged, but nobody read them.
    sim.run_for(Duration::from_millis(50));
    assert_eq!(
        sim.host("host-b")
            .unwrap()
            .xtp_association(b)
            .unwrap()
            .readable(),
        8192
    );
    assert_eq!(
        host_mut(&mut sim, "host-a").xtp_driver_write_done(a),
        Err(XtpError::WouldBlock),
        "not over before the reader took the data"
    );
    let mut buf = vec![0u8; 8192];
    assert_eq!(host_mut(&mut sim, "host-b").xtp_recv(b, &mut buf), Ok(8192));
    assert_eq!(buf, data);
    let mut over = None;
    sim.run_until_with(Duration::from_secs(5), |sim| {
        over = host_mut(sim, "host-a").xtp_driver_write_done(a).ok();
        over.is_some()
    });
    assert_eq!(over, Some(8192));
    assert!(data.is_unique());
}
