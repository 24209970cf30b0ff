//! What an association sends next: FIRST (again, under WTIMER), the
//! responder's TCNTL with its key, controls owed (answers to status
//! requests, alloc updates, FASTNAK reports, END), then data: resent
//! ranges first, new bytes within the peer's `alloc` and the rate, status
//! requested on the last packet of a burst.

use wire::xtp::first::Traffic;
use wire::xtp::{Address, AddressRepr, ControlRepr, TrafficRepr, XtpOptions};

use super::association::{Association, Request, Role, State};
use super::config::ErrorControl;
use super::packet::{Body, Outgoing};
use crate::probes::{DATA_COPY_ENTER, DATA_COPY_EXIT, XTP_RETRANSMIT};
use crate::time::Instant;

/// Spans an ECNTL carries at most (the first gaps matter most; the rest
/// are reported once these are filled).
const MAX_SPANS: usize = 64;

impl Association {
    /// The next packet to send at `now`, if any.
    pub fn poll_output(&mut self, now: Instant) -> Option<Outgoing> {
        let out = self.next_packet(now);
        if out.is_some() {
            self.counters.packets_sent += 1;
            self.last_sent = now;
        }
        // Also when nothing left: new data held back by `alloc` waits on
        // the peer, and WTIMER must run for it (a lost alloc update would
        // otherwise hold the sender until CTIMER).
        self.arm_wtimer(now);
        out
    }

    fn next_packet(&mut self, now: Instant) -> Option<Outgoing> {
        if self.state == State::Closed {
            return None;
        }
        if self.owed.first && self.role == Role::Initiator && self.state == State::FirstSent {
            self.owed.first = false;
            return Some(self.first(now));
        }
        if self.owed.tcntl {
            self.owed.tcntl = false;
            return Some(self.tcntl());
        }
        if let Some((upto, sync)) = self.delivery {
            if self.recv.read_total() >= upto || self.read_abandoned {
                self.delivery = None;
                self.owed.echo = Some(sync);
            }
        }
        let quiet_answer = self.state == State::Quiet && self.owed.update;
        if self.owed.echo.is_some()
            || self.owed.update
            || self.owed.probe
            || self.ready_to_end()
            || quiet_answer
        {
            let probe = std::mem::take(&mut self.owed.probe);
            if std::mem::take(&mut self.owed.fastnak) {
                self.counters.fastnaks_sent += 1;
            }
            self.owed.update = false;
            return Some(self.control(now, probe));
        }
        if self.state == State::Quiet || (self.state == State::FirstSent && !self.config.implicit) {
            return None;
        }
        if let Some(out) = self.data(now) {
            return Some(out);
        }
        let end = self.send.end()?;
        if !self.wclose_sent && self.send.nxt() >= end && self.state == State::Active {
            // Nothing left to carry WCLOSE: a control says where the
            // stream ends, and asks for the status that confirms it.
            self.wclose_sent = true;
            return Some(self.control(now, true));
        }
        None
    }

    fn base_options(&self) -> XtpOptions {
        let mut options = XtpOptions::empty();
        options.set(XtpOptions::NOCHECK, self.config.nocheck);
        options.set(XtpOptions::NOERR, self.config.noerr);
        options.set(XtpOptions::NOFLOW, self.config.noflow);
        options.set(XtpOptions::RES, self.config.reservation);
        options.set(XtpOptions::RCLOSE, self.read_done());
        options.set(XtpOptions::SORT, self.config.sort.is_some());
        options
    }

    /// A fresh sync for a status request about everything sent so far:
    /// DREQ with `delivery_requests`, except where WTIMER asks while data
    /// are unacknowledged (a DREQ answer waits for the reader, which
    /// waits for the gap: error control needs the answer now, SREQ's).
    fn request(&mut self, now: Instant, options: &mut XtpOptions, timer: bool) -> u32 {
        self.sync = self.sync.wrapping_add(1);
        let unacked = self.send.una() < self.send.high();
        if self.config.delivery_requests && !(timer && unacked) {
            options.insert(XtpOptions::DREQ);
            self.counters.dreq_sent += 1;
            self.dreq = Some((self.sync, self.send.high()));
        } else {
            options.insert(XtpOptions::SREQ);
            self.counters.sreq_sent += 1;
        }
        self.request = Some(Request {
            sync: self.sync,
            high: self.send.high(),
            at: now,
        });
        self.since_request = 0;
        self.sync
    }

