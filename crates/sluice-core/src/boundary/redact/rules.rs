//! The value rules, as data: one row per credential kind, from each
//! provider's documented token format (prefix, alphabet, length), and the
//! context rules that need a name before the value (HTTP headers written in
//! prose, URL userinfo, signed query strings, provider names in prose).
//!
//! A row's anchors are literals one of which every match contains; they are
//! found, with every other trigger, in one case-insensitive pass over the
//! text ([`super::engine`]). Only a row whose anchor occurs runs its
//! expression, and only over a window around that occurrence: `before`
//! bytes before the anchor and `after` bytes after it. So the cost of a text
//! without anchors does not depend on the number of rows, and a row's cost
//! does not depend on the length of the text.
//!
//! Checksums (GitHub's CRC32 suffix, npm's) are not verified: a checksum
//! only tells a real token from a random one of the same shape, and a
//! random string with a provider's prefix and exact length is as sensitive
//! to leave out as a real token.

/// One rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The credential kind.
    pub id: &'static str,
    /// The family the recall figures are grouped by.
    pub family: &'static str,
    /// Literals every match contains, in the case the expression wants.
    pub anchors: &'static [&'static str],
    /// Whether the anchor must occur in exactly that case (a provider
    /// prefix such as `SK` or `ghp_`): checked before the expression runs,
    /// so that `ask` or `task` costs a byte comparison.
    pub case_sensitive: bool,
    /// How far before the anchor's start a match may begin.
    pub before: usize,
    /// How far after the anchor's end a match may end; `None` for the rest
    /// of the text (a PEM block).
    pub after: Option<usize>,
    /// The expression; a group named `s` marks the part to replace, and
    /// without one the whole match goes.
    pub pattern: &'static str,
    /// What the replaced part must hold besides the expression's shape.
    pub check: Check,
}

/// A check the expression cannot say (the regex crate has no look-ahead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// None.
    None,
    /// A digit (`sk-learn-compatible-estimators` is prose).
    Digit,
    /// A digit, an upper- and a lowercase letter: a rule with no prefix of
    /// its own (a git SHA, a word or a path of the same length is no
    /// secret).
    Mixed,
}

impl Check {
    /// Whether `value` passes.
    pub fn passes(self, value: &str) -> bool {
        let digit = || value.bytes().any(|b| b.is_ascii_digit());
        match self {
            Check::None => true,
            Check::Digit => digit(),
            Check::Mixed => {
                digit()
                    && value.bytes().any(|b| b.is_ascii_uppercase())
                    && value.bytes().any(|b| b.is_ascii_lowercase())
            }
        }
    }
}

/// A provider prefix: matched in its case, the match starting at it.
const fn prefix(
    id: &'static str,
    family: &'static str,
    anchors: &'static [&'static str],
    after: usize,
    pattern: &'static str,
) -> Rule {
    Rule {
        case_sensitive: true,
        ..context(id, family, anchors, 1, after, pattern)
    }
}

/// A name before the value: matched in any case.
const fn context(
    id: &'static str,
    family: &'static str,
    anchors: &'static [&'static str],
    before: usize,
    after: usize,
    pattern: &'static str,
) -> Rule {
    Rule {
        id,
        family,
        anchors,
        case_sensitive: false,
        before,
        after: Some(after),
        pattern,
        check: Check::None,
    }
}

