//! `citron-like`: a client-side range lock in the spirit of Citron (Gao et al., FAST'23)
//! over a shared-memory mapping, the one-host analog of one-sided RDMA (seed 3, §3.2).
//!
//! **The Citron paper and code are not available here.** What is below is reconstructed
//! from the paper's abstract and talk notes (`research/failover-anchors.md` §1) and the
//! seed's own description (seed 3, §3.2.1); every point says which.
//!
//! # What is taken from the sources
//!
//! - A **static segment tree of fan-out 4** over the unit space; **leaves cover 64 units**
//!   and a leaf is a **64-bit bitmap**, one bit per unit (notes; seed §3.2.1).
//! - A range is mapped to **at most two tree nodes** (k = 2, notes).
//! - A node conflicts **only with its ancestors and descendants** (and itself); the
//!   protocol is "**notify ancestors, wait for descendants**" (meet in the middle), with
//!   **ticket (bakery) counters** in an internal node's 8-byte word for requests of the
//!   node itself (`head`/`rear`) and for descendants (`d_head`/`d_rear`), and an occupied
//!   flag (notes; seed §3.2.1 steps 2a-2d).
//! - Citron's masked atomics (**Ext-FAA**, Ext-CAS) add to one field of a word without
//!   carrying into the next (notes).
//!
//! # What is a guess (this file's choices)
//!
//! - **Range to nodes** (the notes name a knapsack, without details): `L` = the lowest
//!   common ancestor of the range. If the range touches exactly two children of `L`, it is
//!   cut at their boundary and each part goes to the smallest node covering it (a leaf
//!   part locks only its bits); otherwise it locks `L` (with two nodes no better cover
//!   exists: any node below `L` covers at most one child). The cut is taken whenever it
//!   exists, since it never covers more units than `L`.
//! - **The node word** (one `u64`, eight 8-bit ticket counters, table below): the occupied
//!   flag and `head`/`rear` become one bakery per mode for the node's own holders
//!   (`occ_*`; "occupied" is `taken != done`), `d_head`/`d_rear` one per mode for
//!   descendants (`reg_*`). **Shared mode** (not mentioned by any source) is the reader
//!   half of each pair.
//! - **One rule for every ticket**: a client takes a ticket in the class of its step with
//!   one masked FAA, whose result is a snapshot of the whole word, and waits until every
//!   ticket of a *conflicting* class taken before it was released (`done == snapshot's
//!   taken`), DSLR's bakery test. Classes conflict when their modes do and at least one is
//!   an occupant: registrants (descendants) never wait for each other here, they meet at
//!   a lower node or leaf. So a descendant that registered first is waited for by a later
//!   occupant ("wait for descendants"), and a descendant that registers after an occupant
//!   waits for it ("notify ancestors" and see it occupied) — the same meeting the notes
//!   describe, with arrival order kept at every word. (The research file's own
//!   reconstruction, step 5, has a registrant that finds the ancestor occupied wait
//!   "until it clears": polling can miss the moment between one occupant leaving and the
//!   next one, which counted the registrant and waits for it, setting the flag again — a
//!   deadlock. Waiting for the earlier *tickets* to be done cannot miss it. Its order of
//!   ancestors is left open; registering bottom-up can deadlock too, see "No deadlock".)
//! - **Leaves**: an exclusive leaf part registers at the leaf's own word like a
//!   descendant and then sets its bits with a CAS loop ("if `w & mask == 0` then
//!   `w | mask`", Ext-CAS's job); a shared leaf part occupies the leaf's word in shared
//!   mode (whole leaf, so readers never hold bits). Bits have no queue: exclusive holders
//!   of one leaf may overtake each other (the seed reports starvation in its own Citron).
//! - **Order of steps**: a request registers once at each strict ancestor of its nodes
//!   and then occupies its nodes, all in the tree's **pre-order** (ancestors first, then
//!   left to right). Citron notifies ancestors "spaced by m layers" and polls the subtree
//!   (seed §3.2.1); here every ancestor is notified and nothing is polled (m = 1).
//! - **Ext-FAA is emulated** by a CAS loop (no masked FAA on x86); a node step costs a
//!   load and at least one CAS, a leaf step likewise. The seed's own re-implementation
//!   lacked masked CAS and locked whole leaves; this one has bit-precise leaves.
//! - The tree does not grow (Citron can add a root in microseconds; the suites' space is
//!   fixed).
//!
//! # The node word
//!
//! | bits  | field         | counts                                          |
//! |-------|---------------|-------------------------------------------------|
//! | 0-7   | `occ_s` taken | shared holders of this node: tickets taken      |
//! | 8-15  | `occ_s` done  | ... released                                    |
//! | 16-23 | `occ_x` taken | exclusive holders of this node (`rear`)         |
//! | 24-31 | `occ_x` done  | ... released (`head`)                           |
//! | 32-39 | `reg_s` taken | shared descendants registered (`d_rear`, shared)|
//! | 40-47 | `reg_s` done  | ... deregistered                                |
//! | 48-55 | `reg_x` taken | exclusive descendants registered (`d_rear`)     |
//! | 56-63 | `reg_x` done  | ... deregistered (`d_head`)                     |
//!
//! Counters wrap at 256; equality stays exact while fewer than 256 tickets of one class
//! are outstanding on one word. A request holds at most one ticket per word, so a tree
//! serves at most [`MAX_CLIENTS`] requests at a time (held or waiting).
//!
//! # Correctness
//!
//! - *Exclusion.* Two requests whose covered units overlap and whose modes conflict have
//!   nodes `a`, `b` with `a` equal to or an ancestor of `b` (covers of tree nodes are
//!   nested or disjoint). Both take a ticket on `a`'s word in conflicting classes (an
//!   occupant of `a` and an occupant or registrant of `a`), so the later one waits for the
//!   earlier one's release — or, for two exclusive parts of one leaf, their bits collide in
//!   the CAS. The waited-for condition is stable: a conflicting ticket taken later waits
//!   for this one, so it cannot be released first and move `done` past the snapshot.
//! - *No deadlock.* Every request takes its tickets in pre-order and waits only at its
//!   newest one. A request waiting at word `n` waits for an earlier ticket at `n`; that
//!   ticket's owner has either entered `n` and is at a word after `n` in pre-order, or
//!   waits at `n` for a still earlier ticket. A bit holder of a leaf is past the leaf.
//!   Chains of waits thus move forward in pre-order and end at a request that holds all
//!   its steps. (Notifying the parent before the grandparent breaks this: `R` registers
//!   at `P` and will occupy its child `C`; `S`, below `C`, registers at `C` (before `R`
//!   occupies it) and then at `P`; `Q` occupies `P` after `R`'s registration there but
//!   before `S`'s: `Q` waits for `R`, `R` for `S`, `S` for `Q`.)
//! - *Memory order.* Entering (a snapshot or a re-read that shows the earlier tickets
//!   done, a successful bit CAS) acquires; releasing (the `done` add, the bit clear)
//!   releases. `tests/citron_loom.rs` checks the protocol on loom's atomics through the
//!   same code.

