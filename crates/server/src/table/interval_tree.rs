//! An interval tree: a treap keyed by `(start, seq)` and augmented with the largest `end`
//! of each subtree.
//!
//! # Algorithm
//!
//! Nodes live in an arena (`Vec`) and link by index; freed slots are reused, so a
//! [`Handle`] stays valid until its node is removed. Insert and remove use split/merge on
//! the unique key `(start, seq)`; random priorities keep the expected depth `O(log n)`.
//! Every node caches `max_end`, the largest `end` in its subtree, recomputed on the way
//! back up of every split and merge.
//!
//! An overlap query for `[s, e)` descends into a subtree only if its `max_end > s` (some
//! interval in it ends after `s`) and into a right subtree only if the node's
//! `start < e` (right subtrees start no earlier). It costs `O(log n + k)` expected for `k`
//! reported intervals.
//!
//! # Points
//!
//! Interval ends are any [`Point`]: `u64` units for one number line, or `u128` for many
//! lines laid end to end (a named resource's line in the high 64 bits, its unit in the low
//! ones: ranges of different lines can never overlap, and one tree serves them all).
//!
//! # Trade-offs
//!
//! A treap instead of a red-black tree (the seed's choice): the same expected bounds,
//! a fraction of the code, and no unsafe. The arena avoids an allocation per lock once
//! warmed up.

const NIL: u32 = u32::MAX;

/// What an interval's ends are: a totally ordered copyable number whose `Default` is its
/// least value (the `max_end` of an empty subtree).
pub(crate) trait Point: Copy + Ord + Default + core::fmt::Debug {}

impl Point for u64 {}
impl Point for u128 {}

/// Names a node of an [`IntervalTree`] until it is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Handle(u32);

#[derive(Debug)]
struct Node<T, K> {
    start: K,
    end: K,
    seq: u64,
    max_end: K,
    prio: u64,
    left: u32,
    right: u32,
    val: Option<T>,
}

/// Half-open intervals `[start, end)` with a unique sequence number each, and a value.
#[derive(Debug)]
pub(crate) struct IntervalTree<T, K = u64> {
    nodes: Vec<Node<T, K>>,
    free: Vec<u32>,
    root: u32,
    len: usize,
    rng: u64,
}

impl<T, K: Point> IntervalTree<T, K> {
    /// An empty tree.
    pub(crate) fn new() -> Self {
        IntervalTree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Number of intervals.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn next_prio(&mut self) -> u64 {
        // xorshift64*: priorities only need to be well spread, not secret.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn key(&self, i: u32) -> (K, u64) {
        let n = &self.nodes[i as usize];
        (n.start, n.seq)
    }

    fn max_end_of(&self, i: u32) -> K {
        if i == NIL {
            K::default()
        } else {
            self.nodes[i as usize].max_end
        }
    }

    fn update(&mut self, i: u32) {
        let n = &self.nodes[i as usize];
        let m = n.end.max(self.max_end_of(n.left)).max(self.max_end_of(n.right));
        self.nodes[i as usize].max_end = m;
    }

    /// Splits `t` into keys `< key` and keys `>= key`.
    fn split(&mut self, t: u32, key: (K, u64)) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.key(t) < key {
            let r = self.nodes[t as usize].right;
            let (a, b) = self.split(r, key);
            self.nodes[t as usize].right = a;
            self.update(t);
            (t, b)
        } else {
            let l = self.nodes[t as usize].left;
            let (a, b) = self.split(l, key);
            self.nodes[t as usize].left = b;
            self.update(t);
            (a, t)
        }
    }

