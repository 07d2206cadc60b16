//! The policy of the sluice MCP gateway.
//!
//! This crate is the functional core: it contains no networking code, spawns
//! no process, reads no clock, environment variable or file. The async shell
//! (`sluice-gateway`) feeds it values and acts on what it returns, so every
//! rule sluice enforces can be read, and tested, here alone.
//!
//! # Layout
//!
//! In the order a request meets them:
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope over `serde_json::Value`, so that
//!   unknown fields, unknown content types, big numbers and `_meta` pass
//!   through untouched.
//! - [`method`]: the MCP methods sluice knows, parsed once, and what each
//!   is to sluice (its list, its target field, whether it is audited or
//!   may pause for input).
//! - [`protocol`]: the two protocol eras, version negotiation and the shaping
//!   of results for the era of the client that reads them.
//! - [`connection`]: the HTTP listener's client connections: how many, how
//!   many from one client, how long one may idle or take over a head.
//! - [`policy`]: the decisions on each request, and [`policy::Denied`],
//!   every refusal as one type converted once at each transport's edge.
//! - [`config`]: `sluice.toml` and `mcp.json`, validated with one diagnostic
//!   per problem.
//! - [`client_config`]: the entry each MCP client's file needs to reach
//!   sluice, merged into the file the user has.
//! - [`access`]: who may do what: the claims a verified token must carry,
//!   the scopes a tool needs, the challenges of a refusal.
//! - [`outbound`]: the SSRF guard on every URL sluice dereferences.
//! - [`headers`]: the SEP-2243 headers of 2026-07-28 HTTP (`Mcp-Name`,
//!   `Mcp-Param-*`): their encoding, and which a tool's schema asks for.
//! - [`naming`]: how upstream tool and prompt names are namespaced.
//! - [`discovery`]: the pagination walk over an upstream list, as a state
//!   machine fed with pages.
//! - [`health`]: what `/health` shows of each upstream (connection,
//!   catalog, approval), changed by what its supervisor reports.
//! - [`canonical`]: one spelling for equal JSON values, and digests over it.
//! - [`catalog`]: the federated catalog (merged lists and the routes back to
//!   each upstream), entry definitions and digests, the lockfile of approved
//!   definitions, and drift.
//! - [`boundary`]: what may leave sluice: secret redaction, the read
//!   budget with its fixed refusals, and operator projections.
//! - [`audit`]: the decisions sluice records for each request (the audit
//!   log's rows, the outcome labels of its metrics), never payloads.
//! - [`doctor`]: the detectors of `sluice doctor`, judging any MCP server
//!   against the server standard from what the shell observed.
//! - [`elicitation`]: which elicitation forms ask for secrets, which no
//!   client is shown.
//! - [`envelope`]: the page builder of every list sluice owns: limit,
//!   lite/full fields, the byte cap, sealed cursors.
//! - [`progressive`]: the meta-tools of progressive discovery.
//! - [`trace_context`]: W3C `traceparent` from `_meta` or the HTTP header,
//!   continued and propagated upstream.
//! - [`seal`]: HMAC-sealed tokens (request states, list cursors).
//! - [`tasks`]: task ids sealed per upstream and principal, where they sit
//!   in answers, and what of tasks crosses between eras.
//! - [`upstream_auth`]: logging in to OAuth-protected upstreams: reading
//!   their challenges, refresh and step-up decisions, the login record.
//! - [`versions`]: what exists in which protocol version, and what a
//!   client's version must not be shown.
//! - [`session_token`]: the sealed legacy session id that carries its
//!   session to any replica sharing the secret.
//! - [`request_state`]: the sealed `requestState` that lets a 2026-07-28
//!   client answer a legacy upstream's mid-call questions (MRTR bridging).
//! - [`sandbox`]: how a stdio upstream is contained (S-21): its bwrap
//!   command line, and the commands refused unless allowed.
//!
//! # Example: a two-page walk
//!
//! ```
//! use serde_json::json;
//! use sluice_core::discovery::{ListKind, Step, Walk, WalkLimits};
//!
//! let mut walk = Walk::new(ListKind::Tools, WalkLimits::default());
//! assert_eq!(walk.start(), Step::Fetch(None));
//! let step = walk.handle_page(json!({"tools": [{"name": "a"}], "nextCursor": "p2"}));
//! assert_eq!(step, Step::Fetch(Some("p2".into())));
//! match walk.handle_page(json!({"tools": [{"name": "b"}]})) {
//!     Step::Complete(items) => assert_eq!(items.len(), 2),
//!     other => panic!("expected a complete read, got {other:?}"),
//! }
//! ```
#![deny(missing_docs)]

pub mod access;
pub mod audit;
pub mod boundary;
pub mod canonical;
pub mod carried;
pub mod catalog;
pub mod client_config;
pub mod config;
pub mod connection;
pub mod console;
pub mod discovery;
pub mod doctor;
pub mod elicitation;
pub mod envelope;
pub mod headers;
pub mod health;
pub mod jsonrpc;
pub mod method;
pub mod naming;
pub mod outbound;
pub mod payload;
pub mod policy;
pub mod progressive;
pub mod protocol;
pub mod request_state;
pub mod sandbox;
pub mod seal;
pub mod session_token;
pub mod tasks;
pub mod trace_context;
pub mod upstream_auth;
pub mod versions;
