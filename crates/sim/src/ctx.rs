//! What a node's code may touch: its own clocks, its disk, its random stream, and the network.
//! Protocol code never sees true time; it reads `wall_now`/`mono_now` and sleeps in local time.
//!
//! Messages travel over madsim's network (one [`madsim::net::Endpoint`] per node) inside an
//! envelope; the fault rules of [`crate::links`] decide at send time whether a message is
//! dropped, delayed (the receiver holds it until its extra delay has passed) or duplicated.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_channel::mpsc;
use futures_util::StreamExt;
use locksim_core::history::EventKind;
use locksim_core::{Cluster, Nanos, Network, NodeId, Role};
use madsim::net::Endpoint;
use rand_chacha::ChaCha8Rng;

use crate::disk::Disk;
use crate::world::{stream, Stream, World};

/// Tag of requests and one-way messages; replies use a fresh tag per call.
const TAG_REQUEST: u64 = 1;
const PORT: u16 = 7000;

/// The address of node `id` on the simulated network.
pub fn node_addr(id: NodeId) -> SocketAddr {
    let ip = Ipv4Addr::new(10, 0, (id / 250) as u8, (id % 250 + 1) as u8);
    SocketAddr::new(IpAddr::V4(ip), PORT)
}

/// A message body: any owned value. Duplication faults need to copy it, hence `Clone`.
pub trait Message: Any + Send + Sync + Clone {}
impl<T: Any + Send + Sync + Clone> Message for T {}

struct Envelope {
    from: NodeId,
    /// Tag the reply must carry; 0 for one-way messages.
    reply_tag: u64,
    /// Its id in the network's message log.
    msg: u64,
    body: Box<dyn Any + Send + Sync>,
}

/// A request or one-way message received by a server.
pub struct Incoming {
    /// Sender.
    pub from: NodeId,
    pub(crate) reply_tag: u64,
    /// The message; downcast it to the protocol's request type.
    pub body: Box<dyn Any + Send + Sync>,
    /// The TCP connection it came on (the reply goes back on it); 0 under `datagram`.
    pub(crate) conn: u64,
}

impl Incoming {
    /// `true` when the sender waits for a reply.
    pub fn wants_reply(&self) -> bool {
        self.reply_tag != 0
    }
}

/// The `timeout` of a [`NodeCtx::call`] that waits for as long as the network takes: what a
/// client without a request timeout does (Consul's Go API client, libpq, ZooKeeper's
/// `zookeeper.request.timeout = 0`). Knobs spell it `none`. Under `network = "datagram"`,
/// where a lost message is gone for good and no connection ends, it waits
/// [`HEALTHY_ANSWER`] instead.
pub const NO_TIMEOUT: Nanos = Nanos::MAX;

/// The longest a healthy service takes to answer one request on the simulated network (its
/// one-way latency is 1 to 10 ms), ns: what a wait without timeout ([`NO_TIMEOUT`]) counts as
/// where a model needs a finite length (a liveness hint, the base of a backoff).
pub const HEALTHY_ANSWER: Nanos = 100_000_000;

/// `timeout`, or [`HEALTHY_ANSWER`] for [`NO_TIMEOUT`]: the finite length a model derives
/// hints and backoffs from.
pub fn finite(timeout: Nanos) -> Nanos {
    if timeout == NO_TIMEOUT {
        HEALTHY_ANSWER
    } else {
        timeout
    }
}

/// Why a call got no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No reply within the timeout: the request may or may not have taken effect.
    Timeout,
    /// The connection was refused (a cut in `reset` mode stopped the request): the request
    /// definitely did not arrive.
    Refused,
    /// The connection was reset after the request left (a cut in `reset` mode stopped the
    /// reply): the request may have taken effect.
    Reset,
    /// The reply was not of the expected type (a protocol bug).
    BadReply,
    /// Under `network = "tcp"`: the connection was not open by the call's timeout (the
    /// handshake failed or is still being retried), so the request was never sent.
    NotConnected,
    /// Under `network = "tcp"`: the peer's kernel closed the connection (FIN: its process
    /// died) after the request left, so the caller read EOF: the request may have taken
    /// effect.
    Closed,
    /// Under `network = "tcp"`: the kernel gave the connection up after `tcp_retries2`
    /// retransmissions (Linux's `ETIMEDOUT`): the request may have taken effect.
    TimedOut,
}

