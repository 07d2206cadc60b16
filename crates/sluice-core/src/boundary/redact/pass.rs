//! The one pass over a text: a case-insensitive Aho-Corasick DFA stepped
//! here, byte by byte, rather than through the crate's search calls.
//!
//! Two costs decide the redactor's speed, and the crate's searches pay
//! both: a fixed cost a call (building the search input, checking it,
//! dispatching), which dominates a record of many short strings; and, on a
//! long text, one dependent table lookup a byte (each byte's state needs the
//! previous one), which bounds a single pass at a few hundred MiB/s however
//! few instructions it takes. So a short text is stepped in a plain loop,
//! and a long one is cut into [`LANES`] lanes stepped together: the lanes'
//! lookups do not depend on each other, and the processor overlaps them.
//!
//! A lane starts `longest - 1` bytes before the part it owns (the DFA's
//! state only depends on that many bytes back), and reports only the
//! matches that end in its own part: every match is reported once, in the
//! order of its end, as the crate's overlapping search reports them.

use std::ops::Range;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind, StartKind};

/// How many lanes a long text is stepped in.
const LANES: usize = 4;

/// A lane owns at least this many bytes (and four times the warm-up): a
/// shorter text is stepped in one lane.
const MIN_LANE: usize = 4096;

/// The compiled literals.
#[derive(Debug, Clone)]
pub(super) struct Pass {
    dfa: DFA,
    start: StateID,
    /// How many bytes before its own part a lane starts.
    warm_up: usize,
}

/// The DFA's state at the end of a text in which no literal occurs: a join
/// continues from it over the next text's first word, instead of stepping
/// the end of this one again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Resume(StateID);

/// Where each lane is: the next byte, the first byte it owns, its state.
#[derive(Clone, Copy)]
struct Lane {
    at: usize,
    owns_from: usize,
    state: StateID,
}

impl Pass {
    /// `None` when there are no literals (or too many to compile).
    pub fn new<P: AsRef<[u8]>>(literals: &[P]) -> Option<Pass> {
        if literals.is_empty() {
            return None;
        }
        // No prefilter: with one, the start state is "special" and every
        // return to it (most bytes of prose) would leave the loop.
        let dfa = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            .prefilter(false)
            .build(literals)
            .ok()?;
        let start = dfa.start_state(Anchored::No).ok()?;
        let warm_up = dfa.max_pattern_len().saturating_sub(1);
        Some(Pass {
            dfa,
            start,
            warm_up,
        })
    }

    /// Whether any literal occurs in `text`.
    pub fn any(&self, text: &[u8]) -> bool {
        let mut state = self.start;
        self.step(&mut state, text, |_, _| true).is_some()
    }

    /// Whether any literal occurs in `left` followed by `right` (a join,
    /// checked without copying it).
    pub fn any_across(&self, left: &[u8], right: &[u8]) -> bool {
        let mut state = self.start;
        self.step(&mut state, left, |_, _| true).is_some()
            || self.step(&mut state, right, |_, _| true).is_some()
    }

    /// Whether any literal ends in `right`, in a text that is one with no
    /// literal, ending in the state `from`, followed by `right`.
    pub fn any_after(&self, from: Resume, right: &[u8]) -> bool {
        let mut state = from.0;
        self.step(&mut state, right, |_, _| true).is_some()
    }

    /// Calls `each(literal, range)` for every occurrence of every literal
    /// in `text`, overlapping ones too, in the order of their ends; the
    /// state at its end when there was none.
    pub fn each(&self, text: &[u8], mut each: impl FnMut(usize, Range<usize>)) -> Option<Resume> {
        let lane_len = text.len() / LANES;
        if lane_len < MIN_LANE.max(self.warm_up * 4) {
            let mut state = self.start;
            let mut none = true;
            self.step(&mut state, text, |state, end| {
                none = false;
                self.report(state, end, &mut each);
                false
            });
            return none.then_some(Resume(state));
        }
        let mut lanes: [Lane; LANES] = std::array::from_fn(|k| Lane {
            at: (k * lane_len).saturating_sub(self.warm_up),
            owns_from: k * lane_len,
            state: self.start,
        });
        // The states where each lane's matches end, and where.
        let mut hits: [Vec<(StateID, usize)>; LANES] = Default::default();
        self.step_lanes(text, &mut lanes, lane_len, &mut hits);
        // Each lane finishes alone: its warm-up was not its own part, so it
        // reaches the next lane's first byte (or the end) that much later.
        for (k, (lane, lane_hits)) in lanes.iter_mut().zip(hits.iter_mut()).enumerate() {
            let end = if k + 1 == LANES {
                text.len()
            } else {
                (k + 1) * lane_len
            };
            let Some(rest) = text.get(lane.at..end) else {
                continue;
            };
            let base = lane.at;
            self.step(&mut lane.state, rest, |state, at| {
                lane_hits.push((state, base + at));
                false
            });
        }
        let none = hits.iter().all(Vec::is_empty);
        for (state, end) in hits.into_iter().flatten() {
            self.report(state, end, &mut each);
        }
        // The last lane ends where the text does.
        none.then_some(Resume(lanes[LANES - 1].state))
    }

