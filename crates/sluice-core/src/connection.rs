//! The rules for client connections to the HTTP listener: how many may be
//! open, how many from one client, and how long one may sit idle or dawdle
//! over a request head (slowloris). The shell keeps one
//! [`ConnectionTable`] per listener and one [`ConnectionClock`] per
//! connection, feeds them what it sees, and closes what they say to close.
//!
//! Why each bound exists:
//! - without a head timeout, a client that sends half a header and then
//!   nothing holds a connection (and a file descriptor) forever;
//! - without an idle timeout, keep-alive connections nobody uses pile up
//!   until the process runs out of descriptors, and then it can neither
//!   answer `/health` nor respawn a crashed upstream;
//! - without a cap per client, one client can take every slot, so the cap
//!   is also counted per address (an IPv6 client by its /64, which one
//!   host usually holds whole).

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

/// The bounds of `[server.connections]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `header_read_timeout`: from the first byte of a request to the end
    /// of its head.
    pub header_read_timeout: Duration,
    /// `idle_timeout`: how long a connection with no request in flight
    /// stays open waiting for the next one.
    pub idle_timeout: Duration,
    /// `body_read_timeout`: from the end of a request's head to the end of
    /// its body.
    pub body_read_timeout: Duration,
    /// `max`: connections open at once, all clients together.
    pub max_connections: usize,
    /// `max_per_client`: connections open at once from one client address.
    pub max_per_client: usize,
    /// `fd_reserve`: file descriptors kept free of client connections, for
    /// upstream processes, their pipes, reconnections and the stores.
    pub fd_reserve: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
            max_per_client: 256,
            fd_reserve: 256,
        }
    }
}

impl ConnectionLimits {
    /// The connection cap that holds under a file descriptor limit of
    /// `fd_limit`: `max_connections`, lowered so that `fd_reserve`
    /// descriptors (and a few for the process itself) stay free.
    pub fn cap_under(&self, fd_limit: u64) -> usize {
        // Standard streams, the listener, the log, the state store: a few
        // descriptors the process holds whatever else it does.
        const FIXED: u64 = 16;
        let reserved = self.fd_reserve as u64 + FIXED;
        let room = usize::try_from(fd_limit.saturating_sub(reserved)).unwrap_or(usize::MAX);
        self.max_connections.min(room).max(1)
    }
}

/// Why a new connection was refused (answered 503, then closed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionRefusal {
    /// Every slot is taken.
    #[error("sluice has {limit} connections open, its limit; retry later")]
    Full {
        /// The cap in force.
        limit: usize,
    },
    /// This client holds its share.
    #[error("this client has {limit} connections open, the limit per client; close some first")]
    ClientFull {
        /// `max_per_client`.
        limit: usize,
    },
}

/// Who a connection counts against: an IPv4 address (also written as an
/// IPv4-mapped IPv6 one), or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The key of a connection from `ip`.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => ClientKey(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey(IpAddr::V4(v4)),
                None => {
                    let s = v6.segments();
                    let prefix = Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                    ClientKey(IpAddr::V6(prefix))
                }
            },
        }
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// The connections a listener holds, counted in all and per client.
#[derive(Debug)]
pub struct ConnectionTable {
    cap: usize,
    max_per_client: usize,
    open: usize,
    per_client: HashMap<ClientKey, usize>,
}

impl ConnectionTable {
    /// A table admitting at most `cap` connections, `max_per_client` from
    /// one client.
    pub fn new(cap: usize, max_per_client: usize) -> Self {
        ConnectionTable {
            cap,
            max_per_client,
            open: 0,
            per_client: HashMap::new(),
        }
    }

    /// Counts a new connection from `client`, or says why it is refused.
    pub fn admit(&mut self, client: ClientKey) -> Result<(), ConnectionRefusal> {
        if self.open >= self.cap {
            return Err(ConnectionRefusal::Full { limit: self.cap });
        }
        let held = self.per_client.entry(client).or_insert(0);
        if *held >= self.max_per_client {
            return Err(ConnectionRefusal::ClientFull {
                limit: self.max_per_client,
            });
        }
        *held += 1;
        self.open += 1;
        Ok(())
    }

    /// Forgets a connection [`admit`](Self::admit) counted.
    pub fn release(&mut self, client: ClientKey) {
        if let Some(held) = self.per_client.get_mut(&client) {
            *held -= 1;
            if *held == 0 {
                self.per_client.remove(&client);
            }
            self.open = self.open.saturating_sub(1);
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open
    }
}

/// Why a connection is closed by its clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No request in flight for `idle_timeout`.
    Idle,
    /// A request head not finished within `header_read_timeout` of its
    /// first byte.
    SlowHead,
}

/// Where one connection is, and since when: a sans-IO state machine the
/// shell feeds with reads and request boundaries, and asks when to close.
/// Times are offsets from a reference instant the shell picks (the core
/// reads no clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionClock {
    phase: Phase,
    since: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Between requests, nothing read yet.
    Idle,
    /// Bytes of a head arrived; the head is not complete.
    ReadingHead,
    /// This many requests are being served (their heads are read).
    Serving(usize),
}

