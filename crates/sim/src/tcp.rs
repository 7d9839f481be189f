//! The connection-level network model (`network = "tcp"`, the default for new scenarios): what
//! Linux's TCP does to a lock client's and a lock server's messages when the network fails.
//!
//! The model sits under [`crate::NodeCtx`]'s message API (`call`, `send`, `recv`, `reply`), so
//! algorithms do not change; [`crate::links`] keeps the fault rules, which this module consults
//! for every packet at the packet's own time. It is a small event-driven "kernel" shared by all
//! nodes (one task on madsim's supervisor node, so pausing or killing a node's process never
//! stops it): the state lives in [`Tcp`], the task in [`kernel`].
//!
//! What is modelled, and how it maps to Linux (sources: RFC 9293, *Transmission Control
//! Protocol*; RFC 6298, *Computing TCP's Retransmission Timer*; the Linux kernel's
//! `Documentation/networking/ip-sysctl.rst` for `tcp_syn_retries`, `tcp_retries2`,
//! `tcp_orphan_retries`, `tcp_rto_min`; `net/ipv4/tcp_input.c`, `tcp_timer.c`, `tcp.c`):
//!
//! - **Connections.** One per (caller → callee) pair, opened lazily by the first message and
//!   opened again after it was closed, reset or given up. Opening is the three-way handshake
//!   (RFC 9293 §3.5): the SYN needs the caller → callee direction and the SYN-ACK the reverse,
//!   each at its own time. A lost SYN or SYN-ACK is retried after 1 s, 2 s, 4 s, … (Linux's
//!   initial RTO of 1 s, doubling); after `tcp_syn_retries` = 6 retries (127 s) the attempt
//!   fails. A SYN met by a cut in `reset` mode, or by a host whose process is down, is refused
//!   (RST): [`crate::CallError::Refused`]. A call whose connection is not open by its timeout
//!   never sent its request: [`crate::CallError::NotConnected`] (a `fail`, never an `info`). A
//!   one-way message waits for the handshake until the first SYN retry (1 s), then is dropped
//!   unsent — replicated algorithms resend on their next heartbeat, as etcd's and ZooKeeper's
//!   peers do when a peer connection is down.
//! - **Ordered, de-duplicated data.** Each direction of a connection numbers its segments; the
//!   receiver hands them to the application in order only (a later segment waits for an
//!   earlier one: head-of-line blocking) and once only, however many copies arrive. One
//!   application message is one segment (no MSS splitting).
//! - **Retransmission.** A segment that a partition, black hole or loss draw swallows — or
//!   whose ACK is swallowed — is sent again when its timer fires. The timer is RFC 6298's:
//!   SRTT and RTTVAR from the measured round trips (Karn's rule: never from a retransmitted
//!   segment), RTO = SRTT + max(4·RTTVAR, `tcp_rto_min`) as Linux computes it
//!   (`tcp_rtt_estimator` floors RTTVAR at `tcp_rto_min`, 200 ms; RFC 6298 §2.3 takes
//!   max(`tcp_rto_min`, SRTT + 4·RTTVAR), about SRTT earlier), 1 s before the first
//!   measurement, doubled for each retry of the segment, at most 120 s (Linux's
//!   `TCP_RTO_MAX`). Each retry meets the rules in force at its own time, so a
//!   write sent into a partition lands after the heal — also when the application timed the
//!   request out or closed the socket, as Linux keeps unacknowledged data after `close()`.
//!   After `tcp_retries2` retransmissions of one segment (15 by default: about 924.6 s with a
//!   200 ms RTO, the figure ip-sysctl.rst gives) the connection is given up: the peer learns
//!   nothing, calls still waiting on it get [`crate::CallError::TimedOut`] (`ETIMEDOUT`),
//!   later calls connect again. An *orphan* — a socket its application closed (after a
//!   request timeout) or whose process died — gives up after `tcp_orphan_retries` instead (8
//!   by default, Linux's reading of its sysctl default 0: about 102 s), as Linux's
//!   `tcp_write_timeout` does for a dead socket. Delay rules add their latency to every
//!   packet; loss becomes retransmission delay.
//!   A segment met by a cut in `reset` mode resets the connection: calls waiting on it get
//!   [`crate::CallError::Reset`] (the caller cannot know whether the request arrived).
//! - **The application's timeout is not the transport's.** A call that times out is
//!   [`crate::CallError::Timeout`] (`info`: it may still take effect). The caller then closes
//!   its socket and the next call connects afresh, as redis-py and Jedis do after a socket
//!   timeout; closing keeps what was sent in flight (retransmissions go on, then FIN), and a
//!   reply that reaches the closed socket is dropped (the kernel answers it with RST).
//! - **Crashes** (`crash = "process" | "host"`, [`locksim_core::CrashKind`]). A crashed
//!   *process* (SIGKILL, host up, what real mode's `crash` does and the default): the kernel
//!   closes its sockets as `close()` does (Linux's `tcp_close`): each becomes an orphan that
//!   goes on retransmitting what was not yet acknowledged, then sends FIN (peers waiting on it
//!   read EOF: [`crate::CallError::Closed`]); a socket holding requests the process never read
//!   sends RST instead and drops its queue (peers get [`crate::CallError::Reset`]). FIN and
//!   RST are segments: a partition or loss stops them like any other, so a cut-off peer hears
//!   nothing until it next sends (RST) or times out. SYNs to it are refused until it restarts;
//!   data reaching a dead process's socket is answered with RST. A crashed *host*:
//!   nothing answers, peers retransmit into silence, and once it is back its kernel, which
//!   forgot every connection, answers their segments with RST.
//! - **Pauses.** A paused process keeps its connections: the kernel still acknowledges, and
//!   what arrives waits in its receive queue until it resumes (its receiving task is not
//!   polled while paused).
//!
//! Not modelled: congestion control and windows (cwnd, rwnd, slow start), segment sizes and
//! Nagle's algorithm, delayed ACKs, SACK and fast retransmit (every loss waits for the RTO),
//! keep-alives, TIME-WAIT and port reuse, half-open connections the application writes into
//! after a peer reboot other than by the RST above, and connection pools (a caller's
//! concurrent calls to one peer share one connection). Latency per packet is drawn uniformly
//! from 1 ms to 10 ms (madsim's default for its datagrams) from the run's "tcp" ChaCha stream.
//!
//! Deterministic: every draw comes from the run's ChaCha streams, the state lives in
//! ordered maps and vectors, and events at one instant run in the order they were scheduled.

