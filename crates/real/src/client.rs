//! A client process of a real run: the simulator's workload (`crates/sim/src/workload.rs` and
//! `holder.rs`, without renewal) on real time and real sockets. It loops acquire → (validity
//! check → local work → resource write)… → release, and records every operation. Its clocks
//! are virtual ([`crate::vclock`]), so offsets, drift and clock faults work as in the
//! simulator; a `SIGSTOP` pause of the process stops it anywhere, a GC pause included.

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use locksim_core::draw::{self, WorkloadDraws};
use locksim_core::history::{Deadline, EventKind, LocalClock, LostCause, OpF, Phase};
use locksim_core::time::fmt_nanos;
use locksim_core::{ClientParams, Nanos, NodeId, Workload};
use rand::Rng;

use crate::backend::{Grant, Host, Lock, Outcome};
use crate::conn::{read_line, CallError, Conn};
use crate::node::{sleep_until, true_now, Log, NodeSpec};
use crate::resource::{read_answer, write_line, WriteResp};
use crate::support::Backend;
use locksim_core::clock::Clock;

struct Client {
    spec: NodeSpec,
    clock: Clock,
    log: Log,
    /// Next operation / handle number of this incarnation.
    next: std::cell::Cell<u64>,
}

impl Host for Client {
    fn now(&self, clock: LocalClock) -> i64 {
        self.clock.read(clock, true_now(self.spec.t0))
    }
    fn true_time(&self) -> Nanos {
        true_now(self.spec.t0)
    }
    fn granted(&self, t: Nanos, server: u32, key: u32, token: Option<u64>) {
        self.log.record(
            t,
            server,
            t as i64,
            t,
            EventKind::Grant {
                key,
                client: self.spec.node,
                token,
            },
        );
    }
    fn freed(&self, t: Nanos, server: u32, key: u32, freed: u64, holder: NodeId, released: u64) {
        self.log.record(
            t,
            server,
            t as i64,
            t,
            EventKind::Freed {
                key,
                client: self.spec.node,
                freed,
                released,
                holder: Some(holder),
            },
        );
    }
}

impl Client {
    fn t(&self) -> Nanos {
        true_now(self.spec.t0)
    }
    fn mono(&self) -> u64 {
        self.clock.mono(self.t())
    }
    fn record(&self, kind: EventKind) {
        let t = self.t();
        self.log.record(
            t,
            self.spec.node,
            self.clock.wall(t),
            self.clock.mono(t),
            kind,
        );
    }
    /// A number unique in the run: node, incarnation, counter (below 2^44, so a write's value
    /// `handle << 16 | n` fits in 64 bits).
    fn fresh(&self) -> u64 {
        let n = self.next.get();
        self.next.set(n + 1);
        ((self.spec.node as u64) << 36) | ((self.spec.incarnation as u64 & 0xff) << 28) | n
    }
    /// Sleeps `d` ns of the local monotonic clock.
    fn sleep(&self, d: Nanos) {
        let until = self.clock.true_time_of_mono(self.mono().saturating_add(d));
        sleep_until(self.spec.t0, until);
    }
    #[allow(clippy::too_many_arguments)]
    fn op(
        &self,
        op: u64,
        phase: Phase,
        f: OpF,
        key: u32,
        handle: Option<u64>,
        token: Option<u64>,
        deadline: Option<(LocalClock, i64)>,
        error: Option<String>,
        value: Option<u64>,
    ) {
        self.record(EventKind::Op {
            op,
            phase,
            f,
            key,
            handle,
            token,
            deadline: deadline.map(|(clock, local)| Deadline {
                clock,
                local,
                at: 0,
            }),
            error,
            value,
        });
    }
}

fn outcome_phase<T>(o: &Outcome<T>) -> (Phase, Option<String>) {
    match o {
        Outcome::Ok(_) => (Phase::Ok, None),
        Outcome::Fail(e) => (Phase::Fail, Some(e.clone())),
        Outcome::Unknown(e) => (Phase::Info, Some(e.clone())),
    }
}

/// One write to the resource.
fn write(
    res: &mut Conn,
    w: &Workload,
    key: u32,
    handle: u64,
    token: Option<u64>,
    value: u64,
) -> Result<WriteResp, CallError> {
    let req = write_line(key, handle, token, value);
    res.call(
        req.as_bytes(),
        Duration::from_nanos(w.rpc_timeout),
        |r: &mut BufReader<TcpStream>| read_answer(&read_line(r)?),
    )
}

