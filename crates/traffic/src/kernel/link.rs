//! Raw link-level frames over AF_PACKET, the XTP study's "NIT" raw test:
//! the same sentinels and sequence-numbered test datagrams as UDP
//! ([`super::udp`]), carried directly in Ethernet frames of the local
//! experimental Ethertype 0x88B5 across the veth pair between the tool's
//! two namespaces, so the run measures the link path without IP or UDP.
//!
//! The sockets are `SOCK_DGRAM`: the kernel builds and strips the Ethernet
//! header, and the payload is exactly the test datagram, except that a
//! link may pad a short frame to Ethernet's 46-byte minimum payload
//! ([`strip_padding`]).

use std::ffi::CString;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use socket2::{Domain, SockAddr, SockAddrStorage, Socket, Type};

use super::netns::{Side, VethPair};
use super::udp::{END_WAIT, SENTINEL_GAP};
use super::{pattern_for, socket, SocketFacts};
use crate::datagram::{self, Kind, HEADER_LEN};
use crate::env::{Environment, GrantedBuffers};
use crate::error::TrafficError;
use crate::meter::{IntervalRecorder, Meter};
use crate::pattern::Pattern;
use crate::report::{ReceiverSide, SenderSide, Timestamp, TransferReport};
use crate::session::ReceiveSession;
use crate::spec::{Protocol, StackKind, TransferSpec, RAW_ETHERTYPE};
use crate::verify::Arrival;

/// Ethernet's shortest payload (a 60-byte frame less its 14-byte header):
/// links pad shorter payloads with zeroes up to it.
const ETH_MIN_PAYLOAD: usize = 46;
/// Receive buffer: larger than any veth MTU (65 535), so no frame is
/// truncated by the read.
const RECV_BUF: usize = 65_536;
/// Receive timeout per read; short so the run's deadlines are checked
/// often, as in UDP.
const POLL: Duration = Duration::from_millis(50);

/// Runs both sides in this process over a new veth pair with `mtu`: the
/// receiver on a thread in namespace A, the sender on a thread in
/// namespace B, frames from B's veth end to A's. `print_intervals` prints
/// `-i` reports to stderr as they come.
pub fn run_pair(
    spec: &TransferSpec,
    mtu: u32,
    print_intervals: bool,
) -> Result<TransferReport, TrafficError> {
    spec.validate()?;
    if spec.protocol != Protocol::Raw {
        return Err(TrafficError::Invalid(format!(
            "AF_PACKET frames carry raw traffic, not {}",
            spec.protocol
        )));
    }
    // Checked before the namespaces exist: a frame longer than the MTU is
    // refused by the kernel (EMSGSIZE) on every send.
    if spec.len > mtu as usize {
        return Err(TrafficError::Invalid(format!(
            "-l {} does not fit one frame on a link with MTU {mtu}: use -l {mtu} or less, \
             or raise --mtu",
            spec.len
        )));
    }
    let veth = Arc::new(VethPair::create(mtu)?);
    let pattern = Arc::new(pattern_for(spec.len));
    let meter = Arc::new(Meter::default());
    let timestamp = Timestamp::now();

    // The receiver binds first and hands over its interface's MAC address
    // (only readable inside its namespace), or says why it cannot.
    let (ready_tx, ready_rx) = mpsc::channel();
    // Set when the receiver is done: the sender repeats the end sentinel
    // until then (both ends are in this process).
    let receiver_done = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (spec, pattern, meter, veth, done) = (
            spec.clone(),
            pattern.clone(),
            meter.clone(),
            veth.clone(),
            receiver_done.clone(),
        );
        std::thread::spawn(move || -> Result<ReceiverSide, TrafficError> {
            let _done = SetOnDrop(done);
            let ready = veth
                .enter(Side::A)
                .and_then(|()| Endpoint::open(veth.interface(Side::A), true, spec.sockbuf))
                .and_then(|endpoint| {
                    let mac = endpoint.hardware_address()?;
                    Ok((endpoint, mac))
                });
            let endpoint = match ready {
                Ok((endpoint, mac)) => {
                    let _ = ready_tx.send(Some((mac, endpoint.facts.clone())));
                    endpoint
                }
                Err(e) => {
                    let _ = ready_tx.send(None);
                    return Err(e);
                }
            };
            receive(endpoint, &spec, &pattern, &meter)
        })
    };
    let (dest_mac, receiver_facts) = match ready_rx.recv() {
        Ok(Some(ready)) => ready,
        _ => return Err(super::not_ready(receiver)),
    };
    let recorder = spec
        .interval
        .map(|every| IntervalRecorder::start(meter.clone(), every, print_intervals));
    let sender = {
        let (spec, pattern, meter, veth, done) = (
            spec.clone(),
            pattern.clone(),
            meter.clone(),
            veth.clone(),
            receiver_done.clone(),
        );
        std::thread::spawn(move || {
            veth.enter(Side::B)?;
            let endpoint = Endpoint::open(veth.interface(Side::B), false, spec.sockbuf)?;
            // The sender's namespace's drops too (a veth that could not
            // hand a frame to its peer counts it on the sending side).
            let before = super::drops::snapshot();
            let sent = transmit(endpoint, dest_mac, &spec, &pattern, &meter, &done)?;
            Ok((
                sent,
                crate::losses::delta(&before, &super::drops::snapshot()),
            ))
        })
    };
    let sent = super::joined(sender, "sender");
    let received = super::joined(receiver, "receiver");
    let intervals = recorder.map(IntervalRecorder::finish).unwrap_or_default();
    let ((sender_side, sender_facts), sender_drops) = sent?;
    let mut receiver_side = received?;
    if let Some(drops) = &mut receiver_side.drops {
        crate::losses::add(drops, &sender_drops);
    }

    let mut target = Environment::detect(
        StackKind::Kernel,
        format!(
            "AF_PACKET frames, Ethertype 0x{RAW_ETHERTYPE:04X}, {}",
            veth.describe()
        ),
    );
    target.sockbuf_granted = GrantedBuffers {
        send: sender_facts.granted.send,
        recv: receiver_facts.granted.recv,
    };
    target.mtu = Some(veth.mtu());
    Ok(TransferReport::new(
        spec,
        target,
        timestamp,
        intervals,
        Some(&sender_side),
        Some(&receiver_side),
    ))
}

