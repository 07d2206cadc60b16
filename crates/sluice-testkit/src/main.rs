//! `sluice-fixture`: a small, deliberately controllable MCP server.
//!
//! It exists to test the sluice gateway against behaviour that real MCP servers rarely produce:
//! crashes mid-call, requests that never get answered, non-JSON on stdout, odd pagination cursors,
//! results full of fields and number spellings a proxy must not touch, and so on. It speaks
//! newline-delimited JSON-RPC on stdio (default) or Streamable HTTP (`--http PORT`), in the
//! 2026-07-28 ("modern") era, the 2025-x ("legacy") era, or both (`--era dual`).
//!
//! Everything works on `serde_json::Value` so that unknown fields and exact number spellings
//! (`arbitrary_precision` + `preserve_order`) survive untouched.
//!
//! Layout: this file parses arguments; `fixture` is the server's state; `protocol` dispatches
//! each request (one task each) to its method: `handshake` (eras, `initialize`,
//! `server/discover`), `lists` (the protocol lists, with `pagination` and the discovery faults),
//! `tools` (`tools/call`), `listen` (the 2026 `subscriptions/listen` change notifications),
//! `resource_subs` (the legacy `resources/subscribe`, and its unlisted observation resources);
//! `catalog` holds the tools/resources/prompts; `jsonrpc` is the message envelope and `era` the
//! versions and the per-era result shape; `peer` is per-connection state (cancellation,
//! server→client requests) and each request's context; `bulk` produces large payloads (streamed
//! in chunks for `huge_read` / `huge_write`); `stdio` and `http` are the transports.
//!
//! For read-budget and redaction tests of a gateway: `read_big` (read-only `big`), `reflect`
//! (sends back any text, structured content, image size or JSON-RPC error it is asked for),
//! `huge_read` / `huge_write` (answers of any size streamed in 64 KiB chunks; with
//! `shape: "objects"`, tiny objects in `structuredContent` instead), the resource
//! template `fixture://big/{bytes}` and the prompt `big_prompt`.
//!
//! For a server checker (`sluice doctor`): `--violate RULE,...` breaks one protocol rule per
//! RULE on purpose (see [`Violation`]), and `--list-tool MODE` adds the read-only list-style
//! tool `list_items` (`list_tool`), well-behaved or broken. Over HTTP, `GET /health` answers
//! `{"status":"ok","version":...}`.

mod bulk;
mod catalog;
mod era;
mod fixture;
mod handshake;
mod http;
mod jsonrpc;
mod list_tool;
mod listen;
mod lists;
mod pagination;
mod peer;
mod protocol;
mod resource_subs;
mod stdio;
#[cfg(test)]
mod testutil;
mod tools;

use std::num::NonZeroUsize;
use std::sync::Arc;

use clap::builder::RangedU64ValueParser;
use clap::{CommandFactory, Parser, ValueEnum};

/// Default `--cycle-length`: page 3 returns page 1's `nextCursor`.
pub const DEFAULT_CYCLE_LENGTH: usize = 2;

/// Command-line configuration of the fixture. Every flag is a knob a test can turn.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "sluice-fixture",
    version,
    about = "A deliberately controllable MCP test server"
)]
pub struct Config {
    /// Serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio (0 = any free port;
    /// the actual address is printed to stderr as `listening on http://127.0.0.1:PORT/mcp`).
    #[arg(long, value_name = "PORT")]
    pub http: Option<u16>,

    /// Which protocol era(s) to speak.
    #[arg(long, value_enum, default_value_t = EraMode::Dual)]
    pub era: EraMode,

    /// Number of generated extra tools (`gen_0000`, `gen_0001`, ...) after the fixed ones.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub tools: usize,

    /// Give the generated tools descriptions from 10 bytes to 20 KB long (tool `i` gets
    /// `10 + (i * 7919) % 19991` bytes), for tests of byte-capped list pages.
    #[arg(long)]
    pub varied_descriptions: bool,

    /// Number of text resources (`fixture://res/0000`, ...).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub resources: usize,

    /// Paginate tools/list, resources/list, resources/templates/list and prompts/list with pages
    /// of K items (default: everything on one page, no `nextCursor`).
    #[arg(long, value_name = "K")]
    pub page_size: Option<NonZeroUsize>,

