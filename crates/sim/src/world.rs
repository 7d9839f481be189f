//! The state one simulated run shares between its nodes and the nemesis: the cluster shape,
//! each node's clocks and disk, the network's fault rules and the recorder. madsim runs a whole
//! run on one OS thread, so the locks here are never contended; they exist because madsim's
//! node initialisers must be `Send + Sync`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use locksim_core::draw;
use locksim_core::history::{Event, EventKind};
use locksim_core::trigger::{occurrence, Occurrence};
use locksim_core::{Cluster, Nanos, NodeId, Workload};
use rand_chacha::ChaCha8Rng;

use crate::clock::Clock;
use crate::disk::Disk;
use crate::links::Links;
use crate::tcp::Tcp;

/// Independent random streams of one run: removing a fault or a client does not reshuffle the
/// others' draws.
#[derive(Debug, Clone, Copy)]
#[repr(u64)]
pub enum Stream {
    /// Network routing (loss, delay and duplication draws).
    Net = draw::NET,
    /// A node's own randomness (owner values, retry delays), per node and incarnation.
    Node = draw::NODE,
    /// The workload's choices, per client ([`draw::WorkloadDraws`], which real mode shares).
    Workload = draw::WORKLOAD,
    /// Fault plan generation.
    Faults = draw::FAULTS,
    /// Packet latencies of the tcp network model ([`crate::tcp`]).
    Tcp = 5,
}

/// A ChaCha8 stream derived from the scenario seed, a purpose and an index
/// ([`draw::stream`], one derivation with real mode).
pub fn stream(seed: u64, purpose: Stream, index: u64) -> ChaCha8Rng {
    draw::stream(seed, purpose as u64, index)
}

/// Shared state of one run.
pub struct World {
    /// The cluster shape.
    pub cluster: Cluster,
    /// The workload (clients read it; servers may read `ttl` for knobs like delayed restart).
    pub workload: Workload,
    /// The scenario seed.
    pub seed: u64,
    /// madsim's clock, held so that reading true time costs one uncontended lock instead of
    /// the `clock_gettime` path (a thread-local look-up and two `Arc` clones per reading); the
    /// same value either way, as madsim's `clock_gettime` reads this very clock. Released by
    /// [`World::release_clock`] at the end of a run: the handle also holds madsim's timers,
    /// whose wakers hold tasks that hold the world.
    time: Mutex<Option<madsim::time::TimeHandle>>,
    start: madsim::time::Instant,
    /// madsim's elapsed time at `start` (its instants are a zero base plus the elapsed time,
    /// so a difference of elapsed times is exactly the difference of instants).
    start_elapsed: std::time::Duration,
    clocks: Vec<Mutex<Clock>>,
    links: Mutex<Links>,
    tcp: Mutex<Tcp>,
    deadlines: Mutex<crate::deadline::Deadlines>,
    disks: Vec<Mutex<Disk>>,
    events: Mutex<Vec<Event>>,
    incarnations: Vec<AtomicU32>,
    next_handle: AtomicU64,
    next_op: AtomicU64,
    /// Per node: the term in which it currently claims leadership (replicated algorithms
    /// report it through `NodeCtx::set_leader`), for the `isolate_leader` fault.
    leaders: Mutex<Vec<Option<u64>>>,
    /// Per node: true times until which its renewal task and its work are stalled
    /// (`pause` faults with a `task`), indexed by [`Task`].
    stalls: Mutex<Vec<[Nanos; 2]>>,
    /// Told of every recorded event a fault trigger could wait for (set by the nemesis when
    /// the plan has triggers; see [`World::observe`]).
    observer: OnceLock<Observer>,
    /// Whether the service's own events (`leader elected`, `replicates`) are recorded: only
    /// when a trigger waits for one (set by the nemesis; see [`World::record_service_events`]).
    service_events: std::sync::atomic::AtomicBool,
    /// The run's end in true time (set by the nemesis at its start): the fault tasks that would
    /// wake after it return instead of waiting, so that no task the run spawned outlives it.
    end: OnceLock<Nanos>,
}

