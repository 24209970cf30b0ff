//! An interface's addresses and what routers tell it, after the ND
//! conceptual model (RFC 4861 §5.1) and the MSR IPv6 stack: the Net Table
//! Entries (NTE, the unicast addresses the interface may use as sources,
//! with Duplicate Address Detection and lifetimes), the Prefix List (PLE)
//! and the Router List (RLE), with stateless address autoconfiguration
//! (RFC 4862) and router solicitation (RFC 4861 §6.3.7).
//!
//! Like the neighbour cache, [`InterfaceAddresses`] is a pure state
//! machine: it never sends, never reads a clock and never sleeps. Every
//! input is an event carrying `now` ([`InterfaceAddresses::enable`],
//! `on_*` for received Neighbor Discovery messages,
//! [`InterfaceAddresses::poll`] for timers) and every output is an
//! [`AddressAction`] the interface layer carries out: send a Neighbor or
//! Router Solicitation, join or leave a solicited-node group (the MLD
//! layer), report an address assigned, duplicate, deprecated or removed, a
//! router or on-link prefix added or expired, or disable the interface. The
//! runner sleeps until [`InterfaceAddresses::next_deadline`].
//!
//! # NTE states (RFC 4862 §5.4, §5.5.4)
//!
//! ```text
//!            DAD ok                 preferred lifetime      valid lifetime
//! TENTATIVE ────────► PREFERRED ───────────────────► DEPRECATED ─────────► removed
//!     │                   ▲                              │
//!     │ NS from :: / NA   └──── lifetime extended ───────┘ (§5.5.3 e)
//!     ▼
//! DUPLICATE ──── valid lifetime ────► removed
//! ```
//!
//! The valid lifetime runs from configuration whatever the state, so a
//! tentative or preferred address whose valid lifetime ends is removed
//! directly (RFC 4862 §5.5.4).
//!
//! # Memory bound
//!
//! At most [`AddressConfig::max_addresses`] NTEs,
//! [`AddressConfig::max_prefixes`] PLEs and [`AddressConfig::max_routers`]
//! RLEs, whatever arrives: a flood of Router Advertisements with distinct
//! prefixes or from distinct routers fills the lists up to their bound and
//! every further entry is refused and counted (RFC 4861 §11.1 leaves the
//! defence local; refusing the newcomer keeps the entries in use).
//!
//! # Randomness
//!
//! The RFC 4862 §5.4.2 delay before the first DAD solicitation and the
//! RFC 4861 §6.3.7 delay before the first Router Solicitation are drawn
//! uniformly from [0, MAX_RTR_SOLICITATION_DELAY) by a splitmix64 generator
//! seeded with [`AddressConfig::random_seed`]; without a seed both delays
//! are zero, so a test sees the first message at the instant it starts.
//!
//! # Timers
//!
//! A DAD or RS retransmission is scheduled from the `now` its predecessor
//! was sent at, so a late poll never sends a burst; lifetimes expire at
//! their exact instants. After [`InterfaceAddresses::poll`] returns, every
//! remaining deadline is later than `now`.

use crate::random::SplitMix64;
use core::fmt;
use core::time::Duration;
use std::net::Ipv6Addr;

use wire::ethernet::EthernetAddress;
use wire::ipv6::{link_local_from_interface_id, solicited_node};
use wire::ndisc::NdiscOption;

use crate::time::Instant;

/// RFC 4861 §10 RETRANS_TIMER: the default spacing of DAD solicitations
/// (RFC 4862 §5.4: RetransTimer).
pub const RETRANS_TIMER: Duration = Duration::from_secs(1);
/// RFC 4862 §5.1 DupAddrDetectTransmits default.
pub const DUP_ADDR_DETECT_TRANSMITS: u32 = 1;
/// RFC 4861 §10 MAX_RTR_SOLICITATION_DELAY.
pub const MAX_RTR_SOLICITATION_DELAY: Duration = Duration::from_secs(1);
/// RFC 4861 §10 RTR_SOLICITATION_INTERVAL.
pub const RTR_SOLICITATION_INTERVAL: Duration = Duration::from_secs(4);
/// RFC 4861 §10 MAX_RTR_SOLICITATIONS.
pub const MAX_RTR_SOLICITATIONS: u32 = 3;
/// The "two hours rule" of RFC 4862 §5.5.3 (e).
pub const TWO_HOURS: Duration = Duration::from_secs(2 * 60 * 60);
/// A lifetime field of all ones is infinity (RFC 4861 §4.6.2).
pub const INFINITE_LIFETIME: u32 = u32::MAX;
/// Length of the interface identifier for every unicast address outside
/// 000::/3 (RFC 4291 §2.5.1), so SLAAC needs a /64 (RFC 4862 §5.5.3 d).
pub const INTERFACE_ID_BITS: u8 = 64;

/// The modified EUI-64 interface identifier of a 48-bit MAC (RFC 4291
/// Appendix A): ff:fe inserted in the middle, and the universal/local bit
/// (0x02 of the first octet) inverted, so 00:00:5e:00:53:01 gives
/// 0200:5eff:fe00:5301.
pub const fn modified_eui64(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

/// The link-local address of an Ethernet interface: fe80::/64 plus the
/// modified EUI-64 of its MAC (RFC 4862 §5.3, RFC 2464 §5).
pub fn link_local_from_mac(mac: EthernetAddress) -> Ipv6Addr {
    link_local_from_interface_id(modified_eui64(mac.0))
}

/// `prefix` with every bit after `prefix_len` cleared (RFC 4861 §4.6.2:
/// those bits are reserved and must be ignored). `prefix_len` above 128 is
/// treated as 128.
pub fn mask_prefix(prefix: Ipv6Addr, prefix_len: u8) -> Ipv6Addr {
    let len = u32::from(prefix_len.min(128));
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    };
    Ipv6Addr::from(u128::from(prefix) & mask)
}

/// The address formed from a /64 prefix and an interface identifier
/// (RFC 4862 §5.5.3 d).
pub fn address_from_prefix(prefix: Ipv6Addr, interface_id: [u8; 8]) -> Ipv6Addr {
    let high = u128::from(prefix) & (u128::MAX << 64);
    Ipv6Addr::from(high | u128::from(u64::from_be_bytes(interface_id)))
}

/// When a lifetime ends: at an instant, or never (the all-ones field).
///
/// `At` sorts before `Never`, so the earlier of two expiries is their
/// minimum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Expiry {
    At(Instant),
    Never,
}

