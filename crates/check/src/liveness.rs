//! L1–L3, the liveness oracles (docs/design.md §7), pure functions of a history like S1–S4.
//!
//! - **L1** after a holder crashes, or stops acting for longer than the bound (a process pause,
//!   or its work stalled while its renewal goes on), a client that is waiting for the lock gets
//!   it — or the service grants it to someone — within `ttl + lock_delay + slack` of the stop.
//! - **L2** a holder that renews and is healthy (no fault on its own node) keeps its lock
//!   through every outage (partitions, lost or delayed messages, a leader change, a server
//!   crash) shorter than `ttl − renew_every − renew_slack`: losing it (a failed renewal, a
//!   renew deadline, a lease that ran out, a fenced write) is a violation. L2 is about the
//!   service and the renewal, so a holder that gives its lock up at a validity check (its
//!   planned work outlasts what is left of the lease) has lost nothing while its renewal is
//!   still trying: the service never took the lock and the renewal has not failed it (had the
//!   holder carried on, the next retry could have saved it). Such a give-up is a loss only when
//!   the renewal had already failed the holder: the lease had run out before it, or the
//!   renewal had stopped for good (its last attempt got no answer and the client does not
//!   retry: `renew_retry = give-up`). Otherwise L2 makes no claim about that hold.
//!   Whatever the outage, a holder that gives its lock up at its renew deadline while its
//!   service was renewing it — only delays on the way, every renewal answered so far answered
//!   `ok`, one still on its way, nobody else granted the lock — lost it too: the service was
//!   slow, not down (client-go under a slow API server, kubernetes/kubernetes#65966).
//! - **L3** no lock stays taken for longer than `ttl + lock_delay + slack` while no live client
//!   believes it holds it: a client whose acquire is refused (`fail`, or given up as `info`) in
//!   calm conditions, that long after anyone last believed they held the lock, has found an
//!   orphaned lock. The refusal counts when it happened (the answer or the give-up), so a
//!   waiter queued through a release (a blocking acquire, a watch) is judged at its wait's end. "Believed" covers every hold, and every grant the service recorded (its
//!   client may never have heard of it: a lost answer, a delayed request); for algorithms that
//!   record no grants, every acquire whose answer was lost. For a lock whose waiters judge its
//!   expiry from their own observation of a record (Kubernetes' Lease), the allowance also
//!   restarts when a fault that hid the record from the waiter ends
//!   ([`LivenessSpec::observed_expiry`]). A fault on the service restarts it too (a new leader
//!   renews leases), once the service can have recovered: after the fault's end, a leader
//!   election ([`LivenessSpec::election`]) and, under TCP, the retransmission backoff that
//!   holds back what the cut swallowed ([`LivenessSpec::backoff`]).
//!
//! The slacks are what a correct client and service need on top of the lease: `slack` is the
//! waiter's retry period, two attempts (an attempt is one acquire or renewal with its request
//! timeouts: Redlock's is masters × per-master timeout) and the declared clock uncertainty;
//! `renew_slack` is a third of the renewal period (the retry interval after a failed renewal),
//! two attempts and the uncertainty. A property is judged only where it makes a claim: the
//! windows it looks at must be free of faults that could legitimately delay the lock (any fault
//! that touches the lock servers themselves, or the client in question), and they must end
//! before the workload's duration (after it, waiters stop asking). Where it does not judge, it
//! says nothing — never a violation.

use std::collections::BTreeMap;

use locksim_core::fault::PauseTask;
use locksim_core::history::{EventKind, LostCause, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{Fault, History, Nanos, NodeId, Property, RenewRetry, Verdict, Violation};

use crate::holds::{Hold, HoldEnd};
use crate::linear::pairs::pair_ops;
use crate::{Names, MAX_LISTED_PER_KEY};

/// One client's timing, as far as liveness is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientTiming {
    /// The lease length it asks for, ns.
    pub ttl: Nanos,
    /// Its renewal period, ns, if it renews.
    pub renew_every: Option<Nanos>,
    /// What its renewal does after an attempt without an answer: retry until the lease would
    /// end (the default), or stop renewing (`give-up`). L2 reads it to tell a holder's
    /// voluntary give-up at a validity check from one whose renewal had stopped.
    pub renew_retry: RenewRetry,
    /// True time after which it starts no new attempt, ns.
    pub duration: Nanos,
}

