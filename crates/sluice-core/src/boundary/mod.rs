//! The boundary of a result: what may leave sluice towards a client.
//!
//! - [`redact`]: secrets out of every string, before anything is measured.
//! - [`budget`]: the read budget: measure the compact JSON of a complete,
//!   redacted read result and refuse it whole when it is too large.
//! - [`project`]: operator-chosen projections of `structuredContent`.

pub mod budget;
pub mod project;
pub mod redact;

use serde_json::Value;

use crate::jsonrpc::RpcError;
use budget::Surface;
use project::Projection;
use redact::{Redactions, Redactor};

/// A result after the boundary.
#[derive(Debug)]
pub struct Bounded {
    /// The redacted (and projected) result; `None` when it was withheld
    /// whole for being over the read budget (the refusal the client gets
    /// instead is `policy::Denied::ReadTooLarge`'s).
    pub passed: Option<Value>,
    /// The secrets redacted from it.
    pub redactions: Redactions,
    /// The passed result's compact JSON length, when it was measured (a
    /// read); the shell need not measure it again.
    pub measured: Option<usize>,
}

/// A result carried as JSON text, after the boundary.
#[derive(Debug)]
pub struct BoundedText {
    /// The redacted result as compact JSON; `None` when it was withheld
    /// whole for being over the read budget.
    pub passed: Option<Vec<u8>>,
    /// The secrets redacted from it.
    pub redactions: Redactions,
    /// The passed result's length, when it was measured (a read).
    pub measured: Option<usize>,
}

/// What one answer to a client goes through.
#[derive(Debug, Clone, Copy)]
pub struct Boundary<'a> {
    /// The secret rules.
    pub redactor: &'a Redactor,
    /// The read budget that applies to this call.
    pub limit: usize,
    /// What was called.
    pub surface: Surface,
    /// Whether the answer is a read (a read-only tool, a resource, a
    /// prompt). A mutation-capable tool's final answer is never measured.
    pub read: bool,
    /// The operator's projection of this tool's results, if any.
    pub projection: Option<&'a Projection>,
}

impl Boundary<'_> {
    /// Bounds a result: redact, project, then (for a read, or any
    /// `input_required` result, since nothing has happened yet) measure and
    /// refuse whole when over the budget.
    pub fn result(&self, mut result: Value) -> Bounded {
        let redactions = self.redactor.redact(&mut result);
        if let Some(projection) = self.projection {
            projection.apply(&mut result);
        }
        let input_required =
            result.get("resultType").and_then(Value::as_str) == Some("input_required");
        let admitted =
            (self.read || input_required).then(|| budget::admitted_size(&result, self.limit));
        let refused = admitted == Some(None);
        Bounded {
            passed: (!refused).then_some(result),
            redactions,
            measured: admitted.flatten(),
        }
    }

    /// [`Boundary::result`] of a result carried as JSON text, without a
    /// tree of it ([`redact::text`]): the same redaction, the same
    /// measure. `None` when this boundary projects results (a projection
    /// reads the tree) or when `text` is not one JSON document.
    pub fn result_text(&self, text: &str) -> Option<BoundedText> {
        if self.projection.is_some() {
            return None;
        }
        let mut out = Vec::with_capacity(text.len());
        let found = self.redactor.redact_text_json(text, &mut out).ok()?;
        let input_required = asks_input(&out);
        let over =
            out.len() > self.limit || found.binary_bytes > budget::binary_ceiling(self.limit);
        let measuring = self.read || input_required;
        let refused = measuring && over;
        Some(BoundedText {
            measured: (measuring && !refused).then_some(out.len()),
            passed: (!refused).then_some(out),
            redactions: found.redactions,
        })
    }

    /// Redacts an error's message and data (errors are not measured: they
    /// are not reads).
    pub fn error(&self, mut error: RpcError) -> (RpcError, Redactions) {
        let mut counts = Redactions::default();
        if let Some(message) = self.redactor.redact_str(&error.message, &mut counts) {
            error.message = message;
        }
        if let Some(data) = &mut error.data {
            let more = self.redactor.redact(data);
            counts.exact += more.exact;
            counts.key += more.key;
            counts.pattern += more.pattern;
        }
        (error, counts)
    }
}