impl Expiry {
    /// The end of a lifetime field of `seconds` received at `now`;
    /// [`INFINITE_LIFETIME`] never ends.
    pub fn after_secs(now: Instant, seconds: u32) -> Self {
        if seconds == INFINITE_LIFETIME {
            Expiry::Never
        } else {
            Expiry::At(now + Duration::from_secs(u64::from(seconds)))
        }
    }

    /// The instant, if the lifetime is finite.
    pub fn instant(self) -> Option<Instant> {
        match self {
            Expiry::At(t) => Some(t),
            Expiry::Never => None,
        }
    }

    /// Whether the lifetime has ended at `now` (it ends at its instant).
    pub fn is_due(self, now: Instant) -> bool {
        matches!(self, Expiry::At(t) if t <= now)
    }

    /// Time left at `now`; `None` for an infinite lifetime.
    pub fn remaining(self, now: Instant) -> Option<Duration> {
        self.instant().map(|t| t - now)
    }
}

impl fmt::Display for Expiry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expiry::At(t) => write!(f, "{} ns", t.as_nanos()),
            Expiry::Never => f.write_str("infinite"),
        }
    }
}

/// Parameters of [`InterfaceAddresses`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressConfig {
    /// Most NTEs (link-local, SLAAC and manual together). At least 1.
    pub max_addresses: usize,
    /// Most Prefix List entries. At least 1.
    pub max_prefixes: usize,
    /// Most Router List entries. At least 1.
    pub max_routers: usize,
    /// DupAddrDetectTransmits (RFC 4862 §5.1): solicitations per DAD; 0
    /// disables DAD, addresses becoming preferred at once.
    pub dup_addr_detect_transmits: u32,
    /// RetransTimer (RFC 4861 §6.3.2): spacing of DAD solicitations, and
    /// the wait after the last one (RFC 4862 §5.4.2). A Router
    /// Advertisement's nonzero Retrans Timer replaces it (§6.3.4).
    pub retrans_timer: Duration,
    /// Seed for the random delays (RFC 4862 §5.4.2, RFC 4861 §6.3.7);
    /// `None` makes both delays zero.
    pub random_seed: Option<u64>,
    /// Whether [`InterfaceAddresses::enable`] solicits routers (hosts do;
    /// a router interface does not, RFC 4861 §6.3.7 is host behaviour).
    pub solicit_routers: bool,
    /// MAX_RTR_SOLICITATIONS (RFC 4861 §10).
    pub max_rtr_solicitations: u32,
    /// RTR_SOLICITATION_INTERVAL (RFC 4861 §10).
    pub rtr_solicitation_interval: Duration,
    /// MAX_RTR_SOLICITATION_DELAY (RFC 4861 §10): bound of both random
    /// delays.
    pub max_rtr_solicitation_delay: Duration,
}

impl Default for AddressConfig {
    fn default() -> Self {
        Self {
            max_addresses: 16,
            max_prefixes: 16,
            max_routers: 8,
            dup_addr_detect_transmits: DUP_ADDR_DETECT_TRANSMITS,
            retrans_timer: RETRANS_TIMER,
            random_seed: None,
            solicit_routers: true,
            max_rtr_solicitations: MAX_RTR_SOLICITATIONS,
            rtr_solicitation_interval: RTR_SOLICITATION_INTERVAL,
            max_rtr_solicitation_delay: MAX_RTR_SOLICITATION_DELAY,
        }
    }
}

impl AddressConfig {
    fn normalized(mut self) -> Self {
        self.max_addresses = self.max_addresses.max(1);
        self.max_prefixes = self.max_prefixes.max(1);
        self.max_routers = self.max_routers.max(1);
        self
    }
}

/// How an NTE came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressOrigin {
    /// fe80::/64 plus the interface identifier (RFC 4862 §5.3).
    LinkLocal,
    /// Formed from a Router Advertisement's prefix (RFC 4862 §5.5.3).
    Slaac,
    /// Configured by the administrator or the topology file.
    Manual,
}

impl AddressOrigin {
    pub const fn name(self) -> &'static str {
        match self {
            AddressOrigin::LinkLocal => "link-local",
            AddressOrigin::Slaac => "slaac",
            AddressOrigin::Manual => "manual",
        }
    }
}

impl fmt::Display for AddressOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The state of an NTE (RFC 4862 §2, §5.4, §5.5.4). "Invalid" is not a
/// state: the entry is removed ([`AddressAction::AddressRemoved`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressState {
    /// DAD in progress: not assigned, receives only NS and NA for itself.
    Tentative,
    /// Assigned, usable for any communication.
    Preferred,
    /// Assigned, preferred lifetime over: existing communication only.
    Deprecated,
    /// DAD found another node using it: never used (RFC 4862 §5.4.5).
    Duplicate,
}

impl AddressState {
    pub const fn name(self) -> &'static str {
        match self {
            AddressState::Tentative => "TENTATIVE",
            AddressState::Preferred => "PREFERRED",
            AddressState::Deprecated => "DEPRECATED",
            AddressState::Duplicate => "DUPLICATE",
        }
    }
}

impl fmt::Display for AddressState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Net Table Entry: one unicast address of the interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nte {
    address: Ipv6Addr,
    prefix_len: u8,
    origin: AddressOrigin,
    state: AddressState,
    valid: Expiry,
    preferred: Expiry,
    /// TENTATIVE only: when the next DAD step is due (a solicitation, or
    /// success after the last one).
    dad_next: Option<Instant>,
    dad_sent: u32,
    /// Whether the solicited-node group was joined for this address.
    joined: bool,
}

impl Nte {
    pub fn address(&self) -> Ipv6Addr {
        self.address
    }

    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    pub fn origin(&self) -> AddressOrigin {
        self.origin
    }

    pub fn state(&self) -> AddressState {
        self.state
    }

    /// End of the valid lifetime: the entry is removed then.
    pub fn valid_until(&self) -> Expiry {
        self.valid
    }

    /// End of the preferred lifetime: the address is deprecated then.
    pub fn preferred_until(&self) -> Expiry {
        self.preferred
    }

    /// DAD solicitations sent so far.
    pub fn dad_transmits_sent(&self) -> u32 {
        self.dad_sent
    }

    /// TENTATIVE: when the next DAD step is due.
    pub fn dad_deadline(&self) -> Option<Instant> {
        self.dad_next
    }

    /// The solicited-node multicast group of the address (RFC 4291 §2.7.1).
    pub fn solicited_node(&self) -> Ipv6Addr {
        solicited_node(&self.address)
    }