use std::any::Any;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::task::{Poll, Waker};

use futures_channel::{mpsc, oneshot};
use locksim_core::time::{MS, SEC};
use locksim_core::{CrashKind, Nanos, NodeId, Workload};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::ctx::{CallError, Incoming};
use crate::links::{Links, Segment};
use crate::world::World;

/// A message body.
pub(crate) type Body = Box<dyn Any + Send + Sync>;
/// What a waiting call receives: the reply's body, or why there is none.
pub(crate) type Answer = Result<Body, CallError>;

/// Linux's `tcp_syn_retries` default: SYN retransmissions before a connect gives up.
pub const SYN_RETRIES: u32 = 6;
/// RFC 6298 §2.1: the RTO before any round trip was measured (Linux's `TCP_TIMEOUT_INIT`).
pub const RTO_INITIAL: Nanos = SEC;
/// Linux's `TCP_RTO_MAX`: the longest retransmission timeout.
pub const RTO_MAX: Nanos = locksim_core::scenario::TCP_RTO_MAX;
/// RFC 6298's clock granularity G.
const GRANULARITY: Nanos = MS;
/// Latency of one packet, uniform in `[LATENCY_MIN, LATENCY_MAX)` ns (madsim's default).
const LATENCY_MIN: Nanos = MS;
const LATENCY_MAX: Nanos = 10 * MS;

/// The retransmission timeout for smoothed round trip `srtt` and variation `rttvar`, ns:
/// Linux's `SRTT + max(4·RTTVAR, tcp_rto_min)` (`net/ipv4/tcp_input.c`: `tcp_rtt_estimator`
/// keeps `rttvar_us` at least `tcp_rto_min`, `__tcp_set_rto` adds it to SRTT), at most
/// [`RTO_MAX`]. RFC 6298 §2.3 instead takes `max(tcp_rto_min, SRTT + max(G, 4·RTTVAR))`,
/// which retransmits about SRTT earlier; Linux's is what real peers do.
fn rto(srtt: Nanos, rttvar: Nanos, rto_min: Nanos) -> Nanos {
    (srtt + GRANULARITY.max(4 * rttvar).max(rto_min)).min(RTO_MAX)
}

/// What a segment carries.
enum Payload {
    /// A request (`reply_tag` ≠ 0) or a one-way message (0).
    Request { reply_tag: u64, body: Body },
    /// The reply to the call with this tag.
    Reply { tag: u64, body: Body },
    /// FIN: the sender's kernel closed the socket of a dead process; the receiver reads EOF.
    Fin,
}

/// An application message waiting for the handshake.
struct Queued {
    msg: u64,
    reply_tag: u64,
    body: Body,
}

/// One direction's sender and receiver state. Direction 0 is opener → peer, 1 the reverse.
#[derive(Default)]
struct Dir {
    next_seq: u64,
    /// Sent and not yet acknowledged, by sequence number.
    unacked: BTreeMap<u64, Seg>,
    /// The receiver's next expected sequence number.
    recv_next: u64,
    /// Arrived out of order, waiting for an earlier segment.
    held: BTreeMap<u64, (u64, Payload)>,
    srtt: Option<Nanos>,
    rttvar: Nanos,
    rto: Nanos,
}

impl Dir {
    /// Whether the receiver already has segment `seq` (handed on, or held out of order).
    fn received(&self, seq: u64) -> bool {
        seq < self.recv_next || self.held.contains_key(&seq)
    }
}

struct Seg {
    msg: u64,
    /// Taken by the receiver at the first arrival.
    payload: Option<Payload>,
    /// Retransmissions so far.
    retries: u32,
    /// The time of the earliest ACK of it on its way back: it is acknowledged then (an ACK
    /// always removes its segment), so a retransmission timer due later is dead already.
    ack_due: Option<Nanos>,
}

/// What holds one end of a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum End {
    /// Its process.
    #[default]
    Live,
    /// An orphan (Linux `SOCK_DEAD`): the application closed the socket or its process died,
    /// and the kernel still retransmits what is unacknowledged, `tcp_orphan_retries` times.
    Orphan,
    /// Nothing: its kernel forgot it (sent RST, or the orphan gave up).
    Dead,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// SYN attempt `n` (0: the first) is the latest one sent.
    Connecting(u32),
    Open,
    Gone,
}

