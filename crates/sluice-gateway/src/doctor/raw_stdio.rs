//! Raw exchanges with a fresh stdio process: messages the upstream
//! connector would never send (a handshake naming an unknown version, a
//! cancelled `initialize`), in the order a probe writes them.

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use serde_json::Value;
use sluice_core::doctor::observe::Outcome;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::codec::{FramedRead, LinesCodec};

use super::http::{RAW_MAX_BYTES, answer_outcome};

/// The command started afresh (in its own process group, killed with it,
/// its spawn logged like an upstream's), with only `PATH` and `HOME` of
/// the environment.
pub(super) struct RawProcess {
    child: Box<dyn ChildWrapper>,
    stdin: ChildStdin,
    lines: FramedRead<ChildStdout, LinesCodec>,
}

impl RawProcess {
    pub(super) fn start(command: &str, args: &[String]) -> Result<RawProcess, String> {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for inherited in ["PATH", "HOME"] {
            if let Some(v) = std::env::var_os(inherited) {
                cmd.env(inherited, v);
            }
        }
        let mut wrapped = CommandWrap::from(cmd);
        wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
        let mut child = wrapped
            .spawn()
            .map_err(|e| format!("could not start {command:?}: {e}"))?;
        tracing::info!(command, args = ?args, pid = ?child.id(), "spawned the server for a raw probe");
        let stdin = child.stdin().take().ok_or("no stdin")?;
        let stdout = child.stdout().take().ok_or("no stdout")?;
        Ok(RawProcess {
            child,
            stdin,
            lines: FramedRead::new(stdout, LinesCodec::new_with_max_length(RAW_MAX_BYTES)),
        })
    }

    /// Writes one message, a line.
    pub(super) async fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.stdin
            .write_all(&line)
            .await
            .map_err(|e| e.to_string())?;
        self.stdin.flush().await.map_err(|e| e.to_string())
    }

    /// Reads until the answer to `id`: that answer, and the answers to
    /// other requests read on the way, by id (the server's own requests
    /// and notifications are skipped).
    pub(super) async fn answer(
        &mut self,
        id: &Value,
    ) -> Result<(Outcome, Vec<(Value, Outcome)>), String> {
        let mut others = Vec::new();
        while let Some(line) = self.lines.next().await {
            let line = line.map_err(|e| e.to_string())?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("method").is_some() {
                continue;
            }
            match message.get("id") {
                Some(got) if got == id => return Ok((answer_outcome(&message), others)),
                Some(got) => others.push((got.clone(), answer_outcome(&message))),
                None => {}
            }
        }
        Err("the process closed its output without answering".to_owned())
    }

    pub(super) async fn kill(mut self) {
        let _ = Box::into_pin(self.child.kill()).await;
    }
}

/// Starts the command, sends one message and reads its answer, within
/// `timeout`.
pub(super) async fn raw_stdio(
    command: &str,
    args: &[String],
    message: &Value,
    timeout: Duration,
) -> Outcome {
    let exchange = async {
        let mut process = RawProcess::start(command, args)?;
        process.send(message).await?;
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let answer = process.answer(&id).await;
        process.kill().await;
        answer.map(|(outcome, _)| outcome)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => Outcome::Failed(e),
        Err(_) => Outcome::Failed(format!("no answer within {timeout:?}")),
    }
}