/// An AF_PACKET socket bound to one interface of the calling thread's
/// namespace (the socket closes when this drops, on every path).
struct Endpoint {
    socket: Socket,
    ifname: String,
    ifindex: i32,
    facts: SocketFacts,
}

impl Endpoint {
    /// Opens a `SOCK_DGRAM` packet socket on `ifname` with `sockbuf`
    /// applied. A receiving endpoint takes frames of [`RAW_ETHERTYPE`]; a
    /// sending one is bound with protocol 0, so it takes none and its
    /// buffer never fills with traffic it would not read.
    fn open(ifname: &str, receive: bool, sockbuf: Option<usize>) -> Result<Self, TrafficError> {
        let ifindex = interface_index(ifname)?;
        // Protocol 0 at creation: the socket gets no frames until it is
        // bound to the interface, so none from elsewhere slip in between.
        let socket = Socket::new(Domain::PACKET, Type::DGRAM, None).map_err(|e| {
            if e.kind() == io::ErrorKind::PermissionDenied {
                TrafficError::NeedRoot {
                    what: "raw frames (AF_PACKET sockets)",
                    flag: "--raw",
                }
            } else {
                TrafficError::io("open an AF_PACKET socket", e)
            }
        })?;
        if let Some(bytes) = sockbuf {
            socket
                .set_send_buffer_size(bytes)
                .map_err(|e| TrafficError::io(format!("set SO_SNDBUF to {bytes}"), e))?;
            socket
                .set_recv_buffer_size(bytes)
                .map_err(|e| TrafficError::io(format!("set SO_RCVBUF to {bytes}"), e))?;
        }
        let protocol = if receive { RAW_ETHERTYPE } else { 0 };
        socket
            .bind(&link_addr(ifindex, protocol, None))
            .map_err(|e| TrafficError::io(format!("bind an AF_PACKET socket to {ifname}"), e))?;
        let facts = SocketFacts {
            granted: socket::granted(&socket),
            congestion_control: None,
        };
        Ok(Self {
            socket,
            ifname: ifname.to_string(),
            ifindex,
            facts,
        })
    }