struct Conn {
    /// The opener and its peer.
    ends: [NodeId; 2],
    /// Each end's incarnation when it joined the connection; a restarted host forgot it.
    boot: [u32; 2],
    state: State,
    queued: Vec<Queued>,
    dirs: [Dir; 2],
    /// Tags of the opener's calls whose requests went on this connection.
    calls: Vec<u64>,
    /// What holds each end (opener, peer).
    end: [End; 2],
    /// Requests the peer's kernel handed to its process that it has not read yet.
    unread: u32,
}

enum Ev {
    Syn {
        conn: u64,
        attempt: u32,
    },
    SynArrive {
        conn: u64,
        sent: Nanos,
    },
    SynAck {
        conn: u64,
        sent: Nanos,
    },
    Refuse {
        conn: u64,
    },
    Send {
        conn: u64,
        dir: usize,
        seq: u64,
    },
    Arrive {
        conn: u64,
        dir: usize,
        seq: u64,
        sent: Nanos,
        retries: u32,
    },
    Ack {
        conn: u64,
        dir: usize,
        seq: u64,
        sent: Nanos,
        retries: u32,
    },
    Rto {
        conn: u64,
        dir: usize,
        seq: u64,
        retries: u32,
    },
    Reset {
        conn: u64,
    },
    /// End `side`'s kernel sends RST to the other end (a segment: the rules decide).
    Rst {
        conn: u64,
        side: usize,
    },
}

/// A pending packet event: due at true time `t`, the `n`-th one scheduled. Ordered so that
/// [`BinaryHeap`] (a max-heap) yields the earliest time first and, at one time, the one
/// scheduled first: each `n` is unique, so the order is total and the same as sorting by
/// `(t, n)`.
struct Due {
    t: Nanos,
    n: u64,
    ev: Ev,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.t, self.n) == (other.t, other.n)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.t, other.n).cmp(&(self.t, self.n))
    }
}

/// Every connection of a run, by id. Ids are handed out 1, 2, 3, … and never reused, so the
/// connection with id `k` lives at index `k - 1` (a vector: no tree search per packet).
#[derive(Default)]
struct Conns(Vec<Conn>);

impl Conns {
    fn get(&self, id: &u64) -> Option<&Conn> {
        self.0.get((*id as usize).wrapping_sub(1))
    }
    fn get_mut(&mut self, id: &u64) -> Option<&mut Conn> {
        self.0.get_mut((*id as usize).wrapping_sub(1))
    }
    /// Adds the connection with the next id, which must be `id`.
    fn insert(&mut self, id: u64, c: Conn) {
        assert_eq!(id as usize, self.0.len() + 1, "connection ids are dense");
        self.0.push(c);
    }
    /// The connections with their ids, in id order.
    fn iter(&self) -> impl Iterator<Item = (u64, &Conn)> {
        self.0.iter().enumerate().map(|(i, c)| (i as u64 + 1, c))
    }
}

/// The kernel's state for a whole run: every connection, the pending packet events, each
/// node's receive queue, the calls waiting for replies and which processes or hosts are down.
pub struct Tcp {
    rng: ChaCha8Rng,
    rto_min: Nanos,
    retries2: u32,
    orphan_retries: u32,
    crash: CrashKind,
    conns: Conns,
    /// The connection a node's next call or send to a peer uses, by (opener, peer).
    current: BTreeMap<(NodeId, NodeId), u64>,
    /// How many open connections each (opener, peer) pair has lost to an end it did not
    /// choose (FIN, RST or `ETIMEDOUT`): see [`Tcp::ended`].
    ended: BTreeMap<(NodeId, NodeId), u64>,
    next_conn: u64,
    /// Pending events that may change what a process sees (a segment arriving, a connect
    /// refused, a retransmission): the kernel task wakes at the first one.
    events: BinaryHeap<Due>,
    /// Pending ACKs. An ACK changes only its sender's kernel state (what is unacknowledged,
    /// the RTO), which nothing reads before the kernel's next step, so it wakes nothing: each
    /// step runs the ACKs due by then in their order among the other events.
    quiet: BinaryHeap<Due>,
    /// Numbers the events of both heaps in the order they were scheduled.
    next_event: u64,
    /// The kernel task's waker while it waits (`None` before its first poll and while it
    /// runs): the timers armed for the next event wake it.
    waker: Option<Waker>,
    /// The madsim timer deadlines the kernel task armed that have not yet passed: a timer
    /// cannot be cancelled, and the task wakes at each of them anyway.
    armed: std::collections::BTreeSet<madsim::time::Instant>,
    inboxes: Vec<Option<mpsc::UnboundedSender<Incoming>>>,
    waiting: BTreeMap<(NodeId, u64), oneshot::Sender<Answer>>,
    down: Vec<Option<CrashKind>>,
}

impl Tcp {
    /// Fresh kernel state for `nodes` nodes with the workload's TCP settings; `rng` is the
    /// run's "tcp" stream (packet latencies).
    pub fn new(nodes: usize, w: &Workload, rng: ChaCha8Rng) -> Tcp {
        Tcp {
            rng,
            rto_min: w.tcp_rto_min,
            retries2: w.tcp_retries2,
            // Linux reads net.ipv4.tcp_orphan_retries = 0 (its default) as 8.
            orphan_retries: if w.tcp_orphan_retries == 0 {
                8
            } else {
                w.tcp_orphan_retries
            },
            crash: w.crash,
            conns: Conns::default(),
            current: BTreeMap::new(),
            ended: BTreeMap::new(),
            next_conn: 1,
            events: BinaryHeap::new(),
            quiet: BinaryHeap::new(),
            next_event: 0,
            waker: None,
            armed: Default::default(),
            inboxes: (0..nodes).map(|_| None).collect(),
            waiting: BTreeMap::new(),
            down: vec![None; nodes],
        }
    }