/// Whether a result's compact JSON says `resultType: "input_required"`,
/// read without a tree; a `resultType` that cannot be read so (repeated,
/// escaped) counts as one, so that it is measured.
fn asks_input(json: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "resultType", borrow)]
        result_type: Option<&'a str>,
    }
    match serde_json::from_slice::<Head<'_>>(json) {
        Ok(head) => head.result_type == Some("input_required"),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor() -> Redactor {
        Redactor::new(Vec::<String>::new(), redact::DEFAULT_SECRET_KEYS)
    }

    fn boundary(r: &Redactor, surface: Surface, read: bool) -> Boundary<'_> {
        Boundary {
            redactor: r,
            limit: budget::MIN_READ_BUDGET,
            surface,
            read,
            projection: None,
        }
    }

    fn text(n: usize) -> Value {
        json!({"content": [{"type": "text", "text": "x".repeat(n)}]})
    }

    /// [`Boundary::result_text`] against [`Boundary::result`].
    fn same_over_text(b: &Boundary<'_>, result: &Value) {
        let tree = b.result(result.clone());
        let text = b
            .result_text(&serde_json::to_string_pretty(result).unwrap_or_default())
            .expect("no projection");
        let passed = tree
            .passed
            .map(|v| serde_json::to_vec(&v).unwrap_or_default());
        assert_eq!(text.passed, passed);
        assert_eq!(text.measured, tree.measured);
        assert_eq!(text.redactions, tree.redactions);
    }

    #[test]
    fn a_result_over_text_meets_the_same_boundary() {
        let r = Redactor::new(
            vec!["s3cr3t-upstream-token".to_owned()],
            redact::DEFAULT_SECRET_KEYS,
        );
        let image = |n: usize| json!({"content": [{"type": "image", "mimeType": "image/png", "data": "A".repeat(n)}]});
        let cases = [
            text(1_000),
            text(1_000_000),
            json!({"content": [{"type": "text", "text": "s3cr3t-upstream-token"}], "password": "x"}),
            json!({"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {"message": "x".repeat(100_000)}}}}),
            image(40_000),
            image(90_000),
            json!({"structuredContent": {"rows": (0..20_000).map(|k| json!({"k": k})).collect::<Vec<_>>()}}),
        ];
        for surface in [Surface::Tool, Surface::Resource] {
            for read in [true, false] {
                for case in &cases {
                    same_over_text(&boundary(&r, surface, read), case);
                }
            }
        }
        let mut b = boundary(&r, Surface::Tool, true);
        let projection = Projection::Keep(vec![vec![project::Step::Key("a".into())]]);
        b.projection = Some(&projection);
        assert!(b.result_text("{}").is_none(), "a projection reads the tree");
        assert!(boundary(&r, Surface::Tool, true).result_text("{").is_none());
    }

    #[test]
    fn a_mutation_passes_whole_whatever_its_size() {
        let r = redactor();
        let big = text(1_000_000);
        let out = boundary(&r, Surface::Tool, false)
            .result(big.clone())
            .passed;
        assert_eq!(out, Some(big));
    }

    #[test]
    fn an_oversized_read_is_refused_with_nothing_of_it() {
        let r = redactor();
        let out = boundary(&r, Surface::Tool, true).result(text(1_000_000));
        assert!(out.passed.is_none());
        assert_eq!(out.measured, None);
        let out = boundary(&r, Surface::Resource, true).result(text(1_000_000));
        assert!(out.passed.is_none());
    }

    #[test]
    fn input_required_is_bounded_even_for_a_mutation() {
        let r = redactor();
        let asking = json!({"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {"message": "x".repeat(100_000)}}}});
        let out = boundary(&r, Surface::Tool, false).result(asking).passed;
        assert!(out.is_none());
    }

    #[test]
    fn secrets_are_redacted_before_measuring() {
        let r = redactor();
        // Over the limit only because of the secret's length? No: the
        // redacted text is what is measured.
        let secret = format!("token={}", "a1b2".repeat(17_500));
        let out = boundary(&r, Surface::Tool, true)
            .result(json!({"content": [{"type": "text", "text": secret}]}));
        assert_eq!(out.redactions.pattern, 1);
        assert_eq!(
            out.passed.unwrap_or_default()["content"][0]["text"],
            "token=[redacted]"
        );
        let (err, counts) = boundary(&r, Surface::Tool, true).error(
            RpcError::new(-32603, "failed with password=hunter22")
                .with_data(json!({"api_key": "k-123456789"})),
        );
        assert_eq!(err.message, "failed with password=[redacted]");
        assert_eq!(err.data, Some(json!({"api_key": "[redacted]"})));
        assert_eq!(counts.total(), 2);
    }
}
