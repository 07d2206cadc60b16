//! The async shell of the sluice MCP gateway.
//!
//! Everything here does IO: child processes, sockets, timers. Every rule it
//! applies comes from `sluice-core`; this crate only moves messages and
//! keeps connections alive.
//!
//! # Layout
//!
//! In the order a request travels:
//!
//! - [`client`]: what the router knows of the client behind one request
//!   (its context, its link, its legacy session), whatever the transport.
//! - [`downstream`]: the clients. `stdio` serves one client on
//!   stdin/stdout, `http` serves many over Streamable HTTP; both eras on
//!   both.
//! - `router`: what sluice does with each request ([`Gateway::handle`]),
//!   one concern a file: answer from the federated catalog, or forward to
//!   the upstream that owns the name or URI. Every decision on the way is
//!   `sluice_core::policy`'s, taken on one snapshot per request; a refusal
//!   is a `sluice_core::policy::Denied` until the router's [`Reply`]
//!   converts it, once, for the transport.
//! - `bridge`: a forwarded call in flight, and the MRTR bridge that parks a
//!   legacy upstream's mid-call questions as `input_required` rounds for
//!   2026-07-28 clients.
//! - `upstream`: one supervisor task per upstream: connect, probe the era,
//!   read the catalog to its last page, relay, restart with backoff.
//! - [`auth`]: who an HTTP request comes from (`[auth]`: bearer tokens,
//!   OAuth JWTs verified against cached issuer keys); `ratelimit`: the
//!   per-principal, per-tool limiter every tool call passes.
//! - [`outbound`]: every URL sluice dereferences is resolved, checked
//!   against the SSRF rules and connected to at the checked addresses only.
//! - [`ops`]: what operators see: the Prometheus metrics, the audit log
//!   (one row per decision, SQLite or PostgreSQL), and the per-request
//!   trail both are made from.
//! - [`doctor`]: `sluice doctor`'s probes of any MCP server, judged by
//!   `sluice_core::doctor`.
//! - [`gateway`]: the running whole: supervisors, the published catalog
//!   (each upstream's complete read, as approved by `sluice.lock`), client
//!   events, health; and the one-shot catalog reads of `sluice lock` and
//!   `sluice check`.
//! - `offload`: long CPU work on a large message (its walk, its shaping),
//!   kept off the worker queue other requests share.
#![deny(missing_docs)]

pub mod auth;
mod bridge;
pub mod client;
pub mod console;
pub mod doctor;
pub mod downstream;
pub mod gateway;
mod offload;
pub mod ops;
pub mod outbound;
mod pending;
mod ratelimit;
mod router;
mod upstream;
pub mod vault;

pub use gateway::Gateway;
pub use router::Reply;
pub use sluice_core::health::UpstreamStatus;
/// `sluice login`: the OAuth login to an upstream.
pub use upstream::oauth::login;
