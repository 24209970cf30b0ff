//! The Multicast Listener Discovery *listener* (host side) of one interface:
//! MLDv2 (RFC 3810) by default, with MLDv1 (RFC 2710) compatibility, as a
//! pure state machine.
//!
//! Like the neighbour cache, the listener never sends, never reads a clock
//! and never sleeps: every input is an event carrying `now`
//! ([`MldListener::join`], [`MldListener::leave`], [`MldListener::on_message`]
//! for received Queries and other hosts' Reports) and every output is an
//! [`MldAction`] returned by [`MldListener::poll`], which the interface layer
//! turns into a message ([`wire::mld::MldRepr`]) sent to all-MLDv2-routers
//! (ff02::16), the group (v1 Report) or all-routers (ff02::2, v1 Done). The
//! runner sleeps until [`MldListener::next_deadline`]. A join or leave makes
//! a report due *at* `now`, so the next poll sends it; joins and leaves made
//! at the same instant share one MLDv2 report.
//!
//! # Scope
//!
//! * Any-source multicast only: every joined group is in filter mode
//!   EXCLUDE with an empty source list ("EXCLUDE {}"), and leaving is the
//!   change to INCLUDE {}. Source filtering (INCLUDE lists, ALLOW/BLOCK
//!   records, RFC 3810 §6.1's source-list merging) is not implemented. A
//!   Multicast-Address-and-Source-Specific Query is answered as if it were
//!   Multicast-Address-Specific, with MODE_IS_EXCLUDE {} — our full current
//!   state for the group, which answers any source question about it.
//! * Validating a received message (link-local source, hop limit 1, Router
//!   Alert option; RFC 3810 §5.1.14, §5.2.13 and §7.4) is the interface
//!   layer's job: what reaches [`MldListener::on_message`] is taken as valid.
//! * Splitting a report larger than the link MTU is the interface layer's
//!   job too (each record is 20 bytes; the group table is bounded).
//!
//! # Which groups are reported (RFC 3810 §6, RFC 2710 §5)
//!
//! The link-scope all-nodes address ff02::1 and every group of scope 0
//! (reserved) or 1 (interface-local, ff01::/16 and generally ffx1::/16) is
//! never reported: such groups can be joined (the stack joins ff02::1
//! implicitly) but no message is ever sent for them. All other groups,
//! solicited-node ones (ff02::1:ffXX:XXXX) included, are reported.
//!
//! # Compatibility (RFC 3810 §8.2.1)
//!
//! Hearing an MLDv1 Query starts (or restarts) the Older Version Querier
//! Present timer, RFC 3810 §9.12: [Robustness Variable] × [Query Interval]
//! plus [Query Response Interval] (260 s with the defaults). While it runs the
//! interface is in MLDv1 mode: joins send v1 Reports, leaves send Done only
//! if we were the last host to report the group (RFC 2710 §4's flag), Query
//! responses are per-group and suppressed by other hosts' Reports. When it
//! expires the interface returns to MLDv2. Every change of mode cancels all
//! pending response and retransmission timers.
//!
//! # Memory bound
//!
//! At most `capacity` groups, joined or still retransmitting their leave;
//! a join of a new group beyond that fails with [`MldError::TableFull`] and
//! is counted. The table is allocated at its bound once.
//!
//! # Timers
//!
//! Each group has at most two timers: its state-change retransmission and
//! its query response; the interface has at most two more: the MLDv2
//! General Query response and the Older Version Querier Present timer.
//! Randomized delays come from a seeded splitmix64, so the same seed and the
//! same events give the same actions. Retransmissions fired by
//! [`MldListener::poll`] are drawn from (0, [Unsolicited Report Interval]]
//! (RFC 3810 §6.1), never zero, so after `poll(now)` every deadline is later
//! than `now`.

use crate::random::SplitMix64;
use core::net::Ipv6Addr;
use core::time::Duration;

use wire::mld::{max_response_delay_ms, query_interval_secs, MldRecordType, MldRepr};

use crate::time::Instant;

