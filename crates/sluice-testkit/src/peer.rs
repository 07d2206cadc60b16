//! Per-connection state: the stdio process, or one legacy HTTP session.
//!
//! A [`Peer`] tracks the requests being worked on (so `notifications/cancelled` can stop them),
//! the server→client requests waiting for an answer (`sampling/createMessage` from the `sample`
//! tool, `elicitation/create` from `elicit`), and where unsolicited notifications
//! (`notifications/tools/list_changed`) go. A [`ReqCtx`] is what one request's handler gets of
//! its connection: its era, its output stream and its peer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

use crate::bulk::ReplyText;
use crate::era::Era;

/// Something the fixture writes towards the client.
#[derive(Debug)]
pub enum Out {
    /// A notification or a server→client request.
    Msg(Value),
    /// The final response to the request that produced this stream.
    Response(Reply),
    /// A line that is deliberately not JSON.
    Raw(String),
    /// Exit the process with this code once everything queued before it has been written.
    Exit(i32),
}

/// A serialized final JSON-RPC response. It is text, not a `Value`, because some results are
/// spliced in verbatim (see `tools::LOSSLESS_RESULT`), and some are too big to be built whole
/// (`huge_read`, `huge_write`: see [`ReplyText::Bulk`]).
#[derive(Debug)]
pub struct Reply {
    /// The whole response message, one line of JSON.
    pub text: ReplyText,
    /// The JSON-RPC error code, if it is an error response.
    pub error_code: Option<i64>,
}

/// Sender side of an output stream (stdout, an HTTP response stream, or a session's GET stream).
pub type OutTx = mpsc::UnboundedSender<Out>;

/// Everything a request handler may use to talk to the client besides its final answer.
#[derive(Clone)]
pub struct ReqCtx {
    pub era: Era,
    /// The stream related to this request: progress, server→client requests, garbage lines and
    /// (sent by the spawner) the final response. On stdio this is stdout itself.
    pub out: OutTx,
    /// The connection/session, for server→client requests and unsolicited notifications.
    /// `None` for modern requests (stateless: no server-initiated requests, and list_changed is
    /// only delivered on `subscriptions/listen` streams, see `listen`).
    pub peer: Option<Arc<Peer>>,
    /// The connection this request is registered with for `notifications/cancelled` (stdio, and
    /// legacy HTTP sessions), whatever the era. Set by `protocol::spawn_request`.
    pub tracker: Option<Arc<Peer>>,
    /// Names (lowercase, sorted, unique) of the `Mcp-Param-*` headers of the HTTP request;
    /// empty on stdio.
    pub param_headers: Vec<String>,
}

/// A JSON-RPC id as a map key. Uses the JSON spelling so that `1` and `"1"` stay distinct.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// Locks a mutex, ignoring poisoning (a panicked task must not take the fixture down).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// State shared by all requests of one connection (stdio) or one legacy HTTP session.
#[derive(Default)]
pub struct Peer {
    /// Server→client requests waiting for the client's response, by id key.
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Client requests being worked on, by id key.
    inflight: Mutex<HashMap<String, AbortHandle>>,
    /// Where unsolicited notifications go; `None` drops them.
    notify: Mutex<Option<OutTx>>,
    /// Counter for the ids of server→client requests.
    next_id: AtomicU64,
}

impl Peer {
    /// A peer with nowhere to send unsolicited notifications yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Sets (or clears) the stream for unsolicited notifications.
    pub fn set_notify(&self, tx: Option<OutTx>) {
        *lock(&self.notify) = tx;
    }

    /// Sends an unsolicited notification if a stream for it is open; drops it otherwise.
    pub fn notify(&self, msg: Value) {
        if let Some(tx) = lock(&self.notify).as_ref() {
            let _ = tx.send(Out::Msg(msg));
        }
    }

    /// Runs `work` as its own task, registered under `id` so that `notifications/cancelled` can
    /// abort it. The registration is removed when the work ends.
    pub fn spawn_tracked<F>(self: &Arc<Self>, id: &Value, work: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let key = id_key(id);
        let me = Arc::clone(self);
        let key2 = key.clone();
        // Hold the lock while spawning so the task cannot deregister before it is registered.
        let mut inflight = lock(&self.inflight);
        let handle = tokio::spawn(async move {
            work.await;
            lock(&me.inflight).remove(&key2);
        });
        inflight.insert(key, handle.abort_handle());
        handle
    }

    /// Handles `notifications/cancelled`: stops the work for `request_id` (no answer is sent).
    /// Unknown or finished ids are ignored, as the spec allows.
    pub fn cancel(&self, request_id: &Value) {
        if let Some(handle) = lock(&self.inflight).remove(&id_key(request_id)) {
            handle.abort();
        }
    }

    /// Aborts everything in flight (used when a session is deleted).
    pub fn cancel_all(&self) {
        for (_, handle) in lock(&self.inflight).drain() {
            handle.abort();
        }
        self.set_notify(None);
    }

    /// Routes a JSON-RPC response from the client to the server→client request waiting for it.
    pub fn deliver(&self, msg: Value) {
        let key = msg.get("id").map(id_key).unwrap_or_default();
        match lock(&self.pending).remove(&key) {
            Some(tx) => {
                let _ = tx.send(msg);
            }
            None => eprintln!("sluice-fixture: response to unknown request id {key}"),
        }
    }

    /// Sends a server→client request on `out` and waits for the client's response message
    /// (the whole JSON-RPC response, with `result` or `error`). `None` if the peer went away.
    pub async fn request(&self, out: &OutTx, method: &str, params: Value) -> Option<Value> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = Value::String(format!("fixture-{n}"));
        let key = id_key(&id);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(key.clone(), tx);
        // Remove the pending entry if this future is dropped (cancelled) before the answer.
        let _guard = PendingGuard { peer: self, key };
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        out.send(Out::Msg(msg)).ok()?;
        rx.await.ok()
    }
}

/// Removes a pending server→client request when its waiter goes away.
struct PendingGuard<'a> {
    peer: &'a Peer,
    key: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.peer.pending).remove(&self.key);
    }
}

/// Aborts a task when dropped: ties a request's work to the lifetime of its HTTP response.
pub struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