    /// Make tools/list pagination misbehave (needs --page-size).
    #[arg(long, value_enum, default_value_t = CursorMode::Normal)]
    pub cursor_mode: CursorMode,

    /// With `--cursor-mode cycle`: page L+1 of tools/list returns page 1's `nextCursor`, so the
    /// cursors leading to pages 2..=L+1 repeat forever (L = 3: c2, c3, c4, c2, ...).
    #[arg(
        long,
        value_name = "L",
        default_value_t = DEFAULT_CYCLE_LENGTH,
        value_parser = RangedU64ValueParser::<usize>::new().range(2..)
    )]
    pub cycle_length: usize,

    /// Answer page N (1-based, as designated by the cursor) of tools/list with a JSON-RPC error
    /// (-32603, "fixture: page N fails on purpose"), on every walk of the list. Needs --page-size.
    #[arg(long, value_name = "N", requires = "page_size")]
    pub fail_page: Option<NonZeroUsize>,

    /// Never answer page N (1-based, as designated by the cursor) of tools/list, on every walk of
    /// the list; other requests are still served and `notifications/cancelled` drops it quietly.
    /// Needs --page-size.
    #[arg(long, value_name = "N", requires = "page_size")]
    pub hang_page: Option<NonZeroUsize>,

    /// The last page of tools/list lists the first tool of page 1 again (without --page-size the
    /// single page lists it twice): a duplicate tool name across pages.
    #[arg(long)]
    pub duplicate_tool: bool,

    /// Append ` (read N)` to the `echo` tool's description, N counting the times this process has
    /// served page 1 of tools/list (1, 2, ...): every catalog read sees a changed description.
    #[arg(long)]
    pub drift_each_read: bool,

    /// Append ` TEXT` to the `echo` tool's description (before any ` (read N)`), to simulate an
    /// upstream whose tool description changed between two runs.
    #[arg(long, value_name = "TEXT")]
    pub description_suffix: Option<String>,

    /// Add a tool with exactly this name (repeatable), after the others: names such as
    /// `bad name`, one with a NUL or U+202E, or 5,000 characters, that a gateway must not serve.
    #[arg(long = "tool-named", value_name = "NAME")]
    pub tools_named: Vec<String>,

    /// Start-up fault to inject.
    #[arg(long, value_enum, default_value_t = StartMode::Normal)]
    pub start: StartMode,

    /// HTTP, legacy sessions only: behave like a 2025-11-25 server that polls (SEP-1699). A
    /// `tools/call` of `slow` or `progress` answers `text/event-stream` with only a priming
    /// event (`id: <stream>-0`, `retry: 100`, empty data) and ends the response; the tool keeps
    /// running and what it emits is buffered (`id: <stream>-<n>`) until the client resumes with
    /// `GET /mcp` + `Last-Event-ID`. Ignored on stdio and in the 2026 era.
    #[arg(long)]
    pub sse_polling: bool,

    /// Break the named protocol rules on purpose (repeatable, or comma-separated:
    /// `--violate result-type,cache-hints`), so that a checker such as `sluice doctor` has a
    /// server that fails each of its detectors; what each RULE breaks is listed below.
    /// Without it the fixture keeps every rule these flags are about.
    #[arg(long, value_enum, value_name = "RULE", value_delimiter = ',')]
    pub violate: Vec<Violation>,

    /// Add a read-only list-style tool `list_items` (after the fixed tools) over 120 items,
    /// paging with `limit` and `cursor` arguments, well-behaved or broken as MODE says. It also
    /// reports progress (two notifications) when called with a progressToken.
    #[arg(long, value_enum, value_name = "MODE")]
    pub list_tool: Option<ListToolMode>,

    /// Annotate `add_tool` `destructiveHint: false`, so that a checker that calls such tools
    /// (`sluice doctor --allow-calls`) calls it and sees the tool list change.
    #[arg(long)]
    pub callable_add_tool: bool,

    /// Append every request received to FILE, one JSON line each:
    /// `{"method", "params", "traceparent"}` (`traceparent`: the HTTP header, `null` on stdio),
    /// so that a test can see exactly what a gateway sent upstream.
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
}

