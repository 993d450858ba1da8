//! Which partitions a node should claim or give up, from one snapshot of etcd.
//!
//! Pure and deterministic, so every rule is unit-tested; the manager ([`crate::Node`])
//! applies the plan with etcd transactions, which settle races between nodes (two
//! nodes may plan to claim the same partition; one transaction wins).
//!
//! Rules, with `n` live nodes and `P` partitions (`hi = ⌈P/n⌉`, `lo = ⌊P/n⌋`):
//!
//! * a partition with a pending move is claimed only by the move's target (if it is
//!   live) and given up by its owner;
//! * an unowned partition is claimed while the node owns fewer than `hi`;
//! * when every partition is owned, a node above `hi`, or above `lo` while some live
//!   node is below `lo`, gives up one partition per round (its highest), which a node
//!   under its share then claims: this is how a joining node takes its share.
//!   Not while the balancer is paused (`rangelock cluster balance pause`): then only
//!   unowned partitions are claimed and operator moves carried out.
//!
//! So an operator's move can **cascade**: a move that leaves its source below `lo` or
//! its target above `hi` is followed by rebalancing moves, up to two (the target sheds
//! one above `hi`, another node above `lo` sheds one to the source). Pausing the
//! balancer makes the operator's move the only move.

use crate::keys::Snapshot;

/// What one node should do this round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Unowned partitions to claim, in order of preference.
    pub claim: Vec<u32>,
    /// Owned partitions to give up (planned moves).
    pub shed: Vec<u32>,
}

