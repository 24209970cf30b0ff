//! TAP: a Linux TAP device (`/dev/net/tun` with `IFF_TAP | IFF_NO_PI`), so
//! the reference stack can sit on one end of a kernel network interface
//! and the Linux kernel on the other (DESIGN.md, "Links").
//!
//! What the kernel transmits on the TAP interface arrives here as whole
//! Ethernet frames (no FCS, no packet-information header), and what this
//! link transmits arrives at the kernel as if received from a wire. The
//! descriptor is non-blocking: [`Link::receive`] returns `None` when the
//! kernel has nothing queued, and a transmit the kernel cannot take
//! (`EAGAIN`, `ENOBUFS`) is a [`LinkError::QueueFull`]; while the kernel's
//! side is down (`EIO`) it is [`LinkError::Down`].
//!
//! The device is created in the network namespace of the calling thread
//! and disappears when the `Tap` is dropped (it is not made persistent).
//! A TAP that already exists (a persistent one, e.g. made by `ip tuntap add
//! mode tap user ...`) is attached to instead; that needs no privilege if
//! the caller owns it. The kernel side's MTU is set to the link's MTU when
//! it differs.
//!
//! One frame per system call each way: TAP has no batched read or write
//! (`readv`/`writev` gather one frame). A frame is read straight into the
//! buffer [`Link::receive`] is given, with an overflow area behind it, so a
//! frame too long for that buffer is seen whole, then dropped and counted
//! (`dropped_rx_too_long`), never truncated, and the common case costs one
//! copy (kernel to the stack's buffer), as the NIC's DMA does.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::os;
use super::vnet::HEADER_LEN as VNET_HDR_LEN;
use super::{Link, LinkError, LinkStats, Medium};
use crate::time::Instant;

/// The longest interface name the kernel takes, without the final NUL.
pub const MAX_NAME_LEN: usize = libc::IFNAMSIZ - 1;

/// The MTU range of a TAP interface (Linux's `ETH_MIN_MTU` and the tun
/// driver's `MAX_MTU`).
pub const MTU_RANGE: std::ops::RangeInclusive<usize> = 68..=65_535;

/// The longest frame a TAP can hand over: the largest MTU, the Ethernet
/// header and an 802.1Q tag.
const MAX_FRAME: usize = 65_535 + wire::ethernet::TAGGED_HEADER_LEN;

/// Scatter-gather parts `writev` takes at most; beyond, the frame is
/// gathered into one buffer first.
const MAX_IOVECS: usize = 64;

/// Failures of the device's system calls after it was opened: neither the
/// stack's fault nor a full queue (e.g. the interface was deleted under
/// the link). Shared, so a runner can read them after the `Tap` was boxed
/// into a host.
#[derive(Debug, Default)]
pub struct TapErrors {
    tx: AtomicU64,
    tx_link_down: AtomicU64,
    rx: AtomicU64,
    /// The `errno` of the latest failure, 0 if none.
    last_errno: AtomicU64,
    /// The interface was deleted under the link (`EBADFD`).
    gone: AtomicBool,
}

impl TapErrors {
    /// Transmits that failed for another reason than a full queue or a
    /// down interface, counted as well in `LinkStats::dropped_os_error`.
    pub fn tx(&self) -> u64 {
        self.tx.load(Ordering::Relaxed)
    }

    /// Transmits refused because the kernel side of the TAP was down
    /// (`EIO`): lost, as on a wire with nobody at the other end; counted
    /// as well in `LinkStats::dropped_link_down`.
    pub fn tx_link_down(&self) -> u64 {
        self.tx_link_down.load(Ordering::Relaxed)
    }

    /// Reads that failed (other than "nothing queued").
    pub fn rx(&self) -> u64 {
        self.rx.load(Ordering::Relaxed)
    }

    /// Whether the interface was deleted under the link (e.g. `ip link
    /// del`): the descriptor is dead (`EBADFD`, and `poll` reports it
    /// ready at once, so a runner must stop waiting on it).
    pub fn device_gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }

    /// The latest failure, if any.
    pub fn last(&self) -> Option<io::Error> {
        match self.last_errno.load(Ordering::Relaxed) {
            0 => None,
            errno => Some(io::Error::from_raw_os_error(errno as i32)),
        }
    }

    fn record(&self, counter: &AtomicU64, error: &io::Error) {
        counter.fetch_add(1, Ordering::Relaxed);
        let errno = error.raw_os_error().unwrap_or(libc::EIO);
        self.last_errno.store(errno as u64, Ordering::Relaxed);
        if errno == libc::EBADFD {
            self.gone.store(true, Ordering::Relaxed);
        }
    }
}