/// What L1–L3 need to know beyond the history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LivenessSpec {
    /// Node ids below this are lock servers (locksim's layout: servers, clients, resource).
    pub servers: u32,
    /// Each client's timing, by node id (clients missing here are judged with `default`).
    pub clients: BTreeMap<NodeId, ClientTiming>,
    /// The timing of clients not in `clients`.
    pub default: Option<ClientTiming>,
    /// After a lease of a holder that stopped ends, the service keeps refusing the lock for
    /// this long (Consul's lock-delay), ns; 0 for most algorithms.
    pub lock_delay: Nanos,
    /// The longest one acquire or renewal attempt takes when the service is healthy, ns.
    pub attempt: Nanos,
    /// The longest a waiter waits before asking again, ns (the workload's retry delay).
    pub retry: Nanos,
    /// The declared clock-uncertainty bound, ns.
    pub uncertainty: Nanos,
    /// True time after which clients start no new attempts (the workload's duration), ns.
    pub duration: Nanos,
    /// The lock never expires (a session lock held until released, as PostgreSQL's advisory
    /// locks): L1, which promises that a stopped holder's lease runs out, makes no claim and is
    /// not judged. `false` (a lease) by default.
    pub non_expiring: bool,
    /// Each waiter judges the lock's expiry itself, from the time it last saw the lock's record
    /// change, and the service judges no time (a compare-and-swap record such as a Kubernetes
    /// Lease: client-go's `observedTime`, see
    /// <https://pkg.go.dev/k8s.io/client-go/tools/leaderelection>). A waiter cut off from the
    /// service (a partition, an isolation, a pause or crash of the waiter) cannot see the
    /// record, so after the cut it must watch the record for a whole lease before it may take
    /// it: L3 counts a waiter's allowance from the end of the last such fault on the waiter as
    /// well as from the last belief. `false` (the service ends leases itself) by default.
    pub observed_expiry: bool,
    /// After a fault on the service ends, how long the service may need to have a leader
    /// again, ns (a Raft election; 0 for a service without elections). L3 restarts its
    /// allowance that much after such a fault's end, since a new leader renews leases.
    pub election: Nanos,
    /// The network retransmits with exponential backoff (TCP, whose floor on the
    /// retransmission timeout is this many ns: Linux's `tcp_rto_min`); `None` for datagrams.
    /// A segment lost in a cut of length `d` is retried at doubling intervals, so the first
    /// retry after the heal comes up to `d` + the RTO later: L3 restarts its allowance that
    /// much later again after a fault on the service, whose own traffic waits for the retry.
    pub backoff: Option<Nanos>,
}

impl LivenessSpec {
    /// When what a network cut from `start` to `end` swallowed can have been retried after
    /// the heal, ns: `end`, and under TCP the cut's length and an RTO later.
    fn retried(&self, start: Nanos, end: Nanos) -> Nanos {
        let backoff = self
            .backoff
            .map_or(0, |rto| end.saturating_sub(start).saturating_add(rto));
        end.saturating_add(backoff)
    }

    /// When L3 restarts its allowance after a fault on the service that lasted from `start`
    /// to `end`, ns: once the service's traffic was retried and a new leader elected.
    fn recovered(&self, start: Nanos, end: Nanos) -> Nanos {
        self.retried(start, end).saturating_add(self.election)
    }

    fn timing(&self, client: NodeId) -> ClientTiming {
        self.clients
            .get(&client)
            .copied()
            .or(self.default)
            .unwrap_or(ClientTiming {
                ttl: 0,
                renew_every: None,
                renew_retry: RenewRetry::default(),
                duration: self.duration,
            })
    }

    /// The longest lease any client asks for, ns.
    fn max_ttl(&self) -> Nanos {
        self.clients
            .values()
            .chain(self.default.iter())
            .map(|c| c.ttl)
            .max()
            .unwrap_or(0)
    }

    /// What a waiter needs beyond the lease's end and the lock delay, ns.
    pub fn slack(&self) -> Nanos {
        self.retry + 2 * self.attempt + self.uncertainty
    }

    /// What a renewing holder needs beyond an outage, ns, when it renews every `every` ns.
    pub fn renew_slack(&self, every: Nanos) -> Nanos {
        every / 3 + 2 * self.attempt + self.uncertainty
    }
}

