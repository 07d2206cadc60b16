//! The decisions sluice takes on each request, as pure functions of what
//! the shell hands in: one snapshot of the configuration and catalog, the
//! caller, the request.
//!
//! # Layout
//!
//! In the order a request meets them:
//!
//! - [`route`]: which upstream owns a tool, prompt, resource or completion
//!   `ref`, and approval: withheld (drift), not served yet, unknown, not
//!   found.
//! - [`admit`]: the caller's scopes (S-20); which configured rate a call
//!   counts against and under which key (S-24).
//! - [`answer`]: the boundary of each call (the read-only rule, the read
//!   budget, projections), what it does with the upstream's outcome, what
//!   of an upstream's notifications reaches the client.
//! - [`rounds`]: the questions an upstream asks mid-call: who may be
//!   asked, the sensitive-elicitation screen (S-27), the MRTR round loop.
//! - [`denied`]: [`Denied`], every refusal and upstream failure as one
//!   type that knows its JSON-RPC error, HTTP status and audit decision.
//!
//! Before any of them, over HTTP:
//!
//! - [`admission`]: the rules a Streamable HTTP request's header fields
//!   must pass (caps, `Origin` and `Host`, the 2026-07-28 mirrors of the
//!   body, the legacy version header).
//!
//! The shell calls these with the values of one snapshot
//! (`sluice-gateway`'s `Snapshot`: configuration, upstreams, redactor,
//! naming and federated catalog) and acts on what they return; it branches
//! on no rule of its own.

pub mod admission;
pub mod admit;
pub mod answer;
pub mod denied;
pub mod rounds;
pub mod route;

pub use denied::{Denied, UpstreamFailure};