/// A TAP device's link.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    /// For interface ioctls, in the namespace the TAP was made in.
    control: OwnedFd,
    name: String,
    mtu: usize,
    /// Where a frame longer than the receiver's buffer lands, whole.
    overflow: Box<[u8]>,
    /// Where a frame of too many parts for one `writev` is gathered.
    gather: Vec<u8>,
    /// Opened with `IFF_VNET_HDR`: every frame each way has a
    /// `virtio_net_hdr` in front, and TCP super-frames go whole (GSO).
    vnet_header: bool,
    /// What [`vnet_header`](Self::vnet_header) links did with headers.
    vnet: TapVnetStats,
    stats: LinkStats,
    errors: Arc<TapErrors>,
}

/// What a TAP opened with `IFF_VNET_HDR` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapVnetStats {
    /// TCP super-frames of the stack's sent whole (GSO).
    pub gso_sent: u64,
    /// Received frames whose transport checksum was completed here.
    pub checksums_completed: u64,
    /// Received frames dropped: a GSO frame (the TAP offers the kernel no
    /// segmentation, so none should come) or an impossible header.
    pub dropped: u64,
}

impl Tap {
    /// Creates the TAP interface `name` (or attaches to it if it exists
    /// and is a TAP without packet information) in the network namespace
    /// of the calling thread, carrying IP packets of up to `mtu` bytes.
    /// An empty name, or one with `%d`, lets the kernel number it
    /// (`tap%d`); [`name`](Self::name) tells the name given.
    ///
    /// Errors: a malformed name or an MTU outside 68..=65535
    /// (`InvalidInput`); no `/dev/net/tun` (`NotFound`: the `tun` module is
    /// not loaded); no right to create the device (`PermissionDenied`:
    /// creating one needs `CAP_NET_ADMIN`, attaching to a persistent one
    /// needs to own it); the name taken by another kind of device or
    /// another process (`ResourceBusy` or `InvalidInput`).
    pub fn open(name: &str, mtu: usize) -> io::Result<Tap> {
        Self::open_with(name, mtu, false)
    }