    fn control_repr(&mut self, echo: u32) -> ControlRepr {
        let alloc = self.recv.alloc();
        self.advertised_alloc = alloc;
        ControlRepr {
            rseq: self.recv.rseq(),
            alloc,
            echo,
        }
    }

    /// The traffic specifier this end offers: the largest data segment it
    /// takes, and the rate and burst it sends at and accepts.
    pub(super) fn traffic(&self) -> TrafficRepr {
        let (rate, burst) = self.config.rate.map_or((0, 0), |r| (r.rate, r.burst));
        TrafficRepr {
            service: self.config.service,
            traffic: Traffic::Rates {
                maxdata: self.local_maxdata,
                inrate: rate,
                inburst: burst,
                outrate: rate,
                outburst: burst,
            },
        }
    }

    fn first(&mut self, now: Instant) -> Outgoing {
        self.counters.first_sent += 1;
        if self.counters.first_sent == 1 && self.config.implicit {
            // Implicit setup (study §2.4.1): the first data ride in FIRST.
            let limit = self.peer_alloc;
            if let Some(piece) = self.send.next_piece(limit, self.maxdata) {
                self.first_len = piece.len;
                self.first_tag = piece.tag;
                self.rate.consume(now, piece.len);
            }
        }
        let data = self.send.bytes(0, self.first_len.min(self.send.queued()));
        let data_is_empty = data.is_empty();
        self.counters.data_bytes_sent += data.len() as u64;
        if self.counters.first_sent > 1 {
            probe::record_with(XTP_RETRANSMIT, self.flow, || (data.len() as u32, 2));
            self.counters.retransmitted_packets += 1;
            self.counters.retransmitted_bytes += data.len() as u64;
        }
        let mut options = self.base_options();
        options.set(XtpOptions::EOM, self.ends_driver_write(data.len() as u64));
        if self.send.end() == Some(data.len() as u64) {
            options.insert(XtpOptions::WCLOSE);
            self.wclose_sent = true;
        }
        let sync = self.request(now, &mut options, false);
        let address = match (self.local, self.remote) {
            (std::net::SocketAddr::V6(l), std::net::SocketAddr::V6(r)) => Address::Ipv6 {
                dst_host: *r.ip(),
                src_host: *l.ip(),
                dst_port: r.port(),
                src_port: l.port(),
            },
            (l, r) => Address::Ipv4 {
                dst_host: match r.ip() {
                    std::net::IpAddr::V4(a) => a,
                    std::net::IpAddr::V6(_) => std::net::Ipv4Addr::UNSPECIFIED,
                },
                src_host: match l.ip() {
                    std::net::IpAddr::V4(a) => a,
                    std::net::IpAddr::V6(_) => std::net::Ipv4Addr::UNSPECIFIED,
                },
                dst_port: r.port(),
                src_port: l.port(),
            },
        };
        Outgoing {
            key: self.out_key(),
            options,
            sort: self.config.sort.unwrap_or(0),
            btag: self.first_tag.filter(|_| !data_is_empty),
            sync,
            seq: 0,
            body: Body::First {
                address: AddressRepr { domain: 0, address },
                traffic: self.traffic(),
                data,
            },
        }
    }

