//! Downstream: the clients sluice serves, over stdio or Streamable HTTP.
//!
//! Both transports turn a client message into a call to the router with a
//! `client::RequestCtx`: which era the request speaks, what the client
//! declared it can do, where the request's own notifications and
//! server-to-client requests go, and, for legacy clients, the session that
//! outlives one request.

pub mod http;
pub mod stdio;
