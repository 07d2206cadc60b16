//! The generated redaction corpus: for every rule, a secret generated from
//! its documented format (prefix, alphabet, length) and a look-alike; for
//! every context rule, key name, encoding, known-secret form and join, a
//! case. Each secret is placed in prose, in a JSON record and in a URL; it
//! must appear nowhere in the output. Each look-alike must pass
//! byte-identical. Prints recall and false positives per family.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sluice_core::boundary::redact::{DEFAULT_SECRET_KEYS, Redactor};

/// A deterministic generator (splitmix64), so that a failure reproduces.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `template` with each `{N:c}` replaced by N characters of class c.
    fn fill(&mut self, template: &str) -> String {
        let mut out = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let spec = after
                .find('}')
                .map(|close| &after[..close])
                .and_then(|spec| spec.split_once(':'))
                .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            let Some((n, class)) = spec else {
                out.push('{');
                rest = after;
                continue;
            };
            rest = &after[n.len() + class.len() + 2..];
            let n: usize = n.parse().unwrap();
            let alphabet: &[u8] = match class {
                "n" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "A" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
                "a" => b"abcdefghijklmnopqrstuvwxyz0123456789",
                "x" => b"0123456789abcdef",
                "d" => b"0123456789",
                "u" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
                "b" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                "bech32" => b"qpzry9x8gf2tvdw0s3jn54khce6mua7l",
                other => panic!("class {other}"),
            };
            let mut piece: Vec<u8> = (0..n)
                .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize])
                .collect();
            // A random string of a mixed alphabet holds each class.
            if n >= 3 && (class == "n" || class == "b" || class == "u") {
                piece[0] = b'Q';
                piece[1] = b'7';
                piece[2] = b'k';
            }
            if class == "bech32" {
                piece.make_ascii_uppercase();
            }
            out.push_str(std::str::from_utf8(&piece).unwrap());
        }
        out.push_str(rest);
        out
    }
}

/// One case: where it is written (`{s}` is the secret), the secret's
/// template, and a look-alike of the same shape that is not secret.
struct Case {
    family: &'static str,
    name: &'static str,
    context: &'static str,
    secret: &'static str,
    lookalike: &'static str,
}

const fn case(
    family: &'static str,
    name: &'static str,
    context: &'static str,
    secret: &'static str,
    lookalike: &'static str,
) -> Case {
    Case {
        family,
        name,
        context,
        secret,
        lookalike,
    }
}

