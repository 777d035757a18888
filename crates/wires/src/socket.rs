//! Raw frames on one NIC: an AF_PACKET socket bound to it, a kernel
//! filter so only the EtherType wanted is copied up, the VLAN tag the
//! kernel strips given back (PACKET_AUXDATA), and the NIC's flags and MTU
//! read, changed and put back. No IP configuration is needed or touched.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

const ETH_P_ALL: u16 = 0x0003;

fn last() -> io::Error {
    io::Error::last_os_error()
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not an interface name"),
        ));
    }
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(r)
}

/// A datagram socket for interface ioctls.
fn ioctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the fd is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The interface's index.
pub fn ifindex(name: &str) -> io::Result<i32> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in an interface name"))?;
    // SAFETY: c is a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface `{name}`"),
        ));
    }
    Ok(i as i32)
}

/// The interface's flags (IFF_UP, ...).
pub fn flags(name: &str) -> io::Result<u32> {
    let s = ioctl_socket()?;
    let mut r = ifreq(name)?;
    // SAFETY: SIOCGIFFLAGS fills ifr_flags of a valid ifreq.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut r) } < 0 {
        return Err(last());
    }
    // SAFETY: the kernel set the flags member.
    Ok(unsafe { r.ifr_ifru.ifru_flags } as u16 as u32)
}

/// Sets the interface administratively up or down (link only: no address).
pub fn set_up(name: &str, up: bool) -> io::Result<()> {
    let s = ioctl_socket()?;
    let mut r = ifreq(name)?;
    // SAFETY: as in `flags`.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut r) } < 0 {
        return Err(last());
    }
    // SAFETY: reading and writing the flags member of the union.
    unsafe {
        let f = r.ifr_ifru.ifru_flags;
        let up_flag = libc::IFF_UP as libc::c_short;
        r.ifr_ifru.ifru_flags = if up { f | up_flag } else { f & !up_flag };
    }
    // SAFETY: SIOCSIFFLAGS reads a valid ifreq.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &r) } < 0 {
        return Err(last());
    }
    Ok(())
}

/// The interface's MTU.
pub fn mtu(name: &str) -> io::Result<u32> {
    let s = ioctl_socket()?;
    let mut r = ifreq(name)?;
    // SAFETY: SIOCGIFMTU fills ifr_mtu.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFMTU, &mut r) } < 0 {
        return Err(last());
    }
    // SAFETY: the kernel set the mtu member.
    Ok(unsafe { r.ifr_ifru.ifru_mtu } as u32)
}

pub fn set_mtu(name: &str, mtu: u32) -> io::Result<()> {
    let s = ioctl_socket()?;
    let mut r = ifreq(name)?;
    r.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    // SAFETY: SIOCSIFMTU reads a valid ifreq.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFMTU, &r) } < 0 {
        return Err(last());
    }
    Ok(())
}

/// The interface's MAC address, from sysfs.
pub fn mac(name: &str) -> io::Result<String> {
    Ok(
        std::fs::read_to_string(format!("/sys/class/net/{name}/address"))?
            .trim()
            .to_ascii_lowercase(),
    )
}

/// Whether the interface has carrier (a cable and a link partner).
pub fn carrier(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/carrier")).is_ok_and(|s| s.trim() == "1")
}