    fn at(&mut self, t: Nanos, ev: Ev) {
        let due = Due {
            t,
            n: self.next_event,
            ev,
        };
        self.next_event += 1;
        if matches!(due.ev, Ev::Ack { .. }) {
            self.quiet.push(due);
        } else {
            self.events.push(due);
        }
    }

    fn latency(&mut self) -> Nanos {
        self.rng.gen_range(LATENCY_MIN..LATENCY_MAX)
    }

    /// Drops everything at the end of a run. The kernel task's waker lives here and the task
    /// holds the world: without this the pair would keep each other (and the run) alive.
    pub(crate) fn shutdown(&mut self) {
        self.waker = None;
        self.events.clear();
        self.quiet.clear();
        self.conns.0.clear();
        self.waiting.clear();
        self.inboxes.iter_mut().for_each(|i| *i = None);
    }

    /// Registers node `id`'s receive queue (each time its process starts).
    pub(crate) fn set_inbox(&mut self, id: NodeId, tx: mpsc::UnboundedSender<Incoming>) {
        self.inboxes[id as usize] = Some(tx);
    }

    /// The connection `from → to` that new messages use, opened if there is none.
    fn connection(&mut self, now: Nanos, world: &World, from: NodeId, to: NodeId) -> u64 {
        if let Some(&c) = self.current.get(&(from, to)) {
            if self.conns.get(&c).is_some_and(|c| c.state != State::Gone) {
                return c;
            }
        }
        let id = self.next_conn;
        self.next_conn += 1;
        let rto = RTO_INITIAL.max(self.rto_min);
        let dir = || Dir {
            rto,
            ..Dir::default()
        };
        self.conns.insert(
            id,
            Conn {
                ends: [from, to],
                boot: [world.incarnation(from), 0],
                state: State::Connecting(0),
                queued: Vec::new(),
                dirs: [dir(), dir()],
                calls: Vec::new(),
                end: [End::Live; 2],
                unread: 0,
            },
        );
        self.current.insert((from, to), id);
        self.at(
            now,
            Ev::Syn {
                conn: id,
                attempt: 0,
            },
        );
        id
    }

    /// An application message from `from` to `to` (the pair): a request whose reply goes to `reply`
    /// (with tag `reply_tag`), or a one-way message (`reply_tag` 0). Returns the connection.
    pub(crate) fn submit(
        &mut self,
        world: &World,
        links: &mut Links,
        (from, to): (NodeId, NodeId),
        reply_tag: u64,
        body: Body,
        reply: Option<oneshot::Sender<Answer>>,
    ) -> u64 {
        let now = world.now();
        let msg = links.log_message(now, from, to, false);
        let c = self.connection(now, world, from, to);
        if let Some(tx) = reply {
            self.waiting.insert((from, reply_tag), tx);
        }
        let conn = self.conns.get_mut(&c).expect("just found or made");
        if reply_tag != 0 {
            conn.calls.push(reply_tag);
        }
        if let State::Connecting(_) = conn.state {
            conn.queued.push(Queued {
                msg,
                reply_tag,
                body,
            });
        } else {
            self.enqueue(now, c, 0, msg, Payload::Request { reply_tag, body });
        }
        self.settle(world, links);
        c
    }

    /// The reply of `from` to the call `tag` of `to` that arrived on connection `conn`: it goes
    /// back on the same connection (lost with it when it is gone).
    pub(crate) fn reply(
        &mut self,
        world: &World,
        links: &mut Links,
        (from, to): (NodeId, NodeId),
        conn: u64,
        tag: u64,
        body: Body,
    ) {
        let now = world.now();
        let msg = links.log_message(now, from, to, true);
        if self
            .conns
            .get(&conn)
            .is_some_and(|c| c.state == State::Open)
        {
            self.enqueue(now, conn, 1, msg, Payload::Reply { tag, body });
            self.settle(world, links);
        }
    }

    fn enqueue(&mut self, now: Nanos, conn: u64, dir: usize, msg: u64, payload: Payload) {
        let c = self.conns.get_mut(&conn).expect("an open connection");
        let d = &mut c.dirs[dir];
        let seq = d.next_seq;
        d.next_seq += 1;
        d.unacked.insert(
            seq,
            Seg {
                msg,
                payload: Some(payload),
                retries: 0,
                ack_due: None,
            },
        );
        self.at(now, Ev::Send { conn, dir, seq });
    }

