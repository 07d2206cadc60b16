//! One stdio connection: a child process speaking newline-delimited JSON-RPC, with requests
//! pipelined up to a window.
//!
//! Two tasks share the pipe pair. The connection's own task (the writer) owns the slot table:
//! whenever slots are free it claims calls from the phase, renders them all into one buffer
//! (one `write` system call for the batch), stamps their start time and waits. The reader task
//! reads stdout line by line, parses each line into an [`Answer`], stamps its arrival and sends
//! it back over a channel; the writer completes the matching slot (the id names it:
//! `id = sequence × window + slot`), records the latency and refills. Timeouts are swept on a
//! timer; a late answer to a timed-out call no longer matches its slot and is dropped.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::answer::{self, Answer};
use crate::phase::{Phase, Stats};
use crate::template::{self, Era, Template};

/// The id of the legacy `initialize` request; measured ids are never below the window, so
/// never 0.
const INITIALIZE_ID: u64 = 0;
/// How long a closing child may take to exit on its own before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// What the reader task reports.
enum Event {
    /// A response to one of our requests, and when it arrived.
    Answer {
        answer: Answer,
        at: Instant,
        /// The response's text, for the first error of a phase.
        detail: Option<String>,
    },
    /// stdout ended or failed: nothing more will arrive.
    Closed(String),
}

/// A call in flight.
#[derive(Clone, Copy)]
struct Slot {
    id: u64,
    start: Instant,
}

/// A running stdio server and its calls in flight.
pub struct StdioConn {
    child: Child,
    stdin: ChildStdin,
    events: mpsc::UnboundedReceiver<Event>,
    reader: JoinHandle<()>,
    /// Set at the start of each phase: the reader attaches the text of the next error answer.
    want_detail: Arc<AtomicBool>,
    template: Arc<Template>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Calls issued so far on this connection (the high part of each id).
    seq: u64,
    /// The batch being written.
    buf: Vec<u8>,
    timeout: Duration,
    /// Why the connection no longer works.
    dead: Option<String>,
}