impl CallError {
    /// `true` when the request may have taken effect (a timeout or a reset after sending),
    /// `false` when it definitely did not (refused) — Jepsen's `info` versus `fail`.
    pub fn maybe_delivered(&self) -> bool {
        !matches!(self, CallError::Refused | CallError::NotConnected)
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout => f.write_str("timeout"),
            CallError::Refused => f.write_str("connection refused"),
            CallError::Reset => f.write_str("connection reset"),
            CallError::BadReply => f.write_str("reply of an unexpected type"),
            CallError::NotConnected => f.write_str("not connected (request not sent)"),
            CallError::Closed => f.write_str("connection closed by peer"),
            CallError::TimedOut => f.write_str("connection timed out"),
        }
    }
}

/// What a caller receives instead of a reply when a cut in `reset` mode stopped the reply.
#[derive(Clone, Copy)]
struct ResetMarker;

struct Inner {
    id: NodeId,
    world: Arc<World>,
    ep: Endpoint,
    rng: RefCell<ChaCha8Rng>,
    next_tag: Cell<u64>,
    inbox: RefCell<Option<mpsc::UnboundedReceiver<Incoming>>>,
    incarnation: u32,
}

/// A node's view of the world. Cheap to clone; not `Send` (it lives on its node).
#[derive(Clone)]
pub struct NodeCtx {
    inner: Rc<Inner>,
}

impl NodeCtx {
    /// Binds the node's endpoint and, for servers and the resource, starts the task that
    /// receives requests. Called by the harness each time the node (re)starts.
    pub(crate) async fn start(world: Arc<World>, id: NodeId) -> NodeCtx {
        let ep = Endpoint::bind(node_addr(id))
            .await
            .expect("each node binds its own address once per incarnation");
        let incarnation = world.incarnation(id);
        let rng = stream(
            world.seed,
            Stream::Node,
            ((id as u64) << 16) | incarnation as u64,
        );
        let ctx = NodeCtx {
            inner: Rc::new(Inner {
                id,
                world,
                ep,
                rng: RefCell::new(rng),
                next_tag: Cell::new(1 << 20),
                inbox: RefCell::new(None),
                incarnation,
            }),
        };
        if ctx.role() != Role::Client && ctx.tcp() {
            // The kernel ([`crate::tcp`]) puts what arrives straight into the queue; under
            // datagram, `recv` reads the endpoint itself.
            let (tx, rx) = mpsc::unbounded();
            *ctx.inner.inbox.borrow_mut() = Some(rx);
            ctx.inner.world.tcp().set_inbox(id, tx);
        }
        ctx
    }

    fn tcp(&self) -> bool {
        self.inner.world.workload.network == Network::Tcp
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.inner.id
    }
    /// This node's role.
    pub fn role(&self) -> Role {
        self.inner.world.cluster.role(self.inner.id)
    }
    /// The cluster shape (node ids of servers, clients and the resource).
    pub fn cluster(&self) -> &Cluster {
        &self.inner.world.cluster
    }
    /// How many times this node was restarted before this incarnation (0 on first start).
    pub fn incarnation(&self) -> u32 {
        self.inner.incarnation
    }
    /// How many of this node's open connections to `to` have ended under it so far (the
    /// peer's FIN when its process died, an RST, or the kernel giving up after
    /// `tcp_retries2`), whether or not a call was waiting on them: what a client library
    /// learns the next time it takes the socket, as redis-py's pool does before lending a
    /// connection out. A client that caches a server's identity (a Sentinel client's primary)
    /// compares it between calls and asks again when it moved. Always 0 under
    /// `network = "datagram"`, which has no connections.
    pub fn connection_ends(&self, to: NodeId) -> u64 {
        if self.tcp() {
            self.inner.world.tcp().ended(self.inner.id, to)
        } else {
            0
        }
    }
    /// The shared world (harness use: recorder, true time).
    pub fn world(&self) -> &Arc<World> {
        &self.inner.world
    }

