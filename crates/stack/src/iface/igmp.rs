//! IGMPv2 (RFC 2236) for one IPv4 interface, as two pure state machines
//! in the manner of [`super::mld`]: they never send, never read a clock
//! and never sleep. Every input is an event carrying `now`; every output is
//! an [`IgmpRepr`] returned by `poll`, which the interface layer sends
//! (TTL 1, Router Alert, to [`IgmpRepr::destination`]); the runner sleeps
//! until `next_deadline`.
//!
//! * [`IgmpMember`] is a host's side (§3): the interface's groups are
//!   given as a whole by [`IgmpMember::sync`] (what the applications
//!   joined and the 6-over-4 groups its tunnels listen to); a new group is
//!   reported at once and once more after a random delay up to the
//!   Unsolicited Report Interval, a Query starts a report after a random
//!   delay up to its Max Resp Time, another host's Report for the group
//!   cancels ours (suppression), and a group left is announced with a
//!   Leave Group when we were the last host to report it. The all-systems
//!   group 224.0.0.1 is never reported (§6). While an IGMPv1 router is
//!   present (a Query with Max Resp Time 0, §4) reports are v1 and no
//!   Leave is sent.
//! * [`IgmpQuerier`] is a multicast router's side (§3, §7): it sends
//!   General Queries (two at startup a quarter of the Query Interval apart,
//!   then every Query Interval), learns members from Reports for the Group
//!   Membership Interval, answers a Leave with Group-Specific Queries and
//!   forgets the group when no Report comes within the Last Member Query
//!   Time; it stops querying while a router with a lower address queries
//!   (Other Querier Present Interval, §3).

use core::net::Ipv4Addr;
use core::time::Duration;

use wire::igmp::{IgmpRepr, IgmpVersion, ALL_SYSTEMS};

use crate::random::SplitMix64;
use crate::time::Instant;

/// §8.1 Robustness Variable.
pub const ROBUSTNESS_VARIABLE: u32 = 2;
/// §8.2 Query Interval.
pub const QUERY_INTERVAL: Duration = Duration::from_secs(125);
/// §8.3 Query Response Interval (the General Query's Max Resp Time).
pub const QUERY_RESPONSE_INTERVAL: Duration = Duration::from_secs(10);
/// §8.4 Group Membership Interval: Robustness × Query Interval + Query
/// Response Interval.
pub const GROUP_MEMBERSHIP_INTERVAL: Duration = Duration::from_secs(260);
/// §8.5 Other Querier Present Interval: Robustness × Query Interval + ½
/// Query Response Interval.
pub const OTHER_QUERIER_PRESENT_INTERVAL: Duration = Duration::from_secs(255);
/// §8.6 Startup Query Interval: ¼ of the Query Interval.
pub const STARTUP_QUERY_INTERVAL: Duration = Duration::from_millis(31_250);
/// §8.8 Last Member Query Interval (a Group-Specific Query's Max Resp
/// Time), and §8.9 Last Member Query Count (= Robustness).
pub const LAST_MEMBER_QUERY_INTERVAL: Duration = Duration::from_secs(1);
/// §8.10 Unsolicited Report Interval.
pub const UNSOLICITED_REPORT_INTERVAL: Duration = Duration::from_secs(10);
/// §8.11 Version 1 Router Present Timeout.
pub const VERSION1_ROUTER_PRESENT_TIMEOUT: Duration = Duration::from_secs(400);
/// Most groups one interface reports (the table is bounded).
pub const MAX_GROUPS: usize = 256;

/// Tenths of a second in `d`, as Max Resp Time carries them (at most 255).
fn tenths(d: Duration) -> u8 {
    (d.as_millis() / 100).min(255) as u8
}

/// A delay drawn from (0, `max`], never zero so that a poll at `now`
/// leaves every deadline later than `now`.
fn random_delay(rng: &mut SplitMix64, max: Duration) -> Duration {
    let max_us = max.as_micros().max(1) as u64;
    Duration::from_micros(rng.next_u64() % max_us + 1)
}