/// One sample and one look-alike per rule of the table, by rule id.
#[rustfmt::skip]
const RULE_CASES: &[Case] = &[
    case("cloud", "aws-access-key-id", "{s}", "AKIA{16:A}", "AKIA{8:A}"),
    case("cloud", "aws-secret-access-key", "aws_secret_access_key = {s}", "{40:b}", "aws_secret_access_key = <your-secret-key>"),
    case("cloud", "gcp-api-key", "{s}", "AIza{35:u}", "AIza is a prefix"),
    case("cloud", "google-oauth-client-secret", "{s}", "GOCSPX-{28:u}", "GOCSPX-short"),
    case("cloud", "google-oauth-access-token", "{s}", "ya29.{80:u}", "ya29.short"),
    case("cloud", "google-oauth-refresh-token", "{s}", "1//0{60:u}", "1//2 of the cake"),
    case("cloud", "azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net", "{86:b}==", "AccountKey=<key>"),
    case("cloud", "azure-sas-signature", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-01-01&sp=r&sig={s}", "{43:b}%3D", "https://example.com/?sig=short"),
    case("cloud", "azure-ad-client-secret", "{s}", "{3:n}8Q~{34:u}", "Q~ is a tilde"),
    case("cloud", "digitalocean-token", "{s}", "dop_v1_{64:x}", "dop_v1_short"),
    case("cloud", "databricks-token", "{s}", "dapi{32:x}", "dapi{8:x}"),
    case("cloud", "alibaba-access-key-id", "{s}", "LTAI{20:n}", "LTAI{6:n}"),
    case("cloud", "heroku-api-key", "{s}", "HRKU-AA{58:u}", "HRKU-1"),
    case("forge", "github-token", "{s}", "ghp_{36:n}", "ghp_{12:n}"),
    case("forge", "github-fine-grained-token", "{s}", "github_pat_11{20:A}_{59:n}", "github_pat_x"),
    case("forge", "gitlab-token", "{s}", "glpat-{20:u}", "glpat-short"),
    case("forge", "bitbucket-app-password", "{s}", "ATBB{32:n}", "ATBB{6:n}"),
    case("forge", "atlassian-api-token", "{s}", "ATATT3xFfGF0{180:u}={8:A}", "ATATT3 short"),
    case("registry", "npm-token", "{s}", "npm_{36:n}", "npm_install"),
    case("registry", "pypi-token", "{s}", "pypi-AgEIcHlwaS5vcmc{70:u}", "pypi-AgE"),
    case("registry", "rubygems-key", "{s}", "rubygems_{48:x}", "rubygems_org"),
    case("registry", "nuget-api-key", "{s}", "oy2{43:a}", "oy2{8:a}"),
    case("registry", "jfrog-api-key", "{s}", "AKCp{69:n}", "AKCp{10:n}"),
    case("registry", "docker-token", "{s}", "dckr_pat_{27:u}", "dckr_pat_x"),
    case("infra", "terraform-cloud-token", "{s}", "{14:n}.atlasv1.{67:u}", "terraform.atlasv1.docs"),
    case("infra", "vault-token", "{s}", "hvs.{90:u}", "hvs.short"),
    case("infra", "pulumi-token", "{s}", "pul-{40:x}", "pul-{8:x}"),
    case("infra", "doppler-token", "{s}", "dp.pt.{43:n}", "dp.pt.x"),
    case("infra", "flyio-token", "{s}", "fo1_{43:u}", "fo1_short"),
    case("infra", "planetscale-token", "{s}", "pscale_tkn_{43:u}", "pscale_tkn_x"),
    case("infra", "supabase-token", "{s}", "sbp_{40:x}", "sbp_{8:x}"),
    case("ai", "ai-provider-key", "{s}", "sk-proj-{48:u}", "sk-learn-compatible-estimators"),
    case("ai", "huggingface-token", "{s}", "hf_{34:n}", "hf_hub_download"),
    case("ai", "groq-key", "{s}", "gsk_{52:n}", "gsk_{8:n}"),
    case("ai", "replicate-token", "{s}", "r8_{37:n}", "r8_{8:n}"),
    case("ai", "perplexity-key", "{s}", "pplx-{48:n}", "pplx-{8:n}"),
    case("ai", "xai-key", "{s}", "xai-{80:n}", "xai-{8:n}"),
    case("payment", "stripe-key", "{s}", "sk_live_{24:n}", "sk_live_"),
    case("payment", "stripe-webhook-secret", "{s}", "whsec_{32:n}", "whsec_{6:n}"),
    case("payment", "square-token", "{s}", "EAAA{60:u}", "EAAA{6:u}"),
    case("payment", "shopify-token", "{s}", "shpat_{32:x}", "shpat_{8:x}"),
    case("payment", "braintree-token", "{s}", "access_token$production${16:a}${32:x}", "access_token$production$"),
    case("messaging", "slack-token", "{s}", "xoxb-{12:d}-{13:d}-{24:n}", "xoxb-"),
    case("messaging", "slack-webhook", "{s}", "https://hooks.slack.com/services/T{8:A}/B{8:A}/{24:n}", "https://hooks.slack.com/"),
    case("messaging", "twilio-api-key", "{s}", "SK{32:x}", "SK{8:x}"),
    case("messaging", "twilio-auth-token", "TWILIO_AUTH_TOKEN: {s}", "{32:x}", "Twilio docs: 32 characters"),
    case("messaging", "sendgrid-key", "{s}", "SG.{22:u}.{43:u}", "SG.{8:u}"),
    case("messaging", "mailgun-key", "{s}", "key-{32:x}", "key-value store"),
    case("messaging", "mailchimp-key", "{s}", "{32:x}-us14", "{8:x}-us14"),
    case("messaging", "telegram-bot-token", "{s}", "{10:d}:AA{33:u}", "{10:d}:AAA"),
    case("messaging", "discord-bot-token", "discord bot token: {s}", "MT{24:n}.{6:u}.{38:u}", "discord bot token: <token>"),
    case("messaging", "discord-webhook", "https://discord.com/api/webhooks/{18:d}/{s}", "{68:u}", "https://discord.com/api/webhooks/"),
    case("saas", "linear-api-key", "{s}", "lin_api_{40:n}", "lin_api_{8:n}"),
    case("saas", "notion-token", "{s}", "ntn_{11:d}{35:n}", "ntn_{8:n}"),
    case("saas", "postman-api-key", "{s}", "PMAK-{24:x}-{34:x}", "PMAK-{8:x}"),
    case("saas", "figma-token", "{s}", "figd_{43:u}", "figd_{8:u}"),
    case("saas", "dropbox-token", "{s}", "sl.{140:u}", "sl.{8:u}"),
    case("saas", "hubspot-token", "{s}", "pat-na1-{8:x}-{4:x}-{4:x}-{4:x}-{12:x}", "pat-na1-"),
    case("observability", "datadog-key", "DD_API_KEY={s}", "{32:x}", "DD_API_KEY=<your-api-key>"),
    case("observability", "grafana-token", "{s}", "glsa_{32:n}_{8:x}", "glsa_{8:n}"),
    case("observability", "new-relic-key", "{s}", "NRAK-{27:A}", "NRAK-{8:A}"),
    case("observability", "sentry-token", "{s}", "sntrys_eyJ{80:u}", "sntrys_{8:u}"),
    case("key-material", "private-key", "{s}", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{40:b}\n{64:b}\n-----END OPENSSH PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{52:b}\n-----END PUBLIC KEY-----"),
    case("key-material", "putty-private-key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n{s}\nPrivate-MAC: {64:x}", "AAAAI{40:b}", "Private-Lines: 1"),
    case("key-material", "putty-private-mac", "Private-MAC: {s}", "{64:x}", "Private-MAC: none"),
    case("key-material", "age-secret-key", "{s}", "AGE-SECRET-KEY-1{58:bech32}", "AGE-SECRET-KEY-1"),
    case("key-material", "jwt", "{s}", "eyJhbGciOiJIUzI1NiJ9.eyJ{40:u}.{43:u}", "eyJ is how JSON starts in base64"),
    case("http", "authorization-header", "send Authorization: Basic {s} to the API", "{20:b}=", "Authorization: required for admins"),
    case("http", "bearer-token", "curl -H 'Bearer {s}'", "{40:u}", "the bearer responsibilities"),
    case("http", "cookie-header", "Cookie: {s}", "sid={32:x}; theme=dark", "Cookie: none needed"),
    case("url", "url-userinfo", "redis://:{s}@cache.internal:6379/0", "{16:n}", "mailto:ada@example.com"),
    case("url", "signed-url-signature", "https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={s}", "{64:x}", "X-Amz-Signature=short"),
];

/// Context rules: names in JSON keys and in text.
#[rustfmt::skip]
const CONTEXT_CASES: &[Case] = &[
    case("key-name", "X-AUTH", r#"{"X-AUTH": "{s}"}"#, "{24:n}", r#"{"X-AUTH-MODE": "strict"}"#),
    case("key-name", "pass", r#"{"user": "ada", "pass": "{s}"}"#, "{12:n}", r#"{"pass_rate": "0.97"}"#),
    case("key-name", "pwd", r#"{"pwd": "{s}"}"#, "{12:n}", r#"{"token_type": "Bearer"}"#),
    case("key-name", "credentials", r#"{"credentials": "{s}"}"#, "{30:n}", r#"{"credentials_file": "~/.aws/credentials"}"#),
    case("key-name", "passphrase", r#"{"passphrase": "{s}"}"#, "{20:n}", r#"{"token_count": "523"}"#),
    case("key-name", "signing_key", r#"{"signing_key": "{s}"}"#, "{32:x}", r#"{"password_policy": "min 12 characters"}"#),
    case("key-name", "docker auths", r#"{"auths": {"https://index.docker.io/v1/": {"auth": "{s}"}}}"#, "{32:b}", r#"{"secret_santa_budget": "50 EUR"}"#),
    case("assignment", ".env line", "APP_ENV=prod\nSECRET_KEY={s}\nDEBUG=false", "{50:n}", "APP_ENV=prod\nSECRET_KEY_LENGTH=50\nDEBUG=false"),
    case("assignment", "ini line", "[db]\nhost = db.internal\npassword = {s}", "{16:n}", "[db]\npassword = <your-password>"),
    case("assignment", "properties line", "spring.datasource.password={s}", "{16:n}", "spring.datasource.password=${DB_PASSWORD}"),
    case("assignment", "DB_PASS", "export DB_PASS={s}", "{16:n}", "max_tokens=4096"),
    case("assignment", "prose password", "the password: {s} works", "{14:n}", "the password: required"),
    case("assignment", "query token", "https://api.example.com/v1/feed?access_token={s}&page=2", "{32:n}", "https://api.example.com/v1/feed?token_type=bearer&page=2"),
    case("http", "X-Api-Key in prose", "call it with X-Api-Key: {s} set", "{32:n}", "X-Api-Key: <key>"),
    case("http", "Set-Cookie", "Set-Cookie: session={s}; Path=/; HttpOnly", "{40:n}", "Set-Cookie: none"),
    case("url", "url password", "postgres://app:{s}@db.internal:5432/prod", "{16:n}", "https://example.com/@ada"),
];

/// The look-alike corpus: each must pass byte-identical.
fn lookalikes(g: &mut Gen) -> Vec<(&'static str, String)> {
    let png: Vec<u8> = (0..600).map(|_| g.next() as u8).collect();
    let mut out = vec![
        ("uuid", g.fill("{8:x}-{4:x}-4{3:x}-a{3:x}-{12:x}")),
        ("git sha", g.fill("commit {40:x}")),
        ("sha256", g.fill("sha256:{64:x}")),
        ("lockfile integrity", format!("\"integrity\": \"sha512-{}==\"", g.fill("{86:b}"))),
        ("base64 image", format!("data:image/png;base64,{}", STANDARD.encode(&png))),
        ("ssh public key", g.fill("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{43:b} ada@laptop")),
        ("certificate", g.fill("-----BEGIN CERTIFICATE-----\nMIIB{60:b}\n{64:b}\n-----END CERTIFICATE-----")),
        ("token counts", r#"{"token_type": "Bearer", "token_count": "523", "max_tokens": 4096, "expires_in": 3600}"#.to_owned()),
        ("policy fields", r#"{"password_policy": "min 12", "secret_santa_budget": "50", "session_timeout": "30m"}"#.to_owned()),
        ("placeholder", "password=<your-password>".to_owned()),
        ("placeholder", "api_key: ${API_KEY}".to_owned()),
        ("placeholder", "token: ********".to_owned()),
        ("prose", "Rotate your API key and password every 90 days; tokens expire after one hour.".to_owned()),
        ("prose", "The secret to a good sourdough is patience. Keys are on the desk.".to_owned()),
        ("prose", "Set max_tokens to 1024 and keep the token budget under 8k per session.".to_owned()),
        ("prose", "Ask the task runner to skip the risky tasks; the desk has a disk.".to_owned()),
        ("prose", "Authorization is required. Use the Bearer scheme described in RFC 6750.".to_owned()),
        ("code", "fn verify(signature: &str, key: &PublicKey) -> bool { key.verify(signature) }".to_owned()),
        ("url", "https://docs.example.com/guide/auth?lang=en&page=2#tokens".to_owned()),
        ("email", "Contact ada.lovelace@example.com or ops@example.org.".to_owned()),
        ("version", "sluice 0.1.0 (rustc 1.95.0, commit 1a2b3c4d5e6f)".to_owned()),
    ];
    for c in RULE_CASES.iter().chain(CONTEXT_CASES) {
        out.push(("rule look-alike", g.fill(c.lookalike)));
    }
    out
}

/// `text` placed in prose, as a value of a record, or in a URL.
fn place(where_: &str, text: &str) -> Value {
    match where_ {
        "prose" => {
            json!({"content": [{"type": "text", "text": format!("Here is what the deploy log printed: {text} (rotate it soon).")}]})
        }
        "json" => {
            json!({"structuredContent": {"log": {"level": "info", "line": text, "count": 3}}})
        }
        "url" => {
            json!({"content": [{"type": "text", "text": format!("https://logs.example.com/view?q={text}&page=2")}]})
        }
        other => panic!("{other}"),
    }
}

#[derive(Default)]
struct Tally {
    cases: usize,
    caught: usize,
    lookalikes: usize,
    touched: usize,
}

fn report(title: &str, tally: &BTreeMap<&str, Tally>) {
    println!("{title}");
    let mut all = Tally::default();
    for (family, t) in tally {
        println!(
            "  {family:<14} recall {:>3}/{:<3}  false positives {:>2}/{}",
            t.caught, t.cases, t.touched, t.lookalikes
        );
        all.cases += t.cases;
        all.caught += t.caught;
        all.lookalikes += t.lookalikes;
        all.touched += t.touched;
    }
    println!(
        "  {:<14} recall {:>3}/{:<3}  false positives {:>2}/{}",
        "overall", all.caught, all.cases, all.touched, all.lookalikes
    );
}

/// Runs `value` through the redactor; `true` when `secret` appears nowhere
/// in the output (nor any line of it longer than 8 bytes).
fn hidden(r: &Redactor, mut value: Value, secret: &str) -> (bool, String) {
    r.redact(&mut value);
    let out = value.to_string();
    let leaked = secret
        .lines()
        .filter(|l| l.len() > 8)
        .any(|l| out.contains(l) || out.contains(&l.replace('/', "\\/")));
    (!leaked, out)
}

#[test]
fn every_rule_has_a_sample_and_a_look_alike() {
    let sampled: std::collections::BTreeSet<&str> = RULE_CASES.iter().map(|c| c.name).collect();
    let rules: std::collections::BTreeSet<&str> = sluice_core::boundary::redact::rules::RULES
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(sampled, rules);
}

#[test]
fn every_rule_family_recalls_its_secrets_and_leaves_look_alikes() {
    let r = Redactor::new(Vec::<String>::new(), DEFAULT_SECRET_KEYS);
    let mut g = Gen(18);
    let mut tally: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut missed = Vec::new();
    for c in RULE_CASES.iter().chain(CONTEXT_CASES) {
        let secret = g.fill(c.secret);
        let text = g.fill(&c.context.replace("{s}", &secret));
        let t = tally.entry(c.family).or_default();
        let json_case = text.starts_with('{');
        let places: &[&str] = if json_case || text.contains('\n') {
            &["prose", "json"]
        } else {
            &["prose", "json", "url"]
        };
        for where_ in places {
            let value = if json_case && *where_ == "json" {
                json!({"structuredContent": serde_json::from_str::<Value>(&text).unwrap()})
            } else {
                place(where_, &text)
            };
            t.cases += 1;
            let (ok, out) = hidden(&r, value, &secret);
            if ok {
                t.caught += 1;
            } else {
                missed.push(format!("{} in {where_}: {out}", c.name));
            }
        }
    }
    let mut touched = Vec::new();
    for (kind, text) in lookalikes(&mut g) {
        let family = if kind == "rule look-alike" {
            "lookalike-rule"
        } else {
            "lookalike"
        };
        for where_ in ["prose", "json"] {
            let before = place(where_, &text);
            let mut after = before.clone();
            let counts = r.redact(&mut after);
            let t = tally.entry(family).or_default();
            t.lookalikes += 1;
            if counts.total() > 0 || after != before {
                t.touched += 1;
                touched.push(format!("{kind} in {where_}: {after}"));
            }
        }
    }
    report("generated redaction corpus", &tally);
    assert!(missed.is_empty(), "missed:\n{}", missed.join("\n"));
    assert!(touched.is_empty(), "touched:\n{}", touched.join("\n"));
}

#[test]
fn evasions_and_known_secret_forms_are_caught() {
    let known = "Kn0wn-Upstr3am/Secret+v@lue";
    let r = Redactor::new(vec![known.to_owned()], DEFAULT_SECRET_KEYS);
    let mut g = Gen(1818);
    let token = g.fill("ghp_{36:n}");
    let zw = format!("{}\u{200B}{}", &token[..10], &token[10..]);
    let bidi = format!("\u{202E}{token}\u{202C}");
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    let json_escaped: String = token
        .chars()
        .map(|c| {
            if c == '_' {
                "\\u005f".to_owned()
            } else {
                c.to_string()
            }
        })
        .collect();
    let known_hex: String = known.bytes().map(|b| format!("{b:02X}")).collect();
    let (a, b) = token.split_at(14);
    let cases: Vec<(&str, Value, String)> = vec![
        (
            "zero-width space in a token",
            place("prose", &zw),
            token[10..].to_string(),
        ),
        (
            "bidi controls around a token",
            place("prose", &bidi),
            token[4..].to_string(),
        ),
        (
            "base64 of a token",
            place("prose", &STANDARD.encode(&token)),
            token.to_string(),
        ),
        (
            "base64 of a token, decoded",
            place("prose", &STANDARD.encode(&token)),
            STANDARD.encode(&token).to_string(),
        ),
        (
            "base64 of an assignment",
            place(
                "json",
                &STANDARD.encode(format!("password={}", g.fill("{16:n}"))),
            ),
            "cGFzc3dvcmQ9".to_owned(),
        ),
        (
            "base64url of a token",
            place("prose", &URL_SAFE_NO_PAD.encode(format!("id {token}"))),
            URL_SAFE_NO_PAD.encode(format!("id {token}")).to_string(),
        ),
        ("hex of a token", place("prose", &hex), hex.to_string()),
        (
            "percent-encoded URL password",
            place("prose", "redis%3A%2F%2F%3Ahunter2hunter2%40cache"),
            "hunter2hunter2".to_owned(),
        ),
        (
            "JSON-escaped token",
            place("prose", &json_escaped),
            json_escaped.to_string(),
        ),
        (
            "split across text blocks",
            json!({"content": [{"type": "text", "text": format!("token {a}")}, {"type": "text", "text": b}]}),
            (b).to_string(),
        ),
        (
            "split across keys",
            json!({"structuredContent": {"part1": a, "part2": b}}),
            (b).to_string(),
        ),
        (
            "known secret verbatim",
            place("prose", known),
            (known).to_string(),
        ),
        (
            "known secret uppercased",
            place("prose", &known.to_uppercase()),
            known.to_uppercase().to_string(),
        ),
        (
            "known secret reversed",
            place("prose", &known.chars().rev().collect::<String>()),
            "eulav@v+terceS".to_owned(),
        ),
        (
            "known secret base64",
            place("prose", &STANDARD.encode(known)),
            STANDARD.encode(known)[4..20].to_string(),
        ),
        (
            "known secret in basic auth",
            place("json", &STANDARD.encode(format!("ada:{known}"))),
            STANDARD.encode(format!("ada:{known}"))[8..24].to_string(),
        ),
        (
            "known secret hex",
            place("prose", &known_hex),
            known_hex.to_string(),
        ),
        (
            "known secret URL-encoded",
            place("url", "Kn0wn-Upstr3am%2FSecret%2Bv%40lue"),
            "Kn0wn-Upstr3am".to_owned(),
        ),
        (
            "known secret JSON-escaped",
            place("prose", "Kn0wn-Upstr3am\\/Secret+v@lue"),
            "Kn0wn-Upstr3am".to_owned(),
        ),
    ];
    let mut missed = Vec::new();
    let total = cases.len();
    for (name, value, secret) in cases {
        let (ok, out) = hidden(&r, value, &secret);
        if !ok {
            missed.push(format!("{name}: {out}"));
        }
    }
    println!(
        "evasions and known-secret forms: recall {}/{total}",
        total - missed.len()
    );
    assert!(missed.is_empty(), "missed:\n{}", missed.join("\n"));
}
