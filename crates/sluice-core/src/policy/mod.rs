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

pub mod denied;

pub use denied::{Denied, UpstreamFailure};
