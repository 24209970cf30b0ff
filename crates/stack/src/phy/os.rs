//! The host's system calls the links on its sockets and interfaces share
//! (AF_PACKET [`super::packet`], the IPv4 tunnel [`super::tunnel`], TAP
//! [`super::tap`]): sending a datagram from parts with one `sendmsg`,
//! what a failed send counts as, socket options and buffers, the
//! interface ioctls (MTU, Ethernet address, flags) and binding a packet
//! socket to an interface.

use std::ffi::{CStr, CString};
use std::fmt;
use std::io;
use std::mem;
use std::os::fd::RawFd;

use wire::ethernet::EthernetAddress;

use super::{LinkError, LinkStats};

/// A libc call's return code as a result: 0 is success, anything else
/// the error `errno` holds.
pub(super) fn os_result(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Parts of a frame sent as one I/O vector; more are gathered first. A
/// 64 KiB TCP super-frame of the stack's (segmentation offload) is a head
/// and some 30 pool buffers of payload.
const MAX_PARTS: usize = 64;

/// Sends `prefix` and `parts` as one datagram with one `sendmsg`, without
/// waiting; more parts than an I/O vector here holds are gathered into
/// `scratch` first.
pub(super) fn send_parts(
    fd: RawFd,
    prefix: &[u8],
    parts: &[&[u8]],
    scratch: &mut Vec<u8>,
) -> io::Result<()> {
    let gathered;
    let parts = if parts.len() > MAX_PARTS {
        scratch.clear();
        parts
            .iter()
            .for_each(|part| scratch.extend_from_slice(part));
        gathered = [scratch.as_slice()];
        &gathered[..]
    } else {
        parts
    };
    // SAFETY: iovec is a C struct of a pointer and a length; all zeroes is
    // valid.
    let mut iovecs: [libc::iovec; MAX_PARTS + 1] = unsafe { mem::zeroed() };
    let mut count = 0;
    for part in std::iter::once(&prefix).chain(parts) {
        if part.is_empty() {
            continue;
        }
        iovecs[count] = libc::iovec {
            // The kernel only reads through it (sendmsg).
            iov_base: part.as_ptr().cast_mut().cast(),
            iov_len: part.len(),
        };
        count += 1;
    }
    // SAFETY: msghdr is a C struct of integers and pointers; all zeroes is
    // valid (no name, no control data).
    let mut message: libc::msghdr = unsafe { mem::zeroed() };
    message.msg_iov = iovecs.as_mut_ptr();
    message.msg_iovlen = count as _;
    loop {
        // SAFETY: `message` points at `count` initialised iovecs, each
        // naming a live slice of its length that sendmsg only reads; the
        // socket is ours.
        let rc = unsafe { libc::sendmsg(fd, &message, libc::MSG_DONTWAIT) };
        if rc >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The [`LinkError`] for a failed send, counted: a full queue
/// (`EAGAIN`, `ENOBUFS`), a frame too big for the path (`EMSGSIZE`), the
/// interface down (`ENETDOWN`, `ENXIO`) or anything else; the last two
/// are also counted in `other`.
pub(super) fn send_error(
    error: &io::Error,
    len: usize,
    max: usize,
    stats: &mut LinkStats,
    other: &mut u64,
) -> LinkError {
    match error.raw_os_error() {
        Some(libc::EAGAIN | libc::ENOBUFS) => {
            stats.dropped_queue_full += 1;
            LinkError::QueueFull
        }
        Some(libc::EMSGSIZE) => {
            stats.dropped_too_big += 1;
            LinkError::TooBig { len, max }
        }
        Some(libc::ENETDOWN | libc::ENXIO) => {
            *other += 1;
            stats.dropped_link_down += 1;
            LinkError::Down
        }
        errno => {
            *other += 1;
            stats.dropped_os_error += 1;
            LinkError::Os(errno.unwrap_or(libc::EIO))
        }
    }
}

/// Sets an integer socket option.
pub(super) fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the option value is a live c_int whose size is passed; the
    // kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    os_result(rc)
}

/// Sets both socket buffers to `bytes`, past `net.core.*mem_max` when the
/// caller may (`SO_*BUFFORCE` needs CAP_NET_ADMIN).
pub(super) fn set_socket_buffers(fd: RawFd, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes)
        .map_err(|_| invalid(format!("a socket buffer of {bytes} bytes is too large")))?;
    for (force, plain, what) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, "SO_RCVBUF"),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, "SO_SNDBUF"),
    ] {
        if set_int_option(fd, libc::SOL_SOCKET, force, value).is_err() {
            set_int_option(fd, libc::SOL_SOCKET, plain, value)
                .map_err(|e| context(format!("set {what} to {bytes}"), e))?;
        }
    }
    Ok(())
}

