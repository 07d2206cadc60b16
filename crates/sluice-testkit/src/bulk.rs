//! Large payloads for read-budget tests: runs of 'x' characters, and responses that are produced
//! and written in chunks so that a 100 MB answer never sits whole in memory (`huge_read`,
//! `huge_write`). Also the deterministic image bytes of `reflect` and their base64 encoding.

use axum::body::Bytes;

/// Size of one chunk of a streamed run of 'x' characters.
pub const CHUNK: usize = 64 * 1024;

/// One chunk's worth of 'x' characters; every chunk of a run is a slice of it (no allocation).
static XS: [u8; CHUNK] = [b'x'; CHUNK];

/// A message that is `head`, then `xs` 'x' characters, then `tail`. It is written out by
/// [`Bulk::chunks`] (`head`, runs of at most [`CHUNK`] 'x', `tail`) and never built whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bulk {
    pub head: String,
    pub xs: u64,
    pub tail: String,
}

impl Bulk {
    /// The tool result `{"content":[{"type":"text","text":"<xs 'x'>"}]}`.
    pub fn text_result(xs: u64) -> Self {
        Self {
            head: r#"{"content":[{"type":"text","text":""#.to_owned(),
            xs,
            tail: r#""}]}"#.to_owned(),
        }
    }

    /// The same run with `before` prepended to the head and `after` appended to the tail.
    pub fn wrap(self, before: &str, after: &str) -> Self {
        Self {
            head: format!("{before}{}", self.head),
            xs: self.xs,
            tail: format!("{}{after}", self.tail),
        }
    }

    /// The message in pieces: the head, runs of at most [`CHUNK`] 'x' (produced lazily, as the
    /// consumer asks for them), the tail. Empty pieces are skipped.
    pub fn chunks(self) -> impl Iterator<Item = Bytes> + Send + 'static {
        let Bulk { head, xs, tail } = self;
        let mut left = xs;
        let runs = std::iter::from_fn(move || {
            let n = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
            left -= n as u64;
            (n > 0).then(|| Bytes::from_static(&XS[..n]))
        });
        std::iter::once(Bytes::from(head))
            .chain(runs)
            .chain(std::iter::once(Bytes::from(tail)))
            .filter(|b| !b.is_empty())
    }
}

/// A tool result of about `bytes` bytes whose `structuredContent` is
/// `{"a":[{"k":1},…]}`: a value for every 8 bytes (built whole; at most
/// 256 MiB).
pub fn tiny_objects(bytes: u64) -> String {
    const ONE: &str = r#"{"k":1},"#;
    let count = usize::try_from(bytes.min(256 << 20)).unwrap_or(0) / ONE.len();
    let mut out = String::with_capacity(count * ONE.len() + 64);
    out.push_str(r#"{"content":[],"structuredContent":{"a":["#);
    for _ in 0..count {
        out.push_str(ONE);
    }
    if count > 0 {
        out.pop();
    }
    out.push_str("]}}");
    out
}

/// A serialized message to write out: whole, or a [`Bulk`] streamed in chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyText {
    Whole(String),
    Bulk(Bulk),
}

impl ReplyText {
    /// The same message with `before` and `after` around it.
    pub fn wrap(self, before: &str, after: &str) -> Self {
        match self {
            ReplyText::Whole(s) => ReplyText::Whole(format!("{before}{s}{after}")),
            ReplyText::Bulk(b) => ReplyText::Bulk(b.wrap(before, after)),
        }
    }

