//! A child process speaking newline-delimited JSON-RPC on stdin/stdout.
//!
//! The child starts with a cleared environment plus `PATH`, `HOME` and what
//! the config grants (SECURITY.md, S-21), in its own process group so that
//! its descendants end with it; sandboxed, it runs under `bwrap`
//! (`super::sandbox`). Every spawn is logged, with its sandbox. Its stderr
//! goes to sluice's log under the upstream's name. A line on stdout that is not
//! JSON-RPC is logged and skipped. A line longer than the transport ceiling
//! is not buffered: its first bytes are kept to find the request it answers,
//! the rest is read and discarded up to its newline, and that request fails
//! as too large (the router answers it); the connection goes on.

use sluice_core::boundary::redact::{Redactions, Redactor};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures::StreamExt;
use futures::future::BoxFuture;
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use rustix::process::{Resource, Rlimit};
use serde_json::Value;
use sluice_core::config::Rlimits;
use sluice_core::payload::{CARRIED_AS_TEXT_FROM, Payload};
use sluice_core::policy::UpstreamFailure;
use sluice_core::protocol::Era;
use sluice_core::sandbox::Sandboxing;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{Mutex, mpsc};
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead};

use super::child::ChildSpec;
use super::wire::{Inbound, Outgoing, Received, Unreadable, Wire};
use crate::pending::Answer;

/// POSIX signal numbers (the same on every Unix sluice runs on).
const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;

/// The longest stderr line kept in the log.
const MAX_LOGGED_STDERR_LINE: usize = 4096;

/// How much of an oversized stdout line is kept to find its `id`.
const OVERSIZED_PREFIX: usize = 4096;

/// The writing half and the process of a stdio upstream.
pub(crate) struct StdioWire {
    /// The upstream's name, for the log.
    name: Arc<str>,
    lines: mpsc::Sender<Vec<u8>>,
    child: Mutex<Box<dyn ChildWrapper>>,
}

/// The child's output streams, before their reader tasks start.
pub(crate) struct StdioReaders {
    name: Arc<str>,
    stdout: ChildStdout,
    stderr: ChildStderr,
    redactor: Arc<Redactor>,
}

/// Spawns the child. The returned wire is ready to send; start the
/// readers ([`StdioReaders::start`]) once there is an [`Inbound`] to
/// deliver to.
pub(crate) fn spawn(
    name: &Arc<str>,
    spec: &ChildSpec<'_>,
) -> std::io::Result<(StdioWire, StdioReaders)> {
    let mut command = match spec.sandbox {
        Sandboxing::None => {
            let mut command = tokio::process::Command::new(spec.command);
            command.args(spec.args);
            command
        }
        Sandboxing::Bwrap(policy) => {
            let (bwrap, line) =
                super::sandbox::bwrap(spec, policy).map_err(std::io::Error::other)?;
            let mut command = tokio::process::Command::new(bwrap);
            command.args(line);
            command
        }
    };
    command
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for inherited in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(inherited) {
            command.env(inherited, value);
        }
    }
    command.envs(spec.env);
    if let Some(cwd) = spec.cwd {
        command.current_dir(cwd);
    }
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let mut child = wrapped.spawn()?;
    let pid = child.id();
    if let Some(pid) = pid {
        limit(name, pid, spec.rlimit);
    }
    // Every spawn is on record (SECURITY.md, S-21): who, what, which
    // process; the environment by names only, its values may be
    // credentials.
    tracing::info!(
        upstream = &**name,
        command = spec.command,
        args = ?redacted_args(spec),
        pid = ?pid,
        env_keys = ?spec.env.keys().collect::<Vec<_>>(),
        cwd = ?spec.cwd,
        sandbox = %spec.sandbox.summary(),
        "spawned upstream"
    );
    let missing = || std::io::Error::other("child stdio was not piped");
    let stdin = child.stdin().take().ok_or_else(missing)?;
    let stdout = child.stdout().take().ok_or_else(missing)?;
    let stderr = child.stderr().take().ok_or_else(missing)?;
    let wire = StdioWire {
        name: Arc::clone(name),
        lines: write_lines(stdin),
        child: Mutex::new(child),
    };
    let readers = StdioReaders {
        name: Arc::clone(name),
        stdout,
        stderr,
        redactor: Arc::clone(spec.redactor),
    };
    Ok((wire, readers))
}