/// RFC 3810 §9.1 Robustness Variable default.
pub const ROBUSTNESS_VARIABLE: u8 = 2;
/// RFC 3810 §9.2 Query Interval default.
pub const QUERY_INTERVAL: Duration = Duration::from_secs(125);
/// RFC 3810 §9.3 Query Response Interval default.
pub const QUERY_RESPONSE_INTERVAL: Duration = Duration::from_secs(10);
/// RFC 3810 §9.11 Unsolicited Report Interval default (MLDv2).
pub const UNSOLICITED_REPORT_INTERVAL_V2: Duration = Duration::from_secs(1);
/// RFC 2710 §7.10 Unsolicited Report Interval default (MLDv1).
pub const UNSOLICITED_REPORT_INTERVAL_V1: Duration = Duration::from_secs(10);
/// Default bound on the group table.
pub const DEFAULT_CAPACITY: usize = 64;

/// The link-scope all-nodes address, never reported (RFC 3810 §6).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// Parameters of an [`MldListener`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MldConfig {
    /// Most groups held (joined or still retransmitting a leave); at least 1.
    pub capacity: usize,
    /// [Robustness Variable] (RFC 3810 §9.1): each state change is sent
    /// this many times in all; at least 1.
    pub robustness_variable: u8,
    /// [Query Interval] (RFC 3810 §9.2), until a Query's QQIC says otherwise.
    pub query_interval: Duration,
    /// [Query Response Interval] (RFC 3810 §9.3).
    pub query_response_interval: Duration,
    /// [Unsolicited Report Interval] in MLDv2 mode (RFC 3810 §9.11).
    pub unsolicited_report_interval_v2: Duration,
    /// [Unsolicited Report Interval] in MLDv1 mode (RFC 2710 §7.10).
    pub unsolicited_report_interval_v1: Duration,
    /// Seed of the random delays (RFC 3810 §6.1, §6.2; RFC 2710 §4).
    pub random_seed: u64,
}

impl Default for MldConfig {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            robustness_variable: ROBUSTNESS_VARIABLE,
            query_interval: QUERY_INTERVAL,
            query_response_interval: QUERY_RESPONSE_INTERVAL,
            unsolicited_report_interval_v2: UNSOLICITED_REPORT_INTERVAL_V2,
            unsolicited_report_interval_v1: UNSOLICITED_REPORT_INTERVAL_V1,
            random_seed: 0,
        }
    }
}

impl MldConfig {
    fn normalized(mut self) -> Self {
        self.capacity = self.capacity.max(1);
        self.robustness_variable = self.robustness_variable.max(1);
        self
    }
}

/// The protocol version the interface speaks (RFC 3810 §8.2.1 Host
/// Compatibility Mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MldVersion {
    V1,
    V2,
}

/// A message for the interface layer to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MldAction {
    /// An MLDv2 Report (RFC 3810 §5.2) to ff02::16, one record per group,
    /// every source list empty.
    SendReportV2 {
        records: Vec<(MldRecordType, Ipv6Addr)>,
    },
    /// An MLDv1 Report (RFC 2710 §3) to `group`.
    SendReportV1 { group: Ipv6Addr },
    /// An MLDv1 Done (RFC 2710 §3) to ff02::2.
    SendDone { group: Ipv6Addr },
}

/// Why a join or leave was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MldError {
    #[error("{0} is not a multicast address")]
    NotMulticast(Ipv6Addr),
    #[error("the multicast group table is full")]
    TableFull,
    #[error("{0} is not joined")]
    NotJoined(Ipv6Addr),
}

/// The state change a group is (re)transmitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateChange {
    /// Joined: CHANGE_TO_EXCLUDE_MODE {} (v2) or an unsolicited Report (v1).
    Join,
    /// Left: CHANGE_TO_INCLUDE_MODE {} (v2 only).
    Leave,
}

/// A pending state-change report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingChange {
    pub change: StateChange,
    /// Transmissions still to make, the next one included.
    pub remaining: u8,
    pub deadline: Instant,
}

/// One group as the state dump shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    pub group: Ipv6Addr,
    /// Joins minus leaves; 0 while a leave is still being retransmitted.
    pub refcount: u32,
    /// False for ff02::1 and interface-local groups (RFC 3810 §6).
    pub reportable: bool,
    pub state_change: Option<PendingChange>,
    /// When the answer to a Query for this group is due (a v1 per-group
    /// timer, or a v2 Multicast-Address-Specific Query's).
    pub query_response: Option<Instant>,
    /// RFC 2710 §4: we sent the last v1 Report heard for the group.
    pub last_reporter: bool,
}

