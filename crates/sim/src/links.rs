//! The network's fault state (after TigerBeetle's `packet_simulator.zig`): which directed links
//! are cut, lossy, slow or duplicating right now. The nemesis installs rules with an expiry in
//! true time; the message layer asks [`Links::route`] what happens to each message it sends.
//! Randomness comes from the run's "net" ChaCha stream, so routing is deterministic.

use locksim_core::{Message, Nanos, NodeId};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// What a rule does to the messages of the links it covers.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Stop every message: a black hole, or (`reset`) a refused / reset connection that the
    /// sender learns of at once.
    Block { reset: bool },
    /// Drop each message with probability `pct`/100.
    Loss { pct: u32 },
    /// Add extra latency drawn uniformly from `[min, max]` ns.
    Delay { min: Nanos, max: Nanos },
    /// Deliver each message twice with probability `pct`/100.
    Duplicate { pct: u32 },
    /// Drop replies only.
    DropReplies,
}

/// A rule: an effect on every directed link `from → to` with `from ∈ from`, `to ∈ to`, until
/// true time `until`.
#[derive(Debug, Clone)]
pub struct Rule {
    pub from: Vec<NodeId>,
    pub to: Vec<NodeId>,
    pub effect: Effect,
    pub until: Nanos,
}

/// The copies of one message that are delivered, each with an extra delay in ns (none: the
/// message was stopped).
pub type Copies = smallvec::SmallVec<[Nanos; 2]>;

/// The fate of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fate {
    /// The delivered copies (empty: stopped).
    pub copies: Copies,
    /// A cut in reset mode stopped it: the sender learns of it at once.
    pub reset: bool,
    /// Its id in [`Links::log`].
    pub id: u64,
}

/// All active network rules plus counters.
pub struct Links {
    rules: Vec<Rule>,
    rng: ChaCha8Rng,
    /// Messages the protocol layer asked to send.
    pub sent: u64,
    /// Messages dropped by rules.
    pub dropped: u64,
    /// Every message routed, in send order; index = the id [`Links::route`] returns.
    pub log: Vec<Message>,
}

impl Links {
    /// No faults yet.
    pub fn new(rng: ChaCha8Rng) -> Self {
        Links {
            rules: Vec::new(),
            rng,
            sent: 0,
            dropped: 0,
            log: Vec::new(),
        }
    }
    /// Installs a rule.
    pub fn add(&mut self, rule: Rule) {
        self.rules.push(rule);
    }
    /// Removes every rule (heal).
    pub fn heal(&mut self) {
        self.rules.clear();
    }
    /// Notes that message `id` (as returned by [`Links::route`]) reached its receiver at true
    /// time `at`; later copies of a duplicated message do not move it.
    pub fn delivered(&mut self, id: u64, at: Nanos) {
        if let Some(m) = self.log.get_mut(id as usize) {
            m.delivered.get_or_insert(at);
        }
    }

    /// Decides the fate of one message sent at true time `now`.
    pub fn route(&mut self, now: Nanos, from: NodeId, to: NodeId, is_reply: bool) -> Fate {
        self.rules.retain(|r| r.until > now);
        let mut copies: Copies = smallvec::smallvec![0];
        let mut reset = false;
        for r in &self.rules {
            if !(r.from.contains(&from) && r.to.contains(&to)) {
                continue;
            }
            match r.effect {
                Effect::Block { reset: r } => {
                    copies.clear();
                    reset = r;
                }
                Effect::DropReplies if is_reply => copies.clear(),
                Effect::DropReplies => {}
                Effect::Loss { pct } => {
                    if self.rng.gen_range(0..100) < pct {
                        copies.clear();
                    }
                }
                Effect::Delay { min, max } => {
                    for c in copies.iter_mut() {
                        *c += self.rng.gen_range(min..=max);
                    }
                }
                Effect::Duplicate { pct } => {
                    if !copies.is_empty() && self.rng.gen_range(0..100) < pct {
                        copies.push(copies[0]);
                    }
                }
            }
            if copies.is_empty() {
                break;
            }
        }
        let id = self.log_message(now, from, to, is_reply);
        if copies.is_empty() {
            self.dropped += 1;
            self.log[id as usize].dropped = true;
        }
        Fate { copies, reset, id }
    }

    /// What the rules in force at true time `now` do to one TCP segment (or handshake
    /// packet) `from → to`, for [`crate::tcp`]: `Pass(extra)` with the extra latency of delay
    /// rules, `Swallowed` (a black hole or a loss draw: the sender will retransmit), or
    /// `Refused` (a cut in `reset` mode answers with RST). `data_reply` marks the data of a
    /// reply, which `drop_replies` rules swallow (handshakes and ACKs pass them). Duplication
    /// rules do nothing here: a connection delivers each segment once (they are refused under
    /// tcp before a run starts). Nothing is logged or counted; [`Links::log_message`] does
    /// that once per application message.
    pub fn segment(&mut self, now: Nanos, from: NodeId, to: NodeId, data_reply: bool) -> Segment {
        self.rules.retain(|r| r.until > now);
        let mut extra = 0;
        for r in &self.rules {
            if !(r.from.contains(&from) && r.to.contains(&to)) {
                continue;
            }
            match r.effect {
                Effect::Block { reset: true } => return Segment::Refused,
                Effect::Block { reset: false } => return Segment::Swallowed,
                Effect::DropReplies if data_reply => return Segment::Swallowed,
                Effect::DropReplies | Effect::Duplicate { .. } => {}
                Effect::Loss { pct } => {
                    if self.rng.gen_range(0..100) < pct {
                        return Segment::Swallowed;
                    }
                }
                Effect::Delay { min, max } => extra += self.rng.gen_range(min..=max),
            }
        }
        Segment::Pass(extra)
    }

    /// Logs one application message sent at true time `now` and returns its id in
    /// [`Links::log`] (counted in `sent`; whether it was delivered is noted by
    /// [`Links::delivered`]; [`Links::route`] marks a datagram its rules stopped, and under tcp
    /// [`Links::settle`] marks the rest dropped at the run's end).
    pub fn log_message(&mut self, now: Nanos, from: NodeId, to: NodeId, reply: bool) -> u64 {
        self.sent += 1;
        let id = self.log.len() as u64;
        self.log.push(Message {
            from,
            to,
            sent: now,
            delivered: None,
            reply,
            dropped: false,
        });
        id
    }

    /// At the end of a tcp run: every logged message no application took in (lost with a
    /// connection, withdrawn before the handshake, a reply to a closed socket, still in
    /// flight) counts as dropped.
    pub fn settle(&mut self) {
        for m in &mut self.log {
            if m.delivered.is_none() && !m.dropped {
                m.dropped = true;
                self.dropped += 1;
            }
        }
    }
}

/// What the rules do to one TCP segment ([`Links::segment`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// It gets through, with this extra latency in ns.
    Pass(Nanos),
    /// A black hole or a loss draw swallowed it.
    Swallowed,
    /// A cut in `reset` mode answered with RST.
    Refused,
}
