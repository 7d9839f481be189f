//! [futures-timer](https://crates.io/crates/futures-timer) 3's API — [`Delay`]: `new`, `reset`,
//! and a `Future` that completes once its duration has passed — on madsim's timers. Under
//! `--cfg madsim` that is the simulation's clock; without it madsim's timers are tokio's, so a
//! tokio runtime must be running. Use it only to patch `futures-timer` in simulation builds.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use madsim::time::{sleep, Sleep};

/// A future that completes `dur` after it was made (or last [`reset`](Delay::reset)).
pub struct Delay {
    sleep: Pin<Box<Sleep>>,
}

impl Delay {
    /// A delay of `dur` from now.
    pub fn new(dur: Duration) -> Delay {
        Delay {
            sleep: Box::pin(sleep(dur)),
        }
    }

    /// Restarts it: it now completes `dur` from now.
    pub fn reset(&mut self, dur: Duration) {
        self.sleep = Box::pin(sleep(dur));
    }
}

impl Future for Delay {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.sleep.as_mut().poll(cx)
    }
}

impl fmt::Debug for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delay").finish_non_exhaustive()
    }
}
