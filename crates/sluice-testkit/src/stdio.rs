//! stdio transport: newline-delimited JSON-RPC on stdin/stdout, logs on stderr.
//!
//! One reader loop classifies each line and spawns a task per request (so `hang` never blocks
//! anything else); a single writer task owns stdout and serialises everything the tasks emit.
//! The process exits on stdin EOF.

use std::io;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use crate::StartMode;
use crate::bulk::ReplyText;
use crate::era::Era;
use crate::fixture::Fixture;
use crate::jsonrpc::{Kind, RpcError, classify, error_response};
use crate::peer::{Out, Peer, ReqCtx};
use crate::protocol::spawn_request;

/// Lines printed by `--start garbage` before anything else: a banner, ANSI noise, broken JSON.
pub const GARBAGE_BANNER: [&str; 3] = [
    "sluice-fixture starting up (this line is not JSON)",
    "\u{1b}[32mready\u{1b}[0m",
    "{\"jsonrpc\": \"2.0\", \"truncated",
];

/// Serves stdio until stdin reaches EOF; then exits the process (code 0).
pub async fn run(fx: Arc<Fixture>) -> io::Result<()> {
    let (tx, rx) = mpsc::unbounded_channel::<Out>();
    tokio::spawn(write_loop(rx));

    if fx.cfg.start == StartMode::Garbage {
        for line in GARBAGE_BANNER {
            let _ = tx.send(Out::Raw(line.into()));
        }
    }
    let hang = fx.cfg.start == StartMode::Hang;
    eprintln!(
        "sluice-fixture: serving stdio (era {:?}{})",
        fx.cfg.era,
        if hang {
            ", --start hang: never answering"
        } else {
            ""
        }
    );

    // The whole process is one connection: list_changed goes straight to stdout.
    let peer = Peer::new();
    peer.set_notify(Some(tx.clone()));

    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if stdin.read_until(b'\n', &mut buf).await? == 0 {
            break;
        }
        if hang {
            continue;
        }
        let line = buf.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("sluice-fixture: unparseable input line: {e}");
                let err = RpcError::new(-32700, format!("Parse error: {e}"));
                let _ = tx.send(Out::Msg(error_response(&Value::Null, &err)));
                continue;
            }
        };
        match classify(&msg) {
            Kind::Request => {
                fx.record(&msg, None);
                let era = fx.era_of(&msg);
                let ctx = ReqCtx {
                    era,
                    out: tx.clone(),
                    peer: (era == Era::Legacy).then(|| Arc::clone(&peer)),
                    tracker: None,
                    param_headers: Vec::new(),
                };
                spawn_request(&fx, msg, ctx, Some(&peer));
            }
            Kind::Notification => fx.handle_notification(&msg, &peer),
            Kind::Response => peer.deliver(msg),
            Kind::Invalid => {
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                let err = RpcError::new(-32600, "Invalid Request");
                let _ = tx.send(Out::Msg(error_response(&id, &err)));
            }
        }
    }
    eprintln!("sluice-fixture: stdin closed, exiting");
    // Let the writer flush what is already queued, then exit.
    let _ = tx.send(Out::Exit(0));
    std::future::pending().await
}

/// Owns stdout: writes each message as one line, flushing whenever the queue runs dry. A bulk
/// response (`huge_read`, `huge_write`) is written chunk by chunk as it is produced, so it never
/// sits whole in memory; other messages wait until its line is complete.
/// `Out::Exit` flushes and exits the process; a broken stdout (the client stopped reading)
/// exits quietly.
async fn write_loop(mut rx: mpsc::UnboundedReceiver<Out>) {
    let mut out = BufWriter::new(tokio::io::stdout());
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(item) = next {
            let line = match item {
                Out::Msg(v) => ReplyText::Whole(v.to_string()),
                Out::Response(r) => r.text,
                Out::Raw(s) => ReplyText::Whole(s),
                Out::Exit(code) => {
                    let _ = out.flush().await;
                    std::process::exit(code);
                }
            };
            let written = async {
                for chunk in line.chunks() {
                    out.write_all(&chunk).await?;
                }
                out.write_all(b"\n").await
            };
            if written.await.is_err() {
                std::process::exit(0);
            }
            next = rx.try_recv().ok();
        }
        if out.flush().await.is_err() {
            std::process::exit(0);
        }
    }
}