impl ConnectionClock {
    /// A connection opened at `now`.
    pub fn new(now: Duration) -> Self {
        ConnectionClock {
            phase: Phase::Idle,
            since: now,
        }
    }

    /// Bytes arrived at `now`. True when this starts a head, which moves
    /// the deadline closer (so the shell must re-arm its timer).
    pub fn on_read(&mut self, now: Duration) -> bool {
        if self.phase == Phase::Idle {
            self.phase = Phase::ReadingHead;
            self.since = now;
            return true;
        }
        false
    }

    /// A request's head was read completely: no clock runs while it is
    /// served (its body has a timeout of its own, and a response may
    /// stream for as long as the request lasts).
    pub fn on_request(&mut self, now: Duration) {
        self.phase = match self.phase {
            Phase::Serving(n) => Phase::Serving(n + 1),
            Phase::Idle | Phase::ReadingHead => Phase::Serving(1),
        };
        self.since = now;
    }

    /// A response was sent whole (or abandoned) at `now`.
    pub fn on_response_done(&mut self, now: Duration) {
        self.phase = match self.phase {
            Phase::Serving(n) if n > 1 => Phase::Serving(n - 1),
            _ => Phase::Idle,
        };
        self.since = now;
    }

    /// When the connection must be closed if nothing else happens, and
    /// why; `None` while a request is served.
    pub fn deadline(&self, limits: &ConnectionLimits) -> Option<(Duration, Expiry)> {
        match self.phase {
            Phase::Idle => Some((self.since + limits.idle_timeout, Expiry::Idle)),
            Phase::ReadingHead => Some((self.since + limits.header_read_timeout, Expiry::SlowHead)),
            Phase::Serving(_) => None,
        }
    }

    /// Whether the connection is due to close at `now`.
    pub fn expired(&self, now: Duration, limits: &ConnectionLimits) -> Option<Expiry> {
        self.deadline(limits)
            .and_then(|(at, why)| (now >= at).then_some(why))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::net::Ipv4Addr;

    use super::*;

    fn v4(last: u8) -> ClientKey {
        ClientKey::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn the_table_caps_in_all_and_per_client_and_frees_slots() {
        let mut table = ConnectionTable::new(3, 2);
        assert_eq!(table.admit(v4(1)), Ok(()));
        assert_eq!(table.admit(v4(1)), Ok(()));
        assert_eq!(
            table.admit(v4(1)),
            Err(ConnectionRefusal::ClientFull { limit: 2 })
        );
        assert_eq!(table.admit(v4(2)), Ok(()));
        assert_eq!(
            table.admit(v4(3)),
            Err(ConnectionRefusal::Full { limit: 3 })
        );
        table.release(v4(1));
        assert_eq!(table.open(), 2);
        assert_eq!(table.admit(v4(3)), Ok(()));
        // Releasing what was never admitted changes nothing.
        table.release(v4(9));
        assert_eq!(table.open(), 3);
        for c in [1, 2, 3] {
            table.release(v4(c));
        }
        assert_eq!(table.open(), 0);
        assert!(table.per_client.is_empty());
    }

    #[test]
    fn ipv6_clients_count_by_their_64_and_mapped_v4_as_v4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(ClientKey::of(a), ClientKey::of(b));
        assert_ne!(ClientKey::of(a), ClientKey::of(c));
        assert_eq!(ClientKey::of(a).to_string(), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(ClientKey::of(mapped), v4(1));
        assert_eq!(v4(1).to_string(), "10.0.0.1");
    }

    #[test]
    fn the_cap_keeps_the_reserve_free_and_never_reaches_zero() {
        let limits = ConnectionLimits::default();
        assert_eq!(limits.cap_under(1_000_000), 1024);
        assert_eq!(limits.cap_under(1024), 1024 - 256 - 16);
        assert_eq!(limits.cap_under(100), 1);
    }

    #[test]
    fn a_connection_expires_idle_or_mid_head_and_never_while_serving() {
        let limits = ConnectionLimits::default();
        let s = Duration::from_secs;
        let t0 = s(1000);
        let mut clock = ConnectionClock::new(t0);
        assert_eq!(clock.deadline(&limits), Some((t0 + s(60), Expiry::Idle)));
        assert_eq!(clock.expired(t0 + s(59), &limits), None);
        assert_eq!(clock.expired(t0 + s(60), &limits), Some(Expiry::Idle));
        // A head starts at 5 s: the deadline comes closer, once.
        assert!(clock.on_read(t0 + s(5)));
        assert!(!clock.on_read(t0 + s(6)));
        assert_eq!(clock.expired(t0 + s(15), &limits), Some(Expiry::SlowHead));
        clock.on_request(t0 + s(7));
        assert_eq!(clock.deadline(&limits), None);
        // Reads while serving (a body) move nothing.
        assert!(!clock.on_read(t0 + s(8)));
        clock.on_request(t0 + s(9));
        clock.on_response_done(t0 + s(100));
        assert_eq!(clock.expired(t0 + s(1000), &limits), None);
        clock.on_response_done(t0 + s(200));
        assert_eq!(clock.deadline(&limits), Some((t0 + s(260), Expiry::Idle)));
    }
}
