//! The memory a result's boundary takes, carried as text
//! (`Boundary::result_text`), for 8 MiB results of every shape: how far
//! the process's resident memory rises (`/proc/self/status`; each test is
//! its own process under nextest), and, for the record, as a tree
//! (`Boundary::result`).
//!
//! Over text, the peak stays within a small multiple of the result's size
//! whatever its shape; as a tree, a result of tiny objects takes a hundred
//! times its size.
#![allow(clippy::unwrap_used)]
// The test reads its own process's memory from /proc: no input of the
// core's comes from a file.
#![allow(clippy::disallowed_methods)]

use serde_json::Value;
use sluice_core::boundary::Boundary;
use sluice_core::boundary::budget::{MAX_READ_BUDGET, Surface};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};

/// A field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// How far the process's resident memory rises above where it was while
/// `run` runs: its peak (`VmHWM`, reset first) less its resident size
/// before.
fn peak_of<T>(run: impl FnOnce() -> T) -> (usize, T) {
    // Writing 5 resets the peak to the current resident size.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_bytes("VmRSS:");
    let out = run();
    (status_bytes("VmHWM:").saturating_sub(before), out)
}

/// A result of about `n` bytes of one shape, written straight into one
/// string: nothing else it allocates stays resident to be reused.
fn shaped(shape: &str, n: usize) -> String {
    let mut text = String::with_capacity(n + 256);
    let mut repeat = |open: &str, item: &dyn Fn(usize) -> String, close: &str| {
        text.push_str(open);
        let mut k = 0;
        while text.len() < n {
            if k > 0 {
                text.push(',');
            }
            text.push_str(&item(k));
            k += 1;
        }
        text.push_str(close);
    };
    match shape {
        "tiny objects" => repeat(
            "{\"structuredContent\":{\"a\":[",
            &|_| "{\"k\":1}".into(),
            "]}}",
        ),
        "numbers" => repeat("{\"structuredContent\":[", &|_| "0".into(), "]}"),
        "one object of many keys" => {
            repeat(
                "{\"structuredContent\":{",
                &|k| format!("\"k{k:08}\":1"),
                "}}",
            );
        }
        "text blocks" => repeat(
            "{\"content\":[",
            &|k| format!("{{\"type\":\"text\",\"text\":\"line {k:08} of it\"}}"),
            "]}",
        ),
        "nested arrays" => repeat(
            &format!("{{\"structuredContent\":{}", "[".repeat(16)),
            &|_| "[1,2]".into(),
            &format!("{}}}", "]".repeat(16)),
        ),
        _ => {
            text.push_str("{\"content\":[{\"type\":\"text\",\"text\":\"");
            while text.len() < n {
                text.push_str("lorem ipsum dolor ");
            }
            text.push_str("\"}]}");
        }
    }
    text
}

/// The boundary over text of one shape, as a mutation (nothing refused:
/// the whole result is walked and written) and as a read over the budget
/// (refused whole); then, for the record, as a tree.
fn bounded_over_text(shape: &str) {
    let redactor = Redactor::new(
        vec!["s3cr3t-upstream-token".to_owned()],
        DEFAULT_SECRET_KEYS,
    );
    let text = shaped(shape, 8 << 20);
    let boundary = |read| Boundary {
        redactor: &redactor,
        limit: MAX_READ_BUDGET,
        surface: Surface::Tool,
        read,
        projection: None,
    };
    for read in [false, true] {
        let (peak, bounded) = peak_of(|| {
            boundary(read)
                .result_text(&text)
                .map(|b| b.passed.is_none())
        });
        assert_eq!(bounded, Some(read), "{shape}");
        let ratio = peak as f64 / text.len() as f64;
        eprintln!(
            "{shape} (read: {read}): {} bytes; resident memory rose {ratio:.2}x its size",
            text.len()
        );
        // The output (the input's size at most, and its growth) and what
        // is held between two joined texts.
        assert!(
            ratio <= 3.0,
            "{shape}: rose {peak} bytes for {}",
            text.len()
        );
    }
    let (peak, ()) = peak_of(|| {
        let tree: Value = serde_json::from_str(&text).unwrap();
        drop(boundary(false).result(tree));
    });
    eprintln!(
        "{shape} as a tree: rose {:.2}x its size",
        peak as f64 / text.len() as f64
    );
}

#[test]
fn tiny_objects() {
    bounded_over_text("tiny objects");
}

#[test]
fn numbers() {
    bounded_over_text("numbers");
}

#[test]
fn one_object_of_many_keys() {
    bounded_over_text("one object of many keys");
}

#[test]
fn prose() {
    bounded_over_text("prose");
}

#[test]
fn text_blocks() {
    bounded_over_text("text blocks");
}

#[test]
fn nested_arrays() {
    bounded_over_text("nested arrays");
}