/// A fault's footprint in true time.
#[derive(Debug, Clone)]
struct Window {
    /// The `fault` event.
    event: u64,
    start: Nanos,
    /// Exclusive; `Nanos::MAX` for a fault that never ends (a crash without restart, drift).
    end: Nanos,
    /// Every node it names.
    nodes: Vec<NodeId>,
    /// It changes the service itself: a fault on a server, or a cut between servers.
    on_service: bool,
    /// The node it stops or whose clocks it changes (pause, crash, clock step or drift).
    on_node: Option<NodeId>,
    /// It is a clock fault.
    clock: bool,
    /// It stops its node's work (a process pause, a stall of a client's work, or a crash),
    /// with whether it is a crash.
    stop: Option<bool>,
    /// It only slows messages down (a `delay`): every message still arrives.
    slow: bool,
}

impl Window {
    fn overlaps(&self, from: Nanos, to: Nanos) -> bool {
        self.start < to && self.end > from
    }
    fn touches(&self, node: NodeId) -> bool {
        self.nodes.contains(&node)
    }
}

/// The fault windows of a history, with `heal`s cutting network faults short.
fn windows(history: &History, spec: &LivenessSpec) -> Vec<Window> {
    let server = |n: &NodeId| *n < spec.servers;
    let both = |a: &[NodeId], b: &[NodeId]| a.iter().any(server) && b.iter().any(server);
    let mut out: Vec<Window> = Vec::new();
    let lasting = spec.max_ttl().saturating_add(spec.slack());
    for e in &history.events {
        let EventKind::Fault { fault } = &e.kind else {
            continue;
        };
        let t = e.time;
        let until = |d: Nanos| t.saturating_add(d);
        let (end, nodes, on_service, on_node, clock, stop) = match fault {
            Fault::Heal => {
                for w in out.iter_mut().filter(|w| w.start <= t && w.end > t) {
                    if w.on_node.is_none() && !w.clock {
                        w.end = t;
                    }
                }
                continue;
            }
            // Recorded only when no server led: nothing happened.
            Fault::IsolateLeader { .. } => continue,
            Fault::Partition { a, b, duration, .. } => (
                until(*duration),
                [a.clone(), b.clone()].concat(),
                both(a, b),
                None,
                false,
                None,
            ),
            Fault::PartitionOneway {
                from, to, duration, ..
            }
            | Fault::Loss {
                from, to, duration, ..
            }
            | Fault::Delay {
                from, to, duration, ..
            }
            | Fault::Duplicate {
                from, to, duration, ..
            } => (
                until(*duration),
                [from.clone(), to.clone()].concat(),
                both(from, to),
                None,
                false,
                None,
            ),
            Fault::DropReplies {
                clients,
                servers,
                duration,
            } => (
                until(*duration),
                [clients.clone(), servers.clone()].concat(),
                both(clients, servers),
                None,
                false,
                None,
            ),
            Fault::Isolate { node, duration, .. } => (
                until(*duration),
                vec![*node],
                server(node),
                None,
                false,
                None,
            ),
            Fault::Pause {
                node,
                duration,
                task,
            } => (
                until(*duration),
                vec![*node],
                server(node),
                Some(*node),
                false,
                (*task != PauseTask::Renewal).then_some(false),
            ),
            Fault::Crash {
                node,
                restart_after,
            } => (
                restart_after.map_or(Nanos::MAX, until),
                vec![*node],
                server(node),
                Some(*node),
                false,
                Some(true),
            ),
            // A step moves the expiry of the leases it finds (a step back by Δ makes them last
            // Δ longer): its effect lasts one lease and Δ.
            Fault::ClockStep { node, delta } => (
                until(lasting.saturating_add(delta.unsigned_abs())),
                vec![*node],
                server(node),
                Some(*node),
                true,
                None,
            ),
            Fault::ClockDrift { node, .. } => (
                Nanos::MAX,
                vec![*node],
                server(node),
                Some(*node),
                true,
                None,
            ),
        };
        out.push(Window {
            event: e.id,
            start: t,
            end,
            nodes,
            on_service,
            on_node,
            clock,
            stop,
            slow: matches!(fault, Fault::Delay { .. }),
        });
    }
    out
}