impl StdioConn {
    /// Starts `command` and, for the legacy era, performs the `initialize` handshake.
    /// `window` is how many calls this connection keeps in flight.
    pub async fn open(
        command: &[String],
        era: Era,
        template: Arc<Template>,
        window: usize,
        timeout: Duration,
    ) -> Result<StdioConn, String> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| "no command given".to_owned())?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start `{program}`: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the child's stdin/stdout were not piped".into());
        };
        let (tx, events) = mpsc::unbounded_channel();
        let want_detail = Arc::new(AtomicBool::new(true));
        let reader = tokio::spawn(read_loop(stdout, tx, Arc::clone(&want_detail)));
        let window = window.max(1);
        let mut conn = StdioConn {
            child,
            stdin,
            events,
            reader,
            want_detail,
            template,
            slots: vec![None; window],
            free: (0..window).rev().collect(),
            seq: 0,
            buf: Vec::new(),
            timeout,
            dead: None,
        };
        if era == Era::Legacy {
            conn.handshake().await?;
        }
        Ok(conn)
    }

    /// `initialize` (2025-11-25, no capabilities), then `notifications/initialized`.
    async fn handshake(&mut self) -> Result<(), String> {
        let mut request = Vec::new();
        Template::initialize(true).render(&mut request, INITIALIZE_ID);
        self.send(&request).await?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .map_err(|_| format!("no answer to initialize within {:?}", self.timeout))?;
            match event {
                Some(Event::Answer { answer, detail, .. }) if answer.id == INITIALIZE_ID => {
                    if !answer.ok {
                        let detail = detail.unwrap_or_default();
                        return Err(format!("initialize failed: {detail}"));
                    }
                    break;
                }
                Some(Event::Answer { .. }) => {}
                Some(Event::Closed(why)) => return Err(format!("during initialize: {why}")),
                None => return Err("during initialize: the reader stopped".into()),
            }
        }
        self.send(&template::initialized_notification(true)).await
    }

    /// Writes `bytes` to the child's stdin, giving up after the timeout.
    async fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        match tokio::time::timeout(self.timeout, self.stdin.write_all(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("writing to the server's stdin: {e}")),
            Err(_) => Err(format!(
                "the server did not read its stdin for {:?}",
                self.timeout
            )),
        }
    }

    /// Issues calls from `phase`, keeping the window full, until the phase is over and every
    /// call in flight has been answered, timed out or lost.
    pub async fn run_phase(&mut self, phase: &Phase) -> Stats {
        let mut stats = Stats::new(self.timeout);
        if let Some(why) = &self.dead {
            stats.lost = Some(why.clone());
            return stats;
        }
        self.want_detail.store(true, Ordering::Relaxed);
        let window = self.slots.len() as u64;
        let tick = (self.timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(250));
        let sweep = tokio::time::sleep(tick);
        tokio::pin!(sweep);
        let mut in_flight = 0usize;
        loop {
            if self.dead.is_some() {
                self.lose_all(&mut stats, &mut in_flight);
                break;
            }
            // Fill every free slot, as one write.
            self.buf.clear();
            let now = Instant::now();
            while let Some(&slot) = self.free.last() {
                if !phase.claim(now) {
                    break;
                }
                self.free.pop();
                self.seq += 1;
                let id = self.seq * window + slot as u64;
                self.template.render(&mut self.buf, id);
                self.slots[slot] = Some(Slot { id, start: now });
                in_flight += 1;
            }
            if !self.buf.is_empty() {
                let batch = std::mem::take(&mut self.buf);
                let sent = self.send(&batch).await;
                self.buf = batch;
                if let Err(why) = sent {
                    self.dead = Some(why);
                    continue;
                }
            }
            if in_flight == 0 {
                break;
            }
            tokio::select! {
                biased;
                event = self.events.recv() => {
                    let Some(event) = event else {
                        self.dead = Some("the reader stopped".into());
                        continue;
                    };
                    self.on_event(event, &mut stats, &mut in_flight);
                    // Take whatever else already arrived before writing again.
                    while let Ok(event) = self.events.try_recv() {
                        self.on_event(event, &mut stats, &mut in_flight);
                    }
                }
                () = &mut sweep => {
                    self.sweep_timeouts(&mut stats, &mut in_flight);
                    sweep.as_mut().reset(tokio::time::Instant::now() + tick);
                }
            }
        }
        stats
    }

    /// Completes the slot an answer names; answers that match no slot (late, after a
    /// timeout) are dropped.
    fn on_event(&mut self, event: Event, stats: &mut Stats, in_flight: &mut usize) {
        match event {
            Event::Answer { answer, at, detail } => {
                let index = (answer.id % self.slots.len() as u64) as usize;
                let Some(slot) = self.slots[index].filter(|s| s.id == answer.id) else {
                    return;
                };
                self.slots[index] = None;
                self.free.push(index);
                *in_flight -= 1;
                let latency = at.saturating_duration_since(slot.start);
                if latency >= self.timeout {
                    // Answered after the timeout, before the sweep noticed: still a timeout.
                    self.timed_out(stats);
                    return;
                }
                stats.answered(answer.ok, latency);
                if let Some(detail) = detail {
                    stats.note_error(|| detail);
                }
            }
            Event::Closed(why) => self.dead = Some(why),
        }
    }

    /// Fails the calls older than the timeout and frees their slots.
    fn sweep_timeouts(&mut self, stats: &mut Stats, in_flight: &mut usize) {
        let now = Instant::now();
        for index in 0..self.slots.len() {
            let expired = self.slots[index]
                .is_some_and(|s| now.saturating_duration_since(s.start) >= self.timeout);
            if expired {
                self.slots[index] = None;
                self.free.push(index);
                *in_flight -= 1;
                self.timed_out(stats);
            }
        }
    }

    /// Counts a call that got no answer in time.
    fn timed_out(&self, stats: &mut Stats) {
        stats.failed();
        let timeout = self.timeout;
        stats.note_error(|| format!("no answer within {timeout:?}"));
    }

    /// The connection is gone: every call in flight fails.
    fn lose_all(&mut self, stats: &mut Stats, in_flight: &mut usize) {
        let why = self.dead.clone().unwrap_or_default();
        for (index, entry) in self.slots.iter_mut().enumerate() {
            if entry.take().is_some() {
                self.free.push(index);
                stats.failed();
            }
        }
        *in_flight = 0;
        stats.note_error(|| format!("connection lost: {why}"));
        stats.lost = Some(why);
    }

    /// Closes stdin (the server's cue to exit), waits briefly, then kills the child.
    pub async fn close(self) {
        let StdioConn {
            mut child,
            stdin,
            reader,
            ..
        } = self;
        drop(stdin);
        if tokio::time::timeout(EXIT_GRACE, child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
        reader.abort();
    }
}

/// Reads stdout line by line and reports each answer to one of our requests.
async fn read_loop(
    stdout: ChildStdout,
    tx: mpsc::UnboundedSender<Event>,
    want_detail: Arc<AtomicBool>,
) {
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let mut line = Vec::with_capacity(4096);
    let why = loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => break "the server closed its stdout".to_owned(),
            Ok(_) => {
                let at = Instant::now();
                // Anything else (notifications, log noise) is skipped.
                let Some(answer) = answer::parse(&line) else {
                    continue;
                };
                let detail = (!answer.ok && want_detail.swap(false, Ordering::Relaxed))
                    .then(|| answer::describe(&line));
                if tx.send(Event::Answer { answer, at, detail }).is_err() {
                    return;
                }
            }
            Err(e) => break format!("reading the server's stdout: {e}"),
        }
    };
    let _ = tx.send(Event::Closed(why));
}
