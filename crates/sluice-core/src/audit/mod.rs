//! What sluice records about each decision it takes on a client's request:
//! the audit log's rows and the outcome labels of its metrics.
//!
//! A record names who asked, which upstream and which tool (or only the
//! scheme of a resource URI), what sluice decided and why, how long it took
//! and how large the answer was, as a bucket. It never holds arguments,
//! results, error messages or secret values: nothing a client or an upstream
//! wrote, except the names the catalog routes by.
//!
//! [`Decision`] and [`SizeBucket`] are what a record says of a request;
//! [`AuditRecord`] and [`AuditRow`] are the rows; [`AuditQuery`] and
//! [`AuditArgs`] say which rows a reading asks for; [`plan_reading`] and
//! [`audit_page`] turn `sluice audit`'s arguments into pages with cursors.

mod decision;
mod filter;
mod page;
mod record;
mod time;

pub use decision::{Decision, SizeBucket};
pub use filter::{AuditArgs, AuditArgsError, AuditQuery, parse_since};
pub use page::{AuditReading, audit_page, plan_reading};
pub use record::{AuditRecord, AuditRow, RowKey, resource_kind};
pub use time::{format_time_ms, parse_rfc3339_ms};