/// One acquire attempt.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    client: NodeId,
    key: u32,
    /// Invoke event id.
    id: u64,
    /// Invoke time.
    invoke: Nanos,
    /// Completion time and phase; `None`: it never completed.
    done: Option<(Nanos, Phase)>,
}

impl Attempt {
    fn ok(&self) -> bool {
        matches!(self.done, Some((_, Phase::Ok)))
    }
    /// Its outcome is unknown: it may have taken the lock unseen.
    fn unknown(&self) -> bool {
        !matches!(self.done, Some((_, Phase::Ok | Phase::Fail)))
    }
    fn end(&self, run_end: Nanos) -> Nanos {
        self.done.map_or(run_end, |d| d.0)
    }
}

fn attempts(history: &History) -> Vec<Attempt> {
    pair_ops(history, |f| f == OpF::Acquire)
        .into_iter()
        .filter_map(|(inv, done)| {
            let EventKind::Op { key, .. } = inv.kind else {
                return None;
            };
            Some(Attempt {
                client: inv.node,
                key,
                id: inv.id,
                invoke: inv.time,
                done: done.map(|(e, p)| (e.time, p)),
            })
        })
        .collect()
}

fn t(ns: Nanos) -> String {
    fmt_nanos(ns as i128)
}

/// Adds the L1–L3 violations of `history` to `verdict` (at most [`MAX_LISTED_PER_KEY`] listed
/// per key and property, the rest counted in `omitted`). `holds` are the history's holds, as
/// [`crate::derive_holds`] returns them.
pub fn check(
    history: &History,
    holds: &[Hold],
    spec: &LivenessSpec,
    names: Names,
    verdict: &mut Verdict,
) {
    let run = Run {
        history,
        holds,
        spec,
        faults: windows(history, spec),
        tries: attempts(history),
        names,
    };
    let mut found = Vec::new();
    if !spec.non_expiring {
        l1(&run, &mut found);
    }
    l2(&run, &mut found);
    l3(&run, &mut found);
    let mut listed: BTreeMap<(Property, u32), usize> = BTreeMap::new();
    for v in found {
        let n = listed.entry((v.kind, v.key)).or_default();
        if *n >= MAX_LISTED_PER_KEY {
            verdict.omitted += 1;
        } else {
            *n += 1;
            verdict.violations.push(v);
        }
    }
}

/// What the three oracles look at: the history, its holds, the spec, and the fault windows
/// and acquire attempts read from the history once.
struct Run<'a> {
    history: &'a History,
    holds: &'a [Hold],
    spec: &'a LivenessSpec,
    faults: Vec<Window>,
    tries: Vec<Attempt>,
    names: Names<'a>,
}

/// A run's parts, for the oracles: (history, holds, spec, fault windows, attempts, names).
type Parts<'r, 'a> = (
    &'a History,
    &'a [Hold],
    &'a LivenessSpec,
    &'r [Window],
    &'r [Attempt],
    Names<'a>,
);

impl<'a> Run<'a> {
    fn parts(&self) -> Parts<'_, 'a> {
        (
            self.history,
            self.holds,
            self.spec,
            &self.faults,
            &self.tries,
            self.names,
        )
    }
}