    /// Steps every lane `count` bytes, together, recording the match
    /// states each reaches in its own part. Not inlined, here and in
    /// [`Pass::step`]: in a function of its own, the loop keeps its
    /// pointers and states in registers.
    #[inline(never)]
    fn step_lanes(
        &self,
        text: &[u8],
        lanes: &mut [Lane; LANES],
        count: usize,
        hits: &mut [Vec<(StateID, usize)>; LANES],
    ) {
        let slice = |lane: &Lane| text.get(lane.at..lane.at + count).unwrap_or_default();
        let (a, b, c, d) = (
            slice(&lanes[0]),
            slice(&lanes[1]),
            slice(&lanes[2]),
            slice(&lanes[3]),
        );
        let dfa = &self.dfa;
        let mut s = lanes.map(|lane| lane.state);
        let mut rest = a.iter().zip(b).zip(c).zip(d);
        while let Some((((&ba, &bb), &bc), &bd)) = rest.next() {
            s[0] = dfa.next_state(Anchored::No, s[0], ba);
            s[1] = dfa.next_state(Anchored::No, s[1], bb);
            s[2] = dfa.next_state(Anchored::No, s[2], bc);
            s[3] = dfa.next_state(Anchored::No, s[3], bd);
            // One branch for the four lanes, taken only at a match.
            if dfa.is_special(s[0])
                | dfa.is_special(s[1])
                | dfa.is_special(s[2])
                | dfa.is_special(s[3])
            {
                let stepped = count - rest.len();
                for (k, lane) in lanes.iter().enumerate() {
                    let end = lane.at + stepped;
                    if dfa.is_match(s[k]) && end > lane.owns_from {
                        hits[k].push((s[k], end));
                    }
                }
            }
        }
        for (lane, state) in lanes.iter_mut().zip(s) {
            lane.at += count;
            lane.state = state;
        }
    }

    /// Steps `state` over `bytes`, calling `hit(state, end)` at each match
    /// state (`end` counted from the start of `bytes`); stops, returning
    /// where, when `hit` says so.
    #[inline(never)]
    fn step(
        &self,
        state: &mut StateID,
        bytes: &[u8],
        mut hit: impl FnMut(StateID, usize) -> bool,
    ) -> Option<usize> {
        let dfa = &self.dfa;
        let mut s = *state;
        for (at, &byte) in bytes.iter().enumerate() {
            s = dfa.next_state(Anchored::No, s, byte);
            if dfa.is_special(s) && matched(dfa, s, at + 1, &mut hit) {
                *state = s;
                return Some(at + 1);
            }
        }
        *state = s;
        None
    }

    /// Calls `each` for every literal that a match state ending at `end`
    /// stands for.
    fn report(&self, state: StateID, end: usize, each: &mut impl FnMut(usize, Range<usize>)) {
        for index in 0..self.dfa.match_len(state) {
            let literal = self.dfa.match_pattern(state, index);
            let len = self.dfa.pattern_len(literal);
            each(literal.as_usize(), end.saturating_sub(len)..end);
        }
    }
}

/// Whether a special state is a match that `hit` stops at: out of the
/// loop, so that the loop tests one bound a byte.
#[cold]
fn matched(
    dfa: &DFA,
    state: StateID,
    end: usize,
    hit: &mut impl FnMut(StateID, usize) -> bool,
) -> bool {
    dfa.is_match(state) && hit(state, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::AhoCorasick;

    /// The crate's own overlapping search, the reference.
    fn reference(literals: &[&str], text: &str) -> Vec<(usize, Range<usize>)> {
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(literals)
            .expect("literals compile");
        ac.find_overlapping_iter(text)
            .map(|m| (m.pattern().as_usize(), m.range()))
            .collect()
    }

    fn each(pass: &Pass, text: &str) -> Vec<(usize, Range<usize>)> {
        let mut out = Vec::new();
        pass.each(text.as_bytes(), |literal, range| out.push((literal, range)));
        out
    }

    #[test]
    fn a_long_text_in_lanes_reports_what_one_search_does() {
        let literals = [
            "token",
            "ToKen=",
            "ghp_",
            "secret",
            "key",
            "keyboard-layout-long",
        ];
        let pass = Pass::new(&literals).expect("compiles");
        // Literals at every lane boundary, across them, at both ends.
        let filler = "the quick brown fox jumps over the lazy dog ".repeat(1200);
        let mut text = format!("token={filler}");
        for cut in [1, 2, 3].map(|k| k * (text.len() / LANES)) {
            text.insert_str(cut - 3, "KEYBOARD-LAYOUT-LONG SeCrEt ghp_");
        }
        text.push_str("key");
        assert!(text.len() / LANES >= MIN_LANE, "the text runs in lanes");
        let expected = reference(&literals, &text);
        assert_eq!(expected.len(), 2 + 3 * 4 + 1);
        assert_eq!(each(&pass, &text), expected);
        // Every cut of a literal across a lane boundary.
        for shift in 0..24 {
            let mut shifted = filler.clone();
            shifted.insert_str(filler.len() / LANES - shift, "keyboard-layout-long");
            assert_eq!(
                each(&pass, &shifted),
                reference(&literals, &shifted),
                "{shift}"
            );
        }
    }

    #[test]
    fn short_texts_and_joins() {
        let pass = Pass::new(&["password", "ghp_"]).expect("compiles");
        assert_eq!(each(&pass, "my PASSWORD"), vec![(0, 3..11)]);
        assert!(pass.any(b"x ghp_"));
        assert!(!pass.any(b"an ordinary sentence"));
        assert!(pass.any_across(b"pass", b"word"));
        assert!(pass.any_across(b"gh", b"p_abc"));
        assert!(!pass.any_across(b"pass", b" word"));
        assert!(Pass::new::<&str>(&[]).is_none());
    }
}