    /// [`open`](Self::open), with `vnet_header` a TAP whose frames carry a
    /// `virtio_net_hdr` (`IFF_VNET_HDR`), so that the stack's TCP
    /// super-frames (segmentation offload, [`crate::iface::offload`]) go
    /// to the kernel whole, as a virtio NIC's do. The kernel is offered no
    /// offload the other way (`TUNSETOFFLOAD` 0): it sends ordinary frames
    /// with complete checksums. Attaching to an existing TAP needs it to
    /// have been made with the same flag.
    pub fn open_with(name: &str, mtu: usize, vnet_header: bool) -> io::Result<Tap> {
        let request_name = validate_name(name)?;
        if !MTU_RANGE.contains(&mtu) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "TAP MTU {mtu} is outside {}..={}",
                    MTU_RANGE.start(),
                    MTU_RANGE.end()
                ),
            ));
        }
        let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
        // SAFETY: `path` is a valid NUL-terminated string that outlives the
        // call; `open` has no other memory effects.
        let raw = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let error = io::Error::last_os_error();
            return Err(explain(error, "opening /dev/net/tun", name));
        }
        // SAFETY: `raw` is a descriptor `open` just returned and nothing
        // else owns it; the OwnedFd closes it exactly once.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };

        let mut request = ifreq_named(&request_name);
        let vnet_flag = if vnet_header { libc::IFF_VNET_HDR } else { 0 };
        request.ifr_ifru.ifru_flags =
            (libc::IFF_TAP | libc::IFF_NO_PI | vnet_flag) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which
        // `request` is (a properly aligned, initialized libc::ifreq that
        // lives across the call); `fd` is an open descriptor of the tun
        // device.
        let result = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut request) };
        if result < 0 {
            let error = io::Error::last_os_error();
            return Err(explain(error, "creating the TAP (TUNSETIFF)", name));
        }
        if vnet_header {
            let size: libc::c_int = VNET_HDR_LEN as libc::c_int;
            // SAFETY: TUNSETVNETHDRSZ reads one int through the pointer,
            // which points at `size`, alive across the call; `fd` is the
            // tun descriptor just set up.
            let result = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &size) };
            if result < 0 {
                let error = io::Error::last_os_error();
                return Err(explain(error, "setting the vnet header size", name));
            }
            // TUNSETOFFLOAD takes its flags as the argument itself: none.
            // SAFETY: no memory is passed; `fd` is the tun descriptor.
            let result =
                unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETOFFLOAD, 0 as libc::c_ulong) };
            if result < 0 {
                let error = io::Error::last_os_error();
                return Err(explain(error, "setting the TAP's offloads", name));
            }
        }
        let given = name_from_ifreq(&request);
        let control = control_socket()
            .map_err(|error| explain(error, "opening a socket for interface ioctls", &given))?;
        set_kernel_mtu(&control, &given, mtu)
            .map_err(|error| explain(error, "setting the TAP interface's MTU", &given))?;
        Ok(Tap {
            fd,
            control,
            name: given,
            mtu,
            overflow: vec![0; MAX_FRAME].into_boxed_slice(),
            gather: Vec::new(),
            vnet_header,
            vnet: TapVnetStats::default(),
            stats: LinkStats::default(),
            errors: Arc::default(),
        })
    }

    /// The interface's name, as the kernel gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the kernel's side of the TAP is up (`ip link set NAME up`).
    /// Until it is, the kernel refuses what the link transmits (`EIO`,
    /// counted by [`TapErrors::tx_link_down`]), so a host should not start
    /// Duplicate Address Detection or router solicitation before (Linux
    /// too waits for its interface to be up). Works from any thread: the
    /// question goes to the namespace the TAP was made in.
    pub fn is_up(&self) -> io::Result<bool> {
        let flags = os::read_flags(
            self.control.as_raw_fd(),
            &os::interface_name(&self.name)?,
            &self.name,
        )?;
        Ok(flags & libc::IFF_UP != 0)
    }

    /// Whether frames carry a `virtio_net_hdr` ([`open_with`](Self::open_with)).
    pub fn vnet_header(&self) -> bool {
        self.vnet_header
    }

    /// What the link did with `virtio_net_hdr`s.
    pub fn vnet_stats(&self) -> TapVnetStats {
        self.vnet
    }

    /// Failures of the device's system calls, shared: read them after the
    /// link has moved into a host.
    pub fn errors(&self) -> Arc<TapErrors> {
        Arc::clone(&self.errors)
    }

    /// Writes `prefix` (a `virtio_net_hdr`, or nothing) and the frame made
    /// of `parts` (`len` bytes) with one `writev`; the bytes written.
    fn write_frame(&mut self, prefix: &[u8], parts: &[&[u8]], len: usize) -> io::Result<usize> {
        let fd = self.fd.as_raw_fd();
        if parts.len() == 1 && prefix.is_empty() {
            return write_all_once(fd, parts[0]);
        }
        if parts.len() + 1 > MAX_IOVECS {
            let mut gather = std::mem::take(&mut self.gather);
            gather.clear();
            gather.reserve(prefix.len() + len);
            gather.extend_from_slice(prefix);
            for part in parts {
                gather.extend_from_slice(part);
            }
            let result = write_all_once(fd, &gather);
            self.gather = gather;
            return result;
        }
        let mut iovecs = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; MAX_IOVECS];
        let mut count = 0;
        for part in std::iter::once(&prefix).chain(parts) {
            if part.is_empty() {
                continue;
            }
            iovecs[count].iov_base = part.as_ptr() as *mut libc::c_void;
            iovecs[count].iov_len = part.len();
            count += 1;
        }
        // SAFETY: the first `count` (at most MAX_IOVECS) iovecs point at
        // the live slices of `prefix` and `parts`, which outlive the call;
        // `writev` only reads through them. `fd` is the open tun
        // descriptor.
        let written = unsafe { libc::writev(fd, iovecs.as_ptr(), count as libc::c_int) };
        if written < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(written as usize)
    }

    /// Sends `prefix` and the frame of `parts` (`len` bytes), counting
    /// the outcome.
    fn send(&mut self, prefix: &[u8], parts: &[&[u8]], len: usize) -> Result<(), LinkError> {
        match self.write_frame(prefix, parts, len) {
            Ok(written) if written == prefix.len() + len => {
                self.stats.tx_frames += 1;
                self.stats.tx_bytes += len as u64;
                Ok(())
            }
            Ok(_) => {
                // A TAP takes a frame whole or not at all; anything else
                // is the device misbehaving.
                let error = io::Error::from_raw_os_error(libc::EIO);
                self.errors.record(&self.errors.tx, &error);
                self.stats.dropped_os_error += 1;
                Err(LinkError::Os(libc::EIO))
            }
            Err(error) => match error.raw_os_error() {
                Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) => {
                    self.stats.dropped_queue_full += 1;
                    Err(LinkError::QueueFull)
                }
                // The tun driver refuses frames while the interface is
                // down.
                Some(libc::EIO) => {
                    self.errors.tx_link_down.fetch_add(1, Ordering::Relaxed);
                    self.stats.dropped_link_down += 1;
                    Err(LinkError::Down)
                }
                errno => {
                    self.errors.record(&self.errors.tx, &error);
                    self.stats.dropped_os_error += 1;
                    Err(LinkError::Os(errno.unwrap_or(libc::EIO)))
                }
            },
        }
    }
}