use std::ops::Range;
use std::sync::atomic::Ordering;

use rangelock::Mode;

use super::dslr_shm::{AtomicWord, AtomicWords};

pub use super::dslr_shm::ShmWords;

/// The report name of the peer.
pub const NAME: &str = "citron-like";
/// Units per leaf: one bit each in a 64-bit word.
pub const LEAF_UNITS: u64 = 64;
/// Children per internal node.
pub const FAN_OUT: u64 = 4;
/// Most requests (held or waiting) one tree serves at a time: a request holds at most one
/// ticket per word, and the 8-bit counters stay exact below 256 outstanding tickets of a
/// class; half of that, as a margin. With one request per client, the most clients.
pub const MAX_CLIENTS: usize = 127;
/// Most tree levels above the leaves (`64 * 4^15` units).
pub const MAX_HEIGHT: u32 = 15;

/// Ticket classes of a node word, in field order (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    OccShared = 0,
    OccExclusive = 1,
    RegShared = 2,
    RegExclusive = 3,
}

impl Class {
    fn occupy(mode: Mode) -> Class {
        match mode {
            Mode::Shared => Class::OccShared,
            Mode::Exclusive => Class::OccExclusive,
        }
    }

    fn register(mode: Mode) -> Class {
        match mode {
            Mode::Shared => Class::RegShared,
            Mode::Exclusive => Class::RegExclusive,
        }
    }