/// L1: a stopped holder's lock reaches a waiter within the bound.
fn l1(run: &Run, out: &mut Vec<Violation>) {
    let (history, holds, spec, faults, tries, names) = run.parts();
    let mut judged: Vec<(u32, Nanos)> = Vec::new();
    for h in holds {
        let ttl = spec.timing(h.client).ttl;
        let bound = ttl + spec.lock_delay + spec.slack();
        // How the holder stopped: a crash ends its hold; a pause must outlast the bound.
        let stop = match h.ended_by {
            HoldEnd::Crash(id) => faults.iter().find(|w| w.event == id),
            _ => faults.iter().find(|w| {
                w.stop == Some(false)
                    && w.on_node == Some(h.client)
                    && w.start >= h.start
                    && w.start < h.end
                    && w.end >= w.start.saturating_add(bound)
            }),
        };
        let Some(stop) = stop else { continue };
        let t0 = stop.start;
        let until = t0.saturating_add(bound);
        if until > spec.duration || judged.contains(&(h.key, t0)) {
            continue;
        }
        // Anything that changes the service, around the hold and the bound, may delay the
        // lock legitimately.
        if faults
            .iter()
            .any(|w| w.event != stop.event && w.on_service && w.overlaps(h.start, until))
        {
            continue;
        }
        // Another holder in the window holds the lock legitimately (or is an S1 finding).
        if holds
            .iter()
            .any(|g| g.key == h.key && g.handle != h.handle && g.start <= t0 && g.end > t0)
        {
            continue;
        }
        let free_at = t0 + ttl + spec.lock_delay;
        let waiting = |c: NodeId| -> Option<&Attempt> {
            if c == h.client
                || spec.timing(c).duration < until
                || faults.iter().any(|w| w.touches(c) && w.overlaps(t0, until))
            {
                return None;
            }
            let last = tries
                .iter()
                .filter(|a| a.client == c && a.invoke <= free_at)
                .max_by_key(|a| a.invoke)?;
            let still = last.done.is_none_or(|d| d.0 > free_at) || !last.ok();
            (last.key == h.key && still).then_some(last)
        };
        let mut waiters: Vec<&Attempt> = Vec::new();
        let mut seen = Vec::new();
        for a in tries {
            if !seen.contains(&a.client) {
                seen.push(a.client);
                waiters.extend(waiting(a.client));
            }
        }
        let Some(w) = waiters.first() else { continue };
        // Someone got it: a client heard `ok`, or the service granted it (to a waiter that
        // may hear of it only later, e.g. one paused meanwhile).
        let granted = tries.iter().any(|a| {
            a.key == h.key && a.ok() && a.done.is_some_and(|d| d.0 > t0 && d.0 <= until)
        }) || history.events.iter().any(|e| {
            matches!(e.kind, EventKind::Grant { key, client, .. } if key == h.key && client != h.client)
                && e.time > t0
                && e.time <= until
        });
        judged.push((h.key, t0));
        if granted {
            continue;
        }
        let next = tries
            .iter()
            .filter(|a| a.key == h.key && a.ok() && a.done.is_some_and(|d| d.0 > t0))
            .filter_map(|a| a.done.map(|d| d.0))
            .min();
        let how = if stop.stop == Some(true) {
            "crashed"
        } else {
            "stopped acting (paused)"
        };
        out.push(Violation {
            kind: Property::L1,
            key: h.key,
            summary: format!(
                "no waiter got k{} after its holder stopped: {} {how} at {} holding it (lease {}); {} was waiting (asking since {}), yet {} — beyond the bound of {} (ttl {} + lock delay {} + slack {})",
                h.key,
                names.of(h.client),
                t(t0),
                t(ttl),
                names.of(w.client),
                t(w.invoke),
                match next {
                    Some(n) => format!("nobody got the lock until {}, {} after the stop", t(n), t(n - t0)),
                    None => format!("nobody got the lock before the run ended at {}", t(history.end)),
                },
                t(bound),
                t(ttl),
                t(spec.lock_delay),
                t(spec.slack()),
            ),
            events: vec![stop.event, h.acquired, w.id],
            window: Some((t0, until)),
        });
    }
}