    /// Wall-clock reading, ns (offset, drift and steps applied; may go backwards).
    pub fn wall_now(&self) -> i64 {
        let w = &self.inner.world;
        w.clock(self.inner.id).wall(w.now())
    }
    /// Monotonic-clock reading, ns (drifts, never steps or goes backwards).
    pub fn mono_now(&self) -> u64 {
        let w = &self.inner.world;
        w.clock(self.inner.id).mono(w.now())
    }

    /// Reading of one of this node's clocks, ns.
    pub fn now(&self, clock: locksim_core::LocalClock) -> i64 {
        match clock {
            locksim_core::LocalClock::Wall => self.wall_now(),
            locksim_core::LocalClock::Mono => self.mono_now() as i64,
        }
    }

    /// Sleeps for `d` ns of this node's monotonic clock (so `d / rate` of true time; a pause
    /// makes it end late).
    pub async fn sleep(&self, d: Nanos) {
        let target = self.mono_now() + d;
        self.sleep_until_mono(target).await;
    }

    /// Sleeps until this node's monotonic clock reads at least `target` ns.
    pub async fn sleep_until_mono(&self, target: u64) {
        let w = &self.inner.world;
        loop {
            let t = w.clock(self.inner.id).true_time_of_mono(target);
            if t <= w.now() {
                return;
            }
            madsim::time::sleep_until(w.instant(t)).await;
        }
    }

    /// Waits while `task` of this client is stalled by a `pause` fault with that task; the
    /// workload calls it at each step of its renewal task and of its work.
    pub async fn checkpoint(&self, task: crate::world::Task) {
        let w = &self.inner.world;
        loop {
            let until = w.stalled_until(self.inner.id, task);
            if until <= w.now() {
                return;
            }
            madsim::time::sleep_until(w.instant(until)).await;
        }
    }

    /// The clock this client's lock library should measure validity with: the scenario's
    /// per-client `client_clock` when it sets one, else `default` (the algorithm's knob).
    pub fn client_clock(&self, default: locksim_core::LocalClock) -> locksim_core::LocalClock {
        let c = self.cluster();
        if self.role() != Role::Client {
            return default;
        }
        self.inner
            .world
            .workload
            .client(self.inner.id - c.servers + 1)
            .client_clock
            .unwrap_or(default)
    }

    /// The true-time length, in ns, of `d` ns of this node's local time at its clock's
    /// current rate.
    fn true_nanos(&self, d: Nanos) -> Nanos {
        self.inner.world.clock(self.inner.id).true_duration(d)
    }