/// One group a host is a member of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberGroup {
    pub group: Ipv4Addr,
    /// When the next Report is due (a Query's answer or the unsolicited
    /// repetition); `None`: Idle Member (§6).
    pub report_at: Option<Instant>,
    /// Whether the pending report is the join's repetition rather than a
    /// Query's answer.
    pub unsolicited: bool,
    /// §3: we sent the last Report heard for the group, so we send the
    /// Leave.
    pub last_reporter: bool,
}

/// A host's IGMPv2 state on one interface.
#[derive(Debug, Clone)]
pub struct IgmpMember {
    groups: Vec<MemberGroup>,
    /// Messages due at the next poll (reports of a join, leaves).
    due: Vec<IgmpRepr>,
    v1_router_until: Option<Instant>,
    rng: SplitMix64,
    /// Reports and leaves sent, queries heard.
    pub reports_sent: u64,
    pub leaves_sent: u64,
    pub queries_heard: u64,
}

impl IgmpMember {
    pub fn new(seed: u64) -> Self {
        Self {
            groups: Vec::new(),
            due: Vec::new(),
            v1_router_until: None,
            rng: SplitMix64::new(seed),
            reports_sent: 0,
            leaves_sent: 0,
            queries_heard: 0,
        }
    }

    pub fn groups(&self) -> &[MemberGroup] {
        &self.groups
    }

    fn v1_router(&self, now: Instant) -> bool {
        self.v1_router_until.is_some_and(|t| now < t)
    }

    fn report(&self, now: Instant, group: Ipv4Addr) -> IgmpRepr {
        let version = if self.v1_router(now) {
            IgmpVersion::V1
        } else {
            IgmpVersion::V2
        };
        IgmpRepr::MembershipReport { version, group }
    }

    /// Makes the interface's groups `wanted` (224.0.0.1 and non-multicast
    /// addresses are skipped): a new group's Report is due now with its
    /// repetition scheduled, a group no longer wanted is dropped and its
    /// Leave is due when we reported it last (§3). Groups past
    /// [`MAX_GROUPS`] are not reported.
    pub fn sync(&mut self, now: Instant, wanted: &[Ipv4Addr]) {
        let reportable = |g: &Ipv4Addr| g.is_multicast() && *g != ALL_SYSTEMS;
        let mut index = 0;
        while index < self.groups.len() {
            let group = self.groups[index].group;
            if wanted.contains(&group) {
                index += 1;
                continue;
            }
            let left = self.groups.swap_remove(index);
            if left.last_reporter && !self.v1_router(now) {
                self.due.push(IgmpRepr::LeaveGroup { group });
            }
        }
        for &group in wanted.iter().filter(|g| reportable(g)) {
            if self.groups.len() >= MAX_GROUPS || self.groups.iter().any(|g| g.group == group) {
                continue;
            }
            self.due.push(self.report(now, group));
            // §3: "repeat the Report once or twice after short delays".
            let again = now + random_delay(&mut self.rng, UNSOLICITED_REPORT_INTERVAL);
            self.groups.push(MemberGroup {
                group,
                report_at: Some(again),
                unsolicited: true,
                last_reporter: true,
            });
        }
    }

    /// A Query heard on the interface: a General one (`group`
    /// unspecified) starts every group's timer, a Group-Specific one that
    /// group's; a running timer is only ever shortened (§3). Max Resp
    /// Time 0 is IGMPv1's Query: 10 s, and v1 reports for 400 s (§4).
    pub fn on_query(&mut self, now: Instant, max_resp_tenths: u8, group: Ipv4Addr) {
        self.queries_heard += 1;
        let max = if max_resp_tenths == 0 {
            self.v1_router_until = Some(now + VERSION1_ROUTER_PRESENT_TIMEOUT);
            QUERY_RESPONSE_INTERVAL
        } else {
            Duration::from_millis(u64::from(max_resp_tenths) * 100)
        };
        for g in &mut self.groups {
            if !group.is_unspecified() && g.group != group {
                continue;
            }
            let at = now + random_delay(&mut self.rng, max);
            match g.report_at {
                Some(running) if running <= at => {}
                _ => {
                    g.report_at = Some(at);
                    g.unsolicited = false;
                }
            }
        }
    }