/// L2: a healthy, renewing holder keeps its lock through short outages.
fn l2(run: &Run, out: &mut Vec<Violation>) {
    let (history, holds, spec, faults, _, names) = run.parts();
    for h in holds {
        let timing = spec.timing(h.client);
        let Some(every) = timing.renew_every else {
            continue;
        };
        // How the hold ended, before any late write: only its own release (or the end of
        // the run) keeps the lock; a crash is not a healthy holder.
        let (lost_at, why, event) = match lost(history, h, timing.renew_retry) {
            Some(l) => l,
            None => continue,
        };
        if faults
            .iter()
            .any(|w| w.on_node == Some(h.client) && w.overlaps(h.start, lost_at.saturating_add(1)))
        {
            continue; // not healthy
        }
        let around = h.start.saturating_sub(timing.ttl);
        if faults
            .iter()
            .any(|w| w.clock && w.on_service && w.overlaps(around, lost_at))
        {
            continue; // a server clock fault may end leases legitimately
        }
        // The outages the holder lived through: faults on the service or on its own links,
        // merged into connected stretches.
        let mut outages: Vec<(Nanos, Nanos, u64)> = faults
            .iter()
            .filter(|w| (w.on_service || w.touches(h.client)) && w.overlaps(around, lost_at))
            .map(|w| (w.start, w.end, w.event))
            .collect();
        outages.sort_unstable();
        let mut merged: Vec<(Nanos, Nanos)> = Vec::new();
        for &(s, e, _) in &outages {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let longest = merged
            .iter()
            .map(|(s, e)| e.saturating_sub(*s))
            .max()
            .unwrap_or(0);
        // A give-up at the renew deadline while the service was slow, not down: a loss
        // whatever the outage's length (see `stepped_down_while_renewed`).
        if let Some(s) = stepped_down_while_renewed(history, h, faults, lost_at, event, &why) {
            let mut events = vec![h.acquired, event, s.in_flight];
            events.extend(outages.iter().map(|o| o.2));
            out.push(Violation {
                kind: Property::L2,
                key: h.key,
                summary: format!(
                    "{} renews k{} every {} (ttl {}) and was healthy, yet gave it up at {} ({why}) while the service was renewing it: {} renewal{} answered ok and none refused, the one sent at {} still on its way, and nobody else granted the lock; {} — the service was slow, not down",
                    names.of(h.client),
                    h.key,
                    t(every),
                    t(timing.ttl),
                    t(lost_at),
                    s.ok,
                    if s.ok == 1 { "" } else { "s" },
                    t(s.sent),
                    if outages.is_empty() {
                        "no fault during the hold".to_string()
                    } else {
                        format!("only delays during the hold (the longest {})", t(longest))
                    },
                ),
                events,
                window: Some((h.start, lost_at)),
            });
            continue;
        }
        let tolerated = timing
            .ttl
            .saturating_sub(every)
            .saturating_sub(spec.renew_slack(every));
        if tolerated == 0 || longest >= tolerated {
            continue;
        }
        let mut events = vec![h.acquired, event];
        events.extend(outages.iter().map(|o| o.2));
        out.push(Violation {
            kind: Property::L2,
            key: h.key,
            summary: format!(
                "{} renews k{} every {} (ttl {}) and was healthy, yet lost it at {} ({why}); {} — shorter than the {} it must survive (ttl − renew_every − slack {})",
                names.of(h.client),
                h.key,
                t(every),
                t(timing.ttl),
                t(lost_at),
                if longest == 0 {
                    "there was no outage".to_string()
                } else {
                    format!("the longest outage during the hold lasted {}", t(longest))
                },
                t(tolerated),
                t(spec.renew_slack(every)),
            ),
            events,
            window: Some((h.start, lost_at)),
        });
    }
}

/// What shows that a holder's service was renewing its lock when it gave it up.
struct StillRenewed {
    /// Renewals under the hold answered `ok` before the give-up.
    ok: usize,
    /// The renewal in flight at the give-up: its invoke event and time.
    in_flight: u64,
    sent: Nanos,
}

/// L2's second clause: a holder that gave its lock up at its renew deadline (`why`, at
/// `lost_at`, event `lost`) while its service was renewing it. That is when, during the hold,
///
/// - the only faults on the holder's links or on the service were delays (every message
///   still arrives: a slow service, not a cut one, a paused or a crashed one),
/// - every renewal it sent that was answered before the give-up was answered `ok` (none was
///   refused, none went unanswered),
/// - a renewal was still on its way when it gave up (sent, not yet answered), and
/// - the service granted the lock to nobody else.
///
/// client-go's leader under a slow API server (kubernetes/kubernetes#65966, cert-manager#7082):
/// each round's requests are answered, but a round takes longer than `RenewDeadline` allows,
/// so the leader steps down though no candidate could have taken the Lease. `None` otherwise.
fn stepped_down_while_renewed(
    history: &History,
    h: &Hold,
    faults: &[Window],
    lost_at: Nanos,
    lost: u64,
    why: &str,
) -> Option<StillRenewed> {
    if LostCause::of(why) != LostCause::RenewDeadline {
        return None;
    }
    if faults
        .iter()
        .any(|w| (w.on_service || w.touches(h.client)) && !w.slow && w.overlaps(h.start, lost_at))
    {
        return None;
    }
    let mut ok = 0;
    let mut pending: Option<(u64, Nanos)> = None;
    for e in &history.events[h.acquired as usize..] {
        if e.id >= lost {
            break;
        }
        match &e.kind {
            EventKind::Op {
                f: OpF::Extend,
                phase,
                handle: Some(x),
                ..
            } if *x == h.handle => match phase {
                Phase::Invoke => pending = Some((e.id, e.time)),
                Phase::Ok => {
                    ok += 1;
                    pending = None;
                }
                Phase::Fail | Phase::Info => return None,
            },
            EventKind::Grant { key, client, .. } if *key == h.key && *client != h.client => {
                return None;
            }
            _ => {}
        }
    }
    let (in_flight, sent) = pending?;
    Some(StillRenewed {
        ok,
        in_flight,
        sent,
    })
}

/// When and why a hold lost its lock rather than being released by its holder: the first
/// `lost` event under it, or its lease running out before it released. `None` when it was
/// released (or the run ended) with the lease still good, when the holder crashed, or when it
/// gave the lock up at a validity check while its renewal was still trying (see the module
/// docs); `retry` is the client's renewal policy after an attempt without an answer.
fn lost(history: &History, h: &Hold, retry: RenewRetry) -> Option<(Nanos, String, u64)> {
    if matches!(h.ended_by, HoldEnd::Crash(_)) {
        return None;
    }
    let mut released = history.end;
    // The last renewal attempt got no answer (`info`) and the client does not retry.
    let mut renewal_stopped = false;
    for e in &history.events[h.acquired as usize..] {
        match &e.kind {
            EventKind::Op {
                f: OpF::Release,
                phase: Phase::Invoke,
                handle: Some(x),
                ..
            } if *x == h.handle => {
                released = e.time;
                break;
            }
            // Giving the lock up at a validity check is the holder's own caution (its planned
            // work outlasts what is left of the lease) while its renewal is still trying: not
            // a loss. It is one when the lease had already run out (below), or when the
            // renewal had stopped for good: its last attempt got no answer and the client
            // gives up at the first such attempt.
            EventKind::Lost { handle, reason, .. }
                if *handle == h.handle
                    && LostCause::of(reason) == LostCause::ValidityCheck
                    && !renewal_stopped =>
            {
                released = e.time;
                break;
            }
            EventKind::Lost { handle, reason, .. } if *handle == h.handle => {
                return Some((e.time, reason.clone(), e.id));
            }
            EventKind::Op {
                f: OpF::Extend,
                phase,
                handle: Some(x),
                ..
            } if *x == h.handle => {
                renewal_stopped = *phase == Phase::Info && retry == RenewRetry::GiveUp;
            }
            _ => {}
        }
    }
    match h.deadline {
        Some(d) if d < released => Some((d, ran_out(), deadline_set_by(h))),
        _ => None,
    }
}

fn ran_out() -> String {
    "its lease ran out: no renewal moved it".into()
}

/// The event that set a hold's last deadline (the acquire's `ok` when no renewal moved it).
fn deadline_set_by(h: &Hold) -> u64 {
    match h.ended_by {
        HoldEnd::Deadline(id) => id,
        _ => h.acquired,
    }
}

/// L3: a refused acquire, in calm conditions, long after anyone last believed they held.
fn l3(run: &Run, out: &mut Vec<Violation>) {
    let (history, holds, spec, faults, tries, names) = run.parts();
    let allowance = spec.max_ttl() + spec.lock_delay + spec.slack();
    // The service's own grant records (key, time, event), when the algorithm keeps them: a
    // grant whose answer never reached its client (a timeout, a delayed request) takes the
    // lock unseen for up to a lease. Without any, every acquire whose answer was lost may have.
    let grants: Vec<(u32, Nanos, u64)> = history
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Grant { key, .. } => Some((key, e.time, e.id)),
            _ => None,
        })
        .collect();
    let mut keys: Vec<u32> = tries.iter().map(|a| a.key).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        // Beliefs, as (start, end, witness event): holds, and acquires whose outcome is
        // unknown (they may have taken the lock unseen, until their completion). Sorted by
        // start, with the running latest end, so "the last belief begun before t" is a search.
        let mut beliefs: Vec<(Nanos, Nanos, u64)> = holds
            .iter()
            .filter(|h| h.key == key)
            .map(|h| (h.start, h.end, h.acquired))
            .collect();
        if grants.is_empty() {
            // Under TCP a request swallowed by a cut on the client's path is retried by the
            // kernel after the heal, also when the client gave up on it, so such an acquire
            // may take the lock as late as the cut's recovery (see `LivenessSpec::backoff`).
            let late = |a: &&Attempt| {
                faults
                    .iter()
                    .filter(|w| {
                        spec.backoff.is_some()
                            && w.on_node.is_none()
                            && !w.clock
                            && w.touches(a.client)
                            && w.overlaps(a.invoke, a.end(history.end))
                    })
                    .map(|w| spec.retried(w.start, w.end))
                    .max()
                    .unwrap_or(0)
            };
            beliefs.extend(
                tries
                    .iter()
                    .filter(|a| a.key == key && a.unknown())
                    .map(|a| (a.invoke, a.end(history.end).max(late(&a)), a.id)),
            );
        } else {
            beliefs.extend(
                grants
                    .iter()
                    .filter(|g| g.0 == key)
                    .map(|&(_, at, id)| (at, at, id)),
            );
        }
        beliefs.sort_unstable();
        let mut latest: Vec<(Nanos, u64)> = Vec::with_capacity(beliefs.len());
        for b in &beliefs {
            let prev = latest.last().copied().unwrap_or((0, 0));
            latest.push(if b.1 >= prev.0 { (b.1, b.2) } else { prev });
        }
        let mut episodes: Vec<Nanos> = Vec::new();
        // Refused: answered `fail`, or gave up without an answer (`info`).
        let refused = tries
            .iter()
            .filter(|a| a.key == key && matches!(a.done, Some((_, Phase::Fail | Phase::Info))));
        for a in refused {
            let done = a.end(history.end);
            if a.invoke > spec.duration {
                continue;
            }
            // The waiter itself in calm conditions.
            if faults
                .iter()
                .any(|w| w.touches(a.client) && w.overlaps(a.invoke, done))
            {
                continue;
            }
            // The refusal is judged when it happened, at the answer (or the give-up): a waiter
            // queued on the service (a blocking acquire, a watch on its predecessor) is refused
            // only when the wait ends, and a lock released early in a long wait must have
            // reached it by then. The latest belief begun before the answer explains the
            // refusal if it lasted to within the allowance of it. The attempt's own belief,
            // where it is one (no grant records, outcome unknown), lasts to its answer: it may
            // have taken the lock unseen at the last moment, so such a give-up is not judged.
            let n = beliefs.partition_point(|b| b.0 < done);
            let Some(&(believed, by)) = n.checked_sub(1).map(|i| &latest[i]) else {
                continue;
            };
            // A change to the service restarts the allowance (a new leader renews leases) once
            // the service can have recovered: its traffic retried after the heal, a leader
            // elected.
            let service = faults
                .iter()
                .filter(|w| w.on_service && w.start < done)
                .map(|w| spec.recovered(w.start, w.end))
                .max()
                .unwrap_or(0);
            // A lock whose waiters judge its expiry by their own observation (see
            // `LivenessSpec::observed_expiry`): a fault that hid the record from this waiter
            // restarts its allowance (clock faults change how it counts, not what it saw).
            let hidden = if spec.observed_expiry {
                faults
                    .iter()
                    .filter(|w| !w.clock && w.touches(a.client) && w.start < a.invoke)
                    .map(|w| w.end)
                    .max()
                    .unwrap_or(0)
            } else {
                0
            };
            let since = believed.max(service).max(hidden);
            if since >= done || done - since <= allowance || episodes.contains(&since) {
                continue;
            }
            episodes.push(since);
            out.push(Violation {
                kind: Property::L3,
                key,
                summary: format!(
                    "k{key} was orphaned: nobody believed they held it after {}, yet {}'s acquire {} was refused at {}, {} later — beyond the {} a lease may outlive its holder (ttl {} + lock delay {} + slack {})",
                    t(since),
                    names.of(a.client),
                    if done.saturating_sub(a.invoke) > spec.attempt {
                        format!("(waiting since {})", t(a.invoke))
                    } else {
                        format!("at {}", t(a.invoke))
                    },
                    t(done),
                    t(done - since),
                    t(allowance),
                    t(spec.max_ttl()),
                    t(spec.lock_delay),
                    t(spec.slack()),
                ),
                events: vec![by, a.id],
                window: Some((since, done)),
            });
        }
    }
}
