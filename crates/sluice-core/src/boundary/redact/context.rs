//! Context rules: a value is secret because of the name before it, an
//! object key (`"password": ...`) or a name in text (`DB_PASS=...` in a
//! `.env` line, `password: ...` in prose, `token=` in a query string).
//!
//! Keys are compared word by word, case- and separator-insensitively:
//! `x-api-key` and `apiKey` name `api_key`; `tokenizer` does not name
//! `token`. A key whose last word says what the name is about rather than
//! holding it (`token_type`, `token_count`, `password_policy`,
//! `secret_santa_budget`) names no secret. A value that is a placeholder
//! (`<your-password>`, `${TOKEN}`, `****`) is not one either; in text,
//! where a name may be followed by prose (`password: required`), the value
//! must also look like a secret (see [`looks_secret`]).

/// The key names that mark a value as secret when none are configured.
pub const DEFAULT_SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "pass",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "signing_key",
    "credentials",
    "credential",
    "auth",
    "authorization",
    "cookie",
    "session",
];

/// Last words of a key that make it a name about a secret, not one.
const QUALIFIERS: &[&str] = &[
    "age",
    "algorithm",
    "at",
    "budget",
    "count",
    "created",
    "description",
    "enabled",
    "endpoint",
    "expiration",
    "expires",
    "expiry",
    "field",
    "file",
    "format",
    "hint",
    "kind",
    "label",
    "len",
    "length",
    "limit",
    "max",
    "method",
    "min",
    "mode",
    "name",
    "path",
    "policy",
    "prompt",
    "provider",
    "rate",
    "ratio",
    "required",
    "rotation",
    "scheme",
    "score",
    "size",
    "status",
    "strength",
    "timeout",
    "ttl",
    "type",
    "updated",
    "uri",
    "url",
    "version",
];

/// Values under a secret name that say something about the secret rather
/// than being it (`"token_type": "Bearer"` is caught by its qualifier; this
/// is for `"auth": "none"`, `"password": "required"`).
const NOT_SECRET_VALUES: &[&str] = &[
    "basic",
    "bearer",
    "disabled",
    "enabled",
    "false",
    "none",
    "null",
    "optional",
    "required",
    "string",
    "true",
    "undefined",
    "yes",
    "no",
];

