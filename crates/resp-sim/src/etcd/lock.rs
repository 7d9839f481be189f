//! etcd's Lock service (`v3lockpb.Lock`), as an etcd server runs it: `Lock(name, lease)` is
//! etcd's `concurrency.Mutex` on the server's side (etcd's `server/etcdserver/api/v3lock`):
//!
//! 1. It creates the waiter key `name/<lease id in hex>`, attached to the lease, unless it
//!    exists (`create_revision == 0` in a txn).
//! 2. It waits until that key has the smallest create revision under `name/` (every earlier
//!    waiter's key deleted, by unlock, revoke or lease expiry), then checks the key is still
//!    there ("session expired" otherwise).
//! 3. It answers with the key: the lock is held until the key is deleted (`Unlock(key)` is a
//!    plain delete of it) or its lease ends.
//!
//! A `Lock` without a lease (lease 0) gets one of [`SESSION_TTL`] s from the server, as etcd's
//! does, not kept alive. A `Lock` call the client gives up on while it waits deletes its waiter key, as the Mutex
//! does when its wait fails. The recorder sees a grant of the lock `name` to the caller, with
//! the key as the holder's value and the lease's deadline as the grant's.
//!
//! etcd-client 0.21 exports the responses but not the requests or the server glue of this
//! service, so both are written here after `v3lock.proto` (fields `name = 1`, `lease = 2`;
//! `key = 1`) and the shape of tonic's generated servers.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use etcd_client::proto::{
    PbCompare, PbCompareTarget, PbDeleteRequest, PbLeaseGrantRequest, PbLockResponse, PbPutRequest,
    PbRangeRequest, PbTargetUnion, PbTxnOpRequest, PbTxnRequest, PbTxnRequestOp, PbUnlockResponse,
};
use tonic::{Request, Response, Status};

use super::mvcc::{lock_key, prefix_end};
use super::service::Member;
use crate::store::Effect;

/// `v3lockpb.LockRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LockRequest {
    /// The lock's name: waiter keys are `name/<lease>`.
    #[prost(bytes = "vec", tag = "1")]
    pub name: Vec<u8>,
    /// The lease the waiter key is attached to; the lock ends with it.
    #[prost(int64, tag = "2")]
    pub lease: i64,
}

/// `v3lockpb.UnlockRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UnlockRequest {
    /// The key `Lock` answered with.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
}

/// Deletes a waiter key whose `Lock` call was given up on (dropped), unless the member
/// crashed meanwhile (a dead process cleans nothing up) or the call was answered.
struct Waiting {
    member: Member,
    key: Vec<u8>,
    incarnation: u64,
    armed: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.armed || self.member.state.incarnation.load(Ordering::Relaxed) != self.incarnation
        {
            return;
        }
        let key = std::mem::take(&mut self.key);
        let _ = self.member.apply(|s, now| {
            let (r, _) = s.delete_range(
                now,
                &PbDeleteRequest {
                    key,
                    ..Default::default()
                },
            )?;
            Ok((r, Vec::new()))
        });
    }
}

/// The TTL (s) of the lease etcd's Lock service grants for a `Lock` without one
/// (`concurrency`'s default session TTL): the lock lasts that long, never renewed (the server's
/// session is orphaned at once).
pub(crate) const SESSION_TTL: i64 = 60;