    /// The interface's Ethernet address (SIOCGIFHWADDR).
    fn hardware_address(&self) -> Result<[u8; 6], TrafficError> {
        let name = self.ifname.as_bytes();
        if name.len() >= libc::IFNAMSIZ {
            return Err(TrafficError::Invalid(format!(
                "interface name {} is longer than the kernel allows",
                self.ifname
            )));
        }
        // SAFETY: ifreq is plain data (a name array and a union of plain
        // data); all zeroes is a valid value of it.
        let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, &src) in request.ifr_name.iter_mut().zip(name) {
            *dst = src as libc::c_char;
        }
        // SAFETY: the fd is our open socket; `request` is a whole ifreq
        // with a NUL-terminated name (checked shorter than IFNAMSIZ, rest
        // zeroed), which SIOCGIFHWADDR reads and writes within.
        let rc = unsafe {
            libc::ioctl(
                self.socket.as_raw_fd(),
                libc::SIOCGIFHWADDR as _,
                &mut request as *mut libc::ifreq,
            )
        };
        if rc != 0 {
            return Err(TrafficError::io(
                format!("read the hardware address of {}", self.ifname),
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: SIOCGIFHWADDR succeeded, so it wrote the hwaddr member;
        // every member is plain data, so reading it is sound regardless.
        let hwaddr = unsafe { request.ifr_ifru.ifru_hwaddr };
        if hwaddr.sa_family != libc::ARPHRD_ETHER {
            return Err(TrafficError::Unsupported(format!(
                "{} is not an Ethernet interface (hardware type {}): raw frames need one",
                self.ifname, hwaddr.sa_family
            )));
        }
        let mut mac = [0u8; 6];
        for (dst, &src) in mac.iter_mut().zip(&hwaddr.sa_data) {
            *dst = src as u8;
        }
        Ok(mac)
    }
}

/// The index of `ifname` in the calling thread's namespace (/sys shows
/// the process's mount, not the thread's namespace, so ask the kernel).
fn interface_index(ifname: &str) -> Result<i32, TrafficError> {
    let name = CString::new(ifname)
        .map_err(|_| TrafficError::Invalid(format!("interface name {ifname:?} contains NUL")))?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call;
    // if_nametoindex only reads it.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(TrafficError::io(
            format!("find interface {ifname} in this network namespace"),
            io::Error::last_os_error(),
        ));
    }
    i32::try_from(index)
        .map_err(|_| TrafficError::Invalid(format!("interface index {index} is out of range")))
}

/// A `sockaddr_ll` for interface `ifindex` and Ethertype `protocol`, with
/// destination `mac` when sending.
fn link_addr(ifindex: i32, protocol: u16, mac: Option<[u8; 6]>) -> SockAddr {
    let mut storage = SockAddrStorage::zeroed();
    // SAFETY: sockaddr_ll is one of this platform's sockaddr types;
    // view_as checks that it fits the storage.
    let ll = unsafe { storage.view_as::<libc::sockaddr_ll>() };
    ll.sll_family = libc::AF_PACKET as libc::c_ushort;
    ll.sll_protocol = protocol.to_be();
    ll.sll_ifindex = ifindex;
    if let Some(mac) = mac {
        ll.sll_halen = 6;
        ll.sll_addr[..6].copy_from_slice(&mac);
    }
    let len = std::mem::size_of::<libc::sockaddr_ll>() as socket2::socklen_t;
    // SAFETY: the storage holds a sockaddr_ll (zeroed, then filled) whose
    // family is AF_PACKET, and `len` is exactly its size.
    unsafe { SockAddr::new(storage, len) }
}

/// The test datagram in a received frame's payload. A frame no longer
/// than Ethernet's minimum payload, whose header names a shorter length
/// and whose bytes past that length are all zero, was padded by the link
/// and is cut to the header's length. Anything else is returned whole: a
/// length field that claims more than arrived, or less with non-zero bytes
/// after it, then fails the verifier's length check and counts as
/// corrupted instead of being trusted.
fn strip_padding(frame: &[u8]) -> &[u8] {
    if frame.len() > ETH_MIN_PAYLOAD {
        return frame;
    }
    let Ok(header) = datagram::parse_header(frame) else {
        return frame;
    };
    let Ok(claimed) = usize::try_from(header.length) else {
        return frame;
    };
    if (HEADER_LEN..frame.len()).contains(&claimed) && frame[claimed..].iter().all(|&b| b == 0) {
        &frame[..claimed]
    } else {
        frame
    }
}

