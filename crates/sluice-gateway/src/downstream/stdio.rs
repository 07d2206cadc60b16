//! Serving one client over stdin/stdout (newline-delimited JSON-RPC).
//!
//! The era is chosen by how the client opens (MCP 2026-07-28, Versioning): a request
//! whose `_meta` names the version is served statelessly (modern); an
//! `initialize` makes the process a legacy session, whose client may then
//! receive `list_changed`, log messages and relayed sampling or elicitation
//! requests on stdout. Requests run concurrently; `notifications/cancelled`
//! stops one. The function returns when stdin closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use serde_json::Value;
use sluice_core::access::{self, Principal};
use sluice_core::carried::{self, Carried};
use sluice_core::jsonrpc::{self, EnvelopeError, Message};
use sluice_core::method::{Method, notification};
use sluice_core::payload::{CARRIED_AS_TEXT_FROM, Payload};
use sluice_core::policy::{Denied, admit};
use sluice_core::protocol::{self, Era};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};
use tokio_util::sync::CancellationToken;

use crate::client::{ClientLink, ClientSession, RequestCtx};
use crate::gateway::Gateway;
use crate::offload;
use crate::pending::Pending;

/// sluice's own stdin and stdout, as async streams. When they are pipes
/// (as an MCP client starts a server), they are read and written directly
/// with non-blocking IO; otherwise (a terminal, a file) through tokio's
/// blocking-thread adapters. The adapters hand every read and write to
/// another thread, which costs a few context switches per message.
pub fn std_streams() -> (
    Box<dyn AsyncRead + Unpin + Send>,
    Box<dyn AsyncWrite + Unpin + Send>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let input: Box<dyn AsyncRead + Unpin + Send> = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn AsyncWrite + Unpin + Send> = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

/// The largest output buffer kept between writes.
const KEPT_BUFFER_BYTES: usize = 1 << 20;

/// Serves MCP on `input`/`output` until `input` ends or shutdown begins;
/// the client sees `view`'s part of the catalog, or all of it.
pub async fn serve(
    gateway: Arc<Gateway>,
    view: Option<Arc<str>>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) {
    let (out_tx, mut out_rx) = mpsc::channel::<Payload>(1024);
    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut buf = Vec::new();
        while let Some(message) = out_rx.recv().await {
            // Whatever else is already waiting goes out in the same write.
            let mut next = Some(message);
            while let Some(message) = next {
                if let Payload::Text(text) = &message {
                    // Grown once, to size, rather than doubling.
                    buf.reserve(text.get().len() + 1);
                }
                if serde_json::to_writer(&mut buf, &message).is_ok() {
                    buf.push(b'\n');
                }
                next = out_rx.try_recv().ok();
            }
            if output.write_all(&buf).await.is_err() || output.flush().await.is_err() {
                break;
            }
            buf.clear();
            // A large answer's buffer is not kept for the small ones after.
            if buf.capacity() > KEPT_BUFFER_BYTES {
                buf = Vec::new();
            }
        }
    });

    let codec = AnyDelimiterCodec::new_with_max_length(
        b"\n".to_vec(),
        Vec::new(),
        gateway.live().config.limits.transport_max_message_bytes,
    );
    let mut frames = FramedRead::new(input, codec);
    let mut client = StdioClient {
        gateway: Arc::clone(&gateway),
        input_closed: CancellationToken::new(),
        out: out_tx.clone(),
        session: None,
        principal: Arc::new(Principal::named(access::LOCAL)),
        view,
        // Modern requests have no session; their cancellations are tracked
        // here.
        modern_inflight: Arc::new(Mutex::new(HashMap::new())),
        answers: Arc::new(Pending::default()),
    };
    loop {
        let frame = tokio::select! {
            f = frames.next() => f,
            () = gateway.shutting_down() => break,
        };
        let line = match frame {
            Some(Ok(line)) => line,
            Some(Err(AnyDelimiterCodecError::MaxChunkLengthExceeded)) => {
                let e = Denied::InvalidMessage("message exceeds the transport ceiling".into());
                let _ = out_tx
                    .send(jsonrpc::response(Value::Null, Err(e.to_rpc())).into())
                    .await;
                continue;
            }
            Some(Err(AnyDelimiterCodecError::Io(_))) | None => break,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        client.handle_line(&line).await;
    }
    client.input_closed.cancel();
    // The process is ending: upstreams go with it, nothing to unsubscribe.
    if let Some(session) = &client.session {
        session.closed.cancel();
    }
    drop(client);
    drop(out_tx);
    let _ = writer.await;
}