    pub(super) fn taken_shift(self) -> u32 {
        self as u32 * 16
    }

    pub(super) fn done_shift(self) -> u32 {
        self as u32 * 16 + 8
    }

    /// The classes a ticket of `self` waits for (bit `c` for class `c`): conflicting modes,
    /// at least one side an occupant.
    pub(super) fn waits_for(self) -> u8 {
        const OS: u8 = 1 << Class::OccShared as u8;
        const OX: u8 = 1 << Class::OccExclusive as u8;
        const RS: u8 = 1 << Class::RegShared as u8;
        const RX: u8 = 1 << Class::RegExclusive as u8;
        match self {
            Class::OccShared => OX | RX,
            Class::OccExclusive => OS | OX | RS | RX,
            Class::RegShared => OX,
            Class::RegExclusive => OS | OX,
        }
    }
}

/// A node word's value; see the table in the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeWord(pub u64);

impl NodeWord {
    fn field(self, shift: u32) -> u64 {
        (self.0 >> shift) & 0xFF
    }

    /// `self` with the 8-bit field at `shift` incremented, wrapping inside the field (what
    /// Citron's masked FAA does in one operation).
    fn bumped(self, shift: u32) -> NodeWord {
        let field = (self.field(shift) + 1) & 0xFF;
        NodeWord(self.0 & !(0xFF << shift) | field << shift)
    }

    /// Whether a ticket of `class` whose FAA returned `self` may enter when the word reads
    /// `now`: every earlier ticket of a class it waits for was released.
    pub(super) fn may_enter(self, waits_for: u8, now: NodeWord) -> bool {
        [Class::OccShared, Class::OccExclusive, Class::RegShared, Class::RegExclusive]
            .into_iter()
            .filter(|c| waits_for & (1 << *c as u8) != 0)
            .all(|c| now.field(c.done_shift()) == self.field(c.taken_shift()))
    }

    /// Whether every ticket taken was released (an idle word).
    pub fn is_idle(self) -> bool {
        [Class::OccShared, Class::OccExclusive, Class::RegShared, Class::RegExclusive]
            .into_iter()
            .all(|c| self.field(c.done_shift()) == self.field(c.taken_shift()))
    }
}

/// A tree node: `level` 0 are the leaves; node `index` of level `l` covers
/// `[index * 64 * 4^l, (index + 1) * 64 * 4^l)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Level above the leaves.
    pub level: u32,
    /// Position in its level.
    pub index: u64,
}

impl Node {
    /// Units the node covers.
    pub fn span(self) -> u64 {
        LEAF_UNITS << (2 * self.level)
    }

    /// The node's ancestor at `level` (>= its own).
    fn ancestor(self, level: u32) -> Node {
        Node { level, index: self.index >> (2 * (level - self.level)) }
    }
}

/// What a range is mapped to: a node, or some bits of a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A whole internal node.
    Node(Node),
    /// The bits `mask` of leaf `leaf` (a range inside one leaf).
    Bits {
        /// Leaf index.
        leaf: u64,
        /// One bit per unit of the leaf.
        mask: u64,
    },
}

impl Target {
    fn node(self) -> Node {
        match self {
            Target::Node(n) => n,
            Target::Bits { leaf, .. } => Node { level: 0, index: leaf },
        }
    }
}

/// The tree's shape over a unit space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CitronLayout {
    /// Units covered (ranges must end at or below).
    pub units: u64,
    /// Root level (0: the root is a leaf).
    height: u32,
}

impl CitronLayout {
    /// The smallest complete tree covering `units` units.
    ///
    /// # Panics
    ///
    /// If it would need more than [`MAX_HEIGHT`] levels above the leaves.
    pub fn new(units: u64) -> Self {
        let leaves = units.div_ceil(LEAF_UNITS).max(1);
        let mut height = 0;
        while FAN_OUT.pow(height) < leaves {
            height += 1;
        }
        assert!(height <= MAX_HEIGHT, "{units} units need more than {MAX_HEIGHT} levels");
        CitronLayout { units, height }
    }

