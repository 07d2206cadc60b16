//! Encodings a secret may hide in, and how each is found without decoding
//! every string.
//!
//! - **Invisible characters** (zero-width, bidi controls, the soft hyphen,
//!   the BOM) are stripped before matching, so that `ghp_` + U+200B + the
//!   rest is still a GitHub token.
//! - **base64 / base64url / hex**: the encoded forms of every anchor and
//!   secret word (at each of base64's three alignments) are literals of the
//!   one pass; a run of the encoding's alphabet around such a literal is
//!   decoded and scanned, and replaced whole when the decoded text holds a
//!   secret. Text that holds no encoded anchor is never decoded.
//! - **percent-encoding and JSON escapes** (`%3D`, `%40`, `\u00..`) mark a
//!   run that is decoded and scanned the same way.
//! - **Known secrets** (configured values) are matched in their common
//!   forms: any letter case (the pass is case-insensitive), reversed,
//!   percent-encoded, JSON-escaped, base64, base64url and hex.

use std::ops::Range;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Characters that render as nothing (or only reorder text) and are
/// stripped before matching.
pub const INVISIBLE: &[char] = &[
    '\u{00AD}', '\u{180E}', '\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{202A}',
    '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}',
    '\u{2064}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{FEFF}',
];

/// Literals that mark a percent-encoded or JSON-escaped run worth
/// decoding: an encoded `=`, `:` or `@` (an assignment, a URL's userinfo)
/// or a `\u00..` escape.
pub const PERCENT_MARKS: &[&str] = &["%3d", "%3a", "%40"];
/// See [`PERCENT_MARKS`].
pub const JSON_ESCAPE_MARKS: &[&str] = &["\\u00"];

/// Encoded literals shorter than this are not used: they would occur in
/// ordinary text too often to be worth a decode.
const MIN_ENCODED_LITERAL: usize = 4;

/// How a run around a literal is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// base64 or base64url, padded or not.
    Base64,
    /// Hexadecimal, either case.
    Hex,
    /// `%XX` escapes.
    Percent,
    /// `\uXXXX`, `\/`, `\\` and `\"` escapes.
    JsonEscape,
}

/// The base64 characters fully determined by `literal` when it starts at
/// each of the three byte offsets of a base64 group, in both alphabets.
pub fn base64_forms(literal: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(literal);
        let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes);
        // Character i holds bits 6i..6i+6; the literal holds bits
        // 8*offset..8*(offset+len).
        let first = (8 * offset).div_ceil(6);
        let last = (8 * (offset + literal.len())) / 6;
        let Some(stable) = encoded.get(first..last) else {
            continue;
        };
        if stable.len() < MIN_ENCODED_LITERAL {
            continue;
        }
        let url = stable.replace('+', "-").replace('/', "_");
        if url != stable {
            out.push(url);
        }
        out.push(stable.to_owned());
    }
    out
}

/// `literal` in lowercase hex (the pass is case-insensitive).
pub fn hex_form(literal: &[u8]) -> String {
    literal.iter().map(|b| format!("{b:02x}")).collect()
}

/// The forms of a known secret matched besides itself, each with how far
/// a match extends: an encoded form found inside a longer encoded run
/// takes the run.
pub fn known_forms(secret: &str) -> Vec<(String, Option<Encoding>)> {
    let mut forms: Vec<(String, Option<Encoding>)> = vec![
        (secret.chars().rev().collect(), None),
        (
            utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
            None,
        ),
        (json_escaped(secret), None),
        (hex_form(secret.as_bytes()), Some(Encoding::Hex)),
    ];
    forms.extend(
        base64_forms(secret.as_bytes())
            .into_iter()
            .map(|f| (f, Some(Encoding::Base64))),
    );
    forms.retain(|(f, _)| f != secret);
    forms
}

/// `text` as a JSON string body, with `/` and every non-ASCII character
/// escaped too (the forms a JSON encoder may choose).
fn json_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out
}

/// Whether a byte may belong to a run of `encoding`.
fn in_run(encoding: Encoding, b: u8) -> bool {
    match encoding {
        Encoding::Base64 => b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'),
        Encoding::Hex => b.is_ascii_hexdigit(),
        Encoding::Percent | Encoding::JsonEscape => {
            !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'<' | b'>')
        }
    }
}

/// The run of `encoding` around `hit` (base64's trailing `=` included).
pub fn run(text: &str, hit: Range<usize>, encoding: Encoding) -> Range<usize> {
    let b = text.as_bytes();
    let mut start = hit.start;
    while start > 0 && in_run(encoding, b[start - 1]) {
        start -= 1;
    }
    let mut end = hit.end;
    while end < b.len() && in_run(encoding, b[end]) {
        end += 1;
    }
    if encoding == Encoding::Base64 {
        while end < b.len() && b[end] == b'=' {
            end += 1;
        }
    }
    // Runs are of ASCII bytes, except the percent and escape runs, which
    // stop only at ASCII bytes: both ends are character boundaries.
    start..end
}