    /// The call `tag` of `caller` on connection `conn` timed out: its socket is closed (later
    /// calls connect again; what was sent stays in flight) and its reply, if one comes, is
    /// dropped. Returns [`CallError::NotConnected`] when the request was still waiting for
    /// the handshake (withdrawn: it was never sent), else [`CallError::Timeout`].
    pub(crate) fn timed_out(&mut self, caller: NodeId, tag: u64, conn: u64) -> CallError {
        self.waiting.remove(&(caller, tag));
        let Some(c) = self.conns.get_mut(&conn) else {
            return CallError::Timeout;
        };
        c.calls.retain(|&t| t != tag);
        if c.end[0] == End::Live {
            c.end[0] = End::Orphan;
        }
        let before = c.queued.len();
        c.queued.retain(|q| q.reply_tag != tag);
        let withdrawn = c.queued.len() < before;
        if self.current.get(&(caller, c.ends[1])) == Some(&conn) {
            self.current.remove(&(caller, c.ends[1]));
        }
        if withdrawn {
            if c.queued.is_empty() {
                // The connect is abandoned with the socket.
                c.state = State::Gone;
            }
            CallError::NotConnected
        } else {
            CallError::Timeout
        }
    }

    /// Node `id` crashed ([`CrashKind`] of the workload).
    pub(crate) fn crash(&mut self, world: &World, links: &mut Links, id: NodeId) {
        let now = world.now();
        self.down[id as usize] = Some(self.crash);
        self.inboxes[id as usize] = None;
        self.waiting.retain(|(caller, _), _| *caller != id);
        self.current.retain(|(from, _), _| *from != id);
        if self.crash == CrashKind::Process {
            let hit: Vec<(u64, usize)> = self
                .conns
                .iter()
                .filter(|(_, c)| c.state != State::Gone && c.ends.contains(&id))
                .map(|(k, c)| (k, usize::from(c.ends[1] == id)))
                .filter(|&(k, side)| self.conns.get(&k).is_some_and(|c| c.end[side] == End::Live))
                .collect();
            for (k, side) in hit {
                // The kernel closes the dead process's sockets as close() does (Linux
                // tcp_close): an unopened one silently; one with requests the process never
                // read with RST, dropping what it had queued; any other becomes an orphan
                // that goes on retransmitting, then sends FIN. RST and FIN are segments.
                let c = self.conns.get_mut(&k).expect("just listed");
                match c.state {
                    State::Connecting(_) if side == 0 => c.state = State::Gone,
                    State::Connecting(_) => c.end[side] = End::Dead,
                    _ if side == 1 && c.unread > 0 => {
                        c.end[side] = End::Dead;
                        c.dirs[side].unacked.clear();
                        self.at(now, Ev::Rst { conn: k, side });
                    }
                    _ => {
                        c.end[side] = End::Orphan;
                        self.enqueue(now, k, side, u64::MAX, Payload::Fin);
                    }
                }
            }
        }
        self.settle(world, links);
    }