    /// Root level.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Node words stored before those of `level` (levels are stored leaves first): the
    /// nodes of levels `0..level`, `4^h + ... + 4^(h - level + 1)` =
    /// `(4^(h+1) - 4^(h+1-level)) / 3`.
    #[inline]
    fn nodes_below(&self, level: u32) -> u64 {
        ((1u64 << (2 * (self.height + 1))) - (1u64 << (2 * (self.height + 1 - level)))) / 3
    }

    /// Words of the mapping: one per node, then one bitmap per leaf.
    pub fn words(&self) -> usize {
        (self.nodes_below(self.height + 1) + FAN_OUT.pow(self.height)) as usize
    }

    /// The node word of `node`.
    #[inline]
    fn node_word(&self, node: Node) -> usize {
        (self.nodes_below(node.level) + node.index) as usize
    }

    /// The bitmap word of leaf `leaf`.
    #[inline]
    fn bitmap_word(&self, leaf: u64) -> usize {
        (self.nodes_below(self.height + 1) + leaf) as usize
    }

    /// The smallest node covering the non-empty `range`.
    fn cover(&self, range: &Range<u64>) -> Node {
        let (a, b) = (range.start, range.end - 1);
        let mut level = 0;
        while (a >> (6 + 2 * level)) != (b >> (6 + 2 * level)) {
            level += 1;
        }
        Node { level, index: a >> (6 + 2 * level) }
    }

    fn target(&self, range: Range<u64>) -> Target {
        let node = self.cover(&range);
        if node.level == 0 {
            let (lo, hi) = (range.start % LEAF_UNITS, (range.end - 1) % LEAF_UNITS);
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            Target::Bits { leaf: node.index, mask }
        } else {
            Target::Node(node)
        }
    }

    /// The one or two targets of `range`, left to right (none for an empty range); see the
    /// module docs. Panics beyond the space.
    pub fn targets(&self, range: &Range<u64>) -> [Option<Target>; 2] {
        assert!(range.end <= self.units, "range {range:?} beyond {} units", self.units);
        if range.is_empty() {
            return [None, None];
        }
        let lca = self.cover(range);
        if lca.level > 0 {
            let child = lca.span() / FAN_OUT;
            let (first, last) = (range.start / child, (range.end - 1) / child);
            if last == first + 1 {
                let cut = last * child;
                return [Some(self.target(range.start..cut)), Some(self.target(cut..range.end))];
            }
        }
        [Some(self.target(range.clone())), None]
    }

    /// The steps of `range` in `mode`, in pre-order (with `fault`: a broken protocol's).
    pub(super) fn plan(&self, range: &Range<u64>, mode: Mode, fault: Option<Fault>) -> Plan {
        let first = Step::Bits { word: 0, mask: 0 };
        let mut plan = Plan { steps: [first; MAX_STEPS], len: 0 };
        let notify = fault != Some(Fault::NoAncestorNotify);
        let mut registered = 0;
        for target in self.targets(range).into_iter().flatten() {
            let node = target.node();
            if notify {
                for level in (node.level + 1..=self.height).rev() {
                    let word = self.node_word(node.ancestor(level));
                    let step = Step::Ticket { word, class: Class::register(mode) };
                    // The two targets share their ancestors from the common one up.
                    if !plan.steps()[..registered].contains(&step) {
                        plan.push(step);
                    }
                }
            }
            let word = self.node_word(node);
            match (target, mode) {
                (Target::Bits { leaf, mask }, Mode::Exclusive) => {
                    if notify {
                        plan.push(Step::Ticket { word, class: Class::RegExclusive });
                    }
                    if fault != Some(Fault::NoLeafBits) {
                        plan.push(Step::Bits { word: self.bitmap_word(leaf), mask });
                    }
                }
                _ => plan.push(Step::Ticket { word, class: Class::occupy(mode) }),
            }
            registered = plan.len;
        }
        plan
    }
}

/// One step of a request: a ticket on a node word, or bits of a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// A ticket of `class` on node word `word`.
    Ticket { word: usize, class: Class },
    /// Bits `mask` of bitmap word `word`.
    Bits { word: usize, mask: u64 },
}