#[allow(clippy::too_many_arguments)]
fn hold(
    c: &Client,
    lock: &mut dyn Lock,
    res: &mut Conn,
    grant: &Grant,
    key: u32,
    handle: u64,
    rng: &mut WorkloadDraws,
    me: &ClientParams,
    w: &Workload,
) {
    let token = grant.token;
    let mut lost_at: Option<u64> = None;
    let stopped =
        |lost_at: Option<u64>| lost_at.is_some_and(|t| c.mono() >= t.saturating_add(me.step_down));
    let lose = |lost_at: &mut Option<u64>, reason: String| {
        if lost_at.is_none() {
            *lost_at = Some(c.mono());
            c.record(EventKind::Lost {
                key,
                handle,
                reason,
            });
        }
    };
    for i in 0..me.writes_per_hold {
        if stopped(lost_at) {
            break;
        }
        let work = rng.work(me);
        if w.check_validity && lost_at.is_none() {
            let (clock, until) = grant.deadline;
            let now = c.now(clock);
            if now.saturating_add(work as i64) >= until {
                let left = until as i128 - now as i128;
                lose(
                    &mut lost_at,
                    format!(
                        "{}: {} left, {} of work planned",
                        LostCause::ValidityCheck.prefix(),
                        fmt_nanos(left),
                        fmt_nanos(work as i128)
                    ),
                );
                if stopped(lost_at) {
                    break;
                }
            }
        }
        // The work between the validity check and the write: a pause here is a GC pause.
        c.sleep(work);
        if stopped(lost_at) {
            break;
        }
        // The service's word, if the client asks for it: the write below still comes a round
        // trip after the answer.
        if lost_at.is_none() {
            if let Some(Err(why)) = lock.check_held(c, key) {
                lose(
                    &mut lost_at,
                    format!("{}: {why}", LostCause::HeldCheck.prefix()),
                );
                if stopped(lost_at) {
                    break;
                }
            }
        }
        let value = (handle << 16) | (i as u64 + 1);
        let op = c.fresh();
        c.op(
            op,
            Phase::Invoke,
            OpF::Write,
            key,
            Some(handle),
            token,
            None,
            None,
            Some(value),
        );
        match write(res, w, key, handle, token, value) {
            Ok(WriteResp::Accepted { previous }) => c.op(
                op,
                Phase::Ok,
                OpF::Write,
                key,
                Some(handle),
                token,
                None,
                None,
                Some(previous),
            ),
            Ok(WriteResp::Fenced { highest }) => {
                let why = format!("{}: token below {highest}", LostCause::Fenced.prefix());
                c.op(
                    op,
                    Phase::Fail,
                    OpF::Write,
                    key,
                    Some(handle),
                    token,
                    None,
                    Some(why.clone()),
                    None,
                );
                lose(&mut lost_at, why);
            }
            Err(e @ CallError::Unknown(_)) => c.op(
                op,
                Phase::Info,
                OpF::Write,
                key,
                Some(handle),
                token,
                None,
                Some(e.to_string()),
                None,
            ),
            Err(e) => c.op(
                op,
                Phase::Fail,
                OpF::Write,
                key,
                Some(handle),
                token,
                None,
                Some(e.to_string()),
                None,
            ),
        }
    }
    let op = c.fresh();
    c.op(
        op,
        Phase::Invoke,
        OpF::Release,
        key,
        Some(handle),
        token,
        None,
        None,
        None,
    );
    let o = lock.release(c, key, grant);
    let (phase, error) = outcome_phase(&o);
    c.op(
        op,
        phase,
        OpF::Release,
        key,
        Some(handle),
        token,
        None,
        error,
        None,
    );
}