/// A key's words, lowercase: split at separators and at lower-to-upper
/// case changes (`sessionToken` -> `session`, `token`).
pub fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Whether a key of these words names one of `secrets` (each a key's
/// words).
pub fn key_names_secret(key_words: &[String], secrets: &[Vec<String>]) -> bool {
    if key_words
        .last()
        .is_some_and(|last| QUALIFIERS.contains(&last.as_str()))
    {
        return false;
    }
    let joined: String = key_words.concat();
    secrets.iter().any(|secret| {
        !secret.is_empty()
            && (key_words
                .windows(secret.len())
                .any(|w| w == secret.as_slice())
                || joined == secret.concat())
    })
}

/// Whether a value under a secret name is a placeholder or a word about
/// the secret, to be left as it is.
pub fn placeholder(value: &str) -> bool {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let first = v.chars().next();
    let repeated = v.len() >= 3 && first.is_some_and(|f| v.chars().all(|c| c == f));
    v.is_empty()
        || v == super::REDACTED
        || (v.starts_with('<') && v.ends_with('>'))
        // A template variable; in text its value stops at the `}`.
        || v.starts_with("${")
        || v.starts_with("{{")
        || (v.starts_with('%') && v.ends_with('%'))
        // `****`, `xxxxxxxx`, `...`
        || repeated
        || NOT_SECRET_VALUES.contains(&lower.as_str())
        || ["your-", "your_", "your ", "my-", "my_"]
            .iter()
            .any(|p| lower.starts_with(p))
}

/// Whether a value found after a secret name in text looks like a secret,
/// not prose: at least 6 characters, and a digit or a symbol in it, or
/// mixed case, or 12 characters or more (a passphrase of words).
pub fn looks_secret(value: &str) -> bool {
    if value.chars().count() < 6 || placeholder(value) {
        return false;
    }
    let has_digit_or_symbol = value.chars().any(|c| !c.is_alphabetic());
    let mixed = value.chars().any(char::is_uppercase) && value.chars().any(char::is_lowercase);
    has_digit_or_symbol || mixed || value.len() >= 12
}

/// Characters a key written in text is made of (`DB_PASS`, `x-api-key`,
/// `spring.datasource.password`).
fn key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Where the value after a key in text is: the key around `hit` (a secret
/// word found in `text`), then an optional closing quote, `:` `=` `:=` or
/// `=>`, an optional opening quote and the value; `None` when no value
/// follows. Returns the key's range and the value's range.
pub fn assignment(
    text: &str,
    hit: std::ops::Range<usize>,
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let b = text.as_bytes();
    let mut start = hit.start;
    while start > 0 && hit.start - start < 64 && key_char(b[start - 1]) {
        start -= 1;
    }
    let mut end = hit.end;
    while end < b.len() && end - hit.end < 64 && key_char(b[end]) {
        end += 1;
    }
    let key = start..end;
    let mut i = end;
    let skip = |i: &mut usize, set: &[u8]| {
        while *i < b.len() && set.contains(&b[*i]) {
            *i += 1;
        }
    };
    skip(&mut i, b"\"'");
    skip(&mut i, b" \t");
    match b.get(i..i + 2) {
        Some(b":=" | b"=>") => i += 2,
        _ => match b.get(i) {
            Some(b':' | b'=') => i += 1,
            _ => return None,
        },
    }
    skip(&mut i, b" \t");
    let quote = match b.get(i) {
        Some(&q @ (b'"' | b'\'')) => {
            i += 1;
            Some(q)
        }
        _ => None,
    };
    let value_start = i;
    let mut j = value_start;
    while j < b.len() {
        let c = b[j];
        let stop = match quote {
            // A quoted value may hold spaces (a passphrase).
            Some(q) => c == q || c == b'\n' || c == b'\\',
            None => {
                c.is_ascii_whitespace()
                    || matches!(
                        c,
                        b'"' | b'\'' | b',' | b';' | b'&' | b')' | b'}' | b']' | b'\\'
                    )
            }
        };
        if stop {
            break;
        }
        j += 1;
    }
    // The value stops at an ASCII byte or at the end: a boundary.
    (j > value_start).then_some((key, value_start..j))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Vec<Vec<String>> {
        DEFAULT_SECRET_KEYS.iter().map(|k| words(k)).collect()
    }

    #[test]
    fn keys_are_matched_word_by_word_and_qualifiers_name_no_secret() {
        let s = secrets();
        for key in [
            "password",
            "PASSWORD",
            "db_password",
            "x-api-key",
            "apiKey",
            "APIKEY",
            "sessionToken",
            "access_token",
            "Authorization",
            "set-cookie",
            "privateKey",
            "client_secret",
            "session_id",
            "X-AUTH",
            "pass",
            "pwd",
            "credentials",
            "passphrase",
            "signing_key",
            "DB_PASS",
            "SECRET_KEY",
        ] {
            assert!(key_names_secret(&words(key), &s), "{key}");
        }
        for key in [
            "tokenizer",
            "max_tokens",
            "author",
            "secretary",
            "keyboard",
            "name",
            "sessions_total",
            "passwordless",
            "token_type",
            "token_count",
            "password_policy",
            "secret_santa_budget",
            "passport",
            "auth_method",
        ] {
            assert!(!key_names_secret(&words(key), &s), "{key}");
        }
    }

    #[test]
    fn placeholders_and_prose_are_not_secrets() {
        for v in [
            "<your-password>",
            "${DB_PASSWORD}",
            "{{ token }}",
            "********",
            "xxxxxxxx",
            "Bearer",
            "none",
            "your_api_key_here",
            "",
        ] {
            assert!(placeholder(v) || !looks_secret(v), "{v}");
        }
        for v in ["required", "strong", "Bearer", "523"] {
            assert!(!looks_secret(v), "{v}");
        }
        for v in [
            "hunter2!",
            "s3cr3t-value",
            "CorrectHorse",
            "correcthorsebattery",
        ] {
            assert!(looks_secret(v), "{v}");
        }
    }

    #[test]
    fn assignments_in_text() {
        let text = r#"DB_PASS=s3cr3t-x99 and "password": "correct horse" or token := abc; pwd"#;
        let find = |w: &str| {
            let i = text.find(w).unwrap_or_default();
            assignment(text, i..i + w.len()).map(|(k, v)| (&text[k], &text[v]))
        };
        assert_eq!(find("PASS"), Some(("DB_PASS", "s3cr3t-x99")));
        assert_eq!(find("password"), Some(("password", "correct horse")));
        assert_eq!(find("token"), Some(("token", "abc")));
        assert_eq!(find("pwd"), None);
    }
}