impl Config {
    /// Flag combinations clap's attributes cannot express (they depend on a flag's value).
    pub fn check_combinations(&self) -> Result<(), &'static str> {
        if self.cursor_mode != CursorMode::Normal && self.page_size.is_none() {
            return Err("--cursor-mode other than `normal` needs --page-size");
        }
        // Silently ignoring it would let a test believe it exercises a longer cycle.
        if self.cycle_length != DEFAULT_CYCLE_LENGTH && self.cursor_mode != CursorMode::Cycle {
            return Err("--cycle-length needs --cursor-mode cycle");
        }
        // Without pages the fixture issues no cursors and ignores any it is sent: these two
        // would silently change nothing.
        if self.page_size.is_none() {
            if self.violates(Violation::AcceptAnyCursor) {
                return Err("--violate accept-any-cursor needs --page-size");
            }
            if self.violates(Violation::RawCursor) {
                return Err("--violate raw-cursor needs --page-size");
            }
        }
        Ok(())
    }

    /// Whether `--violate` names `rule`.
    pub fn violates(&self, rule: Violation) -> bool {
        self.violate.contains(&rule)
    }
}

/// A protocol rule `--violate` breaks on purpose. Each breaks one rule and nothing else; the
/// default (no `--violate`) keeps them all.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// 2026 era: no result carries `resultType` (stripped from every result: lists, calls,
    /// `server/discover`, reads, MRTR `input_required` results alike). Breaks "`resultType`
    /// is required on every result".
    ResultType,
    /// 2026 era: `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`
    /// and `resources/read` results carry no `ttlMs` / `cacheScope` (`server/discover` keeps
    /// them). Breaks "servers MUST put caching hints on cacheable results".
    CacheHints,
    /// `serverInfo` has no `version` (`initialize` and `server/discover`), and over HTTP
    /// `GET /health` answers `{"status":"ok"}` without its `version`.
    NoVersion,
    /// The `echo` tool declares an `outputSchema` (`{"text": string}`, required; plus
    /// `readOnlyHint: true` so a checker that calls only read-only tools calls it) and returns
    /// `structuredContent` `{"text": 42}`, which does not match it. Breaks "structured content
    /// MUST conform to the output schema".
    OutputSchema,
    /// A `tools/call` of an unknown tool is JSON-RPC error -32050 (inside the band reserved for
    /// the MCP spec, and undefined there) instead of -32602.
    ReservedCode,
    /// A `tools/call` of an unknown tool is a normal result with `isError: true` instead of the
    /// JSON-RPC error -32602 (a protocol error reported as a tool execution error). Wins over
    /// `reserved-code`.
    UnknownToolResult,
    /// A protocol list request (`tools/list`, `resources/list`, ...) with a cursor the fixture
    /// never issued is answered with page 1 instead of -32602 Invalid cursor. Needs
    /// --page-size.
    AcceptAnyCursor,
    /// Protocol list cursors are plain decimal offsets (`"4"`, `"8"`, ...) instead of opaque
    /// strings: a client can read (and forge) the backend position. Needs --page-size.
    RawCursor,
    /// Progress notifications (`progress` tool, and `list_items` with --list-tool) name a
    /// progressToken other than the caller's, and their `progress` values decrease. Breaks
    /// "progress MUST increase" and "notifications reference the request's token".
    BadProgress,
    /// A legacy `initialize` asking for an unknown protocolVersion (say `1999-01-01`) gets that
    /// version echoed back instead of a supported one; a 2026 request whose `_meta` names an
    /// unsupported version is served instead of answered -32022.
    EchoUnknownVersion,
    /// A legacy `initialize` is answered with protocolVersion `2024-99-99`, a version no MCP
    /// revision has, whatever was asked for. Breaks "the server answers with the requested
    /// version when it supports it, else its latest supported one".
    BadVersionEcho,
    /// HTTP: a POST with a foreign `Origin` (not localhost / 127.0.0.1 / ::1) is served instead
    /// of refused with 403 (no DNS-rebinding protection).
    NoOriginCheck,
    /// HTTP: the `MCP-Protocol-Version` header is not checked: an unsupported value (say
    /// `1999-01-01`), or one that differs from the body's `_meta` version, is served instead of
    /// refused with 400.
    NoVersionHeaderCheck,
    /// The read-only `read_big` tool returns 2 MiB of text whatever its arguments (a read-only
    /// tool whose answer blows any sane read budget).
    BigRead,
    /// Read-only tools' text results (`read_big`, `lossless`) contain a fake AWS access key id
    /// (`AKIAIOSFODNN7EXAMPLE`) and a fake GitHub token (`ghp_` + 36 alphanumerics): secrets
    /// leaking through a tool result.
    Secret,
    /// `echo` answers with both `result` and `error` in one response, which is no valid
    /// JSON-RPC response: a gateway must not relay it as either.
    ResultAndError,
    /// The `tools` capability does not declare `listChanged` (S-6: a tool set that changes
    /// cannot be announced).
    NoListChanged,
    /// `resources/read` serves any URI, a path traversal or an unknown scheme included (an
    /// empty text), instead of refusing what it does not have (S-25).
    ReadAnyUri,
    /// HTTP, legacy sessions: `Mcp-Session-Id`s are a counter (`1`, `2`, ...), predictable
    /// (S-18).
    SequentialSessions,
    /// The `elicit` tool is annotated read-only (so a checker calls it) and its elicitation asks
    /// for a `password` (S-27: no sensitive data through elicitation).
    SensitiveElicitation,
    /// `echo` answers with a result nested [`DEEP_ANSWER_DEPTH`] arrays deep, deeper than
    /// JSON parsers go (serde_json stops at 128): the answer cannot be read, but its `id`,
    /// which comes first, can.
    DeepAnswer,
    /// A `notifications/cancelled` (for any request, answered or not) makes the fixture exit
    /// (status 3): a server that a cancellation takes down (S-13: cancellation is
    /// fire-and-forget).
    CancelCrash,
    /// A `notifications/cancelled` naming the `initialize` request is honoured: every later
    /// 2025-era request is answered -32600 (S-13: `initialize` is never cancelled). Per
    /// process: meant for stdio.
    CancellableInitialize,
    /// `add_tool` registers its tool without sending `notifications/tools/list_changed`
    /// (S-6: a tool set that changes is announced), though `tools.listChanged` is declared.
    SilentListChange,
}