/// Most steps of one request: the ancestors of two nodes, two leaf registrations, two
/// holds.
const MAX_STEPS: usize = 2 * (MAX_HEIGHT as usize + 2) + 2;

/// A request's steps in pre-order, on the stack.
pub(super) struct Plan {
    steps: [Step; MAX_STEPS],
    len: usize,
}

impl Plan {
    fn push(&mut self, step: Step) {
        self.steps[self.len] = step;
        self.len += 1;
    }

    pub(super) fn steps(&self) -> &[Step] {
        &self.steps[..self.len]
    }
}

/// A deliberately broken protocol, only for showing that the checkers catch it
/// (`tests/citron.rs`, `tests/citron_loom.rs`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Descendants do not notify their ancestors (no registrations at all).
    NoAncestorNotify,
    /// Exclusive leaf parts do not set their bits (they only register at the leaf).
    ///
    /// (Dropping only one side of a wait, such as occupants not waiting for descendants,
    /// hangs instead of overlapping: the other side's `done == snapshot` test is then
    /// passed over, see "Exclusion" in the module docs.)
    NoLeafBits,
}

/// A range held through [`CitronClient::lock`]; give it back to [`CitronClient::unlock`].
#[derive(Debug)]
#[must_use = "a citron-like range stays locked until passed to CitronClient::unlock"]
pub struct CitronHeld {
    pub(super) range: Range<u64>,
    pub(super) mode: Mode,
}

/// One client of a `citron-like` tree over the words `W` (one per client: its view of the
/// mapping).
#[derive(Debug)]
pub struct CitronClient<W> {
    words: W,
    layout: CitronLayout,
    fault: Option<Fault>,
}

impl<W: AtomicWords> CitronClient<W> {
    /// A client of the tree in `words` (at least [`CitronLayout::words`] of them, zeroed).
    pub fn new(words: W, layout: CitronLayout) -> Self {
        CitronClient { words, layout, fault: None }
    }

    /// This client with a broken protocol (negative controls of the checkers only).
    #[doc(hidden)]
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// The steps of `range` in `mode`, in pre-order.
    fn plan(&self, range: &Range<u64>, mode: Mode) -> Plan {
        self.layout.plan(range, mode, self.fault)
    }

    /// Locks `range` in `mode`, waiting as long as it takes.
    pub fn lock(&mut self, range: Range<u64>, mode: Mode) -> CitronHeld {
        let plan = self.plan(&range, mode);
        for &step in plan.steps() {
            match step {
                Step::Ticket { word, class } => self.take_ticket(word, class),
                Step::Bits { word, mask } => self.set_bits(word, mask),
            }
        }
        CitronHeld { range, mode }
    }

    /// Unlocks a range taken by [`lock`](Self::lock).
    pub fn unlock(&mut self, held: CitronHeld) {
        let plan = self.plan(&held.range, held.mode);
        for &step in plan.steps().iter().rev() {
            match step {
                Step::Ticket { word, class } => {
                    masked_increment(self.words.word(word), class.done_shift());
                }
                Step::Bits { word, mask } => {
                    // Release: publishes this holder's writes to the next holder of these
                    // bits, whose acquiring CAS in `set_bits` reads this value. The bits
                    // are set (we hold them), so subtracting clears exactly them.
                    self.words.word(word).fetch_sub(mask, Ordering::Release);
                }
            }
        }
    }

    /// Takes a ticket of `class` on node word `word` and waits until it may enter.
    #[inline]
    fn take_ticket(&mut self, word: usize, class: Class) {
        let waits_for = class.waits_for();
        let snap = masked_increment(self.words.word(word), class.taken_shift());
        // The FAA's own result tells whether the way is free: only a ticket that must wait
        // re-reads the word.
        if !snap.may_enter(waits_for, snap) {
            self.await_turn_slow(word, waits_for, snap);
        }
    }

    #[cold]
    fn await_turn_slow(&mut self, word: usize, waits_for: u8, snap: NodeWord) {
        let mut round = 0;
        loop {
            self.words.backoff(round);
            round = round.saturating_add(1);
            // Acquire: seeing the earlier tickets released must make their holders' writes
            // visible; pairs with the AcqRel `done` increment in `masked_increment`.
            let now = NodeWord(self.words.word(word).load(Ordering::Acquire));
            if snap.may_enter(waits_for, now) {
                return;
            }
        }
    }