/// Every rule.
pub const RULES: &[Rule] = &[
    // --- cloud -------------------------------------------------------
    prefix(
        "aws-access-key-id",
        "cloud",
        &["AKIA", "ASIA", "ABIA", "ACCA"],
        24,
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    Rule {
        id: "aws-secret-access-key",
        family: "cloud",
        anchors: &["aws", "secret"],
        case_sensitive: false,
        before: 1,
        after: Some(120),
        // A name (`aws_secret_access_key =`, `AWS secret key:` in prose)
        // then 40 base64 characters, and no more of them.
        pattern: r#"(?i)\b(?:aws|secret)[\w .'"-]{0,40}?(?:[:=]|\bis\b)\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        check: Check::Mixed,
    },
    prefix(
        "gcp-api-key",
        "cloud",
        &["AIza"],
        40,
        r"\bAIza[0-9A-Za-z_-]{35}",
    ),
    prefix(
        "google-oauth-client-secret",
        "cloud",
        &["GOCSPX-"],
        40,
        r"\bGOCSPX-[0-9A-Za-z_-]{28}",
    ),
    prefix(
        "google-oauth-access-token",
        "cloud",
        &["ya29."],
        2048,
        r"\bya29\.[0-9A-Za-z_-]{20,}",
    ),
    prefix(
        "google-oauth-refresh-token",
        "cloud",
        &["1//"],
        512,
        r"\b1//[0-9A-Za-z_-]{30,}",
    ),
    context(
        "azure-storage-key",
        "cloud",
        &["accountkey=", "sharedaccesskey="],
        0,
        100,
        r"(?i)(?:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{40,}={0,2})",
    ),
    context(
        "azure-sas-signature",
        "cloud",
        &["sig="],
        1,
        200,
        r"(?:^|[?&;\s])sig=(?P<s>[A-Za-z0-9%+/=_-]{20,})",
    ),
    Rule {
        id: "azure-ad-client-secret",
        family: "cloud",
        anchors: &["Q~"],
        case_sensitive: true,
        before: 5,
        after: Some(40),
        pattern: r"(?:^|[^A-Za-z0-9_~.-])(?P<s>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)",
        check: Check::None,
    },
    prefix(
        "digitalocean-token",
        "cloud",
        &["dop_v1_", "doo_v1_", "dor_v1_"],
        80,
        r"\bdo[por]_v1_[a-f0-9]{64}\b",
    ),
    prefix(
        "databricks-token",
        "cloud",
        &["dapi"],
        40,
        r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b",
    ),
    prefix(
        "alibaba-access-key-id",
        "cloud",
        &["LTAI"],
        30,
        r"\bLTAI[A-Za-z0-9]{20}\b",
    ),
    prefix(
        "heroku-api-key",
        "cloud",
        &["HRKU-"],
        100,
        r"\bHRKU-[A-Za-z0-9_-]{20,}",
    ),
    // --- forges, registries, CI and infrastructure --------------------
    prefix(
        "github-token",
        "forge",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        260,
        r"\bgh[pousr]_[A-Za-z0-9]{36,251}\b",
    ),
    prefix(
        "github-fine-grained-token",
        "forge",
        &["github_pat_"],
        260,
        r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b",
    ),
    Rule {
        id: "gitlab-token",
        family: "forge",
        anchors: &[
            "glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glimt-", "gloas-", "glsoat-", "glft-",
            "glagent-", "glwt-",
        ],
        case_sensitive: false,
        before: 1,
        after: Some(100),
        pattern: r"\bgl(?:pat|ptt|dt|rt|cbt|imt|oas|soat|ft|agent|wt)-[A-Za-z0-9_-]{20,}",
        check: Check::None,
    },
    prefix(
        "bitbucket-app-password",
        "forge",
        &["ATBB"],
        100,
        r"\bATBB[A-Za-z0-9_=.-]{32,}",
    ),
    prefix(
        "atlassian-api-token",
        "forge",
        &["ATATT3"],
        300,
        r"\bATATT3[A-Za-z0-9_=+/.-]{50,}",
    ),
    prefix(
        "npm-token",
        "registry",
        &["npm_"],
        40,
        r"\bnpm_[A-Za-z0-9]{36}\b",
    ),
    prefix(
        "pypi-token",
        "registry",
        &["pypi-AgE"],
        300,
        r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
    ),
    prefix(
        "rubygems-key",
        "registry",
        &["rubygems_"],
        60,
        r"\brubygems_[a-f0-9]{48}\b",
    ),
    prefix(
        "nuget-api-key",
        "registry",
        &["oy2"],
        50,
        r"\boy2[a-z0-9]{43}\b",
    ),
    prefix(
        "jfrog-api-key",
        "registry",
        &["AKCp"],
        100,
        r"\bAKCp[A-Za-z0-9]{60,}\b",
    ),
    prefix(
        "docker-token",
        "registry",
        &["dckr_pat_", "dckr_oat_"],
        80,
        r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}",
    ),
    Rule {
        id: "terraform-cloud-token",
        family: "infra",
        anchors: &[".atlasv1."],
        case_sensitive: true,
        before: 15,
        after: Some(100),
        pattern: r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
        check: Check::None,
    },
    prefix(
        "vault-token",
        "infra",
        &["hvs.", "hvb.", "hvr."],
        300,
        r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}",
    ),
    prefix(
        "pulumi-token",
        "infra",
        &["pul-"],
        50,
        r"\bpul-[a-f0-9]{40}\b",
    ),
    prefix(
        "doppler-token",
        "infra",
        &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct."],
        60,
        r"\bdp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}",
    ),
    prefix(
        "flyio-token",
        "infra",
        &["fo1_", "fm2_"],
        1024,
        r"\b(?:fo1_[A-Za-z0-9_-]{40,}|fm2_[A-Za-z0-9+/=_-]{40,})",
    ),
    prefix(
        "planetscale-token",
        "infra",
        &["pscale_tkn_", "pscale_pw_", "pscale_oauth_"],
        80,
        r"\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,64}",
    ),
    prefix(
        "supabase-token",
        "infra",
        &["sbp_"],
        50,
        r"\bsbp_[a-f0-9]{40}\b",
    ),
    // --- AI providers -------------------------------------------------
    Rule {
        id: "ai-provider-key",
        family: "ai",
        anchors: &["sk-"],
        case_sensitive: true,
        before: 1,
        after: Some(300),
        pattern: r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        check: Check::Digit,
    },
    prefix(
        "huggingface-token",
        "ai",
        &["hf_", "api_org_"],
        60,
        r"\b(?:hf|api_org)_[A-Za-z0-9]{34,}\b",
    ),
    prefix("groq-key", "ai", &["gsk_"], 80, r"\bgsk_[A-Za-z0-9]{48,}\b"),
    prefix(
        "replicate-token",
        "ai",
        &["r8_"],
        50,
        r"\br8_[A-Za-z0-9]{37}\b",
    ),
    prefix(
        "perplexity-key",
        "ai",
        &["pplx-"],
        60,
        r"\bpplx-[A-Za-z0-9]{48}\b",
    ),
    prefix("xai-key", "ai", &["xai-"], 100, r"\bxai-[A-Za-z0-9]{70,}\b"),
    // --- payments and commerce ----------------------------------------
    prefix(
        "stripe-key",
        "payment",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        260,
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
    ),
    prefix(
        "stripe-webhook-secret",
        "payment",
        &["whsec_"],
        100,
        r"\bwhsec_[A-Za-z0-9+/=]{24,}",
    ),
    prefix(
        "square-token",
        "payment",
        &["sq0atp-", "sq0csp-", "EAAA"],
        80,
        r"\b(?:sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43}|EAAA[A-Za-z0-9_-]{60})",
    ),
    prefix(
        "shopify-token",
        "payment",
        &["shpat_", "shpss_", "shpca_", "shppa_"],
        40,
        r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b",
    ),
    prefix(
        "braintree-token",
        "payment",
        &["access_token$production$"],
        80,
        r"\baccess_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}\b",
    ),
    // --- messaging ----------------------------------------------------
    prefix(
        "slack-token",
        "messaging",
        &["xox", "xapp-"],
        300,
        r"\b(?:xox[abpers]-|xoxe\.xox[bp]-|xapp-)[A-Za-z0-9-]{10,}",
    ),
    context(
        "slack-webhook",
        "messaging",
        &["hooks.slack.com"],
        8,
        120,
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}",
    ),
    prefix(
        "twilio-api-key",
        "messaging",
        &["SK"],
        34,
        r"\bSK[0-9a-fA-F]{32}\b",
    ),
    context(
        "twilio-auth-token",
        "messaging",
        &["twilio"],
        1,
        100,
        r#"(?i)\btwilio[\w .'"-]{0,40}?(?:[:=]|\bis\b)\s*["']?(?P<s>[a-f0-9]{32})\b"#,
    ),
    prefix(
        "sendgrid-key",
        "messaging",
        &["SG."],
        80,
        r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
    ),
    prefix(
        "mailgun-key",
        "messaging",
        &["key-"],
        40,
        r"\bkey-[a-f0-9]{32}\b",
    ),
    Rule {
        id: "mailchimp-key",
        family: "messaging",
        anchors: &["-us"],
        case_sensitive: true,
        before: 33,
        after: Some(2),
        pattern: r"\b[a-f0-9]{32}-us[0-9]{1,2}\b",
        check: Check::None,
    },
    Rule {
        id: "telegram-bot-token",
        family: "messaging",
        anchors: &[":AA"],
        case_sensitive: true,
        before: 11,
        after: Some(34),
        pattern: r"\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}\b",
        check: Check::None,
    },
    context(
        "discord-bot-token",
        "messaging",
        &["discord"],
        1,
        160,
        r#"(?i)\bdiscord[\w .'"-]{0,40}?(?:[:=]|\bis\b|\bbot\b)\s*["']?(?P<s>(?-i:[A-Za-z0-9]{23,28}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}))"#,
    ),
    context(
        "discord-webhook",
        "messaging",
        &["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"],
        0,
        120,
        r"discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<s>[A-Za-z0-9_-]{60,})",
    ),
    // --- SaaS ---------------------------------------------------------
    prefix(
        "linear-api-key",
        "saas",
        &["lin_api_", "lin_oauth_"],
        60,
        r"\blin_(?:api|oauth)_[A-Za-z0-9]{40}\b",
    ),
    prefix(
        "notion-token",
        "saas",
        &["secret_", "ntn_"],
        60,
        r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})\b",
    ),
    prefix(
        "postman-api-key",
        "saas",
        &["PMAK-"],
        70,
        r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b",
    ),
    prefix(
        "figma-token",
        "saas",
        &["figd_"],
        100,
        r"\bfigd_[A-Za-z0-9_-]{40,}",
    ),
    prefix(
        "dropbox-token",
        "saas",
        &["sl."],
        1400,
        r"\bsl\.[A-Za-z0-9_-]{130,}",
    ),
    prefix(
        "hubspot-token",
        "saas",
        &["pat-na1-", "pat-eu1-"],
        40,
        r"\bpat-(?:na|eu)1-[a-f0-9-]{36}\b",
    ),
    // --- observability ------------------------------------------------
    context(
        "datadog-key",
        "observability",
        &["datadog", "dd_", "dd-"],
        1,
        100,
        r#"(?i)\b(?:datadog|dd)[\w .-]{0,30}?(?:api|app|application)[\w .-]{0,10}?key["']?\s*[:=]\s*["']?(?P<s>[a-f0-9]{32}(?:[a-f0-9]{8})?)\b"#,
    ),
    prefix(
        "grafana-token",
        "observability",
        &["glsa_", "glc_"],
        400,
        r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
    ),
    prefix(
        "new-relic-key",
        "observability",
        &["NRAK-", "NRII-", "NRAA-", "NRJS-"],
        40,
        r"\b(?:NR(?:AK|II|AA)-[A-Z0-9]{27}|NRJS-[a-f0-9]{19})\b",
    ),
    prefix(
        "sentry-token",
        "observability",
        &["sntrys_", "sntryu_", "sntrya_"],
        400,
        r"\bsntry[sua]_[A-Za-z0-9+/=_-]{40,}",
    ),
    // --- keys and signed tokens ----------------------------------------
    Rule {
        id: "private-key",
        family: "key-material",
        anchors: &["-----BEGIN"],
        case_sensitive: true,
        before: 0,
        // A key cut before its END line (a paged read) goes to the end of
        // the text.
        after: None,
        pattern: r"(?s)\A-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----(?:.*?-----END[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----|.*)",
        check: Check::None,
    },
    context(
        "putty-private-key",
        "key-material",
        &["private-lines:"],
        0,
        4096,
        r"(?i)\APrivate-Lines:\s*[0-9]+\s+(?P<s>[A-Za-z0-9+/=]{4,}(?:\s+[A-Za-z0-9+/=]{4,})*)",
    ),
    context(
        "putty-private-mac",
        "key-material",
        &["private-mac:"],
        0,
        80,
        r"(?i)\APrivate-MAC:\s*(?P<s>[a-f0-9]{40,64})",
    ),
    prefix(
        "age-secret-key",
        "key-material",
        &["AGE-SECRET-KEY-1"],
        60,
        r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b",
    ),
    prefix(
        "jwt",
        "key-material",
        &["eyJ"],
        8192,
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    ),
    // --- HTTP and URLs in prose ---------------------------------------
    context(
        "authorization-header",
        "http",
        &["authorization"],
        1,
        2048,
        concat!(
            r#"(?i)\bauthorization["']?\s*[:=]\s*["']?"#,
            r"(?:(?:basic|bearer|token|bot|digest|apikey|api-key|negotiate|ntlm|sso-key|hmac)\s+)?",
            r"(?P<s>[A-Za-z0-9._~+/=:,-]*[0-9._~+/=:,-][A-Za-z0-9._~+/=:,-]*)"
        ),
    ),
    context(
        "bearer-token",
        "http",
        &["bearer"],
        1,
        2048,
        // A token has a digit or punctuation in it: "bearer
        // responsibilities" is prose.
        r"(?i)\bbearer\s+(?P<s>[A-Za-z]*[0-9._~+/-][A-Za-z0-9._~+/-]{6,}=*)",
    ),
    context(
        "cookie-header",
        "http",
        &["cookie"],
        5,
        4096,
        r#"(?i)\b(?:set-)?cookie["']?\s*:\s*["']?(?P<s>[^\s=;"']+=[^\r\n"']+)"#,
    ),
    context(
        "url-userinfo",
        "url",
        // `@` is rarer than `://` in text full of links; the user may be
        // empty (`redis://:pass@host`).
        &["@"],
        300,
        0,
        r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#"',{}\[\]<>]{0,256}:(?P<s>[^\s@/?#"',{}\[\]<>]{1,256})@"#,
    ),
    context(
        "signed-url-signature",
        "url",
        &["signature=", "x-amz-security-token=", "x-amz-credential="],
        1,
        1024,
        r"(?i)\b(?:Signature|X-Amz-Security-Token|X-Amz-Credential)=(?P<s>[A-Za-z0-9%+/=_.-]{16,})",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles_and_has_anchors() {
        let mut ids = std::collections::BTreeSet::new();
        for rule in RULES {
            assert!(regex::Regex::new(rule.pattern).is_ok(), "{}", rule.id);
            assert!(!rule.anchors.is_empty(), "{}", rule.id);
            ids.insert(rule.id);
        }
        assert_eq!(ids.len(), RULES.len(), "rule ids are unique");
    }
}