/// How deep `--violate deep-answer` nests `echo`'s result.
pub const DEEP_ANSWER_DEPTH: usize = 200;

/// How `--list-tool`'s `list_items` behaves. Every mode but `good` breaks one rule of a
/// well-behaved list tool; the rest is as in `good`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListToolMode {
    /// Well-behaved: `limit` 1..=50 (default 20; above 50 is a tool error), opaque cursors
    /// (invalid ones are -32602), `structuredContent` `{"items": [...], "nextCursor": "..."}`
    /// (no `nextCursor` on the last page) mirrored in the text block, 200-byte bodies, and an
    /// `outputSchema` describing the page.
    Good,
    /// `limit` has no `maximum` and any limit is honoured (`limit: 1000` returns all 120).
    Unbounded,
    /// Honours `limit` up to 10; a larger one gets 10 rows and no `nextCursor` although more
    /// rows exist (silent truncation).
    SilentCap,
    /// Answers a bare JSON array of items in the text block only (no `structuredContent`, no
    /// `outputSchema`): no room for a cursor, so only the first page is reachable.
    Flat,
    /// `nextCursor` is standard base64 of `{"offset":N}`: the backend position, readable and
    /// forgeable.
    RawCursor,
    /// Item bodies are 5,000 bytes, so a default page of 20 is over 100,000 bytes.
    BigPage,
}

/// Which protocol era(s) the fixture speaks.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraMode {
    /// 2026-07-28 only: `server/discover`, `_meta` on every request, `initialize` → -32022.
    Modern,
    /// 2025-11-25 / 2025-06-18 / 2025-03-26 only: `initialize` handshake, `server/discover` → -32601.
    Legacy,
    /// Both; the era of each request is chosen by how the client opens.
    Dual,
}