    /// Sets the bits `mask` of bitmap word `word` once they are all clear.
    #[inline]
    fn set_bits(&mut self, word: usize, mask: u64) {
        // Relaxed: only a guess for the CAS below, which acquires.
        let mut cur = self.words.word(word).load(Ordering::Relaxed);
        let mut round = 0;
        loop {
            if cur & mask == 0 {
                // Acquire (in AcqRel): entering must see the previous holders' writes,
                // published by their Release clear in `unlock`. Failure: Relaxed, the
                // value is only the next guess.
                match self.words.word(word).compare_exchange(
                    cur,
                    cur | mask,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(now) => {
                        cur = now;
                        continue;
                    }
                }
            }
            self.words.backoff(round);
            round = round.saturating_add(1);
            // Relaxed: as above.
            cur = self.words.word(word).load(Ordering::Relaxed);
        }
    }
}

/// Increments the 8-bit field at `shift` of `w` without carrying (Citron's Ext-FAA, here a
/// CAS loop); returns the word before.
#[inline]
fn masked_increment<A: AtomicWord>(w: &A, shift: u32) -> NodeWord {
    // Relaxed: only a guess for the CAS below. (A `fetch_add(0)` instead, to fetch the
    // line exclusive at once, raised the p50 of `server-micro`'s cycle from ~250 to ~350 ns
    // in quick runs.)
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        let new = NodeWord(cur).bumped(shift).0;
        // AcqRel: taking a ticket may enter at once (it then must see the writes of the
        // holders it follows, published by their `done` increment), and a `done` increment
        // must publish this holder's writes. Pairs with itself and with the Acquire load in
        // `await_turn_slow`. Failure: Relaxed, the value is only the next guess.
        match w.compare_exchange(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return NodeWord(cur),
            Err(now) => cur = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_the_suites_space() {
        let l = CitronLayout::new(1 << 16);
        assert_eq!(l.height(), 5);
        assert_eq!(l.words(), 1365 + 1024);
        assert_eq!(l.node_word(Node { level: 5, index: 0 }), 1364);
        assert_eq!(l.bitmap_word(1023), 1365 + 1023);
        assert_eq!(CitronLayout::new(64).height(), 0);
        assert_eq!(CitronLayout::new(65).height(), 1);
        assert_eq!(CitronLayout::new(256).words(), 5 + 4);
    }

    #[test]
    fn ranges_map_to_at_most_two_nodes() {
        let l = CitronLayout::new(1 << 16);
        // Inside one leaf: its bits.
        assert_eq!(l.targets(&(3..5)), [Some(Target::Bits { leaf: 0, mask: 0b11000 }), None]);
        assert_eq!(l.targets(&(64..128)), [Some(Target::Bits { leaf: 1, mask: !0 }), None]);
        // Across two leaves: the bits of each.
        assert_eq!(
            l.targets(&(60..70)),
            [
                Some(Target::Bits { leaf: 0, mask: 0xF << 60 }),
                Some(Target::Bits { leaf: 1, mask: 0b11_1111 })
            ]
        );
        // Across three leaves of one level-1 node: that node.
        assert_eq!(l.targets(&(10..150)), [Some(Target::Node(Node { level: 1, index: 0 })), None]);
        // Across two level-1 children of a level-2 node: a cover in each.
        assert_eq!(
            l.targets(&(200..400)),
            [
                Some(Target::Bits { leaf: 3, mask: u64::MAX << 8 }),
                Some(Target::Node(Node { level: 1, index: 1 }))
            ]
        );
        // The whole space: the root.
        assert_eq!(
            l.targets(&(0..1 << 16)),
            [Some(Target::Node(Node { level: 5, index: 0 })), None]
        );
        assert_eq!(l.targets(&(5..5)), [None, None]);
    }

    #[test]
    fn plans_are_in_pre_order_and_register_shared_ancestors_once() {
        let l = CitronLayout::new(256);
        let c = CitronClient::new(ShmWords::new(l.words()).unwrap(), l);
        let w = |level, index| l.node_word(Node { level, index });
        // Bits of leaves 0 and 1, exclusive: root, leaf 0's word, bits 0, leaf 1's word,
        // bits 1.
        let plan = c.plan(&(60..70), Mode::Exclusive);
        let reg = |word| Step::Ticket { word, class: Class::RegExclusive };
        assert_eq!(
            plan.steps(),
            [
                reg(w(1, 0)),
                reg(w(0, 0)),
                Step::Bits { word: l.bitmap_word(0), mask: 0xF << 60 },
                reg(w(0, 1)),
                Step::Bits { word: l.bitmap_word(1), mask: 0b11_1111 },
            ]
        );
        // Shared: the leaves' words are occupied instead.
        let plan = c.plan(&(60..70), Mode::Shared);
        let occ = |word| Step::Ticket { word, class: Class::OccShared };
        let reg = |word| Step::Ticket { word, class: Class::RegShared };
        assert_eq!(plan.steps(), [reg(w(1, 0)), occ(w(0, 0)), occ(w(0, 1))]);
        // The root alone.
        let plan = c.plan(&(0..200), Mode::Exclusive);
        assert_eq!(plan.steps(), [Step::Ticket { word: w(1, 0), class: Class::OccExclusive }]);
    }

    #[test]
    fn tickets_wait_only_for_earlier_conflicting_classes() {
        let mut w = NodeWord(0);
        let take = |w: &mut NodeWord, c: Class| {
            let snap = *w;
            *w = w.bumped(c.taken_shift());
            snap
        };
        let done = |w: &mut NodeWord, c: Class| *w = w.bumped(c.done_shift());
        let enters = |snap: NodeWord, c: Class, now| snap.may_enter(c.waits_for(), now);
        let r1 = take(&mut w, Class::RegShared);
        let o1 = take(&mut w, Class::OccShared);
        let x1 = take(&mut w, Class::RegExclusive);
        let o2 = take(&mut w, Class::OccExclusive);
        let r2 = take(&mut w, Class::RegShared);
        // Shared descendants and a shared occupant share; the exclusive descendant waits
        // for the shared occupant; the exclusive occupant waits for everyone before it;
        // the later shared descendant waits for the exclusive occupant only.
        assert!(enters(r1, Class::RegShared, w) && enters(o1, Class::OccShared, w));
        assert!(!enters(x1, Class::RegExclusive, w));
        done(&mut w, Class::OccShared);
        assert!(enters(x1, Class::RegExclusive, w));
        assert!(!enters(o2, Class::OccExclusive, w));
        done(&mut w, Class::RegShared);
        done(&mut w, Class::RegExclusive);
        assert!(enters(o2, Class::OccExclusive, w));
        assert!(!enters(r2, Class::RegShared, w));
        done(&mut w, Class::OccExclusive);
        assert!(enters(r2, Class::RegShared, w));
        done(&mut w, Class::RegShared);
        assert!(w.is_idle());
    }

    #[test]
    fn counters_wrap_inside_their_field() {
        let mut w = NodeWord(0);
        for _ in 0..300 {
            w = w.bumped(Class::OccShared.taken_shift());
        }
        assert_eq!(w.0, 300 % 256);
        assert_eq!(NodeWord(0xFF << 56).bumped(56).0, 0);
    }

    #[test]
    fn lock_and_unlock_leave_every_word_idle() {
        let l = CitronLayout::new(1 << 12);
        let words = ShmWords::new(l.words()).unwrap();
        let mut c = CitronClient::new(words.clone(), l);
        // xorshift64: any spread of ranges will do.
        let mut x = 3u64;
        let mut below = |bound: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % bound
        };
        for i in 0..2000 {
            let len = 1 + below(700);
            let start = below(l.units - len + 1);
            let mode = if i % 3 == 0 { Mode::Exclusive } else { Mode::Shared };
            let held = c.lock(start..start + len, mode);
            c.unlock(held);
        }
        for i in 0..l.words() {
            let v = words.word(i).load(Ordering::Relaxed);
            if i < l.bitmap_word(0) {
                assert!(NodeWord(v).is_idle(), "word {i}: {v:#x}");
            } else {
                assert_eq!(v, 0, "bitmap {i}");
            }
        }
    }
}
