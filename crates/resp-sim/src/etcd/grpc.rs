//! gRPC over madsim's TCP: HTTP/2 by hyper on both ends, with madsim's tasks as hyper's
//! executor, so the bytes on the simulated wire are what a real etcd client and server
//! exchange (HTTP/2 frames carrying gRPC's length-prefixed protobuf messages).
//!
//! - [`serve`]: accepts connections on a madsim listener and serves each with a tower service
//!   made for that connection (so the service knows which client node it talks to).
//! - [`Channel`]: the client end, a tower service of `http::Request<tonic::body::Body>` that
//!   etcd-client takes as its `Channel::Custom`. It opens one connection and multiplexes every
//!   call on it, as tonic's own channel does; when the connection breaks (a crash, a reset) the
//!   calls on it fail and the next call opens a new one.
//!
//! Not modelled: TLS, HTTP/2 keep-alive pings (tonic and etcd-client leave them off by
//! default), flow-control tuning (hyper's defaults).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;

/// hyper's executor: madsim's task spawner (the current node's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exec;

impl<F> hyper::rt::Executor<F> for Exec
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        madsim::task::spawn(fut);
    }
}

/// Serves HTTP/2 on `addr` until the node is killed: each accepted connection gets the service
/// `make(peer)` returns.
pub(crate) async fn serve<M, S>(addr: SocketAddr, make: M)
where
    M: Fn(SocketAddr) -> S,
    S: tower::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let listener = madsim::net::TcpListener::bind(addr)
        .await
        .expect("the server node binds its address");
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(make(peer));
        madsim::task::spawn(async move {
            let _ = hyper::server::conn::http2::Builder::new(Exec)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type Sender = hyper::client::conn::http2::SendRequest<tonic::body::Body>;

/// The client end of one simulated gRPC connection to `addr`; clones share the connection.
#[derive(Clone, Debug)]
pub struct Channel {
    addr: SocketAddr,
    conn: Arc<tokio::sync::Mutex<Option<Sender>>>,
}

impl Channel {
    /// A channel to `addr`; it connects on its first call.
    pub fn new(addr: SocketAddr) -> Channel {
        Channel {
            addr,
            conn: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// The open connection's sender, or a new connection's.
    async fn sender(&self) -> Result<Sender, tower::BoxError> {
        let mut conn = self.conn.lock().await;
        if let Some(s) = conn.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        *conn = None;
        let stream = madsim::net::TcpStream::connect(self.addr).await?;
        let (sender, connection) =
            hyper::client::conn::http2::handshake(Exec, TokioIo::new(stream)).await?;
        madsim::task::spawn(async move {
            let _ = connection.await;
        });
        *conn = Some(sender.clone());
        Ok(sender)
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for Channel {
    type Response = http::Response<tonic::body::Body>;
    type Error = tower::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: http::Request<tonic::body::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            // tonic's generated clients send the path alone; HTTP/2 wants a scheme and an
            // authority (tonic's own channel adds them the same way).
            let path = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_else(|| "/".into());
            *req.uri_mut() = format!("http://{}{}", this.addr, path).parse()?;
            let mut sender = this.sender().await?;
            sender.ready().await?;
            let resp = sender.send_request(req).await?;
            Ok(resp.map(tonic::body::Body::new))
        })
    }
}