    /// Assigned: PREFERRED or DEPRECATED (RFC 4862 §2: a tentative address
    /// is not considered assigned).
    pub fn is_assigned(&self) -> bool {
        matches!(
            self.state,
            AddressState::Preferred | AddressState::Deprecated
        )
    }

    fn next_deadline(&self) -> Option<Instant> {
        let timer = match self.state {
            AddressState::Tentative => self.dad_next.map(Expiry::At),
            AddressState::Preferred => Some(self.preferred),
            AddressState::Deprecated | AddressState::Duplicate => None,
        };
        timer.map_or(self.valid, |t| t.min(self.valid)).instant()
    }
}

/// A Prefix List entry: an on-link prefix (RFC 4861 §5.1, §6.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixEntry {
    pub prefix: Ipv6Addr,
    pub prefix_len: u8,
    /// The on-link determination ends then.
    pub valid_until: Expiry,
}

impl PrefixEntry {
    /// Whether `addr` lies in the prefix.
    pub fn contains(&self, addr: Ipv6Addr) -> bool {
        mask_prefix(addr, self.prefix_len) == self.prefix
    }
}

/// A Router List entry: a default router (RFC 4861 §5.1, §6.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterEntry {
    /// The router's link-local address (the advertisement's source).
    pub address: Ipv6Addr,
    /// The Router Lifetime ends then (at most 18.2 hours, never infinite).
    pub expires: Instant,
}

/// The fields of a Router Advertisement this module uses (RFC 4861 §4.2);
/// the caller has validated it (§6.1.2) apart from the source check here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterAdvertisement {
    /// The IP source: the router's link-local address.
    pub source: Ipv6Addr,
    /// Seconds; 0: not a default router.
    pub router_lifetime: u16,
    /// Milliseconds; 0: unspecified.
    pub retrans_timer_ms: u32,
}

/// A Prefix Information option (RFC 4861 §4.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixInformation {
    pub prefix: Ipv6Addr,
    pub prefix_len: u8,
    /// L: the prefix is on-link.
    pub on_link: bool,
    /// A: the prefix may be used for autonomous address configuration.
    pub autonomous: bool,
    /// Seconds; [`INFINITE_LIFETIME`] is infinity.
    pub valid_lifetime: u32,
    /// Seconds; [`INFINITE_LIFETIME`] is infinity.
    pub preferred_lifetime: u32,
}

impl PrefixInformation {
    /// The prefix option of a parsed ND option list, if `option` is one.
    pub fn from_option(option: &NdiscOption<'_>) -> Option<Self> {
        match *option {
            NdiscOption::PrefixInformation {
                prefix_len,
                on_link,
                autonomous,
                valid_lifetime,
                preferred_lifetime,
                prefix,
            } => Some(Self {
                prefix,
                prefix_len,
                on_link,
                autonomous,
                valid_lifetime,
                preferred_lifetime,
            }),
            _ => None,
        }
    }
}

/// What the interface layer must do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressAction {
    /// Join a solicited-node group (MLD, RFC 3810): before the first DAD
    /// solicitation for an address (RFC 4862 §5.4.2). Joins and leaves are
    /// reference counted here: only the first address of a group joins it
    /// and only the last leaves it.
    JoinGroup(Ipv6Addr),
    /// Leave a solicited-node group: its last address was removed or found
    /// duplicate.
    LeaveGroup(Ipv6Addr),
    /// Send a DAD Neighbor Solicitation for `target`: IP source the
    /// unspecified address, destination the target's solicited-node group,
    /// no Source Link-Layer Address option (RFC 4862 §5.4.2).
    SendNeighborSolicitation { target: Ipv6Addr },
    /// Send a Router Solicitation to all-routers (ff02::2) from `source`:
    /// an assigned link-local address, or the unspecified address (without
    /// a Source Link-Layer Address option) when none is assigned yet
    /// (RFC 4861 §6.3.7, §4.1).
    SendRouterSolicitation { source: Ipv6Addr },
    /// DAD succeeded: the address is now assigned (RFC 4862 §5.4).
    AddressAssigned(Ipv6Addr),
    /// DAD found a duplicate (RFC 4862 §5.4.5); the address is not used.
    AddressDuplicate(Ipv6Addr),
    /// The preferred lifetime ended (RFC 4862 §5.5.4).
    AddressDeprecated(Ipv6Addr),
    /// A deprecated address's preferred lifetime was extended by a Router
    /// Advertisement (RFC 4862 §5.5.3 e): it is preferred again.
    AddressPreferredAgain(Ipv6Addr),
    /// The valid lifetime ended, or the address was removed by hand.
    AddressRemoved(Ipv6Addr),
    /// The link-local address formed from the interface identifier is a
    /// duplicate: "IP operation on the interface SHOULD be disabled"
    /// (RFC 4862 §5.4.5). The state machine itself stops processing.
    DisableInterface,
    /// A default router entered the Router List (RFC 4861 §6.3.4).
    RouterAdded(Ipv6Addr),
    /// A default router left it: lifetime over or advertised as 0.
    RouterExpired(Ipv6Addr),
    /// An on-link prefix entered the Prefix List (RFC 4861 §6.3.4).
    PrefixAdded { prefix: Ipv6Addr, prefix_len: u8 },
    /// An on-link prefix left it: lifetime over or advertised as 0.
    PrefixExpired { prefix: Ipv6Addr, prefix_len: u8 },
}

/// What a received Neighbor Solicitation is to the interface (RFC 4862
/// §5.4.3), so the caller knows whether to answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NsDisposition {
    /// The target is none of our addresses (or a duplicate one).
    NotOurs,
    /// The target is tentative and the solicitation is address resolution
    /// from another node: silently discarded, never answered (§5.4.3).
    TentativeIgnored,
    /// The target is tentative and another node is doing DAD for it: the
    /// address is a duplicate (§5.4.3).
    Duplicate,
    /// The target is assigned: answer with a Neighbor Advertisement
    /// (RFC 4861 §7.2.4).
    Assigned,
}

/// Why [`InterfaceAddresses::add_manual`] refused an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("the address table is full")]
    Full,
    #[error("the address is already configured")]
    Exists,
    #[error("not a unicast address")]
    NotUnicast,
    #[error("the preferred lifetime exceeds the valid lifetime")]
    PreferredExceedsValid,
    #[error("prefix length above 128")]
    BadPrefixLen,
    #[error("IPv6 is disabled on the interface")]
    Disabled,
}