/// What happened, for the state dump and the probes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MldCounters {
    /// Joins accepted (each reference counts).
    pub joins: u64,
    /// Leaves accepted (each reference counts).
    pub leaves: u64,
    /// Joins of a new group refused because the table was full.
    pub table_full: u64,
    /// MLDv2 Reports asked for.
    pub reports_v2: u64,
    /// State-change records in them (RFC 3810 §6.1).
    pub state_change_records: u64,
    /// Current-state records in them (RFC 3810 §6.3).
    pub current_state_records: u64,
    /// MLDv1 Reports asked for.
    pub reports_v1: u64,
    /// MLDv1 Dones asked for.
    pub dones: u64,
    /// Leaves in v1 mode that sent no Done (not the last reporter).
    pub dones_skipped: u64,
    /// MLDv1 Queries received.
    pub queries_v1: u64,
    /// MLDv2 Queries received.
    pub queries_v2: u64,
    /// Queries ignored (bad group field, group not joined, or already
    /// covered by an earlier pending response).
    pub queries_ignored: u64,
    /// v1 Reports from other hosts that cancelled one of our timers.
    pub reports_suppressed: u64,
    /// Host Compatibility Mode changes to MLDv1.
    pub switches_to_v1: u64,
    /// Host Compatibility Mode changes back to MLDv2.
    pub switches_to_v2: u64,
}

#[derive(Debug, Clone)]
struct Group {
    addr: Ipv6Addr,
    refcount: u32,
    reportable: bool,
    state_change: Option<PendingChange>,
    query_response: Option<Instant>,
    last_reporter: bool,
}

impl Group {
    fn info(&self) -> GroupInfo {
        GroupInfo {
            group: self.addr,
            refcount: self.refcount,
            reportable: self.reportable,
            state_change: self.state_change,
            query_response: self.query_response,
            last_reporter: self.last_reporter,
        }
    }
}

/// Whether MLD messages may be sent for `group` (RFC 3810 §6, RFC 2710 §5):
/// not ff02::1, not scope 0 (reserved) nor 1 (interface-local).
pub fn is_reportable(group: Ipv6Addr) -> bool {
    let scope = group.octets()[1] & 0x0f;
    group.is_multicast() && group != ALL_NODES && scope > 1
}

/// The MLD listener of one interface.
#[derive(Debug, Clone)]
pub struct MldListener {
    config: MldConfig,
    groups: Vec<Group>,
    /// MLDv2 General Query response (RFC 3810 §6.2 "interface timer").
    general_response: Option<Instant>,
    /// Older Version Querier Present timer (RFC 3810 §8.2.1); running means
    /// MLDv1 mode.
    older_querier_until: Option<Instant>,
    /// [Query Interval] of the last Query that carried one (RFC 3810 §9.12).
    query_interval: Duration,
    rng: SplitMix64,
    counters: MldCounters,
}

impl MldListener {
    pub fn new(config: MldConfig) -> Self {
        let config = config.normalized();
        Self {
            groups: Vec::with_capacity(config.capacity),
            general_response: None,
            older_querier_until: None,
            query_interval: config.query_interval,
            rng: SplitMix64::new(config.random_seed),
            counters: MldCounters::default(),
            config,
        }
    }

    pub fn config(&self) -> &MldConfig {
        &self.config
    }

    pub fn counters(&self) -> &MldCounters {
        &self.counters
    }

    /// Host Compatibility Mode (RFC 3810 §8.2.1).
    pub fn version(&self) -> MldVersion {
        if self.older_querier_until.is_some() {
            MldVersion::V1
        } else {
            MldVersion::V2
        }
    }

    /// When the Older Version Querier Present timer expires, if running.
    pub fn older_querier_present_until(&self) -> Option<Instant> {
        self.older_querier_until
    }

    /// When the MLDv2 General Query response is due, if pending.
    pub fn general_response_due(&self) -> Option<Instant> {
        self.general_response
    }

    /// Whether `group` is joined (refcount above zero).
    pub fn is_member(&self, group: Ipv6Addr) -> bool {
        self.find(group)
            .is_some_and(|index| self.groups[index].refcount > 0)
    }