    /// The process of the peer end of `conn` read one request it had been handed.
    pub(crate) fn read(&mut self, conn: u64) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.unread = c.unread.saturating_sub(1);
        }
    }

    /// Node `id` is up again (a new incarnation).
    pub(crate) fn restart(&mut self, id: NodeId) {
        self.down[id as usize] = None;
    }

    /// Ends the calls waiting on `conn`: those still queued for the handshake with `unsent`,
    /// the others with `sent`.
    fn open_calls(&mut self, conn: u64, unsent: &CallError, sent: &CallError) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let opener = c.ends[0];
        let queued: Vec<u64> = c.queued.drain(..).map(|q| q.reply_tag).collect();
        let calls = std::mem::take(&mut c.calls);
        for tag in calls {
            if let Some(tx) = self.waiting.remove(&(opener, tag)) {
                let e = if queued.contains(&tag) {
                    unsent.clone()
                } else {
                    sent.clone()
                };
                let _ = tx.send(Err(e));
            }
        }
    }

    /// How many connections from `opener` to `peer` ended while open by something other than
    /// the opener's own close: the peer's FIN (its process died) or RST, or the opener's kernel
    /// giving up (`ETIMEDOUT`). A client library learns of such an end when it next uses the
    /// socket (redis-py's connection pool checks a socket for EOF before lending it out,
    /// `ConnectionPool.get_connection`, and reconnects), even when no call was waiting on it.
    pub(crate) fn ended(&self, opener: NodeId, peer: NodeId) -> u64 {
        self.ended.get(&(opener, peer)).copied().unwrap_or(0)
    }

    fn gone(&mut self, conn: u64) {
        if let Some(c) = self.conns.get_mut(&conn) {
            let key = (c.ends[0], c.ends[1]);
            if c.state == State::Open {
                *self.ended.entry(key).or_default() += 1;
            }
            c.state = State::Gone;
            if self.current.get(&key) == Some(&conn) {
                self.current.remove(&key);
            }
        }
    }

    fn up(&self, world: &World, conn: &Conn, side: usize) -> bool {
        let n = conn.ends[side];
        self.down[n as usize].is_none() && world.incarnation(n) == conn.boot[side]
    }

    fn rto_sample(&mut self, conn: u64, dir: usize, r: Nanos) {
        let rto_min = self.rto_min;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let d = &mut c.dirs[dir];
        match d.srtt {
            None => {
                d.srtt = Some(r);
                d.rttvar = r / 2;
            }
            Some(s) => {
                d.rttvar = (3 * d.rttvar + s.abs_diff(r)) / 4;
                d.srtt = Some((7 * s + r) / 8);
            }
        }
        let s = d.srtt.expect("just set");
        d.rto = rto(s, d.rttvar, rto_min);
    }

    /// Runs every event due at true time `now`, those it schedules for `now` included, in the
    /// order of their times and, at one time, of their scheduling (both heaps merged).
    fn run_due(&mut self, world: &World, links: &mut Links, now: Nanos) {
        loop {
            let key = |d: Option<&Due>| d.filter(|d| d.t <= now).map(|d| (d.t, d.n));
            let (e, q) = (key(self.events.peek()), key(self.quiet.peek()));
            let heap = match (e, q) {
                (None, None) => break,
                (Some(_), None) => &mut self.events,
                (None, Some(_)) => &mut self.quiet,
                (Some(e), Some(q)) if e < q => &mut self.events,
                _ => &mut self.quiet,
            };
            let Due { t, ev, .. } = heap.pop().expect("just peeked");
            self.handle(world, links, t, ev);
        }
    }

    /// What an application's call into the kernel scheduled for now (a segment to send, a
    /// connect, an RST) runs at once, in the application's own step, and the kernel task gets
    /// a timer for the next event if that is earlier than every timer it has: the kernel task
    /// is woken only at the times of events, never to run what was just scheduled.
    fn settle(&mut self, world: &World, links: &mut Links) {
        self.run_due(world, links, world.now());
        self.arm(world);
    }

    /// Arms a madsim timer that wakes the waiting kernel task at the next live event
    /// ([`Tcp::live_next`]), unless one it has is due no later (a timer cannot be cancelled,
    /// and the task wakes at each armed deadline anyway: woken at an earlier one, it arms the
    /// next then). Before the kernel task's first poll there is no waker, and its first step
    /// arms.
    fn arm(&mut self, world: &World) {
        let Some(waker) = self.waker.clone() else {
            return;
        };
        let Some(next) = self.live_next() else {
            return;
        };
        crate::deadline::arm_timer(&mut self.armed, world, &waker, world.instant(next));
    }

    /// Whether an event that needs the kernel is due at true time `now` or before.
    fn due(&self, now: Nanos) -> bool {
        self.events.peek().is_some_and(|d| d.t <= now)
    }

    /// The time of the first pending event that can still do something, dropping from the top
    /// of the heap those that cannot: a retransmission timer of a segment since acknowledged
    /// or sent again, and a SYN retry of a connection that opened or was given up. Both are
    /// dead for good (sequence numbers, retry counts and connection states only move forward),
    /// and waking for them was most of the kernel's timer work.
    fn live_next(&mut self) -> Option<Nanos> {
        while let Some(due) = self.events.peek() {
            let dead = match due.ev {
                Ev::Rto {
                    conn,
                    dir,
                    seq,
                    retries,
                } => self.conns.get(&conn).is_none_or(|c| {
                    c.state == State::Gone
                        || c.dirs[dir].unacked.get(&seq).is_none_or(|s| {
                            s.retries != retries || s.ack_due.is_some_and(|a| a < due.t)
                        })
                }),
                Ev::Syn { conn, .. } => self
                    .conns
                    .get(&conn)
                    .is_none_or(|c| !matches!(c.state, State::Connecting(_))),
                _ => false,
            };
            if !dead {
                return Some(due.t);
            }
            self.events.pop();
        }
        None
    }

    fn handle(&mut self, world: &World, links: &mut Links, t: Nanos, ev: Ev) {
        match ev {
            Ev::Syn { conn, attempt } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                if c.state != State::Connecting(attempt.saturating_sub(1))
                    && c.state != State::Connecting(attempt)
                {
                    return;
                }
                if attempt >= 1 {
                    // One-way messages do not wait for a slow connect.
                    c.queued.retain(|q| q.reply_tag != 0);
                }
                if attempt > SYN_RETRIES || (c.queued.is_empty() && attempt >= 1) {
                    self.open_calls(conn, &CallError::NotConnected, &CallError::NotConnected);
                    self.gone(conn);
                    return;
                }
                c.state = State::Connecting(attempt);
                let [a, b] = c.ends;
                self.at(
                    t + (SEC << attempt),
                    Ev::Syn {
                        conn,
                        attempt: attempt + 1,
                    },
                );
                match links.segment(t, a, b, false) {
                    Segment::Refused => {
                        let lat = self.latency();
                        self.at(t + lat, Ev::Refuse { conn });
                    }
                    Segment::Swallowed => {}
                    Segment::Pass(extra) => {
                        let lat = self.latency();
                        self.at(t + lat + extra, Ev::SynArrive { conn, sent: t });
                    }
                }
            }
            Ev::SynArrive { conn, sent } => {
                let Some(c) = self.conns.get(&conn) else {
                    return;
                };
                if !matches!(c.state, State::Connecting(_)) {
                    return;
                }
                let [a, b] = c.ends;
                let down = self.down[b as usize];
                if down == Some(CrashKind::Host) {
                    return;
                }
                let boot = world.incarnation(b);
                match links.segment(t, b, a, false) {
                    Segment::Pass(extra) => {
                        let lat = self.latency();
                        if down.is_some() || self.inboxes[b as usize].is_none() {
                            // Nothing listens: the kernel answers RST.
                            self.at(t + lat + extra, Ev::Refuse { conn });
                        } else {
                            if let Some(c) = self.conns.get_mut(&conn) {
                                c.boot[1] = boot;
                            }
                            self.at(t + lat + extra, Ev::SynAck { conn, sent });
                        }
                    }
                    Segment::Refused | Segment::Swallowed => {}
                }
            }
            Ev::SynAck { conn, sent } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                if !matches!(c.state, State::Connecting(_)) {
                    return;
                }
                c.state = State::Open;
                let queued = std::mem::take(&mut c.queued);
                // Each SYN-ACK answers a known attempt (its send time rides along, as TCP
                // timestamps let Linux know), so the handshake is a clean RTT sample.
                self.rto_sample(conn, 0, t - sent);
                self.rto_sample(conn, 1, t - sent);
                for q in queued {
                    self.enqueue(
                        t,
                        conn,
                        0,
                        q.msg,
                        Payload::Request {
                            reply_tag: q.reply_tag,
                            body: q.body,
                        },
                    );
                }
            }
            Ev::Refuse { conn } => {
                if self
                    .conns
                    .get(&conn)
                    .is_some_and(|c| matches!(c.state, State::Connecting(_)))
                {
                    self.open_calls(conn, &CallError::Refused, &CallError::Refused);
                    self.gone(conn);
                }
            }
            Ev::Send { conn, dir, seq } => {
                let Some(c) = self.conns.get(&conn) else {
                    return;
                };
                let orphan = c.end[dir] == End::Orphan && self.crash == CrashKind::Process;
                if c.state == State::Gone || !(orphan || self.up(world, c, dir)) {
                    return;
                }
                let Some(seg) = c.dirs[dir].unacked.get(&seq) else {
                    return;
                };
                let (from, to) = (c.ends[dir], c.ends[1 - dir]);
                let retries = seg.retries;
                let is_reply = dir == 1;
                let rto = c.dirs[dir].rto;
                let wait = rto
                    .saturating_mul(1u64 << retries.min(40))
                    .clamp(self.rto_min.min(RTO_MAX), RTO_MAX);
                self.at(
                    t + wait,
                    Ev::Rto {
                        conn,
                        dir,
                        seq,
                        retries,
                    },
                );
                match links.segment(t, from, to, is_reply) {
                    Segment::Refused => {
                        let lat = self.latency();
                        self.at(t + lat, Ev::Reset { conn });
                    }
                    Segment::Swallowed => {}
                    Segment::Pass(extra) => {
                        let lat = self.latency();
                        // The send time and the transmission ride along for the ACK (an
                        // RTT sample, and Karn's rule).
                        self.at(
                            t + lat + extra,
                            Ev::Arrive {
                                conn,
                                dir,
                                seq,
                                sent: t,
                                retries,
                            },
                        );
                    }
                }
            }
            Ev::Arrive {
                conn,
                dir,
                seq,
                sent,
                retries,
            } => self.arrive(world, links, t, (conn, dir, seq), sent, retries),
            Ev::Ack {
                conn,
                dir,
                seq,
                sent,
                retries,
            } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let Some(seg) = c.dirs[dir].unacked.get(&seq) else {
                    return;
                };
                let clean = seg.retries == 0 && retries == 0;
                c.dirs[dir].unacked.remove(&seq);
                if clean {
                    self.rto_sample(conn, dir, t - sent);
                }
            }
            Ev::Rto {
                conn,
                dir,
                seq,
                retries,
            } => {
                let dead = self
                    .conns
                    .get(&conn)
                    .is_some_and(|c| !self.up(world, c, dir));
                let (retries2, orphan_retries) = (self.retries2, self.orphan_retries);
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                if c.state == State::Gone {
                    return;
                }
                // Linux's tcp_write_timeout: an orphan gives up after tcp_orphan_retries.
                let orphan = c.end[dir] == End::Orphan;
                let limit = if orphan { orphan_retries } else { retries2 };
                let Some(seg) = c.dirs[dir].unacked.get_mut(&seq) else {
                    return;
                };
                if seg.retries != retries {
                    return;
                }
                if retries >= limit && orphan && dead {
                    // A dead process's orphan gives up: its kernel forgets it, silently; the
                    // peer learns when it next sends (RST).
                    c.end[dir] = End::Dead;
                    c.dirs[dir].unacked.clear();
                    return;
                }
                if retries >= limit {
                    // The connection is given up (ETIMEDOUT); the peer sees nothing.
                    self.open_calls(conn, &CallError::Refused, &CallError::TimedOut);
                    self.gone(conn);
                    return;
                }
                seg.retries += 1;
                self.at(t, Ev::Send { conn, dir, seq });
            }
            Ev::Reset { conn } => {
                self.open_calls(conn, &CallError::Refused, &CallError::Reset);
                self.gone(conn);
            }
            Ev::Rst { conn, side } => {
                let Some(c) = self.conns.get(&conn) else {
                    return;
                };
                let (from, to) = (c.ends[side], c.ends[1 - side]);
                if c.state != State::Gone {
                    if let Segment::Pass(extra) = links.segment(t, from, to, false) {
                        let lat = self.latency();
                        self.at(t + lat + extra, Ev::Reset { conn });
                    }
                }
            }
        }
    }

    /// Segment `seq` of direction `dir` of `conn` (sent at `sent`, transmission `retries`)
    /// reaches its receiver at `t`: acknowledged, de-duplicated, handed over in order.
    fn arrive(
        &mut self,
        world: &World,
        links: &mut Links,
        t: Nanos,
        (conn, dir, seq): (u64, usize, u64),
        sent: Nanos,
        retries: u32,
    ) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        if c.state == State::Gone {
            return;
        }
        let (from, to) = (c.ends[dir], c.ends[1 - dir]);
        if self.down[to as usize] == Some(CrashKind::Host) {
            return;
        }
        let alive = self.up(world, c, 1 - dir);
        // Whether a killed process's orphan (see below) acknowledges this segment.
        let acked_by_orphan = !alive && {
            let d = &c.dirs[dir];
            let orphan = c.end[1 - dir] == End::Orphan && self.crash == CrashKind::Process;
            let fin = d
                .unacked
                .get(&seq)
                .is_some_and(|g| matches!(g.payload, Some(Payload::Fin)));
            orphan && (d.received(seq) || fin)
        };
        let back = links.segment(t, to, from, false);
        let Segment::Pass(extra) = back else {
            if !alive {
                return;
            }
            // The receiver has it; its ACK is lost.
            return self.take_in(links, t, conn, dir, seq);
        };
        let lat = self.latency();
        if !alive && !acked_by_orphan {
            // A killed process's socket is an orphan its kernel still holds (as after
            // `close()`, FIN_WAIT): a copy of data it had already received, or the peer's own
            // FIN, is acknowledged as usual (below, and nothing is handed on), and only new
            // data makes the kernel reset the connection (Linux's `tcp_rcv_state_process`,
            // TCPAbortOnData), so the orphan goes on retransmitting what it had not yet got
            // acknowledged. A rebooted host forgot the connection: RST.
            self.at(t + lat + extra, Ev::Reset { conn });
            return;
        }
        let ack = t + lat + extra;
        if let Some(seg) = self
            .conns
            .get_mut(&conn)
            .and_then(|c| c.dirs[dir].unacked.get_mut(&seq))
        {
            seg.ack_due = Some(seg.ack_due.map_or(ack, |a| a.min(ack)));
        }
        self.at(
            ack,
            Ev::Ack {
                conn,
                dir,
                seq,
                sent,
                retries,
            },
        );
        if alive {
            self.take_in(links, t, conn, dir, seq);
        }
    }

    fn take_in(&mut self, links: &mut Links, t: Nanos, conn: u64, dir: usize, seq: u64) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let ends = c.ends;
        let d = &mut c.dirs[dir];
        if d.received(seq) {
            return; // a copy of what it already has
        }
        let Some(seg) = d.unacked.get_mut(&seq) else {
            return;
        };
        let msg = seg.msg;
        let Some(p) = seg.payload.take() else {
            return;
        };
        // In order (the usual case) it goes straight out, else it waits in `held`; then what
        // `held` has from the next expected number on follows, in order. (`held` never holds
        // the next expected segment between arrivals.)
        let mut ready: smallvec::SmallVec<[(u64, Payload); 1]> = smallvec::SmallVec::new();
        if seq == d.recv_next {
            ready.push((msg, p));
            d.recv_next += 1;
        } else {
            d.held.insert(seq, (msg, p));
        }
        while !d.held.is_empty() {
            let Some(x) = d.held.remove(&d.recv_next) else {
                break;
            };
            ready.push(x);
            d.recv_next += 1;
        }
        let mut fin = false;
        for (msg, p) in ready {
            match p {
                Payload::Fin => fin = true,
                Payload::Request { reply_tag, body } => {
                    let to = ends[1 - dir];
                    if let Some(tx) = &self.inboxes[to as usize] {
                        let m = Incoming {
                            from: ends[dir],
                            reply_tag,
                            body,
                            conn,
                        };
                        if tx.unbounded_send(m).is_ok() {
                            links.delivered(msg, t);
                            if let Some(c) = self.conns.get_mut(&conn) {
                                c.unread += 1;
                            }
                        }
                    }
                }
                Payload::Reply { tag, body } => {
                    // A reply for a socket its caller closed is dropped (RST).
                    if let Some(tx) = self.waiting.remove(&(ends[0], tag)) {
                        if tx.send(Ok(body)).is_ok() {
                            links.delivered(msg, t);
                        }
                    }
                }
            }
        }
        if fin {
            // EOF: calls still waiting on it fail (the request may have taken effect); the
            // reader closes its end, and new messages open a new connection.
            self.open_calls(conn, &CallError::Closed, &CallError::Closed);
            self.gone(conn);
        }
    }
}