/// The plan of node `me` for `snap`.
pub fn plan(snap: &Snapshot, me: &str) -> Plan {
    let mut plan = Plan::default();
    let p_count = snap.owners.len();
    let n = snap.nodes.len();
    if p_count == 0 || !snap.is_live(me) {
        return plan;
    }
    let hi = p_count.div_ceil(n);
    let lo = p_count / n;
    let moved_elsewhere =
        |p: usize| snap.moves[p].as_deref().is_some_and(|to| to != me && snap.is_live(to));
    let mine: Vec<usize> =
        (0..p_count).filter(|p| snap.owners[*p].as_ref().is_some_and(|o| o.node == me)).collect();
    for &p in &mine {
        if moved_elsewhere(p) {
            plan.shed.push(p as u32);
        }
    }
    let mut owned = mine.len() - plan.shed.len();
    // Start the scan at a node-specific offset so that nodes starting together do not
    // all race for partition 0 first.
    // (`n >= 1`: `me` is live.)
    let rank = snap.nodes.iter().position(|x| x.id == me).unwrap_or(0);
    let offset = rank * p_count / n;
    let unowned: Vec<usize> = (0..p_count)
        .map(|i| (i + offset) % p_count)
        .filter(|p| snap.owners[*p].is_none())
        .collect();
    for &p in &unowned {
        let target_me = snap.moves[p].as_deref() == Some(me);
        if target_me {
            plan.claim.push(p as u32);
            owned += 1;
        }
    }
    for &p in &unowned {
        if owned >= hi {
            break;
        }
        if snap.moves[p].is_none() || !moved_elsewhere(p) && snap.moves[p].as_deref() != Some(me) {
            plan.claim.push(p as u32);
            owned += 1;
        }
    }
    if unowned.is_empty() && plan.shed.is_empty() && !snap.balancer_paused {
        let counts = snap.counts();
        let someone_below = counts.iter().any(|c| *c < lo);
        if mine.len() > hi || (mine.len() > lo && someone_below) {
            if let Some(&p) = mine.iter().rev().find(|p| snap.moves[**p].is_none()) {
                plan.shed.push(p as u32);
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{NodeEntry, OwnerEntry};

    fn snap(p: usize, nodes: &[&str], owners: &[Option<&str>]) -> Snapshot {
        let mut s = Snapshot {
            revision: 1,
            config: Some(crate::keys::ConfigValue {
                partitions: p as u32,
                created_by: None,
                defaulted: false,
            }),
            nodes: nodes
                .iter()
                .map(|id| NodeEntry { id: id.to_string(), addr: format!("{id}:1"), lease: 1 })
                .collect(),
            owners: vec![None; p],
            held: vec![false; p],
            moves: vec![None; p],
            grace: vec![None; p],
            ..Snapshot::default()
        };
        for (i, o) in owners.iter().enumerate() {
            s.owners[i] = o.map(|n| OwnerEntry {
                node: n.to_string(),
                addr: String::new(),
                epoch: 1,
                lease: 1,
                grace_until_unix_ms: None,
            });
        }
        s
    }

    #[test]
    fn a_lone_node_claims_everything() {
        let s = snap(4, &["a"], &[]);
        let mut c = plan(&s, "a").claim;
        c.sort();
        assert_eq!(c, vec![0, 1, 2, 3]);
    }

    #[test]
    fn two_nodes_each_claim_half_from_different_ends() {
        let s = snap(4, &["a", "b"], &[]);
        assert_eq!(plan(&s, "a").claim, vec![0, 1]);
        assert_eq!(plan(&s, "b").claim, vec![2, 3]);
    }

    #[test]
    fn an_unregistered_node_does_nothing() {
        let s = snap(4, &["a"], &[]);
        assert_eq!(plan(&s, "z"), Plan::default());
    }

    #[test]
    fn a_joining_node_gets_its_share_through_sheds() {
        let s = snap(4, &["a", "b"], &[Some("a"), Some("a"), Some("a"), Some("a")]);
        assert_eq!(plan(&s, "a"), Plan { claim: vec![], shed: vec![3] });
        assert_eq!(plan(&s, "b"), Plan::default());
        // After the shed, b claims the freed partition; a does not take it back.
        let s = snap(4, &["a", "b"], &[Some("a"), Some("a"), Some("a"), None]);
        assert_eq!(plan(&s, "b").claim, vec![3]);
        assert!(plan(&s, "a").claim.is_empty());
        // Balanced: nobody moves.
        let s = snap(4, &["a", "b"], &[Some("a"), Some("a"), Some("b"), Some("b")]);
        assert_eq!(plan(&s, "a"), Plan::default());
        assert_eq!(plan(&s, "b"), Plan::default());
    }

    #[test]
    fn uneven_counts_within_one_are_stable() {
        let s = snap(4, &["a", "b", "c"], &[Some("a"), Some("a"), Some("b"), Some("c")]);
        for n in ["a", "b", "c"] {
            assert_eq!(plan(&s, n), Plan::default(), "{n}");
        }
    }

    /// Runs every node's plan, one node after the other, until no plan does anything;
    /// returns the rebalancing sheds (sheds of partitions without a move).
    fn settle(s: &mut Snapshot) -> Vec<u32> {
        let mut rebalanced = Vec::new();
        for _round in 0..100 {
            let mut changed = false;
            let ids: Vec<String> = s.nodes.iter().map(|n| n.id.clone()).collect();
            for id in &ids {
                let plan = plan(s, id);
                for p in plan.shed {
                    if s.moves[p as usize].is_none() {
                        rebalanced.push(p);
                    }
                    s.owners[p as usize] = None;
                    changed = true;
                }
                for p in plan.claim {
                    if s.owners[p as usize].is_none() {
                        s.owners[p as usize] = Some(OwnerEntry {
                            node: id.clone(),
                            addr: String::new(),
                            epoch: 2,
                            lease: 1,
                            grace_until_unix_ms: None,
                        });
                        if s.moves[p as usize].as_deref() == Some(id) {
                            s.moves[p as usize] = None;
                        }
                        changed = true;
                    }
                }
            }
            if !changed {
                return rebalanced;
            }
        }
        panic!("no fixed point: {s:?}");
    }

    #[test]
    fn a_move_cascades_unless_the_balancer_is_paused() {
        // 8 partitions on 3 nodes (hi 3, lo 2): a 2, b 3, c 3. `move 0 --to c` leaves
        // a with 1 (below lo) and c with 4 (above hi): c sheds one, and b (above lo
        // while a is below) sheds one. Two rebalancing moves after the operator's.
        let owners = ["a", "a", "b", "b", "b", "c", "c", "c"].map(Some);
        let mut s = snap(8, &["a", "b", "c"], &owners);
        s.moves[0] = Some("c".into());
        assert_eq!(settle(&mut s).len(), 2, "{s:?}");
        assert_eq!(s.counts(), [3, 2, 3]);
        // Paused: the operator's move is the only move.
        let mut s = snap(8, &["a", "b", "c"], &owners);
        s.balancer_paused = true;
        s.moves[0] = Some("c".into());
        assert_eq!(settle(&mut s), Vec::<u32>::new());
        assert_eq!(s.counts(), [1, 3, 4]);
        assert!(s.moves.iter().all(Option::is_none));
        // A move that keeps every node within lo..=hi does not cascade.
        let owners = ["a", "a", "a", "b", "b", "b", "c", "c"].map(Some);
        let mut s = snap(8, &["a", "b", "c"], &owners);
        s.moves[0] = Some("c".into());
        assert_eq!(settle(&mut s), Vec::<u32>::new());
        // Paused, unowned partitions (a dead node's) are still claimed.
        let mut s = snap(8, &["a", "b"], &[Some("a"), Some("a"), Some("b"), Some("b")]);
        s.balancer_paused = true;
        settle(&mut s);
        assert!(s.owners.iter().all(Option::is_some), "{s:?}");
    }

    #[test]
    fn a_move_is_shed_by_its_owner_and_claimed_only_by_its_target() {
        let mut s = snap(4, &["a", "b", "c"], &[Some("a"), Some("a"), Some("b"), Some("c")]);
        s.moves[1] = Some("c".into());
        assert_eq!(plan(&s, "a").shed, vec![1]);
        s.owners[1] = None;
        assert!(plan(&s, "b").claim.is_empty());
        assert_eq!(plan(&s, "c").claim, vec![1]);
        // A move to a node that is gone is ignored.
        s.moves[1] = Some("gone".into());
        assert!(!plan(&s, "b").claim.is_empty() || !plan(&s, "a").claim.is_empty());
    }
}
