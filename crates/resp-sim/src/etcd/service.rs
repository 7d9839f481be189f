//! The gRPC services of one simulated etcd member over its key space ([`super::mvcc`]): each
//! request runs against the store at the moment it arrives (on the member's clock), its
//! effects go to the run's recorder in true time, and its reply leaves then — or when a
//! `drop_replies` window on the member ends (the request took effect; the answer comes late).
//!
//! One connection's requests carry its client node and connection id, so the recorder can
//! tell whose grant a request acts under, as it does for Redis.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use etcd_client::proto::*;
use locksim_core::{Nanos, NodeId};
use tonic::codegen::tokio_stream::{wrappers::UnboundedReceiverStream, Stream};
use tonic::{Request, Response, Status, Streaming};

use super::mvcc::{EtcdError, Store};
use crate::sim::Shared;
use crate::store::Effect;

/// How often a member looks for leases past their deadline, to wake watchers of the keys they
/// held (etcd's lessor checks every 500 ms; requests see an expired lease as gone at once).
const SWEEP: Nanos = 500_000_000;

/// One member's state. It outlives the member's process: etcd keeps its keys and leases on
/// disk, so a restart finds them (and renews the leases).
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) store: Mutex<Store>,
    /// Keys the Lock service granted (`name/<lease>`) that still exist, with their lock's
    /// name: what the recorder knows as the lock key is the name, and the holder's value is
    /// this key.
    pub(crate) granted: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// Incremented at each crash: requests of an earlier incarnation clean nothing up.
    pub(crate) incarnation: std::sync::atomic::AtomicU64,
    /// Starts of the member so far (a restart renews leases).
    pub(crate) starts: std::sync::atomic::AtomicU64,
    /// The revision after the latest change, for watchers and waiting lockers.
    pub(crate) changed: Changed,
}

/// A revision counter that tasks can wait on. (Not `tokio::sync::watch`: its receivers pick
/// one of eight wait lists with tokio's thread-local generator, seeded from a process-wide
/// counter, so the order of wake-ups would differ from run to run in one process.)
#[derive(Debug, Default)]
pub(crate) struct Changed {
    revision: std::sync::atomic::AtomicI64,
    notify: tokio::sync::Notify,
}

impl Changed {
    /// Wakes every waiter when `revision` is not the last one seen.
    pub(crate) fn bump(&self, revision: i64) {
        if self
            .revision
            .swap(revision, std::sync::atomic::Ordering::Relaxed)
            != revision
        {
            self.notify.notify_waiters();
        }
    }

    /// A future that completes at the next [`Changed::bump`] that moves the revision: make it
    /// before looking at the store, then await it (`notify_waiters` wakes a future made before
    /// it, polled or not).
    pub(crate) fn next(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }
}

/// Starts member `index` on `addr`: renews its leases when this is a restart, sweeps expired
/// leases, and serves gRPC until the node is killed.
pub(crate) async fn start(addr: SocketAddr, index: u32, shared: Arc<Shared>) {
    let state = shared.etcd(index);
    let first = state
        .starts
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        == 0;
    if !first {
        let now = shared.now();
        let local = shared.server_mono(index, now);
        let effects = state.store.lock().expect("one thread").restart(local);
        Member::commit(&shared, &state, index, None, now, local, effects);
    }
    {
        let (shared, state) = (shared.clone(), state.clone());
        madsim::task::spawn(async move {
            loop {
                madsim::time::sleep(std::time::Duration::from_nanos(SWEEP)).await;
                let now = shared.now();
                let local = shared.server_mono(index, now);
                let mut store = state.store.lock().expect("one thread");
                let _ = store.expire(local);
                state.changed.bump(store.revision());
            }
        });
    }
    super::grpc::serve(addr, move |peer| {
        let member = Member {
            index,
            client: shared.node_of(peer),
            conn: shared.new_connection(),
            state: state.clone(),
            shared: shared.clone(),
        };
        tonic::service::Routes::new(PbKvServer::new(member.clone()))
            .add_service(PbLeaseServer::new(member.clone()))
            .add_service(PbWatchServer::new(member.clone()))
            .add_service(super::lock::LockServer::new(member))
            .prepare()
    })
    .await;
}