/// What [`World::observe`] installs: called with the node and what the event is to triggers
/// ([`Occurrence`]) right after the event is recorded, with no lock held.
pub type Observer = Box<dyn Fn(NodeId, &Occurrence) + Send + Sync>;

/// The tasks of a client that a `pause` fault can stall on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// The lease-renewal task.
    Renewal = 0,
    /// The work under the lock: local work, writes, release.
    Work = 1,
}

impl World {
    /// A fresh world; must be called inside the madsim runtime (it reads the start instant).
    pub fn new(cluster: Cluster, workload: Workload, seed: u64) -> Arc<World> {
        let n = cluster.nodes() as usize;
        let clock = |id: u32| {
            if cluster.role(id) == locksim_core::Role::Client {
                let p = workload.client(id - cluster.servers + 1);
                Clock::new(p.clock_offset, p.clock_drift_ppm)
            } else {
                Clock::new(0, 0)
            }
        };
        let time = madsim::time::TimeHandle::current();
        Arc::new(World {
            start: time.now_instant(),
            start_elapsed: time.elapsed(),
            time: Mutex::new(Some(time)),
            clocks: (0..n as u32).map(|id| Mutex::new(clock(id))).collect(),
            links: Mutex::new(Links::new(stream(seed, Stream::Net, 0))),
            tcp: Mutex::new(Tcp::new(n, &workload, stream(seed, Stream::Tcp, 0))),
            deadlines: Mutex::new(Default::default()),
            disks: (0..n).map(|_| Mutex::new(Disk::default())).collect(),
            events: Mutex::new(Vec::with_capacity(1024)),
            incarnations: (0..n).map(|_| AtomicU32::new(0)).collect(),
            next_handle: AtomicU64::new(1),
            next_op: AtomicU64::new(1),
            leaders: Mutex::new(vec![None; n]),
            stalls: Mutex::new(vec![[0; 2]; n]),
            observer: OnceLock::new(),
            end: OnceLock::new(),
            service_events: std::sync::atomic::AtomicBool::new(false),
            cluster,
            workload,
            seed,
        })
    }

    /// True time now, ns since the run started. Only the harness reads this, never protocols.
    pub fn now(&self) -> Nanos {
        let since = match &*self.time.lock().expect("single-threaded") {
            Some(t) => t.elapsed() - self.start_elapsed,
            None => madsim::time::Instant::now().duration_since(self.start),
        };
        since.as_nanos() as Nanos
    }

    /// Records the run's end in true time (once, at the nemesis's start).
    pub(crate) fn set_end(&self, end: Nanos) {
        let _ = self.end.set(end);
    }

    /// Whether true time `t` falls at or after the run's end: a fault task due then has
    /// nothing left to do in the run.
    pub(crate) fn after_end(&self, t: Nanos) -> bool {
        self.end.get().is_some_and(|&end| t >= end)
    }

    /// Lets go of madsim's clock (see the field); [`World::now`] then asks madsim through
    /// `clock_gettime`. Called once the run has ended.
    pub(crate) fn release_clock(&self) {
        self.time.lock().expect("single-threaded").take();
    }

    /// The madsim instant of true time `t`.
    pub fn instant(&self, t: Nanos) -> madsim::time::Instant {
        self.start + std::time::Duration::from_nanos(t)
    }

