//! The decisions sluice takes on each request, as pure functions of what
//! the shell hands in: one snapshot of the configuration and catalog, the
//! caller, the request.
//!
//! # Layout
//!
//! In the order a request meets them:
//!
//! - [`denied`]: [`Denied`], every refusal and upstream failure as one
//!   type that knows its JSON-RPC error, HTTP status and audit decision.
//! - [`admission`]: the rules a Streamable HTTP request's header fields
//!   must pass (caps, `Origin` and `Host`, the 2026-07-28 mirrors of the
//!   body, the legacy version header).

pub mod admission;
pub mod denied;

pub use denied::{Denied, UpstreamFailure};