impl Tap {
    /// Reads a received frame's `virtio_net_hdr` (virtio 1.2 §5.1.6.4):
    /// completes a partial checksum in `frame`; false (dropped, counted)
    /// for a GSO frame, which this TAP never asked for, or an impossible
    /// header.
    fn accept_header(&mut self, header: &[u8], frame: &mut [u8]) -> bool {
        let Ok(header) = super::vnet::VnetHeaderRepr::parse(header) else {
            self.vnet.dropped += 1;
            return false;
        };
        if header.gso != super::vnet::Gso::None {
            self.vnet.dropped += 1;
            return false;
        }
        if header.needs_csum {
            let (start, offset) = (header.csum_start.into(), header.csum_offset.into());
            if !super::vnet::complete_checksum(frame, start, offset) {
                self.vnet.dropped += 1;
                return false;
            }
            self.vnet.checksums_completed += 1;
        }
        true
    }
}

impl AsRawFd for Tap {
    /// The tun descriptor, e.g. to `poll(2)` for readability while idle.
    /// It stays owned by the `Tap`.
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Link for Tap {
    fn medium(&self) -> Medium {
        Medium::Ethernet
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn transmit(&mut self, _now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        let max = self.mtu + Medium::Ethernet.header_len();
        let len = super::frame_len(parts, max, &mut self.stats)?;
        // A zeroed virtio_net_hdr: no checksum to complete, no GSO.
        let header = [0u8; VNET_HDR_LEN];
        let prefix: &[u8] = if self.vnet_header { &header } else { &[] };
        self.send(prefix, parts, len)
    }

    /// With `IFF_VNET_HDR` the kernel takes a GSO super-frame whole.
    fn takes_gso(&self) -> bool {
        self.vnet_header
    }

    fn transmit_gso(
        &mut self,
        _now: Instant,
        header: &super::vnet::VnetHeaderRepr,
        parts: &[&[u8]],
    ) -> Result<(), LinkError> {
        let mut bytes = [0u8; VNET_HDR_LEN];
        if !self.vnet_header || header.emit(&mut bytes).is_err() {
            self.stats.dropped_unsupported += 1;
            return Err(LinkError::Unsupported);
        }
        let len = super::frame_len(parts, MAX_FRAME, &mut self.stats)?;
        self.send(&bytes, parts, len)?;
        self.vnet.gso_sent += 1;
        Ok(())
    }

    fn receive(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        // A frame too long for `buf` is read whole (into the overflow) and
        // dropped; keep reading so that it does not end this poll's
        // receiving, but boundedly.
        for _ in 0..64 {
            let mut header = [0u8; VNET_HDR_LEN];
            let header_len = if self.vnet_header { VNET_HDR_LEN } else { 0 };
            let iovecs = [
                libc::iovec {
                    iov_base: header.as_mut_ptr() as *mut libc::c_void,
                    iov_len: header_len,
                },
                libc::iovec {
                    iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                    iov_len: buf.len(),
                },
                libc::iovec {
                    iov_base: self.overflow.as_mut_ptr() as *mut libc::c_void,
                    iov_len: self.overflow.len(),
                },
            ];
            // SAFETY: the iovecs point at distinct live, writable buffers
            // (the local header, `buf`, borrowed mutably for this call,
            // and the Tap's own overflow) of the lengths given; `readv`
            // writes at most that much through them. `fd` is the open tun
            // descriptor.
            let read = unsafe { libc::readv(self.fd.as_raw_fd(), iovecs.as_ptr(), 3) };
            if read < 0 {
                let error = io::Error::last_os_error();
                if !matches!(error.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
                    self.errors.record(&self.errors.rx, &error);
                }
                return None;
            }
            let Some(len) = (read as usize).checked_sub(header_len) else {
                self.vnet.dropped += 1;
                continue;
            };
            if len == 0 {
                return None;
            }
            if len > buf.len() {
                self.stats.dropped_rx_too_long += 1;
                continue;
            }
            if self.vnet_header && !self.accept_header(&header, &mut buf[..len]) {
                continue;
            }
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += len as u64;
            return Some(len);
        }
        None
    }

    fn transmit_ring(&self) -> Option<usize> {
        None
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        None
    }

    fn received_at(&self) -> Option<Instant> {
        None
    }

    fn next_arrival(&self) -> Option<Instant> {
        None
    }

    fn readable_fd(&self) -> Option<RawFd> {
        Some(self.as_raw_fd())
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }
}

/// Checks `name` as the kernel would (`dev_valid_name`), so a bad name is
/// an error here and not a surprise later: at most [`MAX_NAME_LEN`] bytes,
/// not `.` or `..`, no `/`, `:`, whitespace or NUL. Empty is allowed (the
/// kernel picks `tap%d`). Returns the name as the ioctl takes it.
pub fn validate_name(name: &str) -> io::Result<[libc::c_char; libc::IFNAMSIZ]> {
    let invalid = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad TAP interface name {name:?}: {why}"),
        )
    };
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(format!(
            "{} bytes, at most {MAX_NAME_LEN} allowed",
            name.len()
        )));
    }
    if name == "." || name == ".." {
        return Err(invalid("not a name".into()));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
    {
        return Err(invalid(format!("{c:?} is not allowed")));
    }
    let mut raw = [0 as libc::c_char; libc::IFNAMSIZ];
    for (slot, byte) in raw.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    Ok(raw)
}