    /// Another host's Report for `group`: ours is not needed (§3), and
    /// the Leave is theirs to send.
    pub fn on_report(&mut self, group: Ipv4Addr) {
        if let Some(g) = self.groups.iter_mut().find(|g| g.group == group) {
            g.report_at = None;
            g.last_reporter = false;
        }
    }

    /// The messages due at `now`.
    pub fn poll(&mut self, now: Instant) -> Vec<IgmpRepr> {
        let mut out = std::mem::take(&mut self.due);
        for index in 0..self.groups.len() {
            if self.groups[index].report_at.is_some_and(|t| t <= now) {
                let group = self.groups[index].group;
                out.push(self.report(now, group));
                let g = &mut self.groups[index];
                g.report_at = None;
                g.unsolicited = false;
                g.last_reporter = true;
            }
        }
        for repr in &out {
            match repr {
                IgmpRepr::LeaveGroup { .. } => self.leaves_sent += 1,
                _ => self.reports_sent += 1,
            }
        }
        out
    }

    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        if !self.due.is_empty() {
            return Some(now);
        }
        self.groups.iter().filter_map(|g| g.report_at).min()
    }
}

/// A group a router has members for on one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterGroup {
    pub group: Ipv4Addr,
    /// When the membership lapses without another Report.
    pub expires: Instant,
    /// Group-Specific Queries still to send after a Leave, and when the
    /// next is due.
    pub specific_left: u32,
    pub specific_at: Option<Instant>,
}

/// A multicast router's IGMPv2 state on one interface.
#[derive(Debug, Clone)]
pub struct IgmpQuerier {
    address: Ipv4Addr,
    groups: Vec<RouterGroup>,
    next_general: Instant,
    startup_left: u32,
    /// A router with a lower address queries until then (§3).
    other_querier_until: Option<Instant>,
    pub general_queries_sent: u64,
    pub specific_queries_sent: u64,
}

impl IgmpQuerier {
    /// A querier on an interface whose address is `address`, starting at
    /// `now` with its Startup Query Count of General Queries (§7).
    pub fn new(now: Instant, address: Ipv4Addr) -> Self {
        Self {
            address,
            groups: Vec::new(),
            next_general: now,
            startup_left: ROBUSTNESS_VARIABLE,
            other_querier_until: None,
            general_queries_sent: 0,
            specific_queries_sent: 0,
        }
    }

    pub fn groups(&self) -> &[RouterGroup] {
        &self.groups
    }

    /// Whether we are the interface's querier (no lower address heard).
    pub fn is_querier(&self, now: Instant) -> bool {
        self.other_querier_until.is_none_or(|t| now >= t)
    }

    /// Whether the interface has members of `group` at `now`.
    pub fn has_members(&self, now: Instant, group: Ipv4Addr) -> bool {
        self.groups
            .iter()
            .any(|g| g.group == group && g.expires > now)
    }

    /// A Report for `group`: a member for another Group Membership
    /// Interval, and any pending Leave's queries stop (§7).
    pub fn on_report(&mut self, now: Instant, group: Ipv4Addr) {
        if !group.is_multicast() || group == ALL_SYSTEMS {
            return;
        }
        let expires = now + GROUP_MEMBERSHIP_INTERVAL;
        if let Some(g) = self.groups.iter_mut().find(|g| g.group == group) {
            g.expires = expires;
            g.specific_left = 0;
            g.specific_at = None;
        } else if self.groups.len() < MAX_GROUPS {
            self.groups.push(RouterGroup {
                group,
                expires,
                specific_left: 0,
                specific_at: None,
            });
        }
    }