struct StdioClient {
    gateway: Arc<Gateway>,
    /// Cancelled when stdin ends: requests in flight still get their
    /// answers, but open-ended ones (`subscriptions/listen`) end.
    input_closed: CancellationToken,
    out: mpsc::Sender<Payload>,
    session: Option<Arc<ClientSession>>,
    /// The local user who started sluice.
    principal: Arc<Principal>,
    /// The `[[view]]` this client sees (`--view`), or the whole catalog.
    view: Option<Arc<str>>,
    modern_inflight: Arc<Mutex<HashMap<String, CancellationToken>>>,
    answers: Arc<Pending>,
}

impl StdioClient {
    /// Answers a message that is not a request sluice can take.
    async fn refuse(&self, denied: Denied) {
        let answer = jsonrpc::response(Value::Null, Err(denied.to_rpc()));
        let _ = self.out.send(answer.into()).await;
    }

    async fn handle_line(&mut self, line: &[u8]) {
        let read = if line.len() >= CARRIED_AS_TEXT_FROM {
            offload::heavy(|| carried::read(line))
        } else {
            carried::read(line)
        };
        let (message, carried) = match read {
            None => return self.refuse(Denied::ParseError).await,
            Some(Err(e)) => {
                return self
                    .refuse(Denied::InvalidMessage(envelope_message(&e)))
                    .await;
            }
            Some(Ok(read)) => (read.message, read.carried),
        };
        match message {
            Message::Request { id, method, params } => {
                self.request(id, method, params, carried).await;
            }
            // initialized, roots/list_changed, ...: nothing to do.
            Message::Notification { method, params } => {
                if method == notification::CANCELLED {
                    self.cancel(&params);
                }
            }
            Message::Response { id, outcome } => {
                let answers = match &self.session {
                    Some(session) => &session.answers,
                    None => &self.answers,
                };
                answers.resolve(&id, outcome.map_err(Some));
            }
        }
    }

    async fn request(
        &mut self,
        id: Value,
        method: String,
        params: Value,
        carried: Option<Arc<Carried>>,
    ) {
        let era = protocol::request_era(&params);
        if era == Era::Legacy && Method::parse(&method) == Method::Initialize {
            let (result, session) =
                self.gateway
                    .initialize(&params, Arc::clone(&self.principal), self.view.clone());
            session.set_standalone(self.out.clone());
            if let Some(old) = self.session.replace(session) {
                self.gateway.end_session(&old);
            }
            let _ = self
                .out
                .send(jsonrpc::response(id, Ok(result)).into())
                .await;
            return;
        }
        let (caps, token) = match era {
            Era::Modern => match protocol::check_modern_meta(&params) {
                Ok(meta) => {
                    let token = CancellationToken::new();
                    lock(&self.modern_inflight).insert(id.to_string(), token.clone());
                    (meta.client_capabilities, token)
                }
                Err(e) => {
                    let _ = self.out.send(jsonrpc::response(id, Err(e)).into()).await;
                    return;
                }
            },
            // A legacy request before `initialize` is served with no
            // declared capabilities rather than refused: some clients skip
            // the handshake on stdio.
            Era::Legacy => match &self.session {
                Some(session) => (session.client_capabilities.clone(), session.track(&id)),
                None => (serde_json::json!({}), CancellationToken::new()),
            },
        };
        let answers = match (era, &self.session) {
            (Era::Legacy, Some(session)) => Some(Arc::clone(&session.answers)),
            _ => None,
        };
        let ctx = RequestCtx {
            wants_logs: protocol::wants_log_messages(era, &params),
            param_headers: Vec::new(),
            era,
            request_id: id.clone(),
            client_capabilities: caps,
            link: Some(ClientLink::new(self.out.clone(), answers).until(self.input_closed.clone())),
            session: self.session.clone().filter(|_| era == Era::Legacy),
            principal: Arc::clone(&self.principal),
            scoped: admit::scopes_apply(false, self.gateway.auth().is_on()),
            view: self.view.clone(),
            trail: Default::default(),
            carried,
        };
        let gateway = Arc::clone(&self.gateway);
        let out = self.out.clone();
        let modern_inflight = Arc::clone(&self.modern_inflight);
        tokio::spawn(async move {
            let outcome = tokio::select! {
                reply = gateway.handle(&ctx, &method, params) => Some(reply.answer),
                // Cancelled: dropping the handler cancels upstream; the
                // client gets no answer (MCP 2025-11-25, Cancellation).
                () = token.cancelled() => None,
            };
            match &ctx.session {
                Some(session) => session.untrack(&id),
                None => {
                    lock(&modern_inflight).remove(&id.to_string());
                }
            }
            if let Some(outcome) = outcome {
                let _ = out.send(jsonrpc::response_payload(id, outcome)).await;
            }
        });
    }

    fn cancel(&self, params: &Value) {
        if let Some(session) = &self.session {
            session.cancel(params);
        }
        if let Some(id) = params.get("requestId")
            && let Some(token) = lock(&self.modern_inflight).remove(&id.to_string())
        {
            token.cancel();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn envelope_message(e: &EnvelopeError) -> String {
    format!("Invalid request: {e}")
}