/// Counters of everything the state machine did or refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressCounters {
    pub dad_started: u64,
    pub dad_solicitations_sent: u64,
    pub dad_succeeded: u64,
    /// Duplicates found by an NS from :: for a tentative address (§5.4.3).
    pub dad_duplicate_ns: u64,
    /// Duplicates found by an NA for a tentative address (§5.4.4).
    pub dad_duplicate_na: u64,
    /// NS for a tentative address from a unicast source, ignored (§5.4.3).
    pub ns_tentative_ignored: u64,
    /// NA for an assigned address: a duplicate DAD missed (§5.4.4 asks to
    /// log it).
    pub na_for_assigned: u64,
    pub interface_disabled: u64,
    pub router_solicitations_sent: u64,
    pub router_advertisements: u64,
    /// RA whose source is not link-local (RFC 4861 §6.1.2), or received
    /// with IPv6 disabled.
    pub router_advertisements_ignored: u64,
    pub routers_added: u64,
    pub routers_expired: u64,
    /// New routers refused at the Router List bound.
    pub router_list_full: u64,
    pub prefix_options: u64,
    /// Prefix length above 128.
    pub prefix_options_malformed: u64,
    /// Link-local prefix (RFC 4861 §6.3.4, RFC 4862 §5.5.3 b).
    pub prefix_options_link_local: u64,
    /// Preferred lifetime above valid (RFC 4862 §5.5.3 c).
    pub prefix_options_preferred_exceeds_valid: u64,
    /// Autonomous prefix whose length plus 64 is not 128 (§5.5.3 d).
    pub prefix_options_bad_length: u64,
    pub prefixes_added: u64,
    pub prefixes_expired: u64,
    /// New prefixes refused at the Prefix List bound.
    pub prefix_list_full: u64,
    pub slaac_addresses_formed: u64,
    /// §5.5.3 (e) 2: remaining ≤ 2 h, advertised valid lifetime ignored.
    pub two_hour_rule_ignored: u64,
    /// §5.5.3 (e) 3: valid lifetime reset to 2 h.
    pub two_hour_rule_clamped: u64,
    /// New addresses refused at the NTE bound.
    pub address_list_full: u64,
    pub addresses_deprecated: u64,
    pub addresses_removed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Solicitation {
    Idle,
    /// Next RS due at `next`; `sent` so far.
    Pending {
        next: Instant,
        sent: u32,
    },
    Done,
}

/// The NTEs, Prefix List and Router List of one interface, with DAD, SLAAC
/// and router solicitation, driven by events and `now`.
#[derive(Debug, Clone)]
pub struct InterfaceAddresses {
    config: AddressConfig,
    interface_id: [u8; 8],
    addresses: Vec<Nte>,
    prefixes: Vec<PrefixEntry>,
    routers: Vec<RouterEntry>,
    solicitation: Solicitation,
    disabled: bool,
    rng: SplitMix64,
    counters: AddressCounters,
}

enum Step {
    Kept,
    Removed,
}

impl InterfaceAddresses {
    /// An interface with the given 64-bit interface identifier (for
    /// Ethernet, [`modified_eui64`] of its MAC) and no addresses yet.
    pub fn new(config: AddressConfig, interface_id: [u8; 8]) -> Self {
        let config = config.normalized();
        Self {
            interface_id,
            addresses: Vec::with_capacity(config.max_addresses),
            prefixes: Vec::with_capacity(config.max_prefixes),
            routers: Vec::with_capacity(config.max_routers),
            solicitation: Solicitation::Idle,
            disabled: false,
            rng: SplitMix64::new(config.random_seed.unwrap_or(0)),
            counters: AddressCounters::default(),
            config,
        }
    }

    pub fn config(&self) -> &AddressConfig {
        &self.config
    }

    pub fn counters(&self) -> &AddressCounters {
        &self.counters
    }

    pub fn interface_id(&self) -> [u8; 8] {
        self.interface_id
    }

    /// fe80::/64 plus the interface identifier (RFC 4862 §5.3).
    pub fn link_local_address(&self) -> Ipv6Addr {
        link_local_from_interface_id(self.interface_id)
    }

    /// Whether DAD disabled IPv6 on the interface (RFC 4862 §5.4.5).
    pub fn is_disabled(&self) -> bool {
        self.disabled
    }

    /// The current RetransTimer.
    pub fn retrans_timer(&self) -> Duration {
        self.config.retrans_timer
    }