    /// The responder's answer to FIRST: its control state and its own key
    /// (`xkey`), so the initiator's packets find this context directly.
    /// It echoes FIRST's sync and carries no spans, so a later status
    /// request (data right behind FIRST) gets its own answer, with spans.
    fn tcntl(&mut self) -> Outgoing {
        self.counters.tcntl_sent += 1;
        let echo = self.first_sync;
        if self.owed.echo == Some(echo) {
            self.owed.echo = None;
        }
        let control = self.control_repr(echo);
        let mut options = self.base_options();
        options.set(XtpOptions::WCLOSE, self.send.is_closed());
        Outgoing {
            key: self.out_key(),
            options,
            sort: self.config.sort.unwrap_or(0),
            btag: None,
            sync: self.sync,
            seq: self.send.end().unwrap_or(self.send.nxt()),
            body: Body::Tcntl {
                control,
                xkey: self.own_key,
                traffic: self.traffic(),
            },
        }
    }

    /// A CNTL, or an ECNTL when data is held beyond a gap (selective
    /// mode); `probe` adds a status request of our own.
    fn control(&mut self, now: Instant, probe: bool) -> Outgoing {
        let echo = self.owed.echo.take().unwrap_or(self.peer_sync);
        let control = self.control_repr(echo);
        let mut options = self.base_options();
        options.set(XtpOptions::WCLOSE, self.send.is_closed());
        let sync = if probe {
            self.request(now, &mut options, true)
        } else {
            self.sync
        };
        if self.ready_to_end() || self.state == State::Quiet {
            options.insert(XtpOptions::END);
            if !self.end_sent {
                self.end_sent = true;
                self.state = State::Quiet;
                self.quiet_until = Some(now + self.config.quiet_time);
            }
        }
        let seq = self.send.end().unwrap_or(self.send.nxt());
        let selective = self.config.error_control == ErrorControl::Selective;
        let body = if selective && self.recv.has_gap() {
            self.counters.ecntl_sent += 1;
            Body::Ecntl(control, self.recv.spans(MAX_SPANS))
        } else {
            self.counters.cntl_sent += 1;
            Body::Cntl(control)
        };
        Outgoing {
            key: self.out_key(),
            options,
            sort: self.config.sort.unwrap_or(0),
            btag: None,
            sync,
            seq,
            body,
        }
    }

    /// The next DATA packet, if the rate and `alloc` let one go.
    fn data(&mut self, now: Instant) -> Option<Outgoing> {
        let limit = self.peer_alloc;
        if !self.send.can_send(limit) || !self.rate.allows(now) {
            return None;
        }
        let piece = self.send.next_piece(limit, self.maxdata)?;
        let data = {
            let _copy = probe::span(
                DATA_COPY_ENTER,
                DATA_COPY_EXIT,
                piece.len as u32,
                self.flow,
                0,
            );
            self.send.bytes(piece.seq, piece.len)
        };
        self.rate.consume(now, piece.len);
        self.counters.data_packets_sent += 1;
        self.counters.data_bytes_sent += piece.len as u64;
        if piece.resent {
            let aux = u64::from(self.config.error_control == ErrorControl::GoBackN);
            probe::record(XTP_RETRANSMIT, piece.len as u32, self.flow, aux);
            self.counters.retransmitted_packets += 1;
            self.counters.retransmitted_bytes += piece.len as u64;
        }
        let mut options = self.base_options();
        let stop = piece.seq + piece.len as u64;
        options.set(XtpOptions::EOM, self.ends_driver_write(stop));
        if self.send.end() == Some(stop) {
            options.insert(XtpOptions::WCLOSE);
            self.wclose_sent = true;
        }
        self.since_request += piece.len;
        // Status is asked for on the last packet of a burst, and every
        // quarter of the send buffer within a long one, so the sender
        // hears of losses before its buffer runs dry.
        let last = !self.send.can_send(limit);
        let every = (self.config.send_buffer / 4).max(self.maxdata);
        let sync = if last || self.since_request >= every {
            self.request(now, &mut options, false)
        } else {
            self.sync
        };
        Some(Outgoing {
            key: self.out_key(),
            options,
            sort: self.config.sort.unwrap_or(0),
            btag: piece.tag,
            sync,
            seq: piece.seq,
            body: Body::Data(data),
        })
    }
}