/// Receives until the end sentinel, or until `spec.timeout` passes without
/// a frame once traffic started (every end sentinel lost).
fn receive(
    endpoint: Endpoint,
    spec: &TransferSpec,
    pattern: &Pattern,
    meter: &Meter,
) -> Result<ReceiverSide, TrafficError> {
    let socket = endpoint.socket;
    socket
        .set_read_timeout(Some(POLL))
        .map_err(|e| TrafficError::io("set SO_RCVTIMEO", e))?;
    let mut buf = vec![0u8; RECV_BUF];
    let mut session = ReceiveSession::new(spec.circuit);
    let waiting_for = format!("waiting for the first frame on {}", endpoint.ifname);
    // Reading the socket's statistics resets them: from here on they
    // count this run's drops.
    let _ = socket_drops(&socket);
    let before = super::drops::snapshot();
    loop {
        match (&socket).read(&mut buf) {
            Ok(n) => {
                let frame = strip_padding(&buf[..n]);
                if let Arrival::End { .. } = session.arrival(pattern, frame, meter) {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if session.quiet(spec.timeout, &waiting_for)? {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(TrafficError::io(
                    format!("receive on {}", endpoint.ifname),
                    e,
                ))
            }
        }
    }
    let mut side = session.finish();
    let mut drops = crate::losses::delta(&before, &super::drops::snapshot());
    if let Some(n) = socket_drops(&socket).filter(|&n| n > 0) {
        *drops.entry("socket_receive_queue_full".into()).or_insert(0) += n;
    }
    side.drops = Some(drops);
    Ok(side)
}

/// Frames the packet socket dropped because its receive queue was full
/// since the last call (`PACKET_STATISTICS` resets as it reads).
fn socket_drops(socket: &Socket) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let mut stats = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: `stats` is writable for `len` bytes and the descriptor is
    // open for the call (`socket` borrows its owner).
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut stats as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(u64::from(stats.tp_drops))
}

/// Sets its flag when dropped: on every way out of the receiver thread.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Sends the start sentinels, `count` data frames and the end sentinels
/// to `dest_mac` on the endpoint's interface.
fn transmit(
    endpoint: Endpoint,
    dest_mac: [u8; 6],
    spec: &TransferSpec,
    pattern: &Pattern,
    meter: &Meter,
    receiver_done: &AtomicBool,
) -> Result<(SenderSide, SocketFacts), TrafficError> {
    let Endpoint {
        socket,
        ifname,
        ifindex,
        facts,
    } = endpoint;
    // A full socket buffer blocks the send; the timeout bounds that wait.
    socket
        .set_write_timeout(Some(spec.timeout))
        .map_err(|e| TrafficError::io("set SO_SNDTIMEO", e))?;
    let dest = link_addr(ifindex, RAW_ETHERTYPE, Some(dest_mac));
    let mut buf = vec![0u8; spec.len];
    let send = |buf: &[u8]| -> Result<(), TrafficError> {
        let mut full_since: Option<Instant> = None;
        loop {
            match socket.send_to(buf, &dest) {
                Ok(n) if n == buf.len() => return Ok(()),
                Ok(n) => {
                    return Err(TrafficError::Invalid(format!(
                        "the kernel took {n} of a {}-byte frame on {ifname}",
                        buf.len()
                    )))
                }
                // The device queue is full: wait for it, as a blocking
                // socket waits for its buffer, but not forever.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    let since = *full_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= spec.timeout {
                        return Err(TrafficError::timeout(
                            spec.timeout,
                            format!("waiting for {ifname}'s queue to take a frame"),
                        ));
                    }
                    std::thread::yield_now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(TrafficError::timeout(
                        spec.timeout,
                        format!("waiting for send buffer space on {ifname}"),
                    ))
                }
                Err(e) => return Err(TrafficError::io(format!("send a frame on {ifname}"), e)),
            }
        }
    };
    let (sent, elapsed, cpu) =
        super::udp::send_start_and_data(spec, pattern, meter, &mut buf, send)?;
    // End sentinels until the receiver has one (a queue's backlog can
    // swallow any fixed number), for at most END_WAIT.
    datagram::write(&mut buf, Kind::End, sent, spec.circuit, pattern);
    let ending = Instant::now();
    while !receiver_done.load(Ordering::Acquire) && ending.elapsed() < END_WAIT {
        let _ = socket.send_to(&buf, &dest);
        std::thread::sleep(SENTINEL_GAP);
    }
    Ok((
        SenderSide {
            bytes: sent * spec.len as u64,
            datagrams: sent,
            elapsed,
            cpu,
            retransmits: None,
        },
        facts,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram::DatagramError;

    fn datagram(len: usize, seq: u64, pattern: &Pattern) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        datagram::write(&mut buf, Kind::Data, seq, 0, pattern);
        buf
    }

    #[test]
    fn zero_padding_of_a_short_frame_is_cut_to_the_header_length() {
        let pattern = Pattern::new(2048);
        for len in [HEADER_LEN, 17, 30, ETH_MIN_PAYLOAD - 1] {
            let sent = datagram(len, 9, &pattern);
            let mut frame = sent.clone();
            frame.resize(ETH_MIN_PAYLOAD, 0);
            assert_eq!(strip_padding(&frame), &sent[..], "len {len}");
            assert!(datagram::check(strip_padding(&frame), &pattern).is_ok());
        }
    }

    #[test]
    fn unpadded_frames_pass_through_whole() {
        let pattern = Pattern::new(2048);
        for len in [HEADER_LEN, ETH_MIN_PAYLOAD, ETH_MIN_PAYLOAD + 1, 1500] {
            let frame = datagram(len, 3, &pattern);
            assert_eq!(strip_padding(&frame).len(), len);
        }
    }

    #[test]
    fn a_length_claiming_more_than_arrived_is_never_trusted() {
        let pattern = Pattern::new(2048);
        let mut frame = datagram(40, 1, &pattern);
        frame.truncate(30);
        assert_eq!(strip_padding(&frame).len(), 30);
        assert_eq!(
            datagram::check(strip_padding(&frame), &pattern),
            Err(DatagramError::Length {
                claimed: 40,
                received: 30
            })
        );
        // A huge claimed length is not trusted either.
        frame[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(strip_padding(&frame).len(), 30);
    }

    #[test]
    fn non_zero_bytes_past_the_length_are_not_padding() {
        let pattern = Pattern::new(2048);
        let mut frame = datagram(20, 5, &pattern);
        frame.resize(ETH_MIN_PAYLOAD, 0);
        frame[ETH_MIN_PAYLOAD - 1] = 1;
        assert_eq!(strip_padding(&frame).len(), ETH_MIN_PAYLOAD);
        assert!(datagram::check(strip_padding(&frame), &pattern).is_err());
    }

    #[test]
    fn zero_bytes_past_the_length_of_a_long_frame_are_not_padding() {
        // Ethernet pads only up to its minimum; longer frames with zeroes
        // after the datagram were altered on the way.
        let pattern = Pattern::new(2048);
        let mut frame = datagram(60, 5, &pattern);
        frame.resize(100, 0);
        assert_eq!(strip_padding(&frame).len(), 100);
    }

    #[test]
    fn garbage_and_impossible_lengths_are_returned_whole() {
        assert_eq!(strip_padding(&[]).len(), 0);
        assert_eq!(strip_padding(&[0u8; 10]).len(), 10);
        assert_eq!(
            strip_padding(&[0u8; ETH_MIN_PAYLOAD]).len(),
            ETH_MIN_PAYLOAD
        );
        // A header whose length is shorter than a header.
        let pattern = Pattern::new(2048);
        let mut frame = datagram(HEADER_LEN, 0, &pattern);
        frame.resize(ETH_MIN_PAYLOAD, 0);
        frame[4..8].copy_from_slice(&8u32.to_be_bytes());
        assert_eq!(strip_padding(&frame).len(), ETH_MIN_PAYLOAD);
    }

    #[test]
    fn the_link_address_is_a_whole_sockaddr_ll() {
        let addr = link_addr(7, RAW_ETHERTYPE, Some([2, 0, 0, 0, 0, 9]));
        assert_eq!(addr.family(), libc::AF_PACKET as socket2::sa_family_t);
        assert_eq!(
            addr.len() as usize,
            std::mem::size_of::<libc::sockaddr_ll>()
        );
    }
}