async fn lock(member: Member, mut req: LockRequest) -> Result<PbLockResponse, Status> {
    if req.lease == 0 {
        // etcd's `NewSession` without a lease grants one: each such caller waits under its own
        // key, as with a lease of its own (one shared `name/0` would let every caller in).
        req.lease = member.apply(|s, now| {
            let grant = PbLeaseGrantRequest {
                ttl: SESSION_TTL,
                id: 0,
            };
            Ok((s.lease_grant(now, &grant)?.id, Vec::new()))
        })?;
    }
    let key = lock_key(&req.name, req.lease);
    // 1. The waiter key, unless this lease already waits (or holds).
    let create = PbTxnRequest {
        compare: vec![PbCompare {
            result: 0,                              // EQUAL
            target: PbCompareTarget::Create as i32, // CREATE
            key: key.clone(),
            range_end: Vec::new(),
            target_union: Some(PbTargetUnion::CreateRevision(0)),
        }],
        success: vec![PbTxnRequestOp {
            request: Some(PbTxnOpRequest::RequestPut(PbPutRequest {
                key: key.clone(),
                value: Vec::new(),
                lease: req.lease,
                ..Default::default()
            })),
        }],
        failure: vec![PbTxnRequestOp {
            request: Some(PbTxnOpRequest::RequestRange(PbRangeRequest {
                key: key.clone(),
                ..Default::default()
            })),
        }],
    };
    // A waiter key is not a grant: its effects are not recorded.
    member.apply(|s, now| Ok((s.txn(now, &create)?.0, Vec::new())))?;
    let mut waiting = Waiting {
        member: member.clone(),
        key: key.clone(),
        incarnation: member.state.incarnation.load(Ordering::Relaxed),
        armed: true,
    };
    let mut prefix = req.name.clone();
    prefix.push(b'/');
    let first = PbRangeRequest {
        key: prefix.clone(),
        range_end: prefix_end(&prefix),
        limit: 1,
        sort_order: 1,  // ASCEND
        sort_target: 2, // CREATE (KEY = 0, VERSION = 1, CREATE = 2)
        ..Default::default()
    };
    let state = member.state.clone();
    // 2. Wait to be the first.
    let header = loop {
        let changed = state.changed.next();
        let (owner, mine, header) = member.apply(|s, now| {
            let owner = s.range(now, &first)?;
            let mine = s.range(
                now,
                &PbRangeRequest {
                    key: key.clone(),
                    ..Default::default()
                },
            )?;
            Ok((
                (
                    owner.kvs.first().map(|kv| kv.key.clone()),
                    !mine.kvs.is_empty(),
                    s.header(s.revision()),
                ),
                Vec::new(),
            ))
        })?;
        if !mine {
            waiting.armed = false;
            return Err(Status::unknown("mutex: session is expired"));
        }
        if owner.as_deref() == Some(&key[..]) {
            break header;
        }
        changed.await;
    };
    // 3. Granted: the recorder sees the lock's name held with this key until the lease ends.
    waiting.armed = false;
    member
        .state
        .granted
        .lock()
        .expect("one thread")
        .insert(key.clone(), req.name.clone());
    member.apply(|s, now| {
        let expires = s.lease_deadline(now, req.lease);
        Ok((
            (),
            vec![Effect::Acquired {
                key: req.name.clone(),
                value: key.clone(),
                expires,
            }],
        ))
    })?;
    member.hold_reply().await;
    Ok(PbLockResponse { header, key })
}

async fn unlock(member: Member, req: UnlockRequest) -> Result<PbUnlockResponse, Status> {
    let deleted = member.apply(|s, now| {
        s.delete_range(
            now,
            &PbDeleteRequest {
                key: req.key.clone(),
                ..Default::default()
            },
        )
    })?;
    member.hold_reply().await;
    Ok(PbUnlockResponse {
        header: deleted.header,
    })
}

/// The Lock service's tower service: routes `/v3lockpb.Lock/Lock` and `/v3lockpb.Lock/Unlock`
/// through tonic's gRPC codec to [`lock`] and [`unlock`].
#[derive(Clone)]
pub(crate) struct LockServer {
    member: Member,
}

impl LockServer {
    pub(crate) fn new(member: Member) -> LockServer {
        LockServer { member }
    }
}

impl tonic::server::NamedService for LockServer {
    const NAME: &'static str = "v3lockpb.Lock";
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'static>>;

/// One unary method: `F` with the member.
struct Unary<Q, R, F> {
    member: Member,
    f: F,
    _t: std::marker::PhantomData<fn(Q) -> R>,
}

impl<Q, R, F, Fut> tonic::server::UnaryService<Q> for Unary<Q, R, F>
where
    F: Fn(Member, Q) -> Fut,
    Fut: Future<Output = Result<R, Status>> + Send + 'static,
    Q: Send + 'static,
    R: Send + 'static,
{
    type Response = R;
    type Future = BoxFuture<Response<R>, Status>;

    fn call(&mut self, req: Request<Q>) -> Self::Future {
        let fut = (self.f)(self.member.clone(), req.into_inner());
        Box::pin(async move { fut.await.map(Response::new) })
    }
}

impl<B> tower::Service<http::Request<B>> for LockServer
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let member = self.member.clone();
        match req.uri().path() {
            "/v3lockpb.Lock/Lock" => Box::pin(async move {
                let method = Unary {
                    member,
                    f: lock,
                    _t: std::marker::PhantomData,
                };
                let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<
                    PbLockResponse,
                    LockRequest,
                >::default());
                Ok(grpc.unary(method, req).await)
            }),
            "/v3lockpb.Lock/Unlock" => Box::pin(async move {
                let method = Unary {
                    member,
                    f: unlock,
                    _t: std::marker::PhantomData,
                };
                let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<
                    PbUnlockResponse,
                    UnlockRequest,
                >::default());
                Ok(grpc.unary(method, req).await)
            }),
            _ => Box::pin(async move { Ok(Status::unimplemented("").into_http()) }),
        }
    }
}
