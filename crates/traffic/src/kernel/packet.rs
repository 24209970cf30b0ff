//! AF_PACKET sockets for link-level frames on the kernel's side, the XTP
//! study's "NIT" raw test: `SOCK_DGRAM`, so the kernel builds and strips
//! the Ethernet header and the payload is exactly the test datagram
//! (a link may pad a short one: [`crate::datagram::strip_padding`]).

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;

use socket2::{Domain, SockAddr, SockAddrStorage, Socket, Type};

use crate::error::TrafficError;

/// A packet socket on one interface, for one Ethertype.
pub struct PacketSocket {
    pub(super) socket: Socket,
    ifname: String,
    ifindex: i32,
    ethertype: u16,
}

impl PacketSocket {
    /// Opens a non-blocking `SOCK_DGRAM` packet socket on `ifname` (in
    /// the calling thread's namespace) for frames of `ethertype`, with
    /// `sockbuf` applied. It sees only frames that arrive, not its own
    /// host's outgoing ones (`PACKET_IGNORE_OUTGOING`), so a sender's
    /// queue holds only what its peer sends back.
    pub fn open(
        ifname: &str,
        ethertype: u16,
        sockbuf: Option<usize>,
    ) -> Result<Self, TrafficError> {
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
        set_ignore_outgoing(&socket)?;
        socket
            .bind(&link_addr(ifindex, ethertype, None))
            .map_err(|e| TrafficError::io(format!("bind an AF_PACKET socket to {ifname}"), e))?;
        socket
            .set_nonblocking(true)
            .map_err(|e| TrafficError::io("set the socket non-blocking", e))?;
        let packet = Self {
            socket,
            ifname: ifname.to_string(),
            ifindex,
            ethertype,
        };
        // Reading the statistics resets them: the run counts from here.
        let _ = packet.drops();
        Ok(packet)
    }

    pub fn name(&self) -> &str {
        &self.ifname
    }

    /// Sends one frame to `mac`; false when the queue is full.
    pub fn send_to(&self, frame: &[u8], mac: [u8; 6]) -> Result<bool, TrafficError> {
        let dest = link_addr(self.ifindex, self.ethertype, Some(mac));
        loop {
            match self.socket.send_to(frame, &dest) {
                Ok(n) if n == frame.len() => return Ok(true),
                Ok(n) => {
                    return Err(TrafficError::Invalid(format!(
                        "the kernel took {n} of a {}-byte frame on {}",
                        frame.len(),
                        self.ifname
                    )))
                }
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.raw_os_error() == Some(libc::ENOBUFS) =>
                {
                    return Ok(false)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TrafficError::io(
                        format!("send a frame on {}", self.ifname),
                        e,
                    ))
                }
            }
        }
    }

    /// The next frame's payload into `buf`, with its sender's address.
    pub fn recv_from(&self, buf: &mut [u8]) -> Result<Option<(usize, [u8; 6])>, TrafficError> {
        loop {
            // SAFETY: sockaddr_ll is plain data; all zeroes is valid.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `buf` is writable for `buf.len()` bytes and `from`
            // for `len`, both for the call; the descriptor is open
            // (`self` owns it).
            let n = unsafe {
                libc::recvfrom(
                    self.socket.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n >= 0 {
                let mut mac = [0u8; 6];
                mac.copy_from_slice(&from.sll_addr[..6]);
                return Ok(Some((n as usize, mac)));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(None),
                io::ErrorKind::Interrupted => {}
                _ => return Err(TrafficError::io(format!("receive on {}", self.ifname), e)),
            }
        }
    }

    /// Frames the socket's queue dropped since the last call
    /// (`PACKET_STATISTICS`, which resets on reading).
    pub fn drops(&self) -> Option<u64> {
        socket_drops(&self.socket)
    }

    /// The interface's Ethernet address (SIOCGIFHWADDR).
    pub fn hardware_address(&self) -> Result<[u8; 6], TrafficError> {
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

/// Asks the kernel not to hand the socket its own host's outgoing frames.
fn set_ignore_outgoing(socket: &Socket) -> Result<(), TrafficError> {
    let on: libc::c_int = 1;
    // SAFETY: the option value is one int, readable for the call; the
    // descriptor is open (borrowed).
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(TrafficError::io(
            "set PACKET_IGNORE_OUTGOING",
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RAW_ETHERTYPE;

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
