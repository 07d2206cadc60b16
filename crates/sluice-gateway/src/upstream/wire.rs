//! The seam between a connection and its transport.
//!
//! A [`Wire`] moves bytes: it sends what the connection hands it and, for a
//! request whose answer travels on the request's own response (HTTP), reads
//! that answer. Everything else the upstream sends goes to the connection's
//! [`Inbound`], which owns the protocol state (ids, pending answers, relays,
//! progress routes). Neither side knows the other's type.

use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{self, BoxFuture};
use serde_json::{Map, Value};
use sluice_core::jsonrpc::{EnvelopeError, Message, TextAnswer};
use sluice_core::payload::{CARRIED_AS_TEXT_FROM, Payload};
use sluice_core::policy::{UpstreamFailure, answer};
use sluice_core::protocol::Era;
use tokio_util::sync::CancellationToken;

use crate::offload;
use crate::pending::Answer;

/// One request on its way out.
pub(crate) struct Outgoing<'a> {
    /// The era the request speaks (it decides HTTP's headers).
    pub(crate) era: Era,
    /// sluice's id for it, as in `message`.
    pub(crate) id: u64,
    pub(crate) method: &'a str,
    /// The value of the `Mcp-Name` header, for the methods that carry one.
    pub(crate) name: Option<&'a str>,
    /// Extra HTTP headers (`Mcp-Param-*`) for a modern HTTP upstream.
    pub(crate) headers: &'a [(String, String)],
    /// The JSON-RPC request's text.
    pub(crate) message: Vec<u8>,
    /// Its params' `_meta` (HTTP repeats the trace context in headers).
    pub(crate) meta: Option<&'a Map<String, Value>>,
    /// Whose login an `auth = "oauth"` upstream's token is taken from: a
    /// principal of a sluice with `[auth]`, or `""` for sluice's own.
    pub(crate) on_behalf_of: &'a str,
}

/// A transport to one upstream: a child's stdin/stdout, or Streamable HTTP.
pub(crate) trait Wire: Send + Sync {
    /// Sends one request. Resolves with the answer when the transport
    /// carries it on the request's own response (HTTP), routing what comes
    /// before it to `inbound`; otherwise (stdio) never: the answer comes
    /// through `inbound` like any message. `Ok(Err(None))` when the
    /// transport ended first.
    fn exchange<'a>(
        &'a self,
        request: Outgoing<'a>,
        inbound: &'a dyn Inbound,
    ) -> BoxFuture<'a, Result<Answer<Payload>, UpstreamFailure>>;

    /// Sends a notification, best effort.
    fn notify<'a>(&'a self, era: Era, message: &'a Value) -> BoxFuture<'a, ()>;

    /// Sends sluice's answer to the upstream's request, best effort.
    fn reply<'a>(&'a self, era: Era, message: &'a Value) -> BoxFuture<'a, ()>;

    /// Whether a request dropped unanswered must be cancelled with
    /// `notifications/cancelled` (MCP specification, Cancellation), rather
    /// than by closing its response stream.
    fn cancels_by_notification(&self, _era: Era) -> bool {
        true
    }

    /// Whether the transport tells which request a message belongs to (the
    /// HTTP response stream it came on): then a notification that came on
    /// no request's stream belongs to none.
    fn names_the_request(&self) -> bool {
        false
    }

    /// Records the protocol version a legacy handshake negotiated.
    fn negotiated(&self, _version: &str) {}

    /// Opens what a legacy upstream sends notifications on that belong to
    /// no request (HTTP's GET stream), until `closed`; resolves once the
    /// upstream answered the opening (or a short wait passed), so that a
    /// request it receives next finds the stream there. Over stdio they
    /// arrive on stdout with everything else.
    fn open_notifications(
        self: Arc<Self>,
        _inbound: Arc<dyn Inbound>,
        _closed: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        Box::pin(future::ready(()))
    }

    /// Ends what the transport runs: a child gets SIGTERM, then SIGKILL
    /// after `grace`.
    fn terminate(&self, _grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(future::ready(()))
    }

    /// Tells the upstream its session is over (a legacy HTTP session).
    fn end_session(&self) -> BoxFuture<'_, ()> {
        Box::pin(future::ready(()))
    }

    /// How the child exited, once it has (waiting a moment for it to be
    /// reaped); `None` for a transport without a process.
    fn exit_status(&self) -> BoxFuture<'_, Option<ExitStatus>> {
        Box::pin(future::ready(None))
    }
}

/// Where a transport delivers what the upstream sent.
pub(crate) trait Inbound: Send + Sync {
    /// One message. `stream` is the id of the request whose HTTP response
    /// carried it, if any; `era` is how replies to it travel.
    fn message(&self, era: Era, message: Received, stream: Option<u64>);

    /// A message that could not be read: its first bytes (all of it, when
    /// it was not too large), and why.
    fn unreadable(&self, prefix: &[u8], why: Unreadable);

    /// The transport ended (the child closed stdout, the HTTP session is
    /// gone).
    fn ended(&self);
}

/// One message the upstream sent, read.
#[derive(Debug)]
pub(crate) enum Received {
    /// An answer to one of sluice's requests (a large result kept as its
    /// text, see `sluice_core::payload`).
    Answer { id: Value, answer: Answer<Payload> },
    /// A notification.
    Notification { method: String, params: Value },
    /// A server-to-client request.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

impl Received {
    /// Reads one message; `None` when it is not JSON. A message of at
    /// least [`CARRIED_AS_TEXT_FROM`] bytes that is a successful answer is
    /// read without a tree of its result, unless it holds few values
    /// (`policy::answer::carried`).
    pub(crate) fn parse(bytes: &[u8]) -> Option<Result<Received, EnvelopeError>> {
        if bytes.len() < CARRIED_AS_TEXT_FROM {
            return Received::classify(Message::parse(bytes)?);
        }
        offload::heavy(|| match TextAnswer::parse(bytes) {
            Some(TextAnswer { id, result }) => {
                let answer = Ok(answer::carried(result));
                Some(Ok(Received::Answer { id, answer }))
            }
            None => Received::classify(Message::parse(bytes)?),
        })
    }

    fn classify(
        message: Result<Message, EnvelopeError>,
    ) -> Option<Result<Received, EnvelopeError>> {
        Some(message.map(|message| match message {
            Message::Response { id, outcome } => Received::Answer {
                id,
                answer: outcome.map(Payload::Tree).map_err(Some),
            },
            Message::Notification { method, params } => Received::Notification { method, params },
            Message::Request { id, method, params } => Received::Request { id, method, params },
        }))
    }
}

/// Why a message the upstream sent could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Longer than `transport_max_message_bytes`.
    TooLarge,
    /// Not JSON, nested deeper than the parser goes, or not a valid
    /// JSON-RPC message (a response with both `result` and `error`).
    Malformed,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unreadable::TooLarge => "larger than the transport ceiling",
            Unreadable::Malformed => "not valid JSON-RPC",
        })
    }
}