/// One connection's view of a member.
#[derive(Clone)]
pub(crate) struct Member {
    pub(crate) index: u32,
    pub(crate) client: NodeId,
    pub(crate) conn: u64,
    pub(crate) state: Arc<State>,
    pub(crate) shared: Arc<Shared>,
}

impl Member {
    /// Runs `f` on the store at this moment: `f` gets the member's local time. Its effects go
    /// to the recorder (Lock-service keys named by their lock), and watchers are woken.
    pub(crate) fn apply<T>(
        &self,
        f: impl FnOnce(&mut Store, Nanos) -> Result<(T, Vec<Effect>), EtcdError>,
    ) -> Result<T, Status> {
        let now = self.shared.now();
        let local = self.shared.server_mono(self.index, now);
        let (out, effects) = {
            let mut store = self.state.store.lock().expect("one thread");
            f(&mut store, local).map_err(status)?
        };
        Member::commit(
            &self.shared,
            &self.state,
            self.index,
            Some((self.client, self.conn)),
            now,
            local,
            effects,
        );
        Ok(out)
    }

    /// Hands `effects` (deadlines on the member's clock, read `local` at true time `now`) to
    /// the recorder, as done by `by` (a client node and its connection id) or, with `None`, by
    /// the member itself (leases renewed at restart), and wakes watchers.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit(
        shared: &Shared,
        state: &State,
        index: u32,
        by: Option<(NodeId, u64)>,
        now: Nanos,
        local: Nanos,
        effects: Vec<Effect>,
    ) {
        let (mut effects, revision) = {
            let mut granted = state.granted.lock().expect("one thread");
            let effects = named(&granted, effects);
            // A key stands for its lock only while the grant lives: once the key is gone
            // (unlock, revoke, its lease's end), the same key made again (a lease that locks
            // again) is a waiter, whose delete must not look like the holder's copy going.
            let store = state.store.lock().expect("one thread");
            granted.retain(|k, _| store.contains(k));
            (effects, store.revision())
        };
        if local != now {
            for e in &mut effects {
                crate::server::to_true_time(e, local, now);
            }
        }
        match by {
            _ if effects.is_empty() => {}
            Some((client, conn)) => {
                shared.record(|r| r.effects(now, index, client, conn, &effects));
            }
            None => shared.record(|r| r.renewed(now, index, &effects)),
        }
        state.changed.bump(revision);
    }

    /// Waits while a `drop_replies` window holds this member's replies to this client.
    pub(crate) async fn hold_reply(&self) {
        if let Some(until) = self.shared.reply_held_until(self.index, self.client) {
            madsim::time::sleep_until(self.shared.instant(until)).await;
        }
    }

    async fn reply<T>(&self, r: Result<T, Status>) -> Result<Response<T>, Status> {
        self.hold_reply().await;
        r.map(Response::new)
    }
}

/// The recorder's view of `effects`: a key the Lock service granted stands for its lock's
/// name, held with the key as the holder's value. (A waiter's key, not granted yet, is an
/// ordinary key: the recorder takes no lock key from a plain put.)
fn named(granted: &BTreeMap<Vec<u8>, Vec<u8>>, effects: Vec<Effect>) -> Vec<Effect> {
    effects
        .into_iter()
        .map(|e| match e {
            Effect::Deleted { key, by_script, .. } if granted.contains_key(&key) => {
                Effect::Deleted {
                    key: granted[&key].clone(),
                    value: key,
                    by_script,
                }
            }
            Effect::Expiry { key, until, .. } if granted.contains_key(&key) => Effect::Expiry {
                key: granted[&key].clone(),
                value: key,
                until,
            },
            other => other,
        })
        .collect()
}