/// An error that keeps `error`'s kind and says what was being done.
pub(super) fn context(what: impl fmt::Display, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{what}: {error}"))
}

pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// `interface` as the kernel takes it: shorter than IFNAMSIZ, no NUL.
pub(super) fn interface_name(interface: &str) -> io::Result<CString> {
    if interface.is_empty() || interface.len() >= libc::IFNAMSIZ {
        return Err(invalid(format!(
            "interface name {interface:?} is empty or longer than {} bytes",
            libc::IFNAMSIZ - 1
        )));
    }
    CString::new(interface)
        .map_err(|_| invalid(format!("interface name {interface:?} contains NUL")))
}

/// Runs the interface ioctl `request` on `name` and returns the filled
/// request.
pub(super) fn interface_ioctl(
    fd: RawFd,
    request: libc::c_ulong,
    name: &CStr,
    what: &str,
) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain data (a name array and a union of plain data);
    // all zeroes is a valid value of it.
    let mut ifreq: libc::ifreq = unsafe { mem::zeroed() };
    for (dst, &src) in ifreq.ifr_name.iter_mut().zip(name.to_bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: the fd is an open socket; `ifreq` is a whole ifreq whose name
    // is NUL-terminated (shorter than IFNAMSIZ, the rest zero), which the
    // interface ioctls read and write within.
    let rc = unsafe { libc::ioctl(fd, request as _, &mut ifreq as *mut libc::ifreq) };
    if rc != 0 {
        return Err(context(what, io::Error::last_os_error()));
    }
    Ok(ifreq)
}

/// The interface's MTU (`SIOCGIFMTU`).
pub(super) fn read_mtu(fd: RawFd, name: &CStr, interface: &str) -> io::Result<usize> {
    let ifreq = interface_ioctl(
        fd,
        libc::SIOCGIFMTU,
        name,
        &format!("read the MTU of {interface}"),
    )?;
    // SAFETY: SIOCGIFMTU succeeded, so it wrote the mtu member; every
    // member of the union is plain data, so reading it is sound regardless.
    let mtu = unsafe { ifreq.ifr_ifru.ifru_mtu };
    usize::try_from(mtu)
        .ok()
        .filter(|&mtu| mtu > 0)
        .ok_or_else(|| invalid(format!("{interface} reports an MTU of {mtu}")))
}

/// The interface's flags (`SIOCGIFFLAGS`: `IFF_UP`, `IFF_RUNNING`, …).
pub(super) fn read_flags(fd: RawFd, name: &CStr, interface: &str) -> io::Result<libc::c_int> {
    let ifreq = interface_ioctl(
        fd,
        libc::SIOCGIFFLAGS,
        name,
        &format!("read the flags of {interface}"),
    )?;
    // SAFETY: SIOCGIFFLAGS succeeded, so it wrote the flags member; every
    // member of the union is plain data. The kernel's flags are an
    // unsigned short in a signed field: keep the bits.
    let flags = unsafe { ifreq.ifr_ifru.ifru_flags } as u16;
    Ok(libc::c_int::from(flags))
}

/// The interface's Ethernet address (`SIOCGIFHWADDR`); an interface that
/// is not Ethernet is refused.
pub(super) fn read_mac(fd: RawFd, name: &CStr, interface: &str) -> io::Result<EthernetAddress> {
    let ifreq = interface_ioctl(
        fd,
        libc::SIOCGIFHWADDR,
        name,
        &format!("read the hardware address of {interface}"),
    )?;
    // SAFETY: SIOCGIFHWADDR succeeded, so it wrote the hwaddr member; every
    // member of the union is plain data, so reading it is sound regardless.
    let hwaddr = unsafe { ifreq.ifr_ifru.ifru_hwaddr };
    if hwaddr.sa_family != libc::ARPHRD_ETHER {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{interface} is not an Ethernet interface (hardware type {})",
                hwaddr.sa_family
            ),
        ));
    }
    let mut mac = [0u8; 6];
    for (dst, &src) in mac.iter_mut().zip(&hwaddr.sa_data) {
        *dst = src as u8;
    }
    Ok(EthernetAddress(mac))
}

/// Binds a packet socket to every protocol on interface `ifindex`.
pub(super) fn bind_packet(fd: RawFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all zeroes is valid.
    let mut addr: libc::sockaddr_ll = unsafe { mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    addr.sll_ifindex = i32::try_from(ifindex)
        .map_err(|_| invalid(format!("interface index {ifindex} is out of range")))?;
    // SAFETY: `addr` is a live sockaddr_ll whose size is passed; bind only
    // reads it.
    let rc = unsafe {
        libc::bind(
            fd,
            (&addr as *const libc::sockaddr_ll).cast(),
            mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    os_result(rc)
}