/// Writes the lines sent to the returned sender to the child's stdin, on
/// their own task, until the child is gone.
fn write_lines(mut stdin: ChildStdin) -> mpsc::Sender<Vec<u8>> {
    let (lines, mut rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(async move {
        while let Some(mut batch) = rx.recv().await {
            // Lines already waiting go out in the same write; a line alone
            // (a large request, most often) is written without a copy.
            while let Ok(more) = rx.try_recv() {
                batch.extend_from_slice(&more);
            }
            let written = async {
                stdin.write_all(&batch).await?;
                stdin.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
        // Dropping stdin closes it: a well-behaved child exits on EOF.
    });
    lines
}

/// Applies `rlimit` to the running child. It is set right after the
/// spawn, so the microseconds before it are unlimited; what the child
/// starts afterwards inherits the limits. A limit that cannot be set is
/// logged, and the child keeps running: the limits are a guard rail, not a
/// sandbox (see SECURITY.md).
fn limit(name: &str, pid: u32, rlimit: &Rlimits) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    for (resource, value, what) in [
        (Resource::As, rlimit.memory_bytes, "memory_bytes"),
        (Resource::Cpu, rlimit.cpu_seconds, "cpu_seconds"),
        (Resource::Nofile, rlimit.open_files, "open_files"),
    ] {
        let Some(value) = value else { continue };
        let limit = Rlimit {
            current: Some(value),
            maximum: Some(value),
        };
        if let Err(e) = rustix::process::prlimit(Some(pid), resource, limit) {
            tracing::warn!(
                upstream = name,
                "could not set rlimit.{what} = {value}: {e}"
            );
        }
    }
}

impl StdioReaders {
    /// Starts the reader tasks: stderr to the log, stdout to `inbound`
    /// until the child closes it. `max_line` is the transport ceiling.
    pub(crate) fn start(self, inbound: Arc<dyn Inbound>, max_line: usize) {
        let name = self.name;
        tokio::spawn(log_stderr(Arc::clone(&name), self.stderr, self.redactor));
        tokio::spawn(async move {
            let mut frames = FramedRead::new(self.stdout, CappedLines::new(max_line));
            while let Some(frame) = frames.next().await {
                let line = match frame {
                    Ok(Frame::Line(line)) => line,
                    Ok(Frame::Oversized { prefix }) => {
                        tracing::warn!(
                            upstream = %name,
                            "upstream wrote a message longer than the transport ceiling ({max_line} bytes); discarded"
                        );
                        inbound.unreadable(&prefix, Unreadable::TooLarge);
                        continue;
                    }
                    Err(_) => break,
                };
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let large = line.len() >= CARRIED_AS_TEXT_FROM;
                let received = Received::parse(&line);
                let Some(Ok(message)) = received else {
                    inbound.unreadable(&line, Unreadable::Malformed);
                    continue;
                };
                if large {
                    // A large line's buffer is not kept for the small ones
                    // after it: only what is left to read is.
                    drop(line);
                    let buffer = frames.read_buffer_mut();
                    *buffer = BytesMut::from(&buffer[..]);
                }
                // The era only matters for how replies travel over HTTP.
                inbound.message(Era::Legacy, message, None);
            }
            inbound.ended();
        });
    }
}

/// A line of stdout, or what is left of one too long to keep.
#[derive(Debug, PartialEq)]
enum Frame {
    Line(BytesMut),
    Oversized { prefix: Vec<u8> },
}

/// Newline framing that never buffers more than `max` bytes: a longer line
/// is reduced to its first [`OVERSIZED_PREFIX`] bytes and the rest is
/// dropped as it arrives.
struct CappedLines {
    max: usize,
    /// Bytes of the buffer already searched for a newline.
    searched: usize,
    /// The prefix of the oversized line being discarded.
    discarding: Option<Vec<u8>>,
}

impl CappedLines {
    fn new(max: usize) -> Self {
        CappedLines {
            max,
            searched: 0,
            discarding: None,
        }
    }
}

impl Decoder for CappedLines {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if self.discarding.is_some() {
            return Ok(match memchr::memchr(b'\n', buf) {
                Some(end) => {
                    buf.advance(end + 1);
                    self.discarding
                        .take()
                        .map(|prefix| Frame::Oversized { prefix })
                }
                None => {
                    buf.clear();
                    None
                }
            });
        }
        if let Some(at) = memchr::memchr(b'\n', &buf[self.searched..]) {
            let end = self.searched + at;
            self.searched = 0;
            if end > self.max {
                let prefix = buf[..OVERSIZED_PREFIX.min(end)].to_vec();
                buf.advance(end + 1);
                return Ok(Some(Frame::Oversized { prefix }));
            }
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            return Ok(Some(Frame::Line(line)));
        }
        if buf.len() > self.max {
            self.discarding = Some(buf[..OVERSIZED_PREFIX.min(buf.len())].to_vec());
            buf.clear();
            self.searched = 0;
            return Ok(None);
        }
        self.searched = buf.len();
        Ok(None)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if let Some(prefix) = self.discarding.take() {
            return Ok(Some(Frame::Oversized { prefix }));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        self.searched = 0;
        Ok(Some(Frame::Line(buf.split())))
    }
}

/// The child's arguments as the log shows them: a token passed on the
/// command line is a secret like any other.
fn redacted_args(spec: &ChildSpec<'_>) -> Vec<String> {
    let mut counts = Redactions::default();
    spec.args
        .iter()
        .map(|a| {
            spec.redactor
                .redact_str(a, &mut counts)
                .unwrap_or_else(|| a.clone())
        })
        .collect()
}

/// An upstream's stderr, line by line, into sluice's log, redacted like a
/// result: a server that prints its environment or a token on start must
/// not put it in sluice's log.
async fn log_stderr(name: Arc<str>, stderr: ChildStderr, redactor: Arc<Redactor>) {
    // Lines are capped like stdout's: a child that never writes a newline
    // must not make sluice buffer its whole output.
    let codec =
        AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), MAX_LOGGED_STDERR_LINE);
    let mut lines = FramedRead::new(stderr, codec);
    let mut skipped = false;
    loop {
        let line = match lines.next().await {
            Some(line) => line,
            // After a decode error the stream pauses once with `None`;
            // reading on resumes after the skipped line.
            None if std::mem::take(&mut skipped) => continue,
            None => break,
        };
        match line {
            Ok(line) => {
                let text = String::from_utf8_lossy(&line);
                let mut counts = Redactions::default();
                let text = redactor
                    .redact_str(&text, &mut counts)
                    .map_or(text, std::borrow::Cow::Owned);
                tracing::info!(target: "sluice::upstream::stderr", upstream = %name, "{}", text.trim_end());
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                skipped = true;
                tracing::info!(target: "sluice::upstream::stderr", upstream = %name, "(a stderr line longer than {MAX_LOGGED_STDERR_LINE} bytes was skipped)");
            }
            Err(AnyDelimiterCodecError::Io(_)) => break,
        }
    }
}