    /// Node `id`'s clocks.
    pub fn clock(&self, id: NodeId) -> MutexGuard<'_, Clock> {
        self.clocks[id as usize].lock().expect("single-threaded")
    }

    /// Node `id`'s disk.
    pub fn disk(&self, id: NodeId) -> MutexGuard<'_, Disk> {
        self.disks[id as usize].lock().expect("single-threaded")
    }

    /// The network's fault rules.
    pub fn links(&self) -> MutexGuard<'_, Links> {
        self.links.lock().expect("single-threaded")
    }

    /// The tcp network model's kernel state (used only under `network = "tcp"`). Lock
    /// [`World::links`] first when both are needed.
    pub fn tcp(&self) -> MutexGuard<'_, Tcp> {
        self.tcp.lock().expect("single-threaded")
    }

    /// The deadlines of the calls waiting for replies ([`crate::deadline`]).
    pub(crate) fn deadlines(&self) -> MutexGuard<'_, crate::deadline::Deadlines> {
        self.deadlines.lock().expect("single-threaded")
    }

    /// How many times node `id` has been (re)started, counting from 0 for the first start.
    pub fn incarnation(&self, id: NodeId) -> u32 {
        self.incarnations[id as usize].load(Ordering::Relaxed)
    }

    pub(crate) fn bump_incarnation(&self, id: NodeId) -> u32 {
        self.incarnations[id as usize].fetch_add(1, Ordering::Relaxed) + 1
    }

    /// A fresh lock-handle id (unique in the run).
    pub fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh operation id (unique in the run).
    pub fn new_op(&self) -> u64 {
        self.next_op.fetch_add(1, Ordering::Relaxed)
    }

    /// Node `id` claims leadership in `term` (`None`: it no longer does).
    /// Records [`EventKind::Leader`] when the node starts leading in a new term and a trigger
    /// waits for `leader elected`.
    pub fn set_leader(&self, id: NodeId, term: Option<u64>) {
        let was = std::mem::replace(
            &mut self.leaders.lock().expect("single-threaded")[id as usize],
            term,
        );
        if let Some(term) = term.filter(|&t| was != Some(t)) {
            if self.service_events.load(Ordering::Relaxed) {
                self.record(id, EventKind::Leader { term });
            }
        }
    }

    /// Replica `id` took its leader's replication stream up to `offset`: recorded as
    /// [`EventKind::Replicated`] when a trigger waits for `replicates`.
    pub fn replicated(&self, id: NodeId, offset: u64) {
        if self.service_events.load(Ordering::Relaxed) {
            self.record(id, EventKind::Replicated { offset });
        }
    }

    /// From now on, record the service's own events (`leader elected`, `replicates`). Called
    /// by the nemesis before the run starts when a trigger waits for one; other runs never
    /// record them, so their event logs and digests do not depend on these events existing.
    pub fn record_service_events(&self) {
        self.service_events.store(true, Ordering::Relaxed);
    }

    /// The node claiming leadership in the highest term (the lowest id on a tie), if any.
    pub fn leader(&self) -> Option<NodeId> {
        let l = self.leaders.lock().expect("single-threaded");
        (0..l.len())
            .filter_map(|i| l[i].map(|t| (t, std::cmp::Reverse(i))))
            .max()
            .map(|(_, std::cmp::Reverse(i))| i as NodeId)
    }

    /// Stalls `task` of node `id` until true time `until` (overlapping stalls extend it).
    pub fn stall(&self, id: NodeId, task: Task, until: Nanos) {
        let mut s = self.stalls.lock().expect("single-threaded");
        let t = &mut s[id as usize][task as usize];
        *t = (*t).max(until);
    }

    /// True time until which `task` of node `id` is stalled (0 or past: it runs).
    pub fn stalled_until(&self, id: NodeId, task: Task) -> Nanos {
        self.stalls.lock().expect("single-threaded")[id as usize][task as usize]
    }

    /// Records an event on `node` at the current true time with the node's clock readings, and
    /// returns its id.
    pub fn record(&self, node: NodeId, kind: EventKind) -> u64 {
        let time = self.now();
        let (wall, mono) = {
            let c = self.clock(node);
            (c.wall(time), c.mono(time))
        };
        let seen = self.observer.get().and_then(|_| occurrence(&kind));
        let id = {
            let mut ev = self.events.lock().expect("single-threaded");
            let id = ev.len() as u64;
            ev.push(Event {
                id,
                time,
                node,
                wall,
                mono,
                kind,
            });
            id
        };
        if let (Some(observe), Some(o)) = (self.observer.get(), seen) {
            observe(node, &o);
        }
        id
    }

    /// Installs the observer of recorded events (once per run; a second call is ignored).
    pub fn observe(&self, observer: Observer) {
        let _ = self.observer.set(observer);
    }

    /// Takes the recorded events out (at the end of the run).
    pub(crate) fn take_events(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock().expect("single-threaded"))
    }
}