/// The machine's physical NICs: interfaces backed by a device (not
/// loopback, bonds, bridges, VLANs or veth), sorted by name.
pub fn physical_nics() -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/sys/class/net")? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let sys = e.path();
        // Wireless NICs have a device too, and never carry cluster traffic.
        if sys.join("device").exists() && !sys.join("wireless").exists() {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// A frame as received: its bytes (the VLAN tag the kernel stripped put
/// back in the frame) and whether this host sent it.
#[derive(Debug)]
pub struct Received {
    pub frame: Vec<u8>,
    pub outgoing: bool,
}

/// An AF_PACKET socket bound to one interface.
pub struct RawSocket {
    fd: OwnedFd,
    ifindex: i32,
}

/// Classic BPF: accept frames whose EtherType (after at most one tag
/// still in the frame) is `ethertype`, drop the rest in the kernel.
fn filter_for(ethertype: u16) -> Vec<libc::sock_filter> {
    let f = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let (ldh, jeq, ret) = (0x28, 0x15, 0x06);
    let t = u32::from(ethertype);
    vec![
        f(ldh, 0, 0, 12),      // 0: A = type at 12
        f(jeq, 3, 0, t),       // 1: wanted -> accept
        f(jeq, 0, 3, 0x8100),  // 2: a tag left in the frame? else drop
        f(ldh, 0, 0, 16),      // 3: A = type after the tag
        f(jeq, 0, 1, t),       // 4: wanted -> accept, else drop
        f(ret, 0, 0, 0x40000), // 5: accept (whole frame)
        f(ret, 0, 0, 0),       // 6: drop
    ]
}

impl RawSocket {
    /// Opens a socket on `ifname` that receives frames of `ethertype`
    /// (tagged or not) and can send any frame.
    pub fn open(ifname: &str, ethertype: u16) -> io::Result<RawSocket> {
        let ifindex = ifindex(ifname)?;
        // Protocol 0: nothing is queued until the filter is in place and
        // the socket is bound.
        // SAFETY: plain socket(2); the fd is owned at once.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(last());
        }
        // SAFETY: raw is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut prog = filter_for(ethertype);
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_mut_ptr(),
        };
        setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            &fprog,
        )?;
        let one: libc::c_int = 1;
        setsockopt(fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_AUXDATA, &one)?;
        // SAFETY: sockaddr_ll is plain data.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: bind(2) with a valid sockaddr_ll and its size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(last());
        }
        Ok(RawSocket { fd, ifindex })
    }

    /// Makes the NIC accept frames sent to a multicast MAC (LLDP's group
    /// addresses), for as long as the socket is open.
    pub fn join(&self, group: [u8; 6]) -> io::Result<()> {
        // SAFETY: packet_mreq is plain data.
        let mut mr: libc::packet_mreq = unsafe { zeroed() };
        mr.mr_ifindex = self.ifindex;
        mr.mr_type = libc::PACKET_MR_MULTICAST as u16;
        mr.mr_alen = 6;
        mr.mr_address[..6].copy_from_slice(&group);
        setsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mr,
        )
    }

    /// Makes the NIC pass every frame up, for as long as the socket is
    /// open (the kernel counts such requests and undoes them at close): a
    /// NIC filters VLANs no VLAN interface registered (virtio-net and many
    /// hardware NICs do), and probe frames come on VLANs the node does not
    /// have yet.
    pub fn promiscuous(&self) -> io::Result<()> {
        // SAFETY: packet_mreq is plain data.
        let mut mr: libc::packet_mreq = unsafe { zeroed() };
        mr.mr_ifindex = self.ifindex;
        mr.mr_type = libc::PACKET_MR_PROMISC as u16;
        setsockopt(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mr,
        )
    }

    /// Sends one whole frame (header included) out of the NIC.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain data.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = self.ifindex;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&frame[..6.min(frame.len())]);
        // SAFETY: sendto(2) with a valid buffer and address.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if n < 0 {
            return Err(last());
        }
        Ok(())
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receives one frame if one is queued (the socket is polled first:
    /// see [`wait_readable`]).
    pub fn recv(&self) -> io::Result<Option<Received>> {
        let mut buf = vec![0u8; 65_536];
        // SAFETY: plain data.
        let mut from: libc::sockaddr_ll = unsafe { zeroed() };
        let mut control = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: plain data.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = &mut from as *mut libc::sockaddr_ll as *mut libc::c_void;
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as u32;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 16]>();
        // SAFETY: recvmsg(2) with buffers that outlive the call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = last();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        buf.truncate(n as usize);
        let mut vlan_tci = None;
        // SAFETY: walking the control messages the kernel wrote into
        // `control`, with the libc macros.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                    let aux = std::ptr::read_unaligned(
                        libc::CMSG_DATA(c) as *const libc::tpacket_auxdata
                    );
                    if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                        vlan_tci = Some((aux.tp_vlan_tci, aux.tp_vlan_tpid));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if let Some((tci, tpid)) = vlan_tci {
            if buf.len() >= 12 {
                let tpid = if tpid == 0 { 0x8100 } else { tpid };
                let mut tag = [0u8; 4];
                tag[..2].copy_from_slice(&tpid.to_be_bytes());
                tag[2..].copy_from_slice(&tci.to_be_bytes());
                buf.splice(12..12, tag);
            }
        }
        Ok(Some(Received {
            frame: buf,
            outgoing: from.sll_pkttype == libc::PACKET_OUTGOING,
        }))
    }
}

/// Waits until one of `sockets` has a frame, or `timeout` passes; the
/// indexes of those readable.
pub fn wait_readable(sockets: &[&RawSocket], timeout: Duration) -> io::Result<Vec<usize>> {
    let mut fds: Vec<libc::pollfd> = sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: poll(2) on a valid array of pollfd.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = last();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(Vec::new());
        }
        return Err(e);
    }
    Ok(fds
        .iter()
        .enumerate()
        .filter(|(_, p)| p.revents & libc::POLLIN != 0)
        .map(|(i, _)| i)
        .collect())
}

fn setsockopt<T>(fd: RawFd, level: i32, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: setsockopt(2) with a pointer to a live T and its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value as *const T as *const libc::c_void,
            size_of::<T>() as u32,
        )
    };
    if r < 0 {
        return Err(last());
    }
    Ok(())
}

/// What a command changed on the NICs, put back when it is dropped (also
/// on an error or a panic): links it brought up go down again, MTUs it
/// raised return to what they were.
#[derive(Default)]
pub struct LinkGuard {
    brought_up: Vec<String>,
    mtus: Vec<(String, u32)>,
}

impl LinkGuard {
    /// Brings `nic` up (link only) unless it is up already.
    pub fn up(&mut self, nic: &str) -> io::Result<()> {
        if flags(nic)? & libc::IFF_UP as u32 == 0 {
            set_up(nic, true)?;
            self.brought_up.push(nic.to_string());
        }
        Ok(())
    }

    /// Raises `nic`'s MTU to at least `mtu`.
    pub fn mtu_at_least(&mut self, nic: &str, want: u32) -> io::Result<()> {
        let now = mtu(nic)?;
        if now < want {
            set_mtu(nic, want)?;
            self.mtus.push((nic.to_string(), now));
        }
        Ok(())
    }

    /// What it changed, for the record.
    pub fn changed(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .brought_up
            .iter()
            .map(|n| format!("{n}: brought up"))
            .collect();
        out.extend(
            self.mtus
                .iter()
                .map(|(n, m)| format!("{n}: MTU raised from {m}")),
        );
        out
    }

    /// Puts everything back; the errors, one per NIC that could not be.
    pub fn restore(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (nic, m) in self.mtus.drain(..).rev() {
            if let Err(e) = set_mtu(&nic, m) {
                errors.push(format!("{nic}: MTU back to {m}: {e}"));
            }
        }
        for nic in self.brought_up.drain(..).rev() {
            if let Err(e) = set_up(&nic, false) {
                errors.push(format!("{nic}: down again: {e}"));
            }
        }
        errors
    }
}

impl Drop for LinkGuard {
    fn drop(&mut self) {
        for e in self.restore() {
            tracing::warn!("{e}");
        }
    }
}

#[cfg(test)]
mod tests;