    /// The NTEs, in the order they were configured.
    pub fn entries(&self) -> impl Iterator<Item = &Nte> + '_ {
        self.addresses.iter()
    }

    pub fn get(&self, address: Ipv6Addr) -> Option<&Nte> {
        self.addresses.iter().find(|n| n.address == address)
    }

    /// Whether `address` is assigned (PREFERRED or DEPRECATED): the
    /// interface receives for it and may send from it.
    pub fn is_assigned(&self, address: Ipv6Addr) -> bool {
        self.get(address).is_some_and(Nte::is_assigned)
    }

    /// The Prefix List.
    pub fn prefixes(&self) -> impl Iterator<Item = &PrefixEntry> + '_ {
        self.prefixes.iter()
    }

    /// The Router List, in the order routers were learned.
    pub fn routers(&self) -> impl Iterator<Item = &RouterEntry> + '_ {
        self.routers.iter()
    }

    /// Whether `addr` is on-link by the Prefix List (RFC 4861 §5.2).
    pub fn is_on_link(&self, addr: Ipv6Addr) -> bool {
        self.prefixes.iter().any(|p| p.contains(addr))
    }

    /// The default router: kept simple, the first entry of the Router List.
    /// RFC 4861 §6.3.6 prefers routers known reachable; reachability lives
    /// in the neighbour cache, see
    /// [`InterfaceAddresses::default_router_preferring`].
    pub fn default_router(&self) -> Option<Ipv6Addr> {
        self.routers.first().map(|r| r.address)
    }

    /// RFC 4861 §6.3.6: the first router that `reachable` says is
    /// reachable or probably reachable (any NCE state but INCOMPLETE, or
    /// none yet), else the first router.
    pub fn default_router_preferring(
        &self,
        mut reachable: impl FnMut(Ipv6Addr) -> bool,
    ) -> Option<Ipv6Addr> {
        self.routers
            .iter()
            .map(|r| r.address)
            .find(|&a| reachable(a))
            .or_else(|| self.default_router())
    }

    /// The earliest timer: a DAD step, a lifetime, a router expiry or the
    /// next Router Solicitation. `None` when nothing is timed (or IPv6 is
    /// disabled).
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.disabled {
            return None;
        }
        let rs = match self.solicitation {
            Solicitation::Pending { next, .. } => Some(next),
            _ => None,
        };
        self.addresses
            .iter()
            .filter_map(Nte::next_deadline)
            .chain(self.prefixes.iter().filter_map(|p| p.valid_until.instant()))
            .chain(self.routers.iter().map(|r| r.expires))
            .chain(rs)
            .min()
    }

    /// Interface initialization (RFC 4862 §5.3, RFC 4861 §6.3.7): the
    /// link-local address from the interface identifier, tentative, and
    /// (for a host) router solicitation.
    pub fn enable(&mut self, now: Instant) -> Vec<AddressAction> {
        let mut actions = Vec::new();
        if self.disabled {
            return actions;
        }
        let link_local = self.link_local_address();
        if self.get(link_local).is_none() {
            // The link-local address never expires (RFC 4862 §5.3).
            let _ = self.insert(
                now,
                link_local,
                64,
                AddressOrigin::LinkLocal,
                Expiry::Never,
                Expiry::Never,
                &mut actions,
            );
        }
        if self.config.solicit_routers {
            self.start_router_solicitation(now, &mut actions);
        }
        actions
    }

    /// Configures `address` by hand, tentative until DAD succeeds
    /// (RFC 4862 §5.4: DAD for every unicast address). Lifetimes in
    /// seconds, [`INFINITE_LIFETIME`] for none.
    pub fn add_manual(
        &mut self,
        now: Instant,
        address: Ipv6Addr,
        prefix_len: u8,
        valid_lifetime: u32,
        preferred_lifetime: u32,
    ) -> Result<Vec<AddressAction>, AddressError> {
        if self.disabled {
            return Err(AddressError::Disabled);
        }
        if address.is_multicast() || address.is_unspecified() || address.is_loopback() {
            return Err(AddressError::NotUnicast);
        }
        if prefix_len > 128 {
            return Err(AddressError::BadPrefixLen);
        }
        if preferred_lifetime > valid_lifetime {
            return Err(AddressError::PreferredExceedsValid);
        }
        if self.get(address).is_some() {
            return Err(AddressError::Exists);
        }
        let mut actions = Vec::new();
        self.insert(
            now,
            address,
            prefix_len,
            AddressOrigin::Manual,
            Expiry::after_secs(now, valid_lifetime),
            Expiry::after_secs(now, preferred_lifetime),
            &mut actions,
        )?;
        Ok(actions)
    }

    /// Removes an address by hand (any state).
    pub fn remove_address(&mut self, address: Ipv6Addr) -> Vec<AddressAction> {
        let mut actions = Vec::new();
        if let Some(i) = self.addresses.iter().position(|n| n.address == address) {
            self.remove_at(i, &mut actions);
        }
        actions
    }

    /// Fires every timer due at or before `now`.
    pub fn poll(&mut self, now: Instant) -> Vec<AddressAction> {
        let mut actions = Vec::new();
        if self.disabled {
            return actions;
        }
        self.poll_solicitation(now, &mut actions);
        let mut i = 0;
        while i < self.addresses.len() && !self.disabled {
            if let Step::Kept = self.step(i, now, &mut actions) {
                i += 1;
            }
        }
        // RFC 4861 §6.3.5: an expired router or prefix is removed.
        let mut k = 0;
        while k < self.routers.len() {
            if self.routers[k].expires <= now {
                let r = self.routers.remove(k);
                self.counters.routers_expired += 1;
                actions.push(AddressAction::RouterExpired(r.address));
            } else {
                k += 1;
            }
        }
        let mut k = 0;
        while k < self.prefixes.len() {
            if self.prefixes[k].valid_until.is_due(now) {
                let p = self.prefixes.remove(k);
                self.counters.prefixes_expired += 1;
                actions.push(AddressAction::PrefixExpired {
                    prefix: p.prefix,
                    prefix_len: p.prefix_len,
                });
            } else {
                k += 1;
            }
        }
        actions
    }

    /// A received Neighbor Solicitation for `target` from `source`
    /// (RFC 4862 §5.4.3). The caller filters out its own solicitations
    /// looped back by the link.
    pub fn on_neighbor_solicitation(
        &mut self,
        _now: Instant,
        source: Ipv6Addr,
        target: Ipv6Addr,
    ) -> (NsDisposition, Vec<AddressAction>) {
        let mut actions = Vec::new();
        if self.disabled {
            return (NsDisposition::NotOurs, actions);
        }
        let Some(i) = self.addresses.iter().position(|n| n.address == target) else {
            return (NsDisposition::NotOurs, actions);
        };
        let disposition = match self.addresses[i].state {
            AddressState::Tentative if source.is_unspecified() => {
                // §5.4.3: "the solicitation is from a node performing
                // Duplicate Address Detection ... the tentative address is
                // a duplicate and should not be used".
                self.counters.dad_duplicate_ns += 1;
                self.mark_duplicate(i, &mut actions);
                NsDisposition::Duplicate
            }
            AddressState::Tentative => {
                // §5.4.3: address resolution for a tentative address is
                // silently discarded.
                self.counters.ns_tentative_ignored += 1;
                NsDisposition::TentativeIgnored
            }
            AddressState::Preferred | AddressState::Deprecated => NsDisposition::Assigned,
            AddressState::Duplicate => NsDisposition::NotOurs,
        };
        (disposition, actions)
    }

    /// A received Neighbor Advertisement for `target` (RFC 4862 §5.4.4).
    pub fn on_neighbor_advertisement(
        &mut self,
        _now: Instant,
        target: Ipv6Addr,
    ) -> Vec<AddressAction> {
        let mut actions = Vec::new();
        if self.disabled {
            return actions;
        }
        if let Some(i) = self.addresses.iter().position(|n| n.address == target) {
            match self.addresses[i].state {
                // §5.4.4: "the tentative address is not unique".
                AddressState::Tentative => {
                    self.counters.dad_duplicate_na += 1;
                    self.mark_duplicate(i, &mut actions);
                }
                // §5.4.4: an NA for an assigned address may mean a
                // duplicate DAD missed; log it (count), keep the address.
                AddressState::Preferred | AddressState::Deprecated => {
                    self.counters.na_for_assigned += 1;
                }
                AddressState::Duplicate => {}
            }
        }
        actions
    }

    /// A received, validated Router Advertisement with its Prefix
    /// Information options (RFC 4861 §6.3.4, RFC 4862 §5.5.3).
    pub fn on_router_advertisement(
        &mut self,
        now: Instant,
        ra: &RouterAdvertisement,
        prefixes: impl IntoIterator<Item = PrefixInformation>,
    ) -> Vec<AddressAction> {
        let mut actions = Vec::new();
        // RFC 4861 §6.1.2: the source must be link-local.
        if self.disabled || !ra.source.is_unicast_link_local() {
            self.counters.router_advertisements_ignored += 1;
            return actions;
        }
        self.counters.router_advertisements += 1;
        // §6.3.4: a nonzero Retrans Timer replaces RetransTimer.
        if ra.retrans_timer_ms != 0 {
            self.config.retrans_timer = Duration::from_millis(u64::from(ra.retrans_timer_ms));
        }
        // §6.3.7: after a valid RA with a nonzero Router Lifetime the host
        // MUST desist from sending further solicitations.
        if ra.router_lifetime != 0 && matches!(self.solicitation, Solicitation::Pending { .. }) {
            self.solicitation = Solicitation::Done;
        }
        self.update_router(now, ra, &mut actions);
        for pio in prefixes {
            self.on_prefix_information(now, &pio, &mut actions);
        }
        actions
    }

    // ----------------------------------------------------------------
    // Router solicitation (RFC 4861 §6.3.7)

    fn start_router_solicitation(&mut self, now: Instant, actions: &mut Vec<AddressAction>) {
        if self.config.max_rtr_solicitations == 0 {
            self.solicitation = Solicitation::Done;
            return;
        }
        // §6.3.7: delay the first RS by a random amount in
        // [0, MAX_RTR_SOLICITATION_DELAY).
        let delay = self.random_delay();
        self.solicitation = Solicitation::Pending {
            next: now + delay,
            sent: 0,
        };
        self.poll_solicitation(now, actions);
    }

    fn poll_solicitation(&mut self, now: Instant, actions: &mut Vec<AddressAction>) {
        while let Solicitation::Pending { next, sent } = self.solicitation {
            if next > now {
                break;
            }
            // §6.3.7: the source is an assigned link-local address, else
            // the unspecified address.
            let source = self
                .addresses
                .iter()
                .find(|n| n.origin == AddressOrigin::LinkLocal && n.is_assigned())
                .map_or(Ipv6Addr::UNSPECIFIED, |n| n.address);
            actions.push(AddressAction::SendRouterSolicitation { source });
            self.counters.router_solicitations_sent += 1;
            let sent = sent + 1;
            // §6.3.7: at most MAX_RTR_SOLICITATIONS, RTR_SOLICITATION_INTERVAL
            // apart; after the last, the host concludes there is no router.
            self.solicitation = if sent >= self.config.max_rtr_solicitations {
                Solicitation::Done
            } else {
                Solicitation::Pending {
                    next: now + self.config.rtr_solicitation_interval,
                    sent,
                }
            };
        }
    }

    /// Whether Router Solicitations are still scheduled.
    pub fn is_soliciting_routers(&self) -> bool {
        matches!(self.solicitation, Solicitation::Pending { .. })
    }

    // ----------------------------------------------------------------
    // Router List (RFC 4861 §6.3.4)

    fn update_router(
        &mut self,
        now: Instant,
        ra: &RouterAdvertisement,
        actions: &mut Vec<AddressAction>,
    ) {
        let existing = self.routers.iter().position(|r| r.address == ra.source);
        match (existing, ra.router_lifetime) {
            // "If the address is already present ... and the received
            // Router Lifetime value is zero, immediately time-out the entry".
            (Some(i), 0) => {
                let r = self.routers.remove(i);
                self.counters.routers_expired += 1;
                actions.push(AddressAction::RouterExpired(r.address));
            }
            (None, 0) => {}
            // "... reset its invalidation timer to the Router Lifetime".
            (Some(i), secs) => {
                self.routers[i].expires = now + Duration::from_secs(u64::from(secs));
            }
            // "If the address is not already present ... and the
            // advertisement's Router Lifetime is non-zero, create a new
            // entry" — while the bounded list has room.
            (None, secs) => {
                if self.routers.len() >= self.config.max_routers {
                    self.counters.router_list_full += 1;
                } else {
                    self.routers.push(RouterEntry {
                        address: ra.source,
                        expires: now + Duration::from_secs(u64::from(secs)),
                    });
                    self.counters.routers_added += 1;
                    actions.push(AddressAction::RouterAdded(ra.source));
                }
            }
        }
    }

    // ----------------------------------------------------------------
    // Prefix List (RFC 4861 §6.3.4) and SLAAC (RFC 4862 §5.5.3)

    fn on_prefix_information(
        &mut self,
        now: Instant,
        pio: &PrefixInformation,
        actions: &mut Vec<AddressAction>,
    ) {
        self.counters.prefix_options += 1;
        if pio.prefix_len > 128 {
            self.counters.prefix_options_malformed += 1;
            return;
        }
        let prefix = mask_prefix(pio.prefix, pio.prefix_len);
        // RFC 4861 §6.3.4 and RFC 4862 §5.5.3 (b): "If the prefix is the
        // link-local prefix, silently ignore the Prefix Information option".
        if prefix.is_unicast_link_local() {
            self.counters.prefix_options_link_local += 1;
            return;
        }
        if pio.on_link {
            self.update_prefix(now, prefix, pio, actions);
        }
        // RFC 4862 §5.5.3 (a): without the autonomous flag, ignore for
        // address configuration.
        if pio.autonomous {
            self.autoconfigure(now, prefix, pio, actions);
        }
    }

    fn update_prefix(
        &mut self,
        now: Instant,
        prefix: Ipv6Addr,
        pio: &PrefixInformation,
        actions: &mut Vec<AddressAction>,
    ) {
        let existing = self
            .prefixes
            .iter()
            .position(|p| p.prefix == prefix && p.prefix_len == pio.prefix_len);
        match (existing, pio.valid_lifetime) {
            // "If the prefix is already present ... and the received
            // invalidation timer value is zero, immediately time-out".
            (Some(i), 0) => {
                let p = self.prefixes.remove(i);
                self.counters.prefixes_expired += 1;
                actions.push(AddressAction::PrefixExpired {
                    prefix: p.prefix,
                    prefix_len: p.prefix_len,
                });
            }
            // "If the prefix is not already in the Prefix List, and the
            // Prefix Information option's Valid Lifetime field is zero,
            // ignore the option."
            (None, 0) => {}
            // "... reset the prefix's invalidation timer to the Valid
            // Lifetime".
            (Some(i), secs) => {
                self.prefixes[i].valid_until = Expiry::after_secs(now, secs);
            }
            // "... create a new entry" — while the bounded list has room.
            (None, secs) => {
                if self.prefixes.len() >= self.config.max_prefixes {
                    self.counters.prefix_list_full += 1;
                } else {
                    self.prefixes.push(PrefixEntry {
                        prefix,
                        prefix_len: pio.prefix_len,
                        valid_until: Expiry::after_secs(now, secs),
                    });
                    self.counters.prefixes_added += 1;
                    actions.push(AddressAction::PrefixAdded {
                        prefix,
                        prefix_len: pio.prefix_len,
                    });
                }
            }
        }
    }

    fn autoconfigure(
        &mut self,
        now: Instant,
        prefix: Ipv6Addr,
        pio: &PrefixInformation,
        actions: &mut Vec<AddressAction>,
    ) {
        // §5.5.3 (c): "If the preferred lifetime is greater than the valid
        // lifetime, silently ignore the Prefix Information option."
        if pio.preferred_lifetime > pio.valid_lifetime {
            self.counters.prefix_options_preferred_exceeds_valid += 1;
            return;
        }
        // §5.5.3 (d): "If the sum of the prefix length and interface
        // identifier length does not equal 128 bits, the Prefix Information
        // option MUST be ignored."
        if u16::from(pio.prefix_len) + u16::from(INTERFACE_ID_BITS) != 128 {
            self.counters.prefix_options_bad_length += 1;
            return;
        }
        let existing = self
            .addresses
            .iter()
            .position(|n| n.origin == AddressOrigin::Slaac && mask_prefix(n.address, 64) == prefix);
        match existing {
            Some(i) => self.update_slaac(now, i, pio, actions),
            None if pio.valid_lifetime != 0 => {
                // §5.5.3 (d): form an address from the prefix and the
                // interface identifier.
                let address = address_from_prefix(prefix, self.interface_id);
                if self.get(address).is_some() {
                    return;
                }
                if self
                    .insert(
                        now,
                        address,
                        pio.prefix_len,
                        AddressOrigin::Slaac,
                        Expiry::after_secs(now, pio.valid_lifetime),
                        Expiry::after_secs(now, pio.preferred_lifetime),
                        actions,
                    )
                    .is_ok()
                {
                    self.counters.slaac_addresses_formed += 1;
                }
            }
            None => {}
        }
    }

    /// §5.5.3 (e): an address already formed from this prefix.
    fn update_slaac(
        &mut self,
        now: Instant,
        i: usize,
        pio: &PrefixInformation,
        actions: &mut Vec<AddressAction>,
    ) {
        let received = Expiry::after_secs(now, pio.valid_lifetime);
        let received_exceeds_two_hours = pio.valid_lifetime == INFINITE_LIFETIME
            || u64::from(pio.valid_lifetime) > TWO_HOURS.as_secs();
        let n = &mut self.addresses[i];
        // "1. If the received Valid Lifetime is greater than 2 hours or
        // greater than RemainingLifetime, set the valid lifetime of the
        // corresponding address to the advertised Valid Lifetime."
        if received_exceeds_two_hours || received > n.valid {
            n.valid = received;
        } else if n.valid.remaining(now).is_some_and(|r| r <= TWO_HOURS) {
            // "2. If RemainingLifetime is less than or equal to 2 hours,
            // ignore the Prefix Information option with regards to the
            // valid lifetime" (no SEND here, so never authenticated).
            self.counters.two_hour_rule_ignored += 1;
        } else {
            // "3. Otherwise, reset the valid lifetime of the corresponding
            // address to 2 hours."
            n.valid = Expiry::At(now + TWO_HOURS);
            self.counters.two_hour_rule_clamped += 1;
        }
        // "The preferred lifetime of the address is reset to the Preferred
        // Lifetime in the received advertisement", never beyond the valid.
        n.preferred = Expiry::after_secs(now, pio.preferred_lifetime).min(n.valid);
        if n.state == AddressState::Deprecated && !n.preferred.is_due(now) {
            n.state = AddressState::Preferred;
            actions.push(AddressAction::AddressPreferredAgain(n.address));
        }
        // A preferred lifetime of 0 deprecates at once.
        let _ = self.step(i, now, actions);
    }

    // ----------------------------------------------------------------
    // NTEs and DAD (RFC 4862 §5.4)

    #[allow(clippy::too_many_arguments)]
    fn insert(
        &mut self,
        now: Instant,
        address: Ipv6Addr,
        prefix_len: u8,
        origin: AddressOrigin,
        valid: Expiry,
        preferred: Expiry,
        actions: &mut Vec<AddressAction>,
    ) -> Result<(), AddressError> {
        if self.addresses.len() >= self.config.max_addresses {
            self.counters.address_list_full += 1;
            return Err(AddressError::Full);
        }
        let transmits = self.config.dup_addr_detect_transmits;
        let mut nte = Nte {
            address,
            prefix_len,
            origin,
            state: AddressState::Tentative,
            valid,
            preferred: preferred.min(valid),
            dad_next: None,
            dad_sent: 0,
            joined: false,
        };
        if transmits == 0 {
            // §5.4: "A value of zero indicates that Duplicate Address
            // Detection is not performed": assigned at once.
            nte.state = AddressState::Preferred;
            self.addresses.push(nte);
            let i = self.addresses.len() - 1;
            self.join(i, actions);
            actions.push(AddressAction::AddressAssigned(address));
        } else {
            // §5.4.2: a random delay in [0, MAX_RTR_SOLICITATION_DELAY)
            // before joining the group and sending the first solicitation.
            nte.dad_next = Some(now + self.random_delay());
            self.counters.dad_started += 1;
            self.addresses.push(nte);
        }
        let i = self.addresses.len() - 1;
        let _ = self.step(i, now, actions);
        Ok(())
    }

    /// Fires every timer of NTE `i` due at `now`.
    fn step(&mut self, i: usize, now: Instant, actions: &mut Vec<AddressAction>) -> Step {
        loop {
            let n = &self.addresses[i];
            // RFC 4862 §5.5.4: at the end of the valid lifetime the address
            // becomes invalid and is removed, whatever its state.
            if n.valid.is_due(now) {
                self.remove_at(i, actions);
                return Step::Removed;
            }
            match n.state {
                AddressState::Tentative => {
                    let Some(due) = n.dad_next else {
                        return Step::Kept;
                    };
                    if due > now {
                        return Step::Kept;
                    }
                    if n.dad_sent < self.config.dup_addr_detect_transmits {
                        // §5.4.2: join all-nodes (always joined) and the
                        // solicited-node group before the first NS.
                        if n.dad_sent == 0 {
                            self.join(i, actions);
                        }
                        let n = &mut self.addresses[i];
                        actions.push(AddressAction::SendNeighborSolicitation { target: n.address });
                        n.dad_sent += 1;
                        // §5.4.2: solicitations RetransTimer apart, and
                        // RetransTimer after the last before success.
                        n.dad_next = Some(now + self.config.retrans_timer);
                        self.counters.dad_solicitations_sent += 1;
                    } else {
                        // §5.4: no conflict heard: the address is assigned.
                        let n = &mut self.addresses[i];
                        n.dad_next = None;
                        n.state = AddressState::Preferred;
                        self.counters.dad_succeeded += 1;
                        actions.push(AddressAction::AddressAssigned(n.address));
                    }
                }
                AddressState::Preferred if n.preferred.is_due(now) => {
                    // §5.5.4: the preferred lifetime ended.
                    let n = &mut self.addresses[i];
                    n.state = AddressState::Deprecated;
                    self.counters.addresses_deprecated += 1;
                    actions.push(AddressAction::AddressDeprecated(n.address));
                }
                _ => return Step::Kept,
            }
        }
    }

    fn mark_duplicate(&mut self, i: usize, actions: &mut Vec<AddressAction>) {
        self.leave(i, actions);
        let n = &mut self.addresses[i];
        n.state = AddressState::Duplicate;
        n.dad_next = None;
        let address = n.address;
        let origin = n.origin;
        actions.push(AddressAction::AddressDuplicate(address));
        // §5.4.5: "If the address is a link-local address formed from an
        // interface identifier based on the hardware address ... IP
        // operation on the interface SHOULD be disabled."
        if origin == AddressOrigin::LinkLocal && address == self.link_local_address() {
            self.disable(actions);
        }
    }

    fn disable(&mut self, actions: &mut Vec<AddressAction>) {
        for i in 0..self.addresses.len() {
            self.leave(i, actions);
            self.addresses[i].dad_next = None;
        }
        self.solicitation = Solicitation::Done;
        self.disabled = true;
        self.counters.interface_disabled += 1;
        actions.push(AddressAction::DisableInterface);
    }

    fn remove_at(&mut self, i: usize, actions: &mut Vec<AddressAction>) {
        self.leave(i, actions);
        let n = self.addresses.remove(i);
        self.counters.addresses_removed += 1;
        actions.push(AddressAction::AddressRemoved(n.address));
    }

    /// Joins the solicited-node group of NTE `i` unless another NTE
    /// already holds it.
    fn join(&mut self, i: usize, actions: &mut Vec<AddressAction>) {
        if self.addresses[i].joined {
            return;
        }
        let group = self.addresses[i].solicited_node();
        if !self.group_held(group) {
            actions.push(AddressAction::JoinGroup(group));
        }
        self.addresses[i].joined = true;
    }

    /// Leaves the solicited-node group of NTE `i` unless another NTE
    /// still holds it.
    fn leave(&mut self, i: usize, actions: &mut Vec<AddressAction>) {
        if !self.addresses[i].joined {
            return;
        }
        self.addresses[i].joined = false;
        let group = self.addresses[i].solicited_node();
        if !self.group_held(group) {
            actions.push(AddressAction::LeaveGroup(group));
        }
    }

    fn group_held(&self, group: Ipv6Addr) -> bool {
        self.addresses
            .iter()
            .any(|n| n.joined && n.solicited_node() == group)
    }

    /// The solicited-node groups joined now (for the MLD layer and ADEs).
    pub fn joined_groups(&self) -> Vec<Ipv6Addr> {
        let mut groups: Vec<Ipv6Addr> = self
            .addresses
            .iter()
            .filter(|n| n.joined)
            .map(Nte::solicited_node)
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    // ----------------------------------------------------------------
    // Randomness

    /// Uniform in [0, MAX_RTR_SOLICITATION_DELAY); zero without a seed.
    fn random_delay(&mut self) -> Duration {
        if self.config.random_seed.is_none() {
            return Duration::ZERO;
        }
        let r = u128::from(self.next_random());
        let max = self.config.max_rtr_solicitation_delay.as_nanos();
        let nanos = (max.saturating_mul(r)) >> 64;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    fn next_random(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_eui64_inverts_the_universal_local_bit() {
        // RFC 4291 Appendix A: 34-56-78-9A-BC-DE → 3656:78FF:FE9A:BCDE.
        assert_eq!(
            modified_eui64([0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde]),
            [0x36, 0x56, 0x78, 0xff, 0xfe, 0x9a, 0xbc, 0xde]
        );
        // A locally administered MAC loses its local bit.
        assert_eq!(modified_eui64([0x02, 0, 0, 0, 0, 1])[0], 0x00);
    }

    #[test]
    fn mask_and_form() {
        let p: Ipv6Addr = "2001:db8:a:1:ffff::1".parse().unwrap();
        assert_eq!(
            mask_prefix(p, 64),
            "2001:db8:a:1::".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(mask_prefix(p, 0), Ipv6Addr::UNSPECIFIED);
        assert_eq!(mask_prefix(p, 200), p);
        assert_eq!(
            address_from_prefix(p, [0, 0, 0, 0, 0, 0, 0, 7]),
            "2001:db8:a:1::7".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn expiry_orders_and_ends() {
        let t = Instant::from_nanos(5);
        assert!(Expiry::At(t) < Expiry::Never);
        assert_eq!(Expiry::after_secs(t, INFINITE_LIFETIME), Expiry::Never);
        assert!(Expiry::At(t).is_due(t));
        assert!(!Expiry::At(t).is_due(Instant::from_nanos(4)));
        assert!(!Expiry::Never.is_due(Instant::from_nanos(u64::MAX)));
        assert_eq!(Expiry::Never.remaining(t), None);
    }

    #[test]
    fn random_delays_stay_below_the_bound_and_follow_the_seed() {
        let draw = |seed| {
            let mut a = InterfaceAddresses::new(
                AddressConfig {
                    random_seed: Some(seed),
                    ..AddressConfig::default()
                },
                [0; 8],
            );
            (0..50).map(|_| a.random_delay()).collect::<Vec<_>>()
        };
        for seed in 0..20 {
            let d = draw(seed);
            assert!(d.iter().all(|&x| x < MAX_RTR_SOLICITATION_DELAY));
            assert_eq!(d, draw(seed));
        }
        assert_ne!(draw(1), draw(2));
    }
}