    /// The message in pieces (one piece when whole); see [`Bulk::chunks`].
    pub fn chunks(self) -> impl Iterator<Item = Bytes> + Send + 'static {
        let bulk = match self {
            ReplyText::Whole(head) => Bulk {
                head,
                xs: 0,
                tail: String::new(),
            },
            ReplyText::Bulk(b) => b,
        };
        bulk.chunks()
    }

    /// The whole message as one string. Builds a bulk message in memory: only for places a
    /// bulk reply cannot reach (see `http::answer_polled`) and for tests.
    pub fn into_string(self) -> String {
        match self {
            ReplyText::Whole(s) => s,
            ReplyText::Bulk(b) => {
                let mut s = String::new();
                for chunk in b.chunks() {
                    s.push_str(&String::from_utf8_lossy(&chunk));
                }
                s
            }
        }
    }
}

/// A string of `n` 'x' characters, or `None` if that much memory cannot be had (so an absurd
/// size is an error, not an abort). Built by copying whole chunks (fast even unoptimized).
pub fn xs_string(n: u64) -> Option<String> {
    let n = usize::try_from(n).ok()?;
    let mut s = String::new();
    s.try_reserve_exact(n).ok()?;
    let mut left = n;
    while left > 0 {
        let k = left.min(CHUNK);
        s.push_str(std::str::from_utf8(&XS[..k]).ok()?);
        left -= k;
    }
    Some(s)
}

/// The PNG file signature: the first bytes of every `reflect` image.
pub const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// The `n` bytes of a `reflect` image: the first `min(n, 8)` bytes of the PNG signature, then
/// byte `i` (0-based, counted from the start) is `i % 251`. `None` if `n` bytes cannot be had.
pub fn image_bytes(n: u64) -> Option<Vec<u8>> {
    let n = usize::try_from(n).ok()?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.extend((0..n).map(|i| match PNG_SIGNATURE.get(i) {
        Some(b) => *b,
        None => (i % 251) as u8,
    }));
    Some(v)
}

/// Standard base64 (RFC 4648, with `=` padding). Hand-written so the fixture needs no extra
/// dependency for it.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= group.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn joined(b: Bulk) -> Vec<u8> {
        b.chunks().flat_map(|c| c.to_vec()).collect()
    }

    #[test]
    fn chunks_are_bounded_and_exact() {
        let b = Bulk::text_result(3 * CHUNK as u64 + 5);
        let len = b.head.len() as u64 + b.xs + b.tail.len() as u64;
        let pieces: Vec<Bytes> = b.clone().chunks().collect();
        assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= CHUNK));
        assert_eq!(pieces.len(), 1 + 4 + 1);
        let all = joined(b);
        assert_eq!(all.len() as u64, len);
        let text = String::from_utf8(all).unwrap();
        let xs = "x".repeat(3 * CHUNK + 5);
        assert_eq!(
            text,
            format!(r#"{{"content":[{{"type":"text","text":"{xs}"}}]}}"#)
        );
    }

    #[test]
    fn wrap_and_empty_runs() {
        let b = Bulk::text_result(0).wrap("[", "]");
        assert_eq!(
            ReplyText::Bulk(b).into_string(),
            r#"[{"content":[{"type":"text","text":""}]}]"#
        );
        let w = ReplyText::Whole("a".into()).wrap("<", ">");
        assert_eq!(w.clone().chunks().count(), 1);
        assert_eq!(w.into_string(), "<a>");
    }

    #[test]
    fn xs_strings() {
        assert_eq!(xs_string(0).as_deref(), Some(""));
        let s = xs_string(CHUNK as u64 * 2 + 1).unwrap();
        assert_eq!(s.len(), CHUNK * 2 + 1);
        assert!(s.bytes().all(|b| b == b'x'));
        assert_eq!(xs_string(u64::MAX), None);
    }

    #[test]
    fn images_start_like_png() {
        assert_eq!(image_bytes(3), Some(vec![0x89, b'P', b'N']));
        let img = image_bytes(300).unwrap();
        assert_eq!(img.len(), 300);
        assert_eq!(img[..8], PNG_SIGNATURE);
        assert_eq!((img[8], img[250], img[251], img[299]), (8, 250, 0, 48));
    }

    #[test]
    fn base64_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xfe]), "+//+");
    }
}