/// How tools/list cursors behave. All modes but `normal` exist to catch pagination loops and
/// cursor-handling bugs in a client.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorMode {
    /// Opaque string cursors; the last page has no `nextCursor`.
    Normal,
    /// Every page returns the same `nextCursor` (the one leading to page 2): an endless list.
    Repeat,
    /// Page 3 returns page 1's `nextCursor`, so pages 2 and 3 repeat forever (see
    /// --cycle-length for longer cycles).
    Cycle,
    /// Page 1's `nextCursor` is `""`, which is a *valid* cursor leading to page 2 (2026 says an
    /// empty string must not be taken as the end of the list).
    EmptyString,
    /// `nextCursor` is a JSON number instead of a string (the number is accepted back).
    NonString,
}

/// Start-up faults.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMode {
    /// Start normally.
    Normal,
    /// Exit with code 3 immediately, before reading anything.
    Crash,
    /// Read input but never answer anything.
    Hang,
    /// Print a few non-JSON lines on stdout first, then behave normally.
    Garbage,
}

fn main() {
    let cfg = Config::parse();
    if let Err(problem) = cfg.check_combinations() {
        Config::command()
            .error(clap::error::ErrorKind::MissingRequiredArgument, problem)
            .exit();
    }
    if cfg.start == StartMode::Crash {
        eprintln!("sluice-fixture: --start crash: exiting with code 3");
        std::process::exit(3);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sluice-fixture: cannot start the tokio runtime: {e}");
            std::process::exit(1);
        }
    };
    let http_port = cfg.http;
    let fixture = Arc::new(fixture::Fixture::new(cfg));
    let result = runtime.block_on(async move {
        match http_port {
            Some(port) => http::run(fixture, port).await,
            None => stdio::run(fixture).await,
        }
    });
    if let Err(e) = result {
        eprintln!("sluice-fixture: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn discovery_flag_requirements() {
        let parse = |args: &[&str]| {
            let argv = std::iter::once("sluice-fixture").chain(args.iter().copied());
            Config::try_parse_from(argv).map_err(|e| e.kind())
        };
        use clap::error::ErrorKind;
        for flag in ["--fail-page", "--hang-page"] {
            assert_eq!(
                parse(&[flag, "2"]).err(),
                Some(ErrorKind::MissingRequiredArgument)
            );
            assert!(parse(&[flag, "0", "--page-size", "2"]).is_err());
            assert!(parse(&[flag, "2", "--page-size", "2"]).is_ok());
        }
        assert!(
            parse(&[
                "--cursor-mode",
                "cycle",
                "--page-size",
                "2",
                "--cycle-length",
                "1"
            ])
            .is_err()
        );
        let cfg = parse(&["--page-size", "2", "--cycle-length", "3"]).unwrap();
        assert!(
            cfg.check_combinations().is_err(),
            "needs --cursor-mode cycle"
        );
        let cfg = parse(&["--page-size", "2"]).unwrap();
        assert_eq!(cfg.cycle_length, crate::DEFAULT_CYCLE_LENGTH);
        assert!(cfg.check_combinations().is_ok());
    }

    #[test]
    fn violate_is_repeatable_and_comma_delimited() {
        let argv = [
            "sluice-fixture",
            "--violate",
            "result-type,cache-hints",
            "--violate",
            "secret",
        ];
        let cfg = Config::try_parse_from(argv).unwrap();
        assert_eq!(
            cfg.violate,
            [
                Violation::ResultType,
                Violation::CacheHints,
                Violation::Secret
            ]
        );
        assert!(cfg.violates(Violation::Secret) && !cfg.violates(Violation::BigRead));
        assert!(Config::try_parse_from(["sluice-fixture", "--violate", "nope"]).is_err());
        assert!(
            Config::try_parse_from(["sluice-fixture"])
                .unwrap()
                .violate
                .is_empty()
        );
        // The cursor violations need pages to show.
        for rule in ["accept-any-cursor", "raw-cursor"] {
            let cfg = Config::try_parse_from(["sluice-fixture", "--violate", rule]).unwrap();
            assert!(cfg.check_combinations().is_err(), "{rule}");
            let paged = ["sluice-fixture", "--violate", rule, "--page-size", "3"];
            let cfg = Config::try_parse_from(paged).unwrap();
            assert!(cfg.check_combinations().is_ok(), "{rule}");
        }
    }
}