/// An `ifreq` naming `name`, every other byte zero.
fn ifreq_named(name: &[libc::c_char; libc::IFNAMSIZ]) -> libc::ifreq {
    // SAFETY: `ifreq` is plain old data (arrays, integers, a union of
    // such and a raw pointer), for which all-zero bytes are a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    request.ifr_name = *name;
    request
}

/// The name the kernel wrote back into an `ifreq`.
fn name_from_ifreq(request: &libc::ifreq) -> String {
    let bytes: Vec<u8> = request
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A socket for interface ioctls (`SIOCGIFMTU`, `SIOCSIFMTU`,
/// `SIOCGIFFLAGS`), in the calling thread's network namespace: a socket
/// stays in the namespace it was made in, wherever it is used from.
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: `socket` takes no pointers; a negative result is checked.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor `socket` just returned, owned by
    // nothing else; the OwnedFd closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Sets the kernel interface `name`'s MTU to `mtu` when it differs.
fn set_kernel_mtu(control: &OwnedFd, name: &str, mtu: usize) -> io::Result<()> {
    let ifname = validate_name(name)?;
    if os::read_mtu(control.as_raw_fd(), &os::interface_name(name)?, name)? == mtu {
        return Ok(());
    }
    let mut request = ifreq_named(&ifname);
    request.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    // SAFETY: SIOCSIFMTU reads the name and `ifru_mtu` of the `ifreq` it
    // is given, which `request` is, live across the call.
    if unsafe { libc::ioctl(control.as_raw_fd(), libc::SIOCSIFMTU, &request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes `frame` with one `write`, returning the bytes written.
fn write_all_once(fd: RawFd, frame: &[u8]) -> io::Result<usize> {
    // SAFETY: `frame` is a live slice of `frame.len()` readable bytes for
    // the duration of the call; `fd` is an open descriptor.
    let written = unsafe { libc::write(fd, frame.as_ptr() as *const libc::c_void, frame.len()) };
    if written < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(written as usize)
}

/// Adds what `doing` was and what the error usually means, keeping the
/// error's kind (so a caller can still tell `PermissionDenied`).
fn explain(error: io::Error, doing: &str, name: &str) -> io::Error {
    let hint = match error.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) if doing.contains("MTU") => {
            ": permission denied (changing an interface's MTU needs CAP_NET_ADMIN: \
             ask for the MTU the interface has, or set it with `ip link set NAME mtu N`)"
        }
        Some(libc::EPERM | libc::EACCES) => {
            ": permission denied (creating a TAP needs CAP_NET_ADMIN, e.g. root; \
             attaching to a persistent TAP needs to own it)"
        }
        Some(libc::ENOENT | libc::ENODEV) if doing.starts_with("opening") => {
            ": no TUN/TAP support (is the `tun` kernel module loaded?)"
        }
        Some(libc::EBUSY) => ": the interface is in use by another process",
        Some(libc::EINVAL) => {
            ": the name belongs to an interface that is not a TAP without packet information"
        }
        _ => "",
    };
    io::Error::new(
        error.kind(),
        format!("TAP {name:?}: {doing}: {error}{hint}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_like_the_kernel_does() {
        assert!(validate_name("sstap0").is_ok());
        assert!(validate_name("").is_ok(), "empty: the kernel numbers it");
        assert!(validate_name("tap%d").is_ok());
        assert!(validate_name(&"a".repeat(MAX_NAME_LEN)).is_ok());
        for bad in [
            "a".repeat(MAX_NAME_LEN + 1),
            "a-very-long-interface-name".into(),
            ".".into(),
            "..".into(),
            "a/b".into(),
            "a:b".into(),
            "a b".into(),
            "a\tb".into(),
            "a\0b".into(),
        ] {
            let error = validate_name(&bad).expect_err(&bad);
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
            assert!(error.to_string().contains("bad TAP interface name"));
        }
        let raw = validate_name("ab").unwrap();
        assert_eq!(&raw[..3], &[b'a' as libc::c_char, b'b' as libc::c_char, 0]);
    }

    #[test]
    fn a_long_name_or_a_bad_mtu_is_an_error_before_any_system_call() {
        let error = Tap::open("name-far-too-long-for-linux", 1500).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        let error = Tap::open("sstap-mtu", 67).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("MTU"), "{error}");
        let error = Tap::open("sstap-mtu", 65_536).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn errors_keep_their_kind_and_say_why() {
        let error = explain(
            io::Error::from_raw_os_error(libc::EPERM),
            "creating the TAP (TUNSETIFF)",
            "x",
        );
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("CAP_NET_ADMIN"), "{error}");
    }

    #[test]
    fn taps_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Tap>();
        assert_send::<crate::phy::Captured<Tap>>();
    }

    /// In a private network namespace of its own thread (so nothing
    /// outside it is touched), a TAP with an IPv4 address answers an ARP
    /// request written to it: a frame each way through the kernel. Skipped
    /// where namespaces or TAPs are refused (not root).
    #[test]
    fn the_kernel_answers_an_arp_request_written_to_the_tap() {
        let outcome = std::thread::spawn(arp_round_trip)
            .join()
            .expect("the test thread panicked");
        if let Err(why) = outcome {
            eprintln!("skipped: {why}");
        }
    }

    /// Ok(()) when the test ran and passed; Err(reason) when skipped.
    fn arp_round_trip() -> Result<(), String> {
        // SAFETY: unshare(CLONE_NEWNET) moves only this (test-owned,
        // short-lived) thread into a new, empty network namespace; it
        // takes no pointers.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(format!(
                "no private network namespace: {}",
                io::Error::last_os_error()
            ));
        }
        let mut tap = match Tap::open("sstest%d", 1400) {
            Ok(tap) => tap,
            Err(error) => return Err(format!("no TAP: {error}")),
        };
        assert!(tap.name().starts_with("sstest"), "{}", tap.name());
        assert_eq!((tap.mtu(), tap.medium()), (1400, Medium::Ethernet));
        assert_eq!(tap.next_arrival(), None);
        let mut buf = vec![0u8; 2048];
        assert_eq!(tap.receive(Instant::ZERO, &mut buf), None, "nothing yet");
        let too_big = vec![0u8; 1400 + 15];
        assert_eq!(
            tap.transmit(Instant::ZERO, &[&too_big]),
            Err(LinkError::TooBig {
                len: 1415,
                max: 1414
            })
        );
        // The kernel side: 10.9.9.1/24, up.
        let socket = {
            // SAFETY: no pointers; the result is checked.
            let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
            assert!(raw >= 0, "{}", io::Error::last_os_error());
            // SAFETY: a fresh descriptor owned by nothing else.
            unsafe { OwnedFd::from_raw_fd(raw) }
        };
        let ifname = validate_name(tap.name()).unwrap();
        assert_eq!(current_mtu(&socket, &ifname), 1400);
        assert!(!tap.is_up().unwrap(), "a new TAP is down");
        assert_eq!(
            tap.transmit(Instant::ZERO, &[&[0xff; 60]]),
            Err(LinkError::Down),
            "the kernel refuses frames while its side is down"
        );
        assert_eq!(tap.errors().tx_link_down(), 1);
        let mut request = ifreq_named(&ifname);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([10, 9, 9, 1]),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: sockaddr_in fits in (and is laid out as a prefix of)
        // the union's 16-byte sockaddr; both are plain data.
        unsafe {
            std::ptr::copy_nonoverlapping(
                &addr as *const libc::sockaddr_in as *const u8,
                &mut request.ifr_ifru.ifru_addr as *mut libc::sockaddr as *mut u8,
                std::mem::size_of::<libc::sockaddr_in>(),
            );
        }
        // SAFETY: SIOCSIFADDR reads the `ifreq` it is given.
        let set = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFADDR, &request) };
        assert_eq!(set, 0, "SIOCSIFADDR: {}", io::Error::last_os_error());
        let mut request = ifreq_named(&ifname);
        request.ifr_ifru.ifru_flags = libc::IFF_UP as libc::c_short;
        // SAFETY: SIOCSIFFLAGS reads the `ifreq` it is given.
        let up = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) };
        assert_eq!(up, 0, "SIOCSIFFLAGS: {}", io::Error::last_os_error());
        assert!(tap.is_up().unwrap());

        // Who has 10.9.9.1? Tell 10.9.9.2 (at 02:00:00:00:00:02).
        let ours = [0x02, 0, 0, 0, 0, 0x02];
        let mut frame = Vec::new();
        frame.extend_from_slice(&[0xff; 6]);
        frame.extend_from_slice(&ours);
        frame.extend_from_slice(&[0x08, 0x06]);
        let arp_head = [0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01];
        let body = [
            &ours[..],
            &[10, 9, 9, 2],
            &[0; 6],
            &[10, 9, 9, 1],
            &[0; 18], // padding to the 60-byte minimum
        ];
        let mut parts: Vec<&[u8]> = vec![&frame, &arp_head];
        parts.extend_from_slice(&body);
        tap.transmit(Instant::ZERO, &parts).expect("transmit");
        assert_eq!(tap.stats().tx_frames, 1);
        assert_eq!(
            (
                tap.stats().dropped_link_down,
                tap.stats().dropped_queue_full
            ),
            (1, 0),
            "the frame refused while down"
        );

        // The reply (skipping whatever else the kernel sends, e.g. IPv6
        // router solicitations or MLD reports, which need no address).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "no ARP reply; stats {:?}",
                tap.stats()
            );
            let Some(len) = tap.receive(Instant::ZERO, &mut buf) else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            let reply = &buf[..len];
            if reply.len() >= 42 && reply[12..14] == [0x08, 0x06] && reply[20..22] == [0, 2] {
                assert_eq!(&reply[..6], &ours, "to us");
                assert_eq!(&reply[28..32], &[10, 9, 9, 1], "sender: the kernel");
                assert_eq!(&reply[32..38], &ours, "target: us");
                break;
            }
        }
        // A receive buffer too short for the next frame drops it whole.
        tap.transmit(Instant::ZERO, &parts).expect("transmit");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut tiny = [0u8; 20];
        while tap.stats().dropped_rx_too_long == 0 {
            assert!(std::time::Instant::now() < deadline, "{:?}", tap.stats());
            assert_eq!(tap.receive(Instant::ZERO, &mut tiny), None);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(tap.errors().tx() + tap.errors().rx(), 0);
        Ok(())
    }

    fn current_mtu(socket: &OwnedFd, ifname: &[libc::c_char; libc::IFNAMSIZ]) -> usize {
        let mut request = ifreq_named(ifname);
        // SAFETY: SIOCGIFMTU writes the MTU into the `ifreq` it is given.
        let got = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFMTU, &mut request) };
        assert_eq!(got, 0, "SIOCGIFMTU: {}", io::Error::last_os_error());
        // SAFETY: the ioctl succeeded and wrote `ifru_mtu`.
        unsafe { request.ifr_ifru.ifru_mtu as usize }
    }
}