/// The lock client of `spec`'s process: its adapter's library when the run has one (a client
/// whose adapter cannot start exits with [`crate::adapter::EXIT_ADAPTER`], after saying why on
/// stderr), else the service's own client ([`crate::services::lock_client`]); `backend` with
/// the client's own `client_clock`, `ttl` its lease, ns.
///
/// # Errors
/// When the service's client cannot start.
fn lock_client(spec: &NodeSpec, backend: Backend, ttl: Nanos) -> Result<Box<dyn Lock>, String> {
    let s = &spec.scenario;
    Ok(match &spec.adapter {
        Some(a) => {
            let name = s.cluster.name(spec.node);
            let err = spec
                .log
                .with_file_name(format!("{name}.{}.adapter.err", spec.incarnation));
            let a = crate::adapter::AdapterLock::start(
                a,
                &name,
                s,
                &backend,
                spec.me,
                &spec.servers,
                ttl,
                err,
                spec.clock_file.as_deref(),
            )
            .unwrap_or_else(|msg| {
                eprintln!("error: {msg}");
                std::process::exit(crate::adapter::EXIT_ADAPTER)
            });
            // What ran, for the harness's notes: the library and the version it imported.
            let said = spec
                .log
                .with_file_name(format!("{name}.{}.adapter.json", spec.incarnation));
            let _ = std::fs::write(
                said,
                serde_json::json!({"library": a.library.0, "version": a.library.1}).to_string(),
            );
            Box::new(a) as Box<dyn Lock>
        }
        None => crate::services::lock_client(
            backend,
            spec.node,
            s.seed,
            spec.me,
            &spec.servers,
            (&crate::vclock::of(s, spec.node), spec.t0),
        )?,
    })
}

/// Runs the client of `spec` until the run's end.
///
/// # Errors
/// When its log cannot be opened.
pub fn main(spec: NodeSpec) -> Result<(), String> {
    let log = Log::open(&spec.log).map_err(|e| format!("{}: {e}", spec.log.display()))?;
    let s = &spec.scenario;
    let me = s.workload.client(spec.node - s.cluster.servers + 1);
    let w = s.workload.clone();
    // A client's own `client_clock` setting overrides the algorithm's, as in the simulator.
    let mut backend = spec.backend;
    backend.client_clock = me.client_clock.unwrap_or(backend.client_clock);
    let mut lock = lock_client(&spec, backend, me.ttl)?;
    let mut res = Conn::new(spec.me, spec.resource);
    // The simulator's derivation (locksim_core::draw): seed N draws the same think times,
    // keys, work lengths and retry delays as simulated seed N. Owner values come from the
    // node's own stream, as the simulator's clients draw theirs, never from the workload's.
    let mut rng = WorkloadDraws::new(s.seed, spec.node, spec.incarnation);
    let mut own = draw::stream(
        s.seed,
        draw::NODE,
        draw::node_index(spec.node, spec.incarnation),
    );
    let end = s.end();
    let c = Client {
        clock: crate::vclock::of(s, spec.node),
        log,
        next: std::cell::Cell::new(1),
        spec: spec.clone(),
    };
    sleep_until(spec.t0, 0);
    let mut think = true;
    let mut backoff = locksim_core::draw::Backoff::default();
    let mut key = 0;
    while c.t() < me.duration {
        if think {
            c.sleep(rng.think(&w));
        }
        let drawn = rng.key(&w);
        if think {
            key = drawn;
        }
        let op = c.fresh();
        c.op(
            op,
            Phase::Invoke,
            OpF::Acquire,
            key,
            None,
            None,
            None,
            None,
            None,
        );
        let owner: u64 = own.gen();
        match lock.acquire(&c, key, owner, me.ttl) {
            Outcome::Ok(grant) => {
                let handle = c.fresh();
                c.op(
                    op,
                    Phase::Ok,
                    OpF::Acquire,
                    key,
                    Some(handle),
                    grant.token,
                    (grant.deadline.1 != crate::backend::NO_DEADLINE).then_some(grant.deadline),
                    None,
                    None,
                );
                hold(
                    &c,
                    lock.as_mut(),
                    &mut res,
                    &grant,
                    key,
                    handle,
                    &mut rng,
                    &me,
                    &w,
                );
                backoff.reset();
                think = true;
            }
            other => {
                let (phase, error) = outcome_phase(&other);
                c.op(op, phase, OpF::Acquire, key, None, None, None, error, None);
                let (delay, give_up) = backoff.after_failure(&mut rng, &w, me.retry);
                c.sleep(delay);
                think = give_up;
            }
        }
    }
    let _ = std::io::stdout().flush();
    sleep_until(spec.t0, end);
    Ok(())
}