/// The text a run decodes to (lossily: a secret is ASCII), or `None` when
/// it is not of that encoding.
pub fn decode(run: &str, encoding: Encoding) -> Option<String> {
    match encoding {
        Encoding::Base64 => {
            let unified: String = run
                .trim_end_matches('=')
                .chars()
                .map(|c| match c {
                    '-' => '+',
                    '_' => '/',
                    c => c,
                })
                .collect();
            // A length of 1 mod 4 is no base64; drop the odd character.
            let usable = &unified[..unified.len() - usize::from(unified.len() % 4 == 1)];
            let engine = GeneralPurpose::new(
                &alphabet::STANDARD,
                GeneralPurposeConfig::new()
                    .with_decode_allow_trailing_bits(true)
                    .with_decode_padding_mode(DecodePaddingMode::RequireNone),
            );
            let bytes = engine.decode(usable).ok()?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        Encoding::Hex => {
            let digits = &run.as_bytes()[..run.len() & !1];
            let bytes: Option<Vec<u8>> = digits
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                })
                .collect();
            Some(String::from_utf8_lossy(&bytes?).into_owned())
        }
        Encoding::Percent => Some(percent_decode_str(run).decode_utf8_lossy().into_owned()),
        Encoding::JsonEscape => Some(json_unescaped(run)),
    }
}

/// Undoes JSON string escapes; anything malformed is kept as it is.
fn json_unescaped(run: &str) -> String {
    let mut out = String::with_capacity(run.len());
    let mut rest = run;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let mut taken = 1;
        match after.as_bytes().first() {
            Some(b'u') => {
                let unit = after
                    .get(1..5)
                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                match unit.and_then(char::from_u32) {
                    Some(c) => {
                        out.push(c);
                        taken = 5;
                    }
                    None => out.push('\\'),
                }
            }
            Some(&c @ (b'/' | b'\\' | b'"')) => {
                out.push(char::from(c));
            }
            Some(b'n') => out.push('\n'),
            _ => {
                out.push('\\');
                taken = 0;
            }
        }
        rest = &after[taken.min(after.len())..];
    }
    out.push_str(rest);
    out
}

/// `text` without its invisible characters.
pub fn strip_invisible(text: &str) -> String {
    text.chars().filter(|c| !INVISIBLE.contains(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    #[test]
    fn an_encoded_literal_is_found_at_every_alignment() {
        let forms = base64_forms(b"ghp_");
        for filler in ["", "a", "ab", "abc", "abcd"] {
            let encoded = STANDARD.encode(format!("{filler}ghp_0123456789"));
            assert!(
                forms.iter().any(|f| encoded.contains(f.as_str())),
                "{filler}: {encoded} {forms:?}"
            );
        }
    }

    #[test]
    fn runs_decode_back() {
        let secret = "token=ghp_0123456789abcdef";
        for (encoded, encoding) in [
            (STANDARD.encode(secret), Encoding::Base64),
            (URL_SAFE_NO_PAD.encode(secret), Encoding::Base64),
            (hex_form(secret.as_bytes()).to_uppercase(), Encoding::Hex),
            (
                utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
                Encoding::Percent,
            ),
            (
                json_escaped("token=\u{e9}ghp_0123456789abcdef"),
                Encoding::JsonEscape,
            ),
        ] {
            let text = format!("see \"{encoded}\" here");
            let at = text.find(&encoded[2..6]).unwrap_or_default();
            let r = run(&text, at..at + 4, encoding);
            assert_eq!(&text[r.clone()], encoded);
            let decoded = decode(&text[r], encoding).unwrap_or_default();
            assert!(decoded.contains("ghp_0123456789abcdef"), "{decoded}");
        }
    }

    #[test]
    fn known_forms_cover_the_common_encodings() {
        let forms: Vec<String> = known_forms("s3cr3t/Value")
            .into_iter()
            .map(|f| f.0)
            .collect();
        assert!(forms.contains(&"eulaV/t3rc3s".to_owned()));
        assert!(forms.contains(&"s3cr3t%2FValue".to_owned()));
        assert!(forms.contains(&"s3cr3t\\/Value".to_owned()));
        assert!(forms.contains(&"7333637233742f56616c7565".to_owned()));
        let encoded = STANDARD.encode("s3cr3t/Value");
        assert!(forms.iter().any(|f| encoded.contains(f.as_str())));
    }

    #[test]
    fn invisible_characters_are_stripped() {
        assert_eq!(strip_invisible("gh\u{200B}p_\u{FEFF}x\u{202E}"), "ghp_x");
    }
}