// === impl StdioWire ===

impl StdioWire {
    /// Queues one message as a line; `false` when the child is gone.
    async fn send(&self, message: &Value) -> bool {
        // Serializing a `Value` cannot fail: its keys are strings.
        let Ok(line) = serde_json::to_vec(message) else {
            return false;
        };
        self.send_text(line).await
    }

    /// Queues one message's text as a line.
    async fn send_text(&self, mut line: Vec<u8>) -> bool {
        line.push(b'\n');
        self.lines.send(line).await.is_ok()
    }

    /// SIGTERM to the process group, then SIGKILL after `grace`.
    async fn kill(&self, grace: Duration) {
        let name = &*self.name;
        let mut child = self.child.lock().await;
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        let _ = child.signal(SIGTERM);
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(_) => tracing::info!(upstream = name, "upstream exited after SIGTERM"),
            Err(_) => {
                tracing::warn!(
                    upstream = name,
                    "upstream ignored SIGTERM for {grace:?}; sending SIGKILL"
                );
                let _ = child.signal(SIGKILL);
                let _ = child.wait().await;
            }
        }
    }

    /// The exit status, once the child has exited: the reader saw EOF, so
    /// it is given a moment to be reaped.
    async fn reaped(&self) -> Option<std::process::ExitStatus> {
        for _ in 0..10 {
            if let Some(status) = self.child.lock().await.try_wait().ok().flatten() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

impl Wire for StdioWire {
    /// Writes the request; its answer comes on stdout, through the reader.
    fn exchange<'a>(
        &'a self,
        request: Outgoing<'a>,
        _inbound: &'a dyn Inbound,
    ) -> BoxFuture<'a, Result<Answer<Payload>, UpstreamFailure>> {
        Box::pin(async move {
            if !self.send_text(request.message).await {
                return Ok(Err(None));
            }
            std::future::pending().await
        })
    }

    fn notify<'a>(&'a self, _era: Era, message: &'a Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self.send(message).await;
        })
    }

    fn reply<'a>(&'a self, era: Era, message: &'a Value) -> BoxFuture<'a, ()> {
        self.notify(era, message)
    }

    fn terminate(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(self.kill(grace))
    }

    fn exit_status(&self) -> BoxFuture<'_, Option<std::process::ExitStatus>> {
        Box::pin(self.reaped())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(max: usize, chunks: &[&[u8]]) -> Vec<Frame> {
        let mut codec = CappedLines::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Ok(Some(frame)) = codec.decode(&mut buf) {
                out.push(frame);
            }
        }
        while let Ok(Some(frame)) = codec.decode_eof(&mut buf) {
            out.push(frame);
        }
        out
    }

    #[test]
    fn long_lines_are_cut_to_a_prefix_and_the_next_line_is_read() {
        let long = vec![b'x'; 10_000];
        let got = frames(
            5_000,
            &[
                b"{\"id\":1}\n",
                &long[..3_000],
                &long[3_000..],
                b"\n{\"id\":2}\n",
                b"tail",
            ],
        );
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], Frame::Line(BytesMut::from(&b"{\"id\":1}"[..])));
        assert_eq!(
            got[1],
            Frame::Oversized {
                prefix: vec![b'x'; OVERSIZED_PREFIX]
            }
        );
        assert_eq!(got[2], Frame::Line(BytesMut::from(&b"{\"id\":2}"[..])));
        assert_eq!(got[3], Frame::Line(BytesMut::from(&b"tail"[..])));
    }

    #[test]
    fn a_line_exactly_at_the_ceiling_is_kept() {
        let line = vec![b'y'; 100];
        let mut input = line.clone();
        input.push(b'\n');
        assert_eq!(
            frames(100, &[&input]),
            vec![Frame::Line(BytesMut::from(&line[..]))]
        );
        assert!(matches!(frames(99, &[&input])[0], Frame::Oversized { .. }));
    }
}