    /// Every group held, joined or leaving, in join order.
    pub fn groups(&self) -> Vec<GroupInfo> {
        self.groups.iter().map(Group::info).collect()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Joins `group` once more; returns the new reference count. The first
    /// join of a reportable group sends a state-change report (RFC 3810
    /// §6.1: CHANGE_TO_EXCLUDE_MODE {}; RFC 2710 §4: an unsolicited Report)
    /// due now, then [Robustness Variable] − 1 retransmissions.
    pub fn join(&mut self, now: Instant, group: Ipv6Addr) -> Result<u32, MldError> {
        if !group.is_multicast() {
            return Err(MldError::NotMulticast(group));
        }
        let index = match self.find(group) {
            Some(index) => index,
            None => {
                if self.groups.len() >= self.config.capacity {
                    self.counters.table_full += 1;
                    return Err(MldError::TableFull);
                }
                self.groups.push(Group {
                    addr: group,
                    refcount: 0,
                    reportable: is_reportable(group),
                    state_change: None,
                    query_response: None,
                    last_reporter: false,
                });
                self.groups.len() - 1
            }
        };
        self.counters.joins += 1;
        let robustness = self.config.robustness_variable;
        let entry = &mut self.groups[index];
        entry.refcount = entry.refcount.saturating_add(1);
        if entry.refcount == 1 && entry.reportable {
            // RFC 3810 §6.1: a new state change replaces a pending one and
            // restarts the retransmission count at [Robustness Variable].
            entry.state_change = Some(PendingChange {
                change: StateChange::Join,
                remaining: robustness,
                deadline: now,
            });
        }
        Ok(entry.refcount)
    }

    /// Drops one reference to `group`; returns the remaining count. The
    /// last leave of a reportable group sends (RFC 3810 §6.1)
    /// CHANGE_TO_INCLUDE_MODE {} due now, then [Robustness Variable] − 1
    /// retransmissions; in MLDv1 mode a Done due now, only if we were the
    /// last reporter (RFC 2710 §4), after which the group is forgotten.
    pub fn leave(&mut self, now: Instant, group: Ipv6Addr) -> Result<u32, MldError> {
        let index = self
            .find(group)
            .filter(|&index| self.groups[index].refcount > 0)
            .ok_or(MldError::NotJoined(group))?;
        self.counters.leaves += 1;
        let version = self.version();
        let robustness = self.config.robustness_variable;
        let entry = &mut self.groups[index];
        entry.refcount -= 1;
        if entry.refcount > 0 {
            return Ok(entry.refcount);
        }
        // Not a listener any more: no Query is answered for it.
        entry.query_response = None;
        match (entry.reportable, version) {
            (false, _) => {
                self.groups.remove(index);
            }
            (true, MldVersion::V2) => {
                entry.state_change = Some(PendingChange {
                    change: StateChange::Leave,
                    remaining: robustness,
                    deadline: now,
                });
            }
            (true, MldVersion::V1) if entry.last_reporter => {
                // RFC 2710 §4: Done, once, only from the last reporter; the
                // group is kept until the next poll sends it.
                entry.state_change = Some(PendingChange {
                    change: StateChange::Leave,
                    remaining: 1,
                    deadline: now,
                });
            }
            (true, MldVersion::V1) => {
                self.counters.dones_skipped += 1;
                self.groups.remove(index);
            }
        }
        Ok(0)
    }

    /// A received MLD message: Queries and other hosts' v1 Reports matter to
    /// a listener; v2 Reports and Dones are for routers and are ignored.
    pub fn on_message(&mut self, now: Instant, message: &MldRepr<'_>) {
        match *message {
            MldRepr::QueryV1 {
                max_response_delay,
                group,
            } => self.on_query_v1(now, max_response_delay, group),
            MldRepr::QueryV2 {
                max_resp_code,
                group,
                query_interval_code,
                ..
            } => self.on_query_v2(now, max_resp_code, group, query_interval_code),
            MldRepr::ReportV1 { group } => self.on_report_v1(now, group),
            MldRepr::Done { .. } | MldRepr::ReportV2 { .. } => {}
        }
    }

    /// An MLDv1 Query (RFC 2710 §3, §4) with its Maximum Response Delay in
    /// milliseconds; `group` is :: for a General Query.
    pub fn on_query_v1(&mut self, now: Instant, max_response_delay_ms: u16, group: Ipv6Addr) {
        self.counters.queries_v1 += 1;
        // RFC 3810 §8.2.1: an MLDv1 Query (re)starts the Older Version
        // Querier Present timer, §9.12 [RV] × [QI] + [QRI].
        let timeout = self
            .query_interval
            .saturating_mul(u32::from(self.config.robustness_variable))
            .saturating_add(self.config.query_response_interval);
        if self.older_querier_until.is_none() {
            self.counters.switches_to_v1 += 1;
            self.cancel_all_timers();
        }
        self.older_querier_until = Some(now + timeout);
        let max_delay = Duration::from_millis(u64::from(max_response_delay_ms));
        self.answer_query_v1(now, max_delay, group);
    }

    /// An MLDv2 Query (RFC 3810 §5.1) with its Maximum Response Code and
    /// QQIC; `group` is :: for a General Query.
    pub fn on_query_v2(
        &mut self,
        now: Instant,
        max_resp_code: u16,
        group: Ipv6Addr,
        query_interval_code: u8,
    ) {
        self.counters.queries_v2 += 1;
        // RFC 3810 §5.1.9, §9.12: remember the querier's Query Interval.
        let qqi = query_interval_secs(query_interval_code);
        if qqi > 0 {
            self.query_interval = Duration::from_secs(u64::from(qqi));
        }
        // RFC 3810 §5.1.3: the Maximum Response Code decodes to ms.
        let max_delay = Duration::from_millis(u64::from(max_response_delay_ms(max_resp_code)));
        if self.version() == MldVersion::V1 {
            // RFC 3810 §8.2.1: in MLDv1 mode the host speaks only MLDv1; a
            // v2 Query is answered the way a v1 host would read it.
            self.answer_query_v1(now, max_delay, group);
            return;
        }
        let delay = self.random_upto(max_delay);
        let due = now + delay;
        // RFC 3810 §6.2 rule 1: a pending General Query response due
        // sooner already covers this Query.
        if self.general_response.is_some_and(|pending| pending <= due) {
            self.counters.queries_ignored += 1;
            return;
        }
        if group.is_unspecified() {
            // Rule 2: a General Query (re)schedules the interface timer.
            self.general_response = Some(due);
            return;
        }
        // Rule 3: a Multicast Address Specific Query for a group we listen
        // to schedules (or advances) that group's timer; others are ignored.
        match self
            .find(group)
            .filter(|&index| self.groups[index].refcount > 0 && self.groups[index].reportable)
        {
            Some(index) => {
                let entry = &mut self.groups[index];
                entry.query_response = Some(entry.query_response.map_or(due, |t| t.min(due)));
            }
            None => self.counters.queries_ignored += 1,
        }
    }

    /// Another host's MLDv1 Report. In MLDv1 mode it suppresses ours (RFC
    /// 2710 §4: stop the timer, clear the last-reporter flag); MLDv2 hosts
    /// never suppress (RFC 3810 §6.2) and ignore it.
    pub fn on_report_v1(&mut self, _now: Instant, group: Ipv6Addr) {
        if self.version() != MldVersion::V1 {
            return;
        }
        let Some(index) = self.find(group) else {
            return;
        };
        let entry = &mut self.groups[index];
        if entry.refcount == 0 {
            return;
        }
        // RFC 2710 §4 "Delaying Listener" + "report received": the pending
        // unsolicited repeat is that state's timer too.
        if entry.query_response.is_some() || entry.state_change.is_some() {
            entry.query_response = None;
            entry.state_change = None;
            self.counters.reports_suppressed += 1;
        }
        entry.last_reporter = false;
    }

    /// Fires every timer due at or before `now` and returns the messages to
    /// send, in order. Afterwards every deadline is later than `now`.
    pub fn poll(&mut self, now: Instant) -> Vec<MldAction> {
        let mut actions = Vec::new();
        // Timers due before the Older Version Querier Present timer expires
        // fire in MLDv1 mode, then the mode changes (RFC 3810 §8.2.1).
        let expiry = self.older_querier_until.filter(|&until| until <= now);
        match expiry {
            Some(until) => {
                if until > Instant::ZERO {
                    self.fire(now, Instant::from_nanos(until.as_nanos() - 1), &mut actions);
                }
                self.older_querier_until = None;
                self.counters.switches_to_v2 += 1;
                self.cancel_all_timers();
            }
            None => self.fire(now, now, &mut actions),
        }
        actions
    }

    /// The earliest deadline, if any: poll then.
    pub fn next_deadline(&self) -> Option<Instant> {
        let groups = self.groups.iter().flat_map(|entry| {
            [
                entry.state_change.map(|change| change.deadline),
                entry.query_response,
            ]
        });
        groups
            .chain([self.general_response, self.older_querier_until])
            .flatten()
            .min()
    }

    fn find(&self, group: Ipv6Addr) -> Option<usize> {
        self.groups.iter().position(|entry| entry.addr == group)
    }

    /// RFC 2710 §4 Query handling, per group: start a timer at a random
    /// delay in [0, Maximum Response Delay], or restart it if the one
    /// running would fire later than that delay.
    fn answer_query_v1(&mut self, now: Instant, max_delay: Duration, group: Ipv6Addr) {
        let general = group.is_unspecified();
        let mut answered = false;
        for index in 0..self.groups.len() {
            let entry = &self.groups[index];
            if entry.refcount == 0 || !entry.reportable || !(general || entry.addr == group) {
                continue;
            }
            answered = true;
            let needs_timer = entry
                .query_response
                .is_none_or(|running| running - now > max_delay);
            if needs_timer {
                let due = now + self.random_upto(max_delay);
                self.groups[index].query_response = Some(due);
            }
        }
        if !answered {
            self.counters.queries_ignored += 1;
        }
    }

    /// RFC 3810 §8.2.1: a change of Host Compatibility Mode cancels every
    /// pending response and retransmission timer. Groups that were only
    /// retransmitting a leave are dropped.
    fn cancel_all_timers(&mut self) {
        self.general_response = None;
        self.groups.retain(|entry| entry.refcount > 0);
        for entry in &mut self.groups {
            entry.state_change = None;
            entry.query_response = None;
            entry.last_reporter = false;
        }
    }

    /// Fires timers due at or before `limit`; successors are scheduled
    /// from `now`.
    fn fire(&mut self, now: Instant, limit: Instant, actions: &mut Vec<MldAction>) {
        match self.version() {
            MldVersion::V2 => self.fire_v2(now, limit, actions),
            MldVersion::V1 => self.fire_v1(now, limit, actions),
        }
    }

    fn fire_v2(&mut self, now: Instant, limit: Instant, actions: &mut Vec<MldAction>) {
        let interval = self.config.unsolicited_report_interval_v2;
        // State-change records due, in one report (RFC 3810 §6.1).
        let mut changes = Vec::new();
        for index in 0..self.groups.len() {
            let Some(pending) = self.groups[index].state_change else {
                continue;
            };
            if pending.deadline > limit {
                continue;
            }
            let record = match pending.change {
                StateChange::Join => MldRecordType::ChangeToExclude,
                StateChange::Leave => MldRecordType::ChangeToInclude,
            };
            changes.push((record, self.groups[index].addr));
            let remaining = pending.remaining.saturating_sub(1);
            // RFC 3810 §6.1: retransmissions at random intervals in
            // (0, [Unsolicited Report Interval]].
            self.groups[index].state_change = (remaining > 0).then(|| PendingChange {
                remaining,
                deadline: now + self.random_nonzero_upto(interval),
                ..pending
            });
        }
        // A group whose leave is fully retransmitted is forgotten.
        self.groups
            .retain(|entry| entry.refcount > 0 || entry.state_change.is_some());
        if !changes.is_empty() {
            self.counters.reports_v2 += 1;
            self.counters.state_change_records += changes.len() as u64;
            actions.push(MldAction::SendReportV2 { records: changes });
        }

        // Current-state records (RFC 3810 §6.3): the General Query response
        // lists every group we listen to, MODE_IS_EXCLUDE {}; it also
        // answers any group-specific one pending.
        let general_due = self.general_response.is_some_and(|due| due <= limit);
        if general_due {
            self.general_response = None;
        }
        let mut current = Vec::new();
        for entry in &mut self.groups {
            let group_due = entry.query_response.is_some_and(|due| due <= limit);
            if general_due || group_due {
                entry.query_response = None;
                if entry.refcount > 0 && entry.reportable {
                    current.push((MldRecordType::ModeIsExclude, entry.addr));
                }
            }
        }
        if !current.is_empty() {
            self.counters.reports_v2 += 1;
            self.counters.current_state_records += current.len() as u64;
            actions.push(MldAction::SendReportV2 { records: current });
        }
    }

    fn fire_v1(&mut self, now: Instant, limit: Instant, actions: &mut Vec<MldAction>) {
        let interval = self.config.unsolicited_report_interval_v1;
        for index in 0..self.groups.len() {
            let mut send = false;
            if let Some(pending) = self.groups[index].state_change {
                if pending.deadline <= limit {
                    if pending.change == StateChange::Leave {
                        self.groups[index].state_change = None;
                        self.counters.dones += 1;
                        actions.push(MldAction::SendDone {
                            group: self.groups[index].addr,
                        });
                        continue;
                    }
                    send = true;
                    let remaining = pending.remaining.saturating_sub(1);
                    // RFC 2710 §4: the unsolicited Report is repeated after
                    // a random delay in (0, [Unsolicited Report Interval]].
                    self.groups[index].state_change = (remaining > 0).then(|| PendingChange {
                        remaining,
                        deadline: now + self.random_nonzero_upto(interval),
                        ..pending
                    });
                }
            }
            let entry = &mut self.groups[index];
            if entry.query_response.is_some_and(|due| due <= limit) {
                entry.query_response = None;
                send = true;
            }
            if send && entry.refcount > 0 && entry.reportable {
                // RFC 2710 §4: sending a Report sets the last-reporter flag.
                entry.last_reporter = true;
                self.counters.reports_v1 += 1;
                actions.push(MldAction::SendReportV1 { group: entry.addr });
            }
        }
        // A group whose Done went out is forgotten.
        self.groups
            .retain(|entry| entry.refcount > 0 || entry.state_change.is_some());
    }

    /// A uniform delay in [0, max], nanosecond resolution.
    fn random_upto(&mut self, max: Duration) -> Duration {
        let span = u128::from(nanos(max)) + 1;
        let r = (u128::from(self.next_random()) * span) >> 64;
        Duration::from_nanos(u64::try_from(r).unwrap_or(u64::MAX))
    }

    /// A uniform delay in (0, max] (1 ns if `max` is zero).
    fn random_nonzero_upto(&mut self, max: Duration) -> Duration {
        let span = u128::from(nanos(max).max(1));
        let r = (u128::from(self.next_random()) * span) >> 64;
        Duration::from_nanos(u64::try_from(r + 1).unwrap_or(u64::MAX))
    }

    fn next_random(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

/// Durations past 584 years saturate.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reportable_groups_follow_rfc_3810_section_6() {
        assert!(!is_reportable(ALL_NODES));
        assert!(!is_reportable("ff01::2".parse().unwrap()));
        assert!(!is_reportable("ff11::1234".parse().unwrap()));
        assert!(!is_reportable("ff00::1".parse().unwrap()));
        assert!(!is_reportable("fe80::1".parse().unwrap()));
        assert!(is_reportable("ff02::1:ff00:1".parse().unwrap()));
        assert!(is_reportable("ff02::2".parse().unwrap()));
        assert!(is_reportable("ff05::1:3".parse().unwrap()));
    }

    #[test]
    fn random_delays_stay_in_their_ranges() {
        let mut l = MldListener::new(MldConfig::default());
        let max = Duration::from_millis(3);
        for _ in 0..1000 {
            assert!(l.random_upto(max) <= max);
            let d = l.random_nonzero_upto(max);
            assert!(d > Duration::ZERO && d <= max);
        }
        assert_eq!(l.random_upto(Duration::ZERO), Duration::ZERO);
        assert_eq!(
            l.random_nonzero_upto(Duration::ZERO),
            Duration::from_nanos(1)
        );
    }

    #[test]
    fn config_lower_bounds() {
        let l = MldListener::new(MldConfig {
            capacity: 0,
            robustness_variable: 0,
            ..MldConfig::default()
        });
        assert_eq!(l.config().capacity, 1);
        assert_eq!(l.config().robustness_variable, 1);
    }

    #[test]
    fn mode_change_cancels_pending_timers() {
        let mut l = MldListener::new(MldConfig::default());
        let g: Ipv6Addr = "ff0e::1".parse().unwrap();
        l.join(Instant::ZERO, g).unwrap();
        l.poll(Instant::ZERO);
        assert!(l.groups()[0].state_change.is_some());
        l.on_query_v1(Instant::ZERO, 0, "ff0e::99".parse().unwrap());
        assert_eq!(l.counters().switches_to_v1, 1);
        // The v2 retransmission is gone; only the Older Version Querier
        // Present timer remains.
        assert!(l.groups()[0].state_change.is_none());
        assert_eq!(l.next_deadline(), l.older_querier_present_until());
    }
}