    /// Joins two treaps where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            self.update(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            self.update(b);
            b
        }
    }

    /// Inserts `[start, end)` with the unique `seq`. `start < end` is the caller's duty.
    pub(crate) fn insert(&mut self, start: K, end: K, seq: u64, val: T) -> Handle {
        debug_assert!(start < end);
        let prio = self.next_prio();
        let node =
            Node { start, end, seq, max_end: end, prio, left: NIL, right: NIL, val: Some(val) };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let (l, r) = self.split(self.root, (start, seq));
        let l = self.merge(l, i);
        self.root = self.merge(l, r);
        self.len += 1;
        Handle(i)
    }

    /// Removes the node and returns its value.
    pub(crate) fn remove(&mut self, h: Handle) -> T {
        let (start, seq) = self.key(h.0);
        let (l, r) = self.split(self.root, (start, seq));
        let (m, r) = self.split(r, (start, seq + 1));
        debug_assert_eq!(m, h.0, "handle names a node of this tree");
        self.root = self.merge(l, r);
        let n = &mut self.nodes[h.0 as usize];
        n.left = NIL;
        n.right = NIL;
        self.free.push(h.0);
        self.len -= 1;
        n.val.take().expect("live handle")
    }

    /// The value of a live node.
    pub(crate) fn get(&self, h: Handle) -> &T {
        self.nodes[h.0 as usize].val.as_ref().expect("live handle")
    }

    /// The value of a live node, mutably.
    pub(crate) fn get_mut(&mut self, h: Handle) -> &mut T {
        self.nodes[h.0 as usize].val.as_mut().expect("live handle")
    }

    /// The interval and sequence number of a live node.
    pub(crate) fn interval(&self, h: Handle) -> (K, K, u64) {
        let n = &self.nodes[h.0 as usize];
        (n.start, n.end, n.seq)
    }

    /// Appends to `out` the handle of every node overlapping `[start, end)`, in key order.
    pub(crate) fn overlaps(&self, start: K, end: K, out: &mut Vec<Handle>) {
        // In-order traversal with an explicit stack, pruned by max_end and start.
        let mut stack: Vec<u32> = Vec::new();
        let mut t = self.root;
        loop {
            while t != NIL && self.nodes[t as usize].max_end > start {
                stack.push(t);
                t = self.nodes[t as usize].left;
            }
            let Some(n) = stack.pop() else { break };
            let node = &self.nodes[n as usize];
            if node.start >= end {
                // This node and everything to its right start too late.
                break;
            }
            if node.end > start {
                out.push(Handle(n));
            }
            t = node.right;
        }
    }

    /// Every live handle, in no particular order.
    pub(crate) fn handles(&self) -> impl Iterator<Item = Handle> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.val.is_some())
            .map(|(i, _)| Handle(i as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u64),
        Remove(usize),
        Query(u64, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..200, 1u64..50).prop_map(|(s, l)| Op::Insert(s, s + l)),
            any::<usize>().prop_map(Op::Remove),
            (0u64..250, 1u64..80).prop_map(|(s, l)| Op::Query(s, s + l)),
        ]
    }

    proptest! {
        /// The tree reports exactly the overlaps a linear scan of a model finds.
        #[test]
        fn matches_a_linear_model(ops in proptest::collection::vec(op(), 1..200)) {
            let mut tree = IntervalTree::new();
            let mut model: Vec<(u64, u64, u64, Handle)> = Vec::new();
            let mut seq = 0;
            for op in ops {
                match op {
                    Op::Insert(s, e) => {
                        seq += 1;
                        let h = tree.insert(s, e, seq, seq);
                        model.push((s, e, seq, h));
                    }
                    Op::Remove(i) if !model.is_empty() => {
                        let (_, _, sq, h) = model.swap_remove(i % model.len());
                        prop_assert_eq!(tree.remove(h), sq);
                    }
                    Op::Remove(_) => {}
                    Op::Query(s, e) => {
                        let mut got = Vec::new();
                        tree.overlaps(s, e, &mut got);
                        let mut got: Vec<u64> = got.into_iter().map(|h| *tree.get(h)).collect();
                        got.sort_unstable();
                        let mut want: Vec<u64> = model.iter()
                            .filter(|(ms, me, _, _)| *ms < e && s < *me)
                            .map(|m| m.2).collect();
                        want.sort_unstable();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(tree.len(), model.len());
            }
        }
    }

    proptest! {
        /// With `u128` points, intervals on different lines (the high 64 bits) never
        /// overlap, even where their units do, and a query sees exactly its line's.
        #[test]
        fn lines_laid_end_to_end_never_overlap(
            ops in proptest::collection::vec((0u128..3, 0u64..100, 1u64..40), 1..120),
            queries in proptest::collection::vec((0u128..3, 0u64..120, 1u64..60), 1..40),
        ) {
            let at = |line: u128, unit: u64| line << 64 | u128::from(unit);
            let mut tree: IntervalTree<(u128, u64, u64), u128> = IntervalTree::new();
            for (seq, &(line, s, l)) in (1..).zip(&ops) {
                tree.insert(at(line, s), at(line, s + l), seq, (line, s, s + l));
            }
            // The last unit of a line and the first of the next are neighbours, not overlaps.
            tree.insert(at(0, u64::MAX - 1), at(0, u64::MAX), 0, (0, u64::MAX - 1, u64::MAX));
            for (line, s, l) in queries {
                let mut got = Vec::new();
                tree.overlaps(at(line, s), at(line, s + l), &mut got);
                let mut got: Vec<_> = got.into_iter().map(|h| *tree.get(h)).collect();
                got.sort_unstable();
                let mut want: Vec<_> = ops.iter()
                    .filter(|(ml, ms, ml_len)| *ml == line && *ms < s + l && s < ms + ml_len)
                    .map(|&(ml, ms, ml_len)| (ml, ms, ms + ml_len))
                    .collect();
                want.sort_unstable();
                prop_assert_eq!(got, want);
            }
            let mut edge = Vec::new();
            tree.overlaps(at(1, 0), at(1, 1), &mut edge);
            prop_assert!(edge.iter().all(|h| tree.get(*h).0 == 1));
        }
    }

    #[test]
    fn full_domain_and_edges() {
        let mut t = IntervalTree::new();
        let a = t.insert(0, u64::MAX, 1, ());
        let mut out = Vec::new();
        t.overlaps(u64::MAX - 1, u64::MAX, &mut out);
        assert_eq!(out, vec![a]);
        out.clear();
        let b = t.insert(10, 20, 2, ());
        t.overlaps(20, 30, &mut out);
        assert_eq!(out, vec![a]);
        t.remove(a);
        out.clear();
        t.overlaps(0, 10, &mut out);
        assert!(out.is_empty());
        t.overlaps(19, 20, &mut out);
        assert_eq!(out, vec![b]);
    }
}