    /// A Leave for `group`: the querier asks the group whether any member
    /// is left, Last Member Query Count times a Last Member Query Interval
    /// apart, and forgets it after that long with no Report (§3, §7).
    pub fn on_leave(&mut self, now: Instant, group: Ipv4Addr) {
        if !self.is_querier(now) {
            return;
        }
        if let Some(g) = self.groups.iter_mut().find(|g| g.group == group) {
            g.specific_left = ROBUSTNESS_VARIABLE;
            g.specific_at = Some(now);
            g.expires = g
                .expires
                .min(now + LAST_MEMBER_QUERY_INTERVAL * ROBUSTNESS_VARIABLE);
        }
    }

    /// A Query from another router at `source`: the lower address is the
    /// querier (§3).
    pub fn on_query(&mut self, now: Instant, source: Ipv4Addr) {
        if u32::from(source) < u32::from(self.address) {
            self.other_querier_until = Some(now + OTHER_QUERIER_PRESENT_INTERVAL);
        }
    }

    /// The Queries due at `now`; lapsed memberships are forgotten.
    pub fn poll(&mut self, now: Instant) -> Vec<IgmpRepr> {
        self.groups.retain(|g| g.expires > now);
        let mut out = Vec::new();
        if !self.is_querier(now) {
            return out;
        }
        if self.next_general <= now {
            out.push(IgmpRepr::MembershipQuery {
                max_resp_tenths: tenths(QUERY_RESPONSE_INTERVAL),
                group: core::net::Ipv4Addr::UNSPECIFIED,
            });
            self.general_queries_sent += 1;
            self.startup_left = self.startup_left.saturating_sub(1);
            self.next_general = now
                + if self.startup_left > 0 {
                    STARTUP_QUERY_INTERVAL
                } else {
                    QUERY_INTERVAL
                };
        }
        for g in &mut self.groups {
            if g.specific_at.is_some_and(|t| t <= now) && g.specific_left > 0 {
                out.push(IgmpRepr::MembershipQuery {
                    max_resp_tenths: tenths(LAST_MEMBER_QUERY_INTERVAL),
                    group: g.group,
                });
                self.specific_queries_sent += 1;
                g.specific_left -= 1;
                g.specific_at = (g.specific_left > 0).then(|| now + LAST_MEMBER_QUERY_INTERVAL);
            }
        }
        out
    }

    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let mut next = self.groups.iter().map(|g| g.expires).min();
        if self.is_querier(now) {
            let specific = self.groups.iter().filter_map(|g| g.specific_at).min();
            for t in [Some(self.next_general), specific].into_iter().flatten() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        } else if let Some(t) = self.other_querier_until {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    const G: Ipv4Addr = Ipv4Addr::new(239, 192, 0, 11);

    fn report(group: Ipv4Addr) -> IgmpRepr {
        IgmpRepr::MembershipReport {
            version: IgmpVersion::V2,
            group,
        }
    }

    #[test]
    fn a_join_reports_at_once_and_once_more_and_a_leave_says_so() {
        let mut m = IgmpMember::new(7);
        m.sync(at(0), &[ALL_SYSTEMS, G]);
        assert_eq!(m.poll(at(0)), vec![report(G)]);
        // 224.0.0.1 is never reported (§6).
        assert_eq!(m.groups().len(), 1);
        let again = m.next_deadline(at(0)).unwrap();
        assert!(again > at(0) && again <= at(10_000), "{again:?}");
        assert!(m.poll(Instant::from_nanos(again.as_nanos() - 1)).is_empty());
        assert_eq!(m.poll(again), vec![report(G)]);
        assert_eq!(m.next_deadline(again), None);
        m.sync(again, &[]);
        assert_eq!(m.poll(again), vec![IgmpRepr::LeaveGroup { group: G }]);
        assert_eq!((m.reports_sent, m.leaves_sent), (2, 1));
    }

    #[test]
    fn a_query_is_answered_after_a_random_delay_unless_another_host_answers() {
        let mut m = IgmpMember::new(1);
        m.sync(at(0), &[G]);
        m.poll(at(0));
        m.on_report(G); // the repetition is cancelled too
        assert_eq!(m.next_deadline(at(1)), None);
        m.on_query(at(1000), 100, Ipv4Addr::UNSPECIFIED);
        let due = m.next_deadline(at(1000)).unwrap();
        assert!(due > at(1000) && due <= at(11_000));
        assert_eq!(m.poll(due), vec![report(G)]);
        // Suppressed: another host's report before our timer fires, and
        // then no Leave is ours to send.
        m.on_query(at(20_000), 100, G);
        m.on_report(G);
        assert!(m.poll(at(31_000)).is_empty());
        m.sync(at(32_000), &[]);
        assert!(m.poll(at(32_000)).is_empty());
    }

    #[test]
    fn an_igmpv1_query_makes_reports_v1_and_leaves_silent() {
        let mut m = IgmpMember::new(3);
        m.sync(at(0), &[G]);
        m.poll(at(0));
        m.on_query(at(100), 0, Ipv4Addr::UNSPECIFIED);
        let due = m.next_deadline(at(100)).unwrap();
        assert!(due <= at(10_100));
        assert_eq!(
            m.poll(due),
            vec![IgmpRepr::MembershipReport {
                version: IgmpVersion::V1,
                group: G
            }]
        );
        m.sync(due, &[]);
        assert!(m.poll(due).is_empty(), "no Leave to a v1 router (§4)");
    }

    #[test]
    fn the_querier_learns_members_and_forgets_them_after_a_leave() {
        let mut q = IgmpQuerier::new(at(0), Ipv4Addr::new(192, 0, 2, 1));
        let general = IgmpRepr::MembershipQuery {
            max_resp_tenths: 100,
            group: Ipv4Addr::UNSPECIFIED,
        };
        assert_eq!(q.poll(at(0)), vec![general]);
        // The second startup query a quarter interval later.
        assert_eq!(q.next_deadline(at(0)), Some(at(31_250)));
        assert_eq!(q.poll(at(31_250)), vec![general]);
        assert_eq!(q.next_deadline(at(31_250)), Some(at(156_250)));
        q.on_report(at(40_000), G);
        assert!(q.has_members(at(40_000), G));
        q.on_leave(at(50_000), G);
        let specific = IgmpRepr::MembershipQuery {
            max_resp_tenths: 10,
            group: G,
        };
        assert_eq!(q.poll(at(50_000)), vec![specific]);
        assert_eq!(q.poll(at(51_000)), vec![specific]);
        assert!(q.has_members(at(51_500), G));
        assert!(q.poll(at(52_000)).is_empty());
        assert!(!q.has_members(at(52_000), G));
        assert!(q.groups().is_empty());
        // A member answering the specific query keeps the group.
        q.on_report(at(60_000), G);
        q.on_leave(at(61_000), G);
        q.poll(at(61_000));
        q.on_report(at(61_500), G);
        assert!(q.has_members(at(70_000), G));
        assert!(q.has_members(at(61_500 + 259_999), G));
        assert!(!q.has_members(at(61_500 + 260_000), G));
    }

    #[test]
    fn a_lower_addressed_router_takes_over_querying() {
        let mut q = IgmpQuerier::new(at(0), Ipv4Addr::new(192, 0, 2, 5));
        q.poll(at(0));
        q.on_query(at(1000), Ipv4Addr::new(192, 0, 2, 9));
        assert!(q.is_querier(at(1000)));
        q.on_query(at(2000), Ipv4Addr::new(192, 0, 2, 1));
        assert!(!q.is_querier(at(2000)));
        assert!(q.poll(at(40_000)).is_empty());
        assert!(q.is_querier(at(257_000)));
        assert!(!q.poll(at(257_000)).is_empty());
    }
}