/// The kernel task: runs the packet events of [`Tcp`] at their times. Runs once per tcp
/// run, inside the supervisor's future (on madsim's main node). It holds the world only weakly (never across a wait), so a run
/// that ends with the task pending frees everything.
pub(crate) async fn kernel(world: std::sync::Weak<World>) {
    loop {
        {
            let Some(w) = world.upgrade() else { return };
            let now = w.now();
            let mut links = w.links();
            let mut t = w.tcp();
            // Running: a wake now would only poll it again for nothing.
            t.waker = None;
            t.run_due(&w, &mut links, now);
        }
        futures_util::future::poll_fn(|cx| {
            let Some(w) = world.upgrade() else {
                return Poll::Ready(());
            };
            let mut t = w.tcp();
            if t.due(w.now()) {
                return Poll::Ready(());
            }
            t.waker = Some(cx.waker().clone());
            t.arm(&w);
            Poll::Pending
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rto_is_linux_s_srtt_plus_at_least_rto_min() {
        let min = 200 * MS;
        // A 10 ms path: Linux waits 210 ms; RFC 6298's max(200 ms, 10 + 4·5 ms) would be 200.
        assert_eq!(rto(10 * MS, 5 * MS, min), 210 * MS);
        // A variable path: 4·RTTVAR above the floor counts in full.
        assert_eq!(rto(100 * MS, 80 * MS, min), 420 * MS);
        assert_eq!(rto(100 * SEC, 10 * SEC, min), RTO_MAX);
    }
}
