//! The accept loop of sluice's HTTP listeners, so that the connection
//! rules of [`sluice_core::connection`] hold on the wire (`axum::serve`
//! has no setting for any of them):
//!
//! - a connection over the cap, in all or for its client, is answered 503
//!   with the core's reason and closed, before a byte of it is read;
//! - each connection has a [`ConnectionClock`], fed by its reads and its
//!   requests' starts and ends, and is dropped when the clock says it sat
//!   idle too long or took too long over a head;
//! - each request body must arrive within `body_read_timeout` of its head
//!   ([`Denied::SlowBody`], 408, from the handler that reads it);
//! - the cap leaves `fd_reserve` descriptors free, so that respawning an
//!   upstream never fails for the clients' sake.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use sluice_core::connection::{
    ClientKey, ConnectionClock, ConnectionLimits, ConnectionRefusal, ConnectionTable,
};
use sluice_core::policy::Denied;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// Refusals written at once; beyond, an over-cap connection is closed
/// without a word, so that a flood cannot spend the descriptor reserve on
/// refusals.
const REFUSALS_IN_FLIGHT: usize = 64;
/// How long a refusal may take to write.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` until `shutdown` completes, then lets the
/// open connections finish.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let cap = limits.cap_under(descriptor_limit());
    tracing::debug!(
        cap,
        per_client = limits.max_per_client,
        "accepting connections"
    );
    let table = Arc::new(Mutex::new(ConnectionTable::new(cap, limits.max_per_client)));
    let refusals = Arc::new(Semaphore::new(REFUSALS_IN_FLIGHT));
    let tracker = TaskTracker::new();
    let stop = CancellationToken::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                accept_failed(&e).await;
                continue;
            }
        };
        let client = ClientKey::of(peer.ip());
        let admitted = lock(&table).admit(client);
        match admitted {
            Ok(()) => {
                let slot = Slot {
                    table: Arc::clone(&table),
                    client,
                };
                tracker.spawn(connection(
                    stream,
                    peer,
                    app.clone(),
                    limits,
                    stop.clone(),
                    slot,
                ));
            }
            Err(refusal) => {
                tracing::debug!(%client, %refusal, "connection refused");
                if let Ok(permit) = Arc::clone(&refusals).try_acquire_owned() {
                    tokio::spawn(refuse(stream, refusal, permit));
                }
            }
        }
    }
    stop.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// The soft limit on open descriptors, raised to the hard limit first:
/// the default soft limit (often 1024) is what the idle floods of a
/// hostile client would otherwise reach.
fn descriptor_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return raised.current.unwrap_or(u64::MAX);
        }
    }
    limit.current.unwrap_or(u64::MAX)
}

/// An accept that failed: a connection reset before it was taken is
/// nothing; anything else (out of descriptors, say) is waited out briefly
/// rather than retried in a hot loop.
async fn accept_failed(e: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(error = %e, "accepting a connection failed; retrying in 100 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection's place in the table, given back when it closes.
struct Slot {
    table: Arc<Mutex<ConnectionTable>>,
    client: ClientKey,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.table).release(self.client);
    }
}

/// Answers an over-cap connection 503 with the reason, and closes it.
async fn refuse(mut stream: TcpStream, refusal: ConnectionRefusal, _permit: OwnedSemaphorePermit) {
    let body = serde_json::json!({"error": refusal.to_string()}).to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_WRITE, write).await;
}

/// A connection's clock and the wake-up of its watchdog when a deadline
/// moves closer.
struct Watch {
    /// When the connection opened: the clock's times are offsets from it.
    opened: Instant,
    clock: Mutex<ConnectionClock>,
    rearm: Notify,
}

impl Watch {
    fn now(&self) -> Duration {
        self.opened.elapsed()
    }

    fn read(&self) {
        if lock(&self.clock).on_read(self.now()) {
            self.rearm.notify_one();
        }
    }
}

/// Serves one connection until it ends, its clock expires, or shutdown.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
    _slot: Slot,
) {
    let watch = Arc::new(Watch {
        opened: Instant::now(),
        clock: Mutex::new(ConnectionClock::new(Duration::ZERO)),
        rearm: Notify::new(),
    });
    let io = TokioIo::new(WatchedIo {
        inner: stream,
        watch: Arc::clone(&watch),
    });
    let served = Arc::clone(&watch);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        lock(&served.clock).on_request(served.now());
        let done = ResponseDone(Arc::clone(&served));
        let mut request = request.map(|body| {
            Body::new(TimedBody {
                inner: body,
                deadline: Box::pin(tokio::time::sleep(limits.body_read_timeout)),
                limit: limits.body_read_timeout,
            })
        });
        request.extensions_mut().insert(ConnectInfo(peer));
        let app = app.clone();
        async move {
            let response = app.oneshot(request).await.unwrap_or_else(|e| match e {});
            Ok::<_, Infallible>(response.map(|inner| Body::new(Tracked { inner, _done: done })))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The clock, not hyper, times heads: hyper's timer would also count
    // idle keep-alive time against the head.
    builder.header_read_timeout(None);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        let deadline = lock(&watch.clock).deadline(&limits);
        let expiry = async {
            match deadline {
                Some((at, _)) => tokio::time::sleep_until((watch.opened + at).into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            () = expiry => {
                if let Some(why) = lock(&watch.clock).expired(watch.now(), &limits) {
                    tracing::debug!(%peer, ?why, "connection closed by its clock");
                    return;
                }
            }
            () = watch.rearm.notified() => {}
            () = stop.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The connection's socket, telling its clock when bytes arrive.
struct WatchedIo {
    inner: TcpStream,
    watch: Arc<Watch>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.read();
        }
        polled
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Tells the clock a response is done when hyper drops its body (sent
/// whole, or abandoned with the connection).
struct ResponseDone(Arc<Watch>);

impl Drop for ResponseDone {
    fn drop(&mut self) {
        lock(&self.0.clock).on_response_done(self.0.now());
        self.0.rearm.notify_one();
    }
}

/// A response body carrying its [`ResponseDone`].
struct Tracked {
    inner: Body,
    _done: ResponseDone,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A request body that fails with [`Denied::SlowBody`] when it has not
/// ended by its deadline.
struct TimedBody {
    inner: Incoming,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(axum::Error::new)));
        }
        ready!(self.deadline.as_mut().poll(cx));
        Poll::Ready(Some(Err(axum::Error::new(Denied::SlowBody(self.limit)))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The [`Denied::SlowBody`] inside a body error, if that is what it is.
pub(super) fn slow_body(error: &(dyn std::error::Error + 'static)) -> Option<Denied> {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(denied @ Denied::SlowBody(_)) = e.downcast_ref::<Denied>() {
            return Some(denied.clone());
        }
        source = e.source();
    }
    None
}