/// An etcd error as gRPC status, with etcd's message.
pub(crate) fn status(e: EtcdError) -> Status {
    let code = match e.grpc_code() {
        "NotFound" => tonic::Code::NotFound,
        "OutOfRange" => tonic::Code::OutOfRange,
        "InvalidArgument" => tonic::Code::InvalidArgument,
        "FailedPrecondition" => tonic::Code::FailedPrecondition,
        "Unimplemented" => tonic::Code::Unimplemented,
        _ => tonic::Code::Unknown,
    };
    Status::new(code, e.to_string())
}

type Out<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl PbKvService for Member {
    async fn range(
        &self,
        req: Request<PbRangeRequest>,
    ) -> Result<Response<PbRangeResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| Ok((s.range(now, &req)?, Vec::new())));
        self.reply(r).await
    }

    async fn put(&self, req: Request<PbPutRequest>) -> Result<Response<PbPutResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| s.put(now, &req));
        self.reply(r).await
    }

    async fn delete_range(
        &self,
        req: Request<PbDeleteRequest>,
    ) -> Result<Response<PbDeleteResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| s.delete_range(now, &req));
        self.reply(r).await
    }

    async fn txn(&self, req: Request<PbTxnRequest>) -> Result<Response<PbTxnResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| s.txn(now, &req));
        self.reply(r).await
    }

    type RangeStreamStream = Out<PbRangeStreamResponse>;

    async fn range_stream(
        &self,
        _: Request<PbRangeRequest>,
    ) -> Result<Response<Self::RangeStreamStream>, Status> {
        Err(Status::unimplemented(
            "locksim's etcd answers ranges with Range, not RangeStream",
        ))
    }

    async fn compact(
        &self,
        _: Request<PbCompactionRequest>,
    ) -> Result<Response<PbCompactionResponse>, Status> {
        Err(Status::unimplemented(
            "locksim's etcd keeps every revision: compaction is not simulated",
        ))
    }
}

#[tonic::async_trait]
impl PbLeaseService for Member {
    async fn lease_grant(
        &self,
        req: Request<PbLeaseGrantRequest>,
    ) -> Result<Response<PbLeaseGrantResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| Ok((s.lease_grant(now, &req)?, Vec::new())));
        self.reply(r).await
    }

    async fn lease_revoke(
        &self,
        req: Request<PbLeaseRevokeRequest>,
    ) -> Result<Response<PbLeaseRevokeResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| s.lease_revoke(now, req.id));
        self.reply(r).await
    }

    type LeaseKeepAliveStream = Out<PbLeaseKeepAliveResponse>;

    async fn lease_keep_alive(
        &self,
        req: Request<Streaming<PbLeaseKeepAliveRequest>>,
    ) -> Result<Response<Self::LeaseKeepAliveStream>, Status> {
        let mut input = req.into_inner();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let member = self.clone();
        // Each keep-alive renews its lease when it arrives; a `drop_replies` window holds only
        // its answer (the answers leave in order, each no earlier than its window's end), so
        // keep-alives sent during a window still renew the lease.
        let (held, mut answers) = tokio::sync::mpsc::unbounded_channel::<(Option<Nanos>, _)>();
        let shared = self.shared.clone();
        madsim::task::spawn(async move {
            while let Some((until, r)) = answers.recv().await {
                if let Some(until) = until {
                    madsim::time::sleep_until(shared.instant(until)).await;
                }
                if tx.send(r).is_err() {
                    return;
                }
            }
        });
        madsim::task::spawn(async move {
            while let Ok(Some(ka)) = input.message().await {
                let r = member.apply(|s, now| Ok(s.lease_keep_alive(now, ka.id)));
                let until = member.shared.reply_held_until(member.index, member.client);
                if held.send((until, r)).is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(UnboundedReceiverStream::new(rx))))
    }

    async fn lease_time_to_live(
        &self,
        req: Request<PbLeaseTimeToLiveRequest>,
    ) -> Result<Response<PbLeaseTimeToLiveResponse>, Status> {
        let req = req.into_inner();
        let r = self.apply(|s, now| Ok((s.lease_time_to_live(now, &req)?, Vec::new())));
        self.reply(r).await
    }

    async fn lease_leases(
        &self,
        _: Request<PbLeaseLeasesRequest>,
    ) -> Result<Response<PbLeaseLeasesResponse>, Status> {
        let r = self.apply(|s, now| Ok((s.lease_leases(now), Vec::new())));
        self.reply(r).await
    }
}

