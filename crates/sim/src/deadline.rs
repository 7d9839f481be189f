//! Call timeouts without a madsim timer each.
//!
//! `madsim::time::timeout` arms a timer per call, and madsim's timers cannot be cancelled: a
//! call answered in 5 ms leaves its timer in the heap until its deadline, when it wakes the
//! caller's task for nothing. A lock client makes a call every few milliseconds, so those
//! timers were a large part of a run's work (issue #49). Here every call's deadline goes into
//! one ordered set per run ([`Deadlines`]), a call answered in time takes its deadline out,
//! and one service task ([`service`], on the supervisor's node, so pausing or killing a node
//! never stops it) keeps a single madsim timer armed for the earliest deadline still waited
//! on: a call that times out is woken at its deadline, and nothing is woken for the others.
//!
//! [`within`] is the timeout: the future first, then the deadline, as madsim's `timeout` polls
//! them. Deterministic: deadlines are ordered by (time, registration number), and the set,
//! the wakers and the armed timers all live in ordered containers.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};

use locksim_core::Nanos;

use crate::world::World;

/// The deadlines of one run's calls that are still waiting.
#[derive(Default)]
pub struct Deadlines {
    /// (deadline in true ns, registration number) → the waiting task's waker (`None` until
    /// the call's first wait).
    waiting: BTreeMap<(Nanos, u64), Option<Waker>>,
    next: u64,
    /// The service task's waker while it waits.
    service: Option<Waker>,
    /// Deadlines of armed madsim timers not yet passed: the service wakes at each anyway, so a
    /// new timer is armed only for a deadline before all of them.
    armed: BTreeSet<madsim::time::Instant>,
}

impl Deadlines {
    /// Registers a deadline at true time `at`; returns its key for [`Deadlines::cancel`].
    fn add(&mut self, world: &World, at: Nanos) -> (Nanos, u64) {
        let key = (at, self.next);
        self.next += 1;
        self.waiting.insert(key, None);
        self.arm(world);
        key
    }

    /// The call was answered (or dropped): nothing waits on `key` any more.
    fn cancel(&mut self, key: (Nanos, u64)) {
        self.waiting.remove(&key);
    }

    /// Arms a madsim timer that wakes the service at the earliest deadline, unless an armed
    /// one comes no later. Before the service's first poll there is no waker, and that poll
    /// arms.
    fn arm(&mut self, world: &World) {
        let (Some(waker), Some(&(at, _))) = (self.service.clone(), self.waiting.keys().next())
        else {
            return;
        };
        arm_timer(&mut self.armed, world, &waker, world.instant(at));
    }

    /// Drops every waker at the end of a run (they hold tasks that hold the world).
    pub(crate) fn shutdown(&mut self) {
        self.waiting.clear();
        self.service = None;
    }
}

/// Arms a madsim timer that wakes `waker` at `deadline`, unless one of `armed` (the deadlines of
/// the timers this waker already has) comes no later: a madsim timer cannot be cancelled, and
/// the task wakes at each of them anyway, so woken at an earlier one it arms the next then.
/// The deadline is exact (madsim's `sleep_until` waits at least 1 ms; `reset` lifts that).
/// Shared by [`service`] and the tcp kernel ([`crate::tcp`]).
pub(crate) fn arm_timer(
    armed: &mut BTreeSet<madsim::time::Instant>,
    world: &World,
    waker: &Waker,
    deadline: madsim::time::Instant,
) {
    // Forget the deadlines that passed (their timers fired).
    let now = world.instant(world.now());
    while armed.first().is_some_and(|&a| a < now) {
        armed.pop_first();
    }
    if armed.first().is_some_and(|&a| a <= deadline) {
        return;
    }
    armed.insert(deadline);
    // Polled once with `waker`, the sleep adds a timer that wakes it; dropping the sleep leaves
    // the timer armed.
    let mut sleep = std::pin::pin!(madsim::time::sleep_until(deadline));
    sleep.as_mut().reset(deadline);
    let _ = sleep.as_mut().poll(&mut Context::from_waker(waker));
}

/// The deadline expired before the future finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// Takes the deadline out of the set however the wait ends (answered, timed out, or the
/// task dropped with its node).
struct Registration<'a> {
    world: &'a World,
    key: (Nanos, u64),
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.world.deadlines().cancel(self.key);
    }
}

/// Runs `fut` for at most `len` ns of true time: its output, or [`Elapsed`] at the deadline
/// (the future is polled first, as `madsim::time::timeout` does).
pub async fn within<F: Future>(
    world: &Arc<World>,
    len: Nanos,
    fut: F,
) -> Result<F::Output, Elapsed> {
    let at = world.now().saturating_add(len);
    let reg = Registration {
        world,
        key: world.deadlines().add(world, at),
    };
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        if world.now() >= at {
            return Poll::Ready(Err(Elapsed));
        }
        let mut d = world.deadlines();
        if let Some(w) = d.waiting.get_mut(&reg.key) {
            if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *w = Some(cx.waker().clone());
            }
        }
        Poll::Pending
    })
    .await
}

/// The service task: at each armed deadline, wakes the calls whose deadlines have passed and
/// arms the next. Runs inside the supervisor's future and holds the world only weakly, so a
/// run that ends with it pending frees everything.
pub(crate) async fn service(world: Weak<World>) {
    std::future::poll_fn(|cx: &mut Context<'_>| {
        let Some(w) = world.upgrade() else {
            return Poll::Ready(());
        };
        let now = w.now();
        let mut d = w.deadlines();
        while let Some((&key, _)) = d.waiting.first_key_value() {
            if key.0 > now {
                break;
            }
            // The call's own wait sees the deadline passed and takes it out.
            if let Some(Some(waker)) = d.waiting.remove(&key) {
                waker.wake();
            }
        }
        d.service = Some(cx.waker().clone());
        d.arm(&w);
        Poll::<()>::Pending
    })
    .await
}
