//! `tiny-lease`: a single lock server that hands out leases judged on its own monotonic clock,
//! and a client that is either careful (it stops acting when its lease would have ended, by
//! its own clock, from the moment it sent the request) or careless (it trusts a grant until it
//! releases it — the classic bug that locksim's S1 catches).
//!
//! [`registrations`] names both for locksim's command line: `src/bin/tiny-locksim.rs` is this
//! crate's own `locksim` with them beside the built-in algorithms.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use locksim_explore::algos::knobs::Knobs;
use locksim_explore::algos::{Knob, Registration};
use locksim_explore::core::history::EventKind;
use locksim_explore::core::Workload;
use locksim_explore::sim::{
    async_trait, Grant, LocalClock, LockAlgorithm, LockClient, NodeCtx, Outcome, Validity,
};

/// The lock: one server (node 0), one lease per key.
pub struct TinyLease {
    /// Whether clients track their lease's end (see the crate's doc).
    pub careful: bool,
    /// How long a client waits for the server's answer, ns of its monotonic clock.
    pub timeout: u64,
}

impl TinyLease {
    /// Clients that stop acting when their lease ends.
    pub fn careful() -> TinyLease {
        TinyLease {
            careful: true,
            timeout: 100_000_000,
        }
    }

    /// Clients that trust a grant until they release it.
    pub fn careless() -> TinyLease {
        TinyLease {
            careful: false,
            ..TinyLease::careful()
        }
    }
}

/// The settings of both algorithms (`--set timeout=250ms`, a file's `[settings]`).
pub const KNOBS: &[Knob] = &[Knob {
    key: "timeout",
    default: "100ms",
    help:
        "how long a client waits for the server's answer, on its monotonic clock (none: no timeout)",
}];

impl TinyLease {
    /// Reads `config` (keys of [`KNOBS`]; a missing one is its default).
    ///
    /// # Errors
    /// An unknown key or a bad value, naming it.
    pub fn from_config(careful: bool, config: &BTreeMap<String, String>) -> Result<Self, String> {
        let name = if careful {
            "tiny-lease"
        } else {
            "tiny-lease-careless"
        };
        let k = Knobs::new(name, config, KNOBS)?;
        Ok(TinyLease {
            careful,
            timeout: k.timeout("timeout")?,
        })
    }
}

fn build_careful(
    config: &BTreeMap<String, String>,
    _: &Workload,
) -> Result<Arc<dyn LockAlgorithm>, String> {
    Ok(Arc::new(TinyLease::from_config(true, config)?))
}

fn build_careless(
    config: &BTreeMap<String, String>,
    _: &Workload,
) -> Result<Arc<dyn LockAlgorithm>, String> {
    Ok(Arc::new(TinyLease::from_config(false, config)?))
}

/// Both algorithms, by the names their traces carry, for `locksim_cli::main_with` (or
/// `locksim_explore::algos::register` in a test that reads scenario files).
pub fn registrations() -> Vec<Registration> {
    vec![
        Registration {
            name: "tiny-lease",
            what: "one server, leases on its monotonic clock; clients stop acting when theirs ends",
            knobs: KNOBS,
            build: build_careful,
        },
        Registration {
            name: "tiny-lease-careless",
            what: "tiny-lease with clients that trust a grant until they release it (S1 without faults)",
            knobs: KNOBS,
            build: build_careless,
        },
    ]
}

/// The requests; the answer to each is a `bool`.
#[derive(Clone, Debug)]
enum Req {
    /// Take `key` for `owner` for `ttl` ns, unless someone else's lease is live.
    Acquire { key: u32, owner: u64, ttl: u64 },
    /// Free `key` if `owner` holds it.
    Release { key: u32, owner: u64 },
}

struct Client {
    ctx: NodeCtx,
    careful: bool,
    timeout: u64,
}

#[async_trait(?Send)]
impl LockClient for Client {
    async fn acquire(&self, key: u32, ttl: u64) -> Outcome<Grant> {
        // An owner id unique per attempt: the node and the time it asked.
        let sent = self.ctx.mono_now();
        let owner = self.ctx.id() as u64 * 1_000_000_000_000 + sent % 1_000_000_000_000;
        let req = Req::Acquire { key, owner, ttl };
        match self.ctx.call::<Req, bool>(0, req, self.timeout).await {
            Ok(true) => Outcome::Ok(Grant {
                key,
                token: None,
                // The lease ends `ttl` after the server granted it, which is after we sent the
                // request: counting from the send, less 1% for clock drift, is safe.
                valid_until: self.careful.then(|| Validity {
                    clock: LocalClock::Mono,
                    until: (sent + ttl - ttl / 100) as i64,
                }),
                private: Rc::new(owner),
            }),
            Ok(false) => Outcome::Fail("held by another client".into()),
            // Jepsen's rule: `fail` only when the request surely did not take effect (it was
            // never sent: refused, not connected). A timeout, a reset or a closed connection
            // after the request left may hide a grant: `info`.
            Err(e) if e.maybe_delivered() => Outcome::Unknown(e.to_string()),
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }

    async fn release(&self, grant: &Grant) -> Outcome<()> {
        let owner = *grant
            .private
            .downcast_ref::<u64>()
            .expect("our grants hold an owner");
        let req = Req::Release {
            key: grant.key,
            owner,
        };
        match self.ctx.call::<Req, bool>(0, req, self.timeout).await {
            Ok(true) => Outcome::Ok(()),
            Ok(false) => Outcome::Fail("not the holder".into()),
            Err(e) => Outcome::Unknown(e.to_string()),
        }
    }

    async fn extend(&self, _grant: &Grant, _ttl: u64) -> Outcome<Option<Validity>> {
        Outcome::Fail("tiny-lease does not renew".into())
    }
}

#[async_trait(?Send)]
impl LockAlgorithm for TinyLease {
    fn name(&self) -> &str {
        if self.careful {
            "tiny-lease"
        } else {
            "tiny-lease-careless"
        }
    }

    fn servers(&self) -> u32 {
        1
    }

    async fn serve(&self, ctx: NodeCtx) {
        // key -> (owner, end of the lease on this node's monotonic clock); lost in a crash.
        let mut leases: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        loop {
            let msg = ctx.recv().await;
            let Some(req) = msg.body.downcast_ref::<Req>() else {
                continue;
            };
            let now = ctx.mono_now();
            leases.retain(|_, l| now < l.1);
            let answer = match *req {
                Req::Acquire { key, owner, ttl } => match leases.get(&key) {
                    Some(_) => false,
                    None => {
                        leases.insert(key, (owner, now + ttl));
                        // The service's decision, recorded where it is made: S2 orders grants
                        // by it (not by when the client heard `ok`), and L3 knows the lock was
                        // taken even when the answer never reached the client.
                        ctx.record(EventKind::Grant {
                            key,
                            client: msg.from,
                            token: None,
                        });
                        true
                    }
                },
                Req::Release { key, owner } => match leases.get(&key) {
                    Some(&(o, _)) if o == owner => leases.remove(&key).is_some(),
                    _ => false,
                },
            };
            ctx.reply(&msg, answer).await;
        }
    }

    fn client(&self, ctx: NodeCtx) -> Rc<dyn LockClient> {
        Rc::new(Client {
            ctx,
            careful: self.careful,
            timeout: self.timeout,
        })
    }
}