/// One watcher of a watch stream.
struct Watcher {
    id: i64,
    key: Vec<u8>,
    range_end: Vec<u8>,
    /// The next revision to send events from.
    next: i64,
    prev_kv: bool,
    /// Event types (PUT = 0, DELETE = 1) not to send.
    filters: Vec<i32>,
}

#[tonic::async_trait]
impl PbWatchService for Member {
    type WatchStream = Out<PbWatchResponse>;

    async fn watch(
        &self,
        req: Request<Streaming<PbWatchRequest>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let input = req.into_inner();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        madsim::task::spawn(self.clone().watch_loop(input, tx));
        Ok(Response::new(Box::pin(UnboundedReceiverStream::new(rx))))
    }
}

impl Member {
    /// Serves one watch stream: creates and cancels watchers as asked, and sends each
    /// watcher's events as revisions are made.
    async fn watch_loop(
        self,
        mut input: Streaming<PbWatchRequest>,
        tx: tokio::sync::mpsc::UnboundedSender<Result<PbWatchResponse, Status>>,
    ) {
        let state = self.state.clone();
        let mut watchers: Vec<Watcher> = Vec::new();
        let mut next_id = 0i64;
        loop {
            let changed = state.changed.next();
            // Send what every watcher has not seen yet.
            let batches: Vec<PbWatchResponse> = {
                let store = self.state.store.lock().expect("one thread");
                let revision = store.revision();
                let header = store.header(revision);
                watchers
                    .iter_mut()
                    .filter_map(|w| {
                        let events: Vec<PbEvent> = store
                            .events(w.next, &w.key, &w.range_end, w.prev_kv)
                            .into_iter()
                            .filter(|e| !w.filters.contains(&e.r#type))
                            .collect();
                        w.next = revision + 1;
                        (!events.is_empty()).then(|| PbWatchResponse {
                            header,
                            watch_id: w.id,
                            events,
                            ..Default::default()
                        })
                    })
                    .collect()
            };
            if !batches.is_empty() {
                self.hold_reply().await;
            }
            for b in batches {
                if tx.send(Ok(b)).is_err() {
                    return;
                }
            }
            tokio::select! {
                // In order: tokio's unbiased select draws from a thread-local generator.
                biased;
                msg = input.message() => {
                    let Ok(Some(msg)) = msg else { return };
                    let (revision, header) = {
                        let store = self.state.store.lock().expect("one thread");
                        (store.revision(), store.header(store.revision()))
                    };
                    let reply = match msg.request_union {
                        Some(PbWatchRequestUnion::CreateRequest(c)) => {
                            let id = if c.watch_id > 0 { c.watch_id } else { next_id };
                            next_id = next_id.max(id).saturating_add(1);
                            watchers.push(Watcher {
                                id,
                                key: c.key,
                                range_end: c.range_end,
                                next: if c.start_revision > 0 { c.start_revision } else { revision + 1 },
                                prev_kv: c.prev_kv,
                                filters: c.filters,
                            });
                            PbWatchResponse {
                                header,
                                watch_id: id,
                                created: true,
                                ..Default::default()
                            }
                        }
                        Some(PbWatchRequestUnion::CancelRequest(c)) => {
                            watchers.retain(|w| w.id != c.watch_id);
                            PbWatchResponse {
                                header,
                                watch_id: c.watch_id,
                                canceled: true,
                                ..Default::default()
                            }
                        }
                        Some(PbWatchRequestUnion::ProgressRequest(_)) => PbWatchResponse {
                            header,
                            watch_id: -1,
                            ..Default::default()
                        },
                        None => continue,
                    };
                    self.hold_reply().await;
                    if tx.send(Ok(reply)).is_err() {
                        return;
                    }
                }
                _ = changed => {}
            }
        }
    }
}