    /// This node's deterministic random stream (per node and incarnation).
    pub fn rng(&self) -> std::cell::RefMut<'_, ChaCha8Rng> {
        self.inner.rng.borrow_mut()
    }

    /// This node's disk (survives crashes; un-fsynced writes do not).
    pub fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.inner.world.disk(self.inner.id)
    }

    /// Tells the nemesis that this node leads in `term` (`None`: it stopped leading), so that
    /// `isolate_leader` faults can find it. Only replicated algorithms with a leader call it.
    pub fn set_leader(&self, term: Option<u64>) {
        self.inner.world.set_leader(self.inner.id, term);
    }

    /// Tells the harness that this replica took its leader's replication stream up to
    /// `offset` (a log index, a replication offset), for `replicates` triggers. Only
    /// replicated algorithms call it; it records nothing unless a trigger waits for it.
    pub fn replicated(&self, offset: u64) {
        self.inner.world.replicated(self.inner.id, offset);
    }

    /// Records an event on this node (true time and local readings are added).
    pub fn record(&self, kind: EventKind) -> u64 {
        self.inner.world.record(self.inner.id, kind)
    }

    /// Sends one message through the fault rules; returns `true` when a cut in `reset` mode
    /// stopped it (for a reply, the caller is then told the connection was reset).
    async fn transmit<M: Message>(&self, to: NodeId, tag: u64, reply_tag: u64, body: M) -> bool {
        let w = &self.inner.world;
        let now = w.now();
        let fate = w.links().route(now, self.inner.id, to, tag != TAG_REQUEST);
        let (copies, msg) = (fate.copies, fate.id);
        if fate.reset && tag != TAG_REQUEST {
            // The reset travels back to the caller in place of the reply.
            let env = Envelope {
                from: self.inner.id,
                reply_tag: 0,
                msg,
                body: Box::new(ResetMarker),
            };
            let _ = self
                .inner
                .ep
                .send_to_raw(node_addr(to), tag, Box::new(env))
                .await;
        }
        let n = copies.len();
        let mut body = Some(body);
        for (i, extra) in copies.into_iter().enumerate() {
            let b = if i + 1 == n {
                body.take().expect("one body per copy")
            } else {
                body.clone().expect("one body per copy")
            };
            let env = Envelope {
                from: self.inner.id,
                reply_tag,
                msg,
                body: Box::new(b),
            };
            // A send on a simulated datagram socket only fails when the socket is gone, in
            // which case the message is lost like any other. A copy with extra delay (a
            // fault's) leaves that much later, from a task of its own.
            if extra == 0 {
                let _ = self
                    .inner
                    .ep
                    .send_to_raw(node_addr(to), tag, Box::new(env))
                    .await;
            } else {
                let me = self.clone();
                madsim::task::spawn_local(async move {
                    madsim::time::sleep(Duration::from_nanos(extra)).await;
                    let _ = me
                        .inner
                        .ep
                        .send_to_raw(node_addr(to), tag, Box::new(env))
                        .await;
                });
            }
        }
        fate.reset
    }

    /// Sends `req` to node `to` and waits at most `timeout` ns of local time for a reply of
    /// type `R`; [`NO_TIMEOUT`] waits for as long as the network takes (a reply, or under tcp
    /// the connection's end: a reset, the peer's FIN, `tcp_retries2` or `tcp_syn_retries`
    /// given up), as a client without a request timeout does; under datagram it waits
    /// [`HEALTHY_ANSWER`].
    ///
    /// # Errors
    /// [`CallError::Timeout`] when no reply came in time (the request may still take effect;
    /// under tcp the caller then closes its connection, and the next call opens a new one);
    /// [`CallError::Refused`] when a cut in `reset` mode stopped the request (under datagram
    /// after 1 ms, the simulator's shortest wait; under tcp when the SYN is refused);
    /// [`CallError::Reset`] when one stopped the reply (under tcp: when the connection was
    /// reset after the request left); [`CallError::Closed`] (tcp only) when the callee's
    /// process died and its kernel's FIN arrived; [`CallError::TimedOut`] (tcp only) when
    /// the connection was given up after `tcp_retries2` retransmissions;
    /// [`CallError::NotConnected`] (tcp only) when the connection was not open by the
    /// timeout; [`CallError::BadReply`] when the reply is not an `R`.
    pub async fn call<Q: Message, R: Any>(
        &self,
        to: NodeId,
        req: Q,
        timeout: Nanos,
    ) -> Result<R, CallError> {
        if self.tcp() {
            return self.call_tcp(to, req, timeout).await;
        }
        // A datagram lost is gone for good and there is no connection whose end could stop
        // the wait: a call without timeout waits the healthy answer time, as these models
        // did before the tcp model existed.
        let timeout = finite(timeout);
        let tag = self.inner.next_tag.get();
        self.inner.next_tag.set(tag + 1);
        let wait = async {
            if self.transmit(to, TAG_REQUEST, tag, req).await {
                // The refusal comes back at once; a caller that retries at once still lets
                // time pass.
                madsim::time::sleep(Duration::from_millis(1)).await;
                return Err(CallError::Refused);
            }
            let Ok((payload, _)) = self.inner.ep.recv_from_raw(tag).await else {
                return Err(CallError::Timeout);
            };
            let env = payload
                .downcast::<Envelope>()
                .map_err(|_| CallError::BadReply)?;
            if env.body.is::<ResetMarker>() {
                return Err(CallError::Reset);
            }
            let w = &self.inner.world;
            w.links().delivered(env.msg, w.now());
            env.body
                .downcast::<R>()
                .map(|b| *b)
                .map_err(|_| CallError::BadReply)
        };
        match crate::deadline::within(&self.inner.world, self.true_nanos(timeout), wait).await {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout),
        }
    }

    /// [`NodeCtx::call`] over the connection model of [`crate::tcp`].
    async fn call_tcp<Q: Message, R: Any>(
        &self,
        to: NodeId,
        req: Q,
        timeout: Nanos,
    ) -> Result<R, CallError> {
        let tag = self.inner.next_tag.get();
        self.inner.next_tag.set(tag + 1);
        let (tx, rx) = futures_channel::oneshot::channel();
        let w = &self.inner.world;
        let conn = {
            let mut links = w.links();
            w.tcp().submit(
                w,
                &mut links,
                (self.inner.id, to),
                tag,
                Box::new(req),
                Some(tx),
            )
        };
        let answer = if timeout == NO_TIMEOUT {
            Ok(rx.await)
        } else {
            crate::deadline::within(w, self.true_nanos(timeout), rx).await
        };
        match answer {
            Ok(Ok(Ok(body))) => body
                .downcast::<R>()
                .map(|b| *b)
                .map_err(|_| CallError::BadReply),
            Ok(Ok(Err(e))) => Err(e),
            // The kernel forgot the call (this node crashed): nothing more will come.
            Ok(Err(_)) => Err(CallError::Reset),
            Err(_) => Err(w.tcp().timed_out(self.inner.id, tag, conn)),
        }
    }

    /// Sends a one-way message to node `to` (it arrives through [`NodeCtx::recv`]).
    pub async fn send<M: Message>(&self, to: NodeId, msg: M) {
        if self.tcp() {
            let w = &self.inner.world;
            let mut links = w.links();
            w.tcp()
                .submit(w, &mut links, (self.inner.id, to), 0, Box::new(msg), None);
            return;
        }
        // A one-way message stopped by a reset is lost like any other.
        let _ = self.transmit(to, TAG_REQUEST, 0, msg).await;
    }

    /// Waits for the next request or one-way message (servers and the resource only).
    ///
    /// # Panics
    /// On a client node, which has no inbox.
    pub async fn recv(&self) -> Incoming {
        if !self.tcp() {
            assert!(
                self.role() != Role::Client,
                "recv is for servers and the resource, one receiver at a time"
            );
            loop {
                let Ok((payload, _)) = self.inner.ep.recv_from_raw(TAG_REQUEST).await else {
                    return std::future::pending().await;
                };
                let Ok(env) = payload.downcast::<Envelope>() else {
                    continue;
                };
                let w = &self.inner.world;
                w.links().delivered(env.msg, w.now());
                return Incoming {
                    from: env.from,
                    reply_tag: env.reply_tag,
                    body: env.body,
                    conn: 0,
                };
            }
        }
        let mut rx = self
            .inner
            .inbox
            .borrow_mut()
            .take()
            .expect("recv is for servers and the resource, one receiver at a time");
        let msg = rx.next().await;
        *self.inner.inbox.borrow_mut() = Some(rx);
        match msg {
            Some(m) => {
                if m.conn != 0 {
                    self.inner.world.tcp().read(m.conn);
                }
                m
            }
            None => std::future::pending().await,
        }
    }

    /// Replies to a request received by [`NodeCtx::recv`]. One-way messages get no reply.
    pub async fn reply<R: Message>(&self, to: &Incoming, resp: R) {
        if to.reply_tag != 0 && self.tcp() {
            let w = &self.inner.world;
            let mut links = w.links();
            w.tcp().reply(
                w,
                &mut links,
                (self.inner.id, to.from),
                to.conn,
                to.reply_tag,
                Box::new(resp),
            );
        } else if to.reply_tag != 0 {
            let _ = self.transmit(to.from, to.reply_tag, 0, resp).await;
        }
    }
}
