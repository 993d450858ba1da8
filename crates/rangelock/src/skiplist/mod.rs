//! The product range lock: a lock-free skip list of exclusive ranges plus reader
//! announcements for shared ranges, with parking waits and epoch reclamation.
//!
//! # Algorithm
//!
//! **Alone, a lock has no core.** Everything below (the list, the stripe tables, the reader
//! table, the intents, the epoch and the node pools: the *core*, about 100 KB with the
//! default geometry) is built the first time two holds of the lock overlap in time, the
//! same thread's included. Until then a lock is its options and four words (72 bytes,
//! nothing on the heap), and every hold is a *solo* hold: one CAS that writes the range
//! and mode into the lock's state word, and one CAS to release it (a range that starts at
//! or past 2^40 or is longer than 2^20 units is written into two words beside it between
//! two CASes). The first acquisition that finds the
//! word taken builds a core, acquires the solo hold's range on it (as the first and only
//! hold of a core nobody else can reach yet), and publishes the core with one CAS that
//! replaces the exact word it read; the solo holder later finds the core in the word and
//! releases the adopted hold instead (`solo`). From then on every acquisition reads the
//! core's address from the word (one Acquire load) and runs the protocols below. So a
//! lock kept per file, inode or table costs 88 bytes while idle or used by one holder at a
//! time (`memory` suite: a million idle locks in 72 MB).
//!
//! **Exclusive ranges** are nodes of a lock-free skip list (Herlihy et al.'s
//! `LockFreeSkipList` as adapted by the concurrent-range-locking thesis), sorted by
//! `(start, node address)`. An exclusive acquisition `find`s the position of its start,
//! checks the level-0 predecessor and successor for overlap, and links its node with a CAS on
//! the predecessor's level-0 link (then at the upper levels). Because the ranges of the
//! unmarked nodes are pairwise disjoint, those two neighbours are the only nodes that can
//! overlap (see `list` for the invariants and the argument). Release marks the node's links
//! top-down (the level-0 mark is the linearization point), wakes waiters, snips the node out
//! with one `find` for its exact key, and retires it. The token is the node, so unlock
//! needs no search *by range*; snipping the node out is one O(log n) `find` for its exact
//! key, as in any skip list. (Stripe holds and shared holds unlock in O(1): one store, or one
//! slot clear.)
//!
//! **Exclusive ranges inside one stripe** usually skip the list, and take no node. The
//! domain is cut into stripes of 16 Ki units and the stripes into windows of 2048 (32 Mi
//! units); stripe `s` owns slot `s mod 2048` of its window's table (`stripes`). Each window
//! in use gets a table of its own, allocated on first use and found through a directory of
//! 64 entries; once the directory is full, further windows share one overflow table (all
//! three sizes are [`Builder`] options). An exclusive range that lies inside one stripe
//! claims its stripe's slot with one CAS that writes the range into the slot's word, and
//! then reads three counts: the slot's (list writers and readers whose range touches the
//! slot's stripes count themselves there before they become visible, and uncount after
//! they are gone), its window table's `wide` count (the same, for ranges of more than 4
//! stripes over at most 4 windows) and the lock's `wide` count (wider still). If all three
//! are zero it holds the range: nothing allocated, nothing linked, no epoch guard. If not,
//! it searches the list and the reader table for an actual overlap. If the slot is taken
//! it takes the list path; if it finds a conflict it *retracts* (frees the slot, waking
//! whoever waited on it) and takes the list path, so a stripe holder never waits while
//! visible. List writers and readers, after their own handshake store, check the slots of
//! the stripes their range touches. Unlock is one plain store to the slot word (its waiters
//! count themselves beside it: `wait`, "Counted words"). A range over 2 up
//! to 8 stripes of one window ([`Builder::claim_stripes`]; up to 4 for a shared range,
//! which pays two RMWs a slot) claims each stripe's slot the
//! same way, with its piece of the range, in order and without waiting (on a taken slot
//! it frees what it took and takes the list path), then reads every slot's count. A longer
//! range of up to two *coarse stripes* (64 stripes, 1 Mi units) claims their slots in a
//! second, coarser table instead, after counting itself as a list writer would, and checks
//! the stripe slots of its range ([`Builder::coarse_claims`], `stripes`, "Coarse claims").
//! Only what is longer still (or crosses a window boundary of either table, or meets a
//! taken slot) links a list node. So a stripe hold
//! is one CAS and one store on a slot plus reads of lines nobody writes, and threads locking
//! disjoint ranges of different regions share no written cache line (a list insertion
//! writes its neighbours' links, which two threads working on one list keep moving between
//! cores); a long-held reader or wide writer costs only the stripe holders of the stripes
//! or windows it touches the search.
//!
//! **Shared ranges** are not in the list. A shared range inside one stripe takes the
//! stripe's slot in shared mode when the slot is free, or joins the readers of exactly the
//! same range there (one CAS on the slot word, which then counts its readers), and checks
//! the same three counts as an exclusive stripe holder (searching only the list if one is
//! not zero); so an uncontended reader, too, allocates nothing and takes no guard. Any other
//! reader announces a node in a slot of a growable table (`readers`) and then checks the
//! list for an overlapping exclusive node; if there is none it holds the range, otherwise
//! it retracts the announcement and waits for that node. An exclusive acquisition, after linking its node, scans the announcement table
//! (skipping, with one load, every cache line of slots whose reader count is zero)
//! and waits for every overlapping announced reader to leave before it holds the range.
//!
//! A node in the list is *pending* until its owner has waited out the overlapping stripe
//! holders and drained the overlapping readers; new readers and writers treat pending nodes
//! like held ones.
//!
//! **Waiting** is the same for every kind of holder: a list node's state and a stripe
//! slot's word are both *wait words* (`wait`), and a waiter takes a ticket on the use it
//! saw, spins briefly, then parks on the word (blocking calls) or registers its task's waker
//! on it (async calls, `future`); the owner ends the use with one RMW that tells it whether
//! anyone is parked or registered.
//!
//! **Downgrade** ([`RangeGuard::downgrade`](crate::RangeGuard::downgrade)): the holder
//! announces (and counts) a reader of its range, then ends its exclusive hold. Its own hold
//! excludes every linked writer except a pending list writer waiting for its stripe slot;
//! that writer checks stripe holders before readers in each pass, so a pass that finds the
//! slot free (after the reader's announcement) also finds the reader.
//!
//! Repairs of the thesis code: ranges are half-open with no reserved values (head is -∞, a
//! null link +∞), so `0..1`, `u64::MAX - 1..u64::MAX` and adjacent ranges all lock; the
//! address tie-break makes every key unique; `find` restarts when a predecessor's own link is
//! marked; an upper-level retry re-points the new node's link at the fresh successor; nodes
//! are retired through epochs and recycled (no leak); heights come from a per-thread
//! xorshift; release goes through the token.
//!
//! # Consistency
//!
//! *The core's appearance.* The core is published whole: a private core, built and holding
//! the adopted solo hold, becomes reachable through one CAS on the state word, and every
//! party reaches it through an Acquire load of that word. No party ever runs the protocols
//! below on a lock without its core: before the core there is at most one hold (the solo
//! one, named by the word), and a list writer or reader that would check "no table, so no
//! stripe holder" cannot exist, because the list and the tables appear in the same store.
//! The publishing CAS replaces the word its builder read, so the solo hold it adopted was on
//! throughout and no solo hold can begin or end as solo after it (`solo`, "Why no hold is
//! missed"). To every later party the adopted hold is the core's first acquisition; the
//! arguments below then apply to the core unchanged.
//!
//! *Exclusive vs exclusive.* Invariant: the unmarked nodes of the list are pairwise
//! disjoint. An insertion checks its level-0 neighbours `pred`, `succ` (read from one unmarked
//! link of `pred`) and links with a CAS that succeeds only if `pred` is still unmarked and
//! still points at `succ`; so at the CAS instant `pred`/`succ` are adjacent in the sorted
//! list, every unmarked node before `pred` ends at or before `pred.start` (invariant, by
//! induction) and every node after `succ` starts at or after `succ.start`. A node is
//! therefore linked only if it overlaps no unmarked node. A holder's node stays unmarked
//! until it unlocks.
//!
//! *Shared vs exclusive* is a Dekker handshake through SeqCst fences. A writer W (1) links
//! its node with a CAS, (2) executes `fence(SeqCst)`, (3) reads the reader count of every
//! line of announcement slots and every slot of a line whose count is not zero. A reader R
//! (1) stores its announcement with a CAS and increments its line's count, (2) executes
//! `fence(SeqCst)`, (3) reads the list. The two fences are ordered in the single SeqCst
//! order; the thread whose fence comes second reads (at least) the other's stores. If that
//! is W, W sees R's count (or a later value: a count returns to zero only after R cleared
//! its slot) and R's announcement, and waits until R clears its slot. If it is R, every list read of R comes after W's
//! link: R's final `find` reads an unmarked link `pred → succ` with W linked and unmarked
//! (invariant 2 of `list`), W overlaps R, and the sorted order leaves three places for W:
//! W is `pred` (then `pred.end > R.start`); W comes at or after `succ` (then
//! `succ.start <= W.start < R.end`); or W lies before `pred`, where disjointness from `pred`
//! gives `W.end <= pred.start < R.start`, contradicting the overlap. So R sees an
//! overlapping writer and retracts. A reader and a writer therefore never both hold
//! overlapping ranges; readers never exclude each other. (SeqCst accesses alone would do
//! in the C++/Rust model; we use fences because loom models SeqCst fences exactly but
//! SeqCst accesses more weakly: without the fences its model reports the reader and the
//! writer both inside. On x86, where the `lock`-prefixed CAS before each fence is already a
//! full barrier and every access of the handshake is SeqCst, the fence compiles to a
//! compiler fence only: see `readers::handshake_fence`.)
//!
//! *Stripe holders* take part in the same handshake, as writers whose store is the slot CAS
//! instead of the link CAS. Against a counted party P (a list writer or a reader), the
//! stripe holder S (1) claims its slot, (2) fences, (3) reads the slot's count and the two
//! `wide` counts, and searches the list and the reader table if one is not zero; P (1)
//! increments the counts of its stripes' slots (or the `wide` counts), links or announces,
//! (2) fences, (3) reads the slots of its stripes, which include S's. If S's fence is
//! later, S's count load sees P's increment (or a later value, which drops to zero only
//! once P is gone), so S searches and sees P by the reader argument; if P's is later, P
//! reads S's word, which names S's range. So S and P never both hold overlapping
//! incompatible ranges. S sees a conflict only while the other party is visible, and then
//! retracts, so S never waits while visible; P may wait for S, which holds (and will
//! release) or retracts. Two stripe holders of one slot are excluded by the CAS, and
//! holders of different slots lie in different stripes, which are disjoint. A checker
//! learns S's exact range from S's word (its offsets, and its window where the slot is
//! shared by windows), and waits on that word: the retraction frees it.
//!
//! *Happens-before.* Unlocking is a Release (the level-0 mark, the slot store, the `state`
//! swap); every acquisition reads them, or links/slot values derived from them by RMWs
//! in the same release sequence, with Acquire or SeqCst loads, so the next holder of an
//! overlapping range sees the previous holder's writes.
//!
//! *Writers are not starved by readers.* A writer links its (pending) node *before* waiting
//! for readers. From then on every new reader of an overlapping range finds the node and
//! backs off, so the writer waits only for the readers announced before its link — a
//! finite set, each of which either holds (and will release) or retracts on seeing the
//! writer. Readers can, in turn, wait behind a stream of writers: the policy prefers
//! writers.
//!
//! *Progress.* `try_lock*` never waits for another thread's range: it fails on the first
//! conflict (a writer that already linked its node unlinks it again), takes a node from a
//! pool shard only if the shard's lock is free at once (else another shard, else the
//! allocator), and pins the epoch only if a slot of its table is free at once (else it
//! fails, without sleeping). It can still wait for a lock that another thread holds for one
//! short step, and sleep in the kernel if that thread is preempted there: the epoch's drain
//! list, a mutex that `bump_with` takes when one of the try's retirements completes a batch
//! (one in 256 retirements of its shard; the drains of its guard releases skip the list
//! while another thread holds it: `epvs::epoch`, "When actions run"); the allocator's
//! locks, when it allocates (a node when the pools are empty, a batch buffer and the
//! epoch's action at a completed batch); and the pool shard spin locks, which yield.
//! `examples/try_sleeps` counts the try calls during which their thread slept: with 16
//! threads on the 2-core development machine, 0.9 to 3.7 in a million (three 5 s runs),
//! in the drain list's push and in glibc's `malloc`/`free` (`perf record -e
//! sched:sched_switch --call-graph dwarf`). A try that linked its node and then fails
//! unlinks it like a release, which pins the epoch and so may wait for a slot of a full
//! table (below, "Trade-offs").
//! A timed acquisition passes its deadline to every wait (the parking lot's, and the
//! epoch's for a full table), so it returns within one non-waiting step of its deadline,
//! plus whatever time the OS does not run the thread (on a loaded 2-core machine, tens of
//! milliseconds: `tests/stripe_stress.rs` measures both). Two racing `try_lock`s, one shared and one
//! exclusive, may both fail (each saw the other's announcement or pending node); so may a
//! `try_lock` inside one stripe and an overlapping one on the list. Blocking
//! acquisitions wait only for nodes whose owners are running acquisitions or holding
//! ranges, so they wait only as long as conflicting holders hold (plus writers ahead of a
//! reader, see above).
//!
//! The loom models in this module check insert/mark/unlink, the reader/writer handshake,
//! the stripe holders against counted parties (window tables, the shared overflow table,
//! wide counts), downgrade, and solo holds (claims, releases, downgrades) racing the build
//! and publication of the core (`loom_first_*`, `loom_solo_*`; the other models start on a
//! core built before their threads run); `tests/solo_stress.rs` races the first holds of
//! fresh locks through a checker; the crate's stress tests (`tests/stripe_stress.rs` crosses
//! stripe, window and directory boundaries with wide and domain-wide ranges), property
//! tests and async tests check the lock end to end.
//!
//! # Trade-offs
//!
//! - A waiting writer blocks newcomers: once linked (pending) it makes new readers *and*
//!   new writers of overlapping ranges wait, which is what keeps it from starving (and is
//!   what fair locks, the kernel's range lock included, do too). The price is the usual
//!   one: a thread that holds a range and then blocks on a second range that overlaps a
//!   *waiting* writer, while that writer waits for the first range, deadlocks (for example
//!   a writer of `10..30` pending behind the stripe hold of `12..13`, whose thread then
//!   asks for `20..21`); acquiring in a global order does not help when the writer's range
//!   spans both. Do not block on a second range while holding one: use
//!   [`lock_many`](crate::RangeLock::lock_many) (which waits while holding only list nodes
//!   taken in ascending order, where no cycle can close: `ordered`), `try_lock*` or a
//!   timeout. There is no upgrade: locking exclusively a range that overlaps one's own
//!   shared hold waits forever (`try_lock` fails, a timeout expires); downgrade exists.
//! - Before it links, a list writer is ordered by its *intent* (`intents`): at its first
//!   wait it publishes its range under an arrival number, and list writers that arrive
//!   later wait for it as if it were linked (stripe holders, of any width, and readers
//!   cannot delay its insertion, and back off once it is linked). So a wide writer is overtaken only by the
//!   writers already past their check when it published, and by older intents, at most a
//!   few per thread (`a_waiting_wide_writer_is_overtaken_a_bounded_number_of_times`: 0 in
//!   40 rounds against 3 threads locking parts of its range, 150 to 1271 with the check
//!   removed). The intent table has 16 entries; a writer that finds it full waits
//!   unordered. Intents extend the deadlock rule above to writers that have not linked yet.
//!   A `lock_many` request on its fair path (`ordered`) waits for intents only at its
//!   first range: past it, their writers may be waiting for a node it holds.
//! - Every list writer reads the reader count of every line of the announcement table (8
//!   cache lines of 7 slots and a count per segment) and scans the slots of the lines in
//!   use; with no reader that is 8 loads of lines that stay cached. Stripe holders do not
//!   read it (readers count themselves in the stripe counts). The table grows to the peak
//!   number of concurrently announced readers and never shrinks while the lock lives: after
//!   a burst of N concurrent readers, every later list writer loads N/7 line counts (the
//!   lines are empty again, so it reads no slot). Readers only read the skip list (besides
//!   helping to snip released nodes), so read-mostly workloads do not contend on list
//!   nodes; a reader pays one more RMW (its line's count) to acquire and one to release,
//!   plus one or more for its stripe counts (a range inside one stripe: one); readers whose
//!   slots share a line contend on it; threads start probing at different, non-adjacent
//!   lines.
//! - A reader finds conflicting writers in O(log n) (only exclusive nodes are in the list);
//!   a writer pays O(log n) in the list plus O(slots) in the table.
//! - The stripe tables cost 32 KiB each (2048 slots of a holder word and a count): the
//!   overflow table from the core's build (the first time two holds overlap in time), plus
//!   one per window in use, up to 64 (2 MiB), all freed when the lock drops; the coarse table adds 8 KiB (512 slots for coarse stripes
//!   of 1 Mi units: a coarse window is 512 Mi units) plus one such table per coarse window
//!   in use, up to 64. A range inside one stripe is one slot; a range over up to 8
//!   stripes of one window is one slot per stripe (an RMW and a store per stripe: past 4 to 8 stripes a
//!   coarse claim is cheaper, see `rangelock-bench`'s `suites::mixed`); a range of up to 2 coarse
//!   stripes is 1 or 2 coarse slots plus 2 count RMWs and a load per stripe; a longer range,
//!   or one across a window boundary, or whose claim meets a taken slot, goes to the list:
//!   it increments and later decrements the counts of up to 4
//!   slots (a range of more stripes: the `wide` count of each of its windows' tables, up to
//!   4, which sends the stripe holders of those windows to the search while it is held; a
//!   range over more windows: the lock's `wide` count, which sends every stripe holder to
//!   the search), and it (like every reader) checks the holder of one slot per stripe it
//!   touches; a range over three windows or more checks every slot of the overflow table
//!   and of the window tables of its windows (2048 loads each).
//! - Stripe holders find their window's table through the directory: one load of the home
//!   entry's key and one of its table pointer, as many dependent loads as the one
//!   direct-mapped table before windows took (the token carries its slot, so release looks
//!   nothing up). A window not at its home entry (two windows whose numbers are 64 apart)
//!   probes on, in a cold path; once the directory is full, a Bloom filter of the windows
//!   that have an entry sends most others to the overflow table in one load.
//! - Window entries are never freed while the lock lives, so a lock used over more than 64
//!   windows (2 Gi units, by default) in its life sends the later ones to the overflow
//!   table, which is direct-mapped: there stripes 32 Mi units apart share a slot. Ranges of
//!   one slot held at the same time take turns: the first holds the slot, the others take
//!   the list path and cost what a list insertion costs, and a list node counted in a slot
//!   sends the holders of every stripe of that slot to the list search. (Before window
//!   tables, this was the whole domain's fate: the `held` suite, with up to 2 x 100 000
//!   ranges 1 KiB apart below a W1 area 2 GiB up, sent nearly every W1 range to the list,
//!   and `w1_loop 3000000 100000 rangelock` ran at 4.9-9.2M lock+unlock/s at 1 and 2
//!   threads; with its own table W1's window runs at 57-59M at 1 thread and 65-91M at 2,
//!   as with nothing held.) The stripe width (16 Ki units:
//!   16 KiB when units are bytes) trades the share of ranges that fit one stripe against
//!   the chance that two ranges held at once meet in one.
//! - Ranges of one stripe contend on its slot and fall back to the list as described;
//!   with many threads locking overlapping small ranges of a few stripes (the `contended`
//!   suite) most acquisitions take the list path and pay one failed slot CAS first (a CAS
//!   rather than a load: see "stripes", the slot CAS).
//! - Nodes are recycled and returned to the allocator only when the lock drops (type-stable
//!   memory lets waiters park without an epoch guard), so memory is bounded by the peak use,
//!   not by the current one. Every acquisition and release retires one node (readers too),
//!   so the peak includes what is retired while some thread sits in a protected region: a
//!   thread preempted inside an operation holds back reuse for its time slice (on a busy
//!   2-core machine we saw a few thousand to ~50k nodes of ~180 bytes at millions of
//!   operations per second). Guards are never held while waiting or while holding a range.
//! - Each lock owns a `LightEpoch` (its slot table is sized from the core count, some KB per
//!   lock). Every operation but a try's acquisition may wait in `LightEpoch::protect` if
//!   more threads than the table has slots are inside lock operations at the same instant
//!   (a try's acquisition fails instead; its release of a node it linked does not), and
//!   every operation takes the (sharded, per-thread) pool spin locks for one `Vec` push or
//!   pop.
//! - Heights are geometric with p = 1/4 (4/3 levels per node on average), so `h` levels
//!   index about `4^(h-1)` nodes at logarithmic cost, and a search skips the empty top
//!   levels (a null head link), so a short list costs the levels of its tallest node, not
//!   the maximum height. The default maximum height is [`DEFAULT_MAX_HEIGHT`] = 12, chosen
//!   from the `height` suite (W2, batches of 16, 2^14 ranges of 1 KiB) on the 2-core
//!   development machine (loaded, so differences below ~10% are noise): ops/s at heights
//!   4/6/8/10/12/14/16 were 5.27/5.39/5.19/5.08/5.05/5.09/4.15 M with 1 thread and
//!   4.06/4.32/3.66/3.93/3.85/3.34/3.02 M with 2 threads; a second run gave
//!   3.10/2.92/3.39/3.02/2.47/2.99/2.62 M and 2.31/2.50/2.55/2.15/2.31/2.38/2.34 M. The
//!   differences do not repeat between runs: W2's few dozen nodes never reach the top
//!   levels, which searches skip while empty, so W2 does not choose the height. (Those runs
//!   predate the stripe table; with it, W2's ranges rarely reach the list, and the suite is
//!   flat: 9.41-9.74M ops/s at 1 thread and 17.31-18.56M at 2 over heights 4-16.) What
//!   the height must cover is the number of held ranges: the `held` suite keeps 2 x 100 000 ranges, which needs 10 levels
//!   (`4^9` = 262 144) to stay logarithmic; 12 levels keep searches logarithmic up to about
//!   4 million held ranges (`4^11`), beyond which the top level grows linearly. (The old
//!   default, 10 levels with p = 1/2, indexed 1024 nodes: with 200 000 held ranges W1 ran at
//!   0.1x of its 16-range speed.) Every node carries 16 link words (the largest height
//!   [`Builder::max_height`] accepts), so the pools need a single size class (about
//!   180 bytes per node).
//! - Waiting spins 64 times, then parks in `parking_lot_core`'s global parking lot keyed by
//!   the wait word's address (a node's or a slot's); the release of a word with parked
//!   waiters wakes all of them (they re-check; most re-park or acquire). A waiter on a
//!   slot first passes a process-wide barrier (`membarrier`, `examples/membarrier_cost`:
//!   0.24 µs with the other core idle, 2-9 µs with it running one of our threads, on the
//!   2-core VM), the price of the
//!   holders' RMW-free release; it is paid only before sleeping.
//! - What an uncontended acquisition and release cost, inside one stripe with nothing
//!   else near, per iteration of the loop (`valgrind --tool=callgrind
//!   target/release/examples/w1_loop N H <variant> 1`, N = 200 000 and 400 000, the
//!   difference divided by 200 000; `RANGELOCK_W1_SHARED=1` for shared; the loop alone,
//!   variant `none`, is 17 instructions). H = 1 keeps one range held 1 Mi units below the
//!   loop's, so the lock has its core and the loop's holds are stripe holds; with H = 0 the
//!   lock never has two holds at once and every hold is a solo hold:
//!
//!   | hold                | instructions | atomic RMWs | fences (x86) | lines written |
//!   |---------------------|-------------:|------------:|-------------:|--------------:|
//!   | exclusive, stripe   | 122 (was 248)| 1 (CAS; store) | 0         | 1 (the slot)  |
//!   | shared, stripe      | 166 (was 735)| 2 (CAS, CAS)  | 0          | 1 (the slot)  |
//!   | exclusive, solo     | 136          | 2 (CAS; CAS) | 0           | 1 (the lock's word) |
//!   | shared, solo        | 132          | 2 (CAS; CAS) | 0           | 1 (the lock's word) |
//!   | `segments` (1 KiB)  | 122 / 127    | 2 (CAS, CAS/store) | 0     | 1             |
//!
//!   (Before the core was built on first need, the stripe holds were 115 and 155: the
//!   core's address is now one more dependent load, tested, before the stripe table's
//!   fields, and the compiler's inlining moved; `stripe_attempt` is `#[inline(always)]`
//!   since, without which the shared hold was 190. A solo hold costs fewer instructions
//!   than it counts here, but its release is an RMW where a stripe hold's is a store:
//!   `w1_loop 5000000 H rangelock 1`, 5 interleaved runs on the loaded 2-core machine,
//!   medians: 23.9 ns a lock+unlock solo (H = 0) against 15.2 on the stripe table (H = 1;
//!   15.5 for both before the solo hold); with `RANGELOCK_W1_MEMSET=1`, 88.3 and 90.2
//!   (86.8 and 86.3 before). A solo release through the range words, 3 RMWs in all, cost
//!   30.7 ns.)
//!
//!   The loads besides: the directory's home entry (key and table), the slot's count, the
//!   table's and the lock's `wide` counts, all on lines nobody writes in the common case.
//!   (Multi-stripe and coarse claims cost the one-stripe path 6 instructions exclusive and
//!   15 shared, from 131 and 163: the token grew from 16 to 24 bytes, unlock matches two
//!   more kinds, and the shared CAS starts from a guessed free word. The plain-store
//!   release then took 6 and 7 back: 137 and 178 before it. Releasing the two one-stripe
//!   kinds inline and every other kind out of line, where `unlock` had matched all eight
//!   in a jump table, took 16 and 10 more: 130 and 169 before it; `w1_loop 3000000 0
//!   rangelock 1`, 7 interleaved runs, medians: 37.5 -> 25.0 ns exclusive, 48.5 -> 41.9
//!   ns shared. Testing the directory's Bloom filter before the home entry costs a
//!   resolution 1 more where the directory is not full, as here, and saves 14 where it is
//!   full: `mixed_loop 200000 rangelock 1 100 0..14`, 237 -> 223 an operation with the
//!   loop. An exclusive multi-stripe hold is released by a function of its own, which
//!   `unlock` tests for third; a shared hold's rare branches (counts not zero, the reader
//!   table) are out of line: 158 -> 154 shared.)
//!   An exclusive release is a plain store, a compiler fence and a load of the slot's
//!   waiter count on the line it just wrote: waiters count themselves there and pass a
//!   process-wide barrier (`membarrier`) before they park (`wait`, "Counted words"). With
//!   an RMW release (a swap that reads `PARKED`), the RMW waited for the critical
//!   section's stores to drain: with W1's 1 KiB memset inside the hold, `w1_loop` ran at
//!   68.5 ns per lock+unlock with the swap and 60.2 ns with the store (medians of 9
//!   interleaved runs; `segments` 50.9, the loop alone 37.9). A reader's release stays a
//!   CAS: other readers may join at once. (Before node-free stripes a
//!   stripe hold also took a node from a pool shard and retired it: 2 more RMWs and a
//!   pool spin lock each way, and every 256th release an epoch bump.) The handshake fence
//!   is a compiler fence on x86 (see `readers::handshake_fence`); elsewhere it is a real
//!   fence. A list hold costs a node, an epoch guard and the skip-list insertion; a shared
//!   hold in the reader table costs a node, 4 more RMWs and a guard. A claim of k stripes
//!   costs k CASes and k stores exclusive, 2k CASes shared, so a shared range over more
//!   than 4 stripes takes a coarse claim instead (a count RMW and a coarse CAS each way,
//!   two of each across two windows or coarse stripes, whatever its length:
//!   `stripes::SHARED_CLAIM_STRIPES`).
//! - The lines a hold writes are the stripe table's, and threads on arbitrary ranges share
//!   them: with positions spread over a huge domain nearly every window uses the one
//!   overflow table, and about half the slot lines a thread writes were last written by
//!   another core. On the 2-vCPU development VM one such move costs 21-27 ns or 190-215 ns
//!   depending on where the hypervisor has placed the vCPUs, and that, not the lock's own
//!   work, is the whole difference between one shared lock and a lock per thread at 2
//!   threads (`rangelock-bench`'s `suites::mixed`, "At 2 threads: the lines both cores
//!   write"). Threads working on regions of their own write slot lines of their own.
//! - Against static segments (`variants::Segments` with 1 KiB segments, exactly the `w1`
//!   ranges) the uncontended instruction counts are alike (above; without a critical
//!   section, `w1_loop 20000000 0 <variant> 1`: 15.7-16.7 ns per lock+unlock for this
//!   lock, 16.5-17.0 for `segments`). With W1's 1 KiB memset inside the hold they were
//!   not while the release was an RMW: `rangelock bench w1 --threads 1,2 --rounds 5
//!   --duration-ms 500` measured 84.7 ns/op for this lock, 62.5 for `segments` and 31.4
//!   with no lock at 1 thread (0.74x), and 0.74x at 2 threads. A segment is released with
//!   a plain store (its waiters spin); the RMW waited for the memset's stores to drain
//!   while the lock was still held. A plain store alone would lose wake-ups of parked
//!   waiters; the counted wait words (`wait`, "Counted words") make it sound by moving the
//!   cost to the waiter, which passes a process-wide barrier before it parks. With that
//!   release the same suite measured 1.12x `segments` at 1 thread and 0.94x at 2 (and
//!   `w2` 1.05x and 1.08x; `rangelock-bench`'s `suites::w1`). What the
//!   segment table cannot do is the rest: any range over the whole `u64` domain without
//!   memory per unit, no false conflicts between disjoint ranges of one segment, one list
//!   node (not one CAS per segment) for a long range, parking instead of spinning, and
//!   writers that are not starved.
//!
//! Under loom the lock runs this code with loom's primitives. Reclamation is the real
//! `LightEpoch` (a 3-slot table) with one-node retirement batches, so a retired node goes
//! back to the pool and is reused within a model run: the models check that no traversal
//! reaches a node after its reuse and that a waiter tells a recycled node's new use from the
//! one it waited for (the generation in the wait word). Waiting is the same loop as outside
//! loom (`wait`, without the spin phase and without deadlines) over a model of the parking
//! lot, a loom mutex and condition variable, so a lost wake-up is a deadlock that loom
//! reports; the light and heavy barriers of counted wait words are SeqCst fences there
//! (`membarrier2` under `cfg(loom)`), which loom models exactly, and dropping either (or
//! the waiter's count) deadlocks `loom_stripe_release_wakes_a_counted_waiter`. The pool shard locks are loom mutexes, and the models with three threads, too
//! large with the real epoch, reclaim through a deferred list that reuses nothing while the
//! model runs.

#[cfg(not(loom))]
mod future;
mod intents;
mod list;
mod node;
mod ordered;
mod pool_lock;
mod readers;
mod reclaim;
mod rng;
mod solo;
mod stripes;
mod table;
mod wait;
#[cfg(not(loom))]
mod wakers;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;

use core::fmt;
use core::ops::Range;
use core::ptr::NonNull;
use std::time::Instant;

use crate::range::Mode;
use crate::raw::{RawRangeLock, RawRangeLockDowngrade};
use crate::RangeLock;

#[cfg(not(loom))]
pub use future::{
    LockFuture, ManyLockFuture, OwnedLockFuture, OwnedTryLockFuture, TryLockFuture,
    TryManyLockFuture,
};
use intents::Intents;
use list::{Conflict, List};
use node::{Node, MAX_HEIGHT};
use readers::Readers;
use reclaim::Reclaim;
use stripes::Stripes;
#[cfg_attr(not(feature = "internals"), allow(unused_imports))]
pub use stripes::{
    DEFAULT_CLAIM_STRIPES, DEFAULT_STRIPE_SHIFT, DEFAULT_STRIPE_SLOTS, DEFAULT_STRIPE_WINDOWS,
    MAX_CLAIM_STRIPES,
};
use wait::{wait_for, Wait};

/// The default number of skip-list levels (see `# Trade-offs` in the module docs).
pub const DEFAULT_MAX_HEIGHT: usize = 12;

/// Options for a [`RangeLock`] other than [`RangeLock::new`]'s defaults:
/// [`RangeLock::builder`].
#[derive(Clone, Copy, Debug)]
pub struct Builder {
    max_height: usize,
    stripe_shift: u32,
    stripe_slots: usize,
    stripe_windows: usize,
    claim_stripes: usize,
    coarse_claims: bool,
    /// Under loom: whether the lock starts without a core (`solo`). Off by default there, so
    /// the models of the core's protocols run on a core built before their threads start;
    /// the models of the solo hold and the build ask for it.
    #[cfg(loom)]
    solo: bool,
}

impl Builder {
    /// The defaults (valid: `build_raw`'s checks pass), as a constant for `const fn new`.
    const DEFAULT: Builder = Builder {
        max_height: DEFAULT_MAX_HEIGHT,
        stripe_shift: DEFAULT_STRIPE_SHIFT,
        stripe_slots: DEFAULT_STRIPE_SLOTS,
        stripe_windows: DEFAULT_STRIPE_WINDOWS,
        claim_stripes: DEFAULT_CLAIM_STRIPES,
        coarse_claims: !cfg!(loom),
        #[cfg(loom)]
        solo: false,
    };
}

impl Default for Builder {
    fn default() -> Self {
        Builder::DEFAULT
    }
}

impl Builder {
    /// Skip-list levels (1..=16; default 12).
    pub fn max_height(self, height: usize) -> Self {
        Builder { max_height: height, ..self }
    }

    /// The stripe table (module docs): stripes of `1 << shift` units, `slots` slots of 16
    /// bytes (a power of two, or 0 to send every exclusive range to the skip list).
    /// Defaults: 14 (16 Ki units) and 2048.
    pub fn stripes(self, shift: u32, slots: usize) -> Self {
        Builder { stripe_shift: shift, stripe_slots: slots, ..self }
    }

    /// How many windows of the domain (`slots` consecutive stripes each) may get a stripe
    /// table of their own, allocated when first used (a power of two, or 0 for one
    /// direct-mapped table shared by the whole domain). Windows beyond that share the
    /// overflow table. Default: 64.
    pub fn windows(self, windows: usize) -> Self {
        Builder { stripe_windows: windows, ..self }
    }

    /// How many stripes (of one window) a range may touch and still hold on the stripe
    /// table, claiming the slot of each (one CAS per stripe; module docs) instead of
    /// linking a list node or announcing a reader: 1 to 64, default 8. 1 claims only ranges inside one stripe. With coarse
    /// claims on, a shared range claims at most 4 stripes this way (a reader joins and
    /// leaves each slot with a CAS, so a coarse claim is cheaper for it sooner); wider
    /// shared ranges take the coarse claim.
    pub fn claim_stripes(self, stripes: usize) -> Self {
        Builder { claim_stripes: stripes, ..self }
    }

    /// Whether a range over more stripes than [`claim_stripes`](Self::claim_stripes) (and
    /// at most two coarse stripes of 64 stripes each, 1 Mi units by default) holds by
    /// claiming the slots of its coarse stripes (module docs) instead of linking a list
    /// node or announcing a reader. Default: on (off under loom, where the models that
    /// want coarse claims ask for them). Off when the stripe table is, or when a coarse
    /// stripe would be wider than 2^20 units (stripes wider than 2^14).
    pub fn coarse_claims(self, on: bool) -> Self {
        Builder { coarse_claims: on, ..self }
    }

    /// The raw lock (for the project's tests and benchmarks: not part of the API).
    ///
    /// # Panics
    ///
    /// If the height is 0 or larger than 16, `slots` or `windows` is neither 0 nor a power
    /// of two, `shift` is more than 16, or `claim_stripes` is not in
    /// `1..=64`.
    #[doc(hidden)]
    pub fn build_raw(self) -> SkipList {
        assert!(
            (1..=MAX_HEIGHT).contains(&self.max_height),
            "skip-list height must be in 1..={MAX_HEIGHT}, got {}",
            self.max_height
        );
        stripes::validate(
            self.stripe_shift,
            self.stripe_slots,
            self.stripe_windows,
            self.claim_stripes,
        );
        let raw = SkipList { state: solo::State::new(), config: self };
        #[cfg(loom)]
        if !self.solo {
            raw.core();
        }
        raw
    }

    /// Under loom: see the `solo` field.
    #[cfg(all(loom, test))]
    pub(crate) fn solo(self, on: bool) -> Self {
        Builder { solo: on, ..self }
    }

    /// What the lock's first acquisition builds (module docs, "Built on first use").
    fn core(self) -> Core {
        let stripes = Stripes::new(
            self.stripe_shift,
            self.stripe_slots,
            self.stripe_windows,
            self.claim_stripes,
        );
        let coarse = self.coarse();
        // Wide shared ranges claim coarse slots sooner than exclusive ones (`claim_of`).
        let stripes = if coarse.len() == 0 { stripes } else { stripes.with_coarse_claims() };
        Core {
            list: List::new(self.max_height),
            intents: Intents::new(),
            readers: Readers::new(),
            stripes,
            coarse,
            reclaim: Reclaim::new(),
            adopted: None,
        }
    }

    /// The coarse table: coarse stripes of `2^COARSE_LOG2` stripes, a quarter as many slots
    /// per table as the stripe table (at least 2), as many windows; or none.
    fn coarse(&self) -> stripes::Coarse {
        let shift = self.stripe_shift + stripes::COARSE_LOG2;
        if !self.coarse_claims || self.stripe_slots == 0 || shift > stripes::COARSE_OFFSET_BITS {
            return stripes::Coarse::new(0, 0, 0, 1);
        }
        let slots = (self.stripe_slots / 4).max(2);
        let claim = stripes::COARSE_CLAIM as usize;
        stripes::Coarse::new(shift, slots, self.stripe_windows, claim)
    }

    /// The lock.
    ///
    /// # Panics
    ///
    /// As [`build_raw`](Self::build_raw).
    pub fn build(self) -> RangeLock {
        RangeLock::from_raw(self.build_raw())
    }
}

/// The lock-free skip-list range lock: the raw core of [`RangeLock`] (the module
/// documentation of `src/skiplist/mod.rs` describes the algorithm).
pub struct SkipList {
    /// The solo hold, or the core once two holds have met (`solo`).
    state: solo::State,
    /// The options the core is built with.
    config: Builder,
}

/// The state of a [`SkipList`] that has been used: its list, tables and reclamation.
struct Core {
    list: List,
    intents: Intents,
    readers: Readers,
    stripes: Stripes,
    /// The coarse table (`stripes`, "Coarse claims"): nobody counts in it; its slots are
    /// read by every party that reads the stripe table's.
    coarse: stripes::Coarse,
    reclaim: Reclaim,
    /// The solo hold this core adopted when it was built (`solo`), which its holder
    /// releases; set before the core is published, never changed after.
    adopted: Option<Kind>,
}

// SAFETY: the raw pointers inside are nodes and segments owned by this lock and shared only
// through atomics under the protocol in the module docs; nothing is tied to a thread.
unsafe impl Send for Core {}
// SAFETY: as above; every shared mutation goes through atomics or the pool locks.
unsafe impl Sync for Core {}

/// Where the list path of an exclusive acquisition is.
#[derive(Clone, Copy, Debug, Default)]
struct Listed {
    /// The node is linked (pending or held).
    linked: bool,
    /// The intent published while it could not link (`intents`).
    intent: intents::Own,
    /// The acquisition holds list nodes of lower ranges of its request (`ordered`): it
    /// waits for no intent, only for linked nodes.
    ordered: bool,
}

/// What one non-waiting step of an acquisition found.
#[derive(Debug)]
enum Attempt {
    /// The range is held.
    Holds,
    /// Wait until this use is over, then take another step.
    Wait(wait::Ticket),
    /// A conflict that ended meanwhile: take another step at once.
    Again,
}

impl Attempt {
    /// The step's outcome after a conflict check (`None` holds).
    #[inline]
    fn after(conflict: Conflict) -> Attempt {
        match conflict {
            Conflict::None => Attempt::Holds,
            Conflict::Held(ticket) => Attempt::Wait(ticket),
            Conflict::Gone => Attempt::Again,
        }
    }
}

/// A held range of a [`SkipList`]: where its hold is (list node, stripe slot or reader
/// announcement).
pub struct SkipToken(Kind);

/// Where a held range is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Exclusive, this node linked in the skip list.
    List(NonNull<Node>),
    /// Exclusive, this slot of its stripe (see `stripes`): no node.
    Stripe(NonNull<stripes::Slot>),
    /// Exclusive, these slots of its few stripes (see `stripes`): no node.
    Stripes(stripes::Claimed),
    /// Shared, one of the readers of this slot of its stripe: no node.
    StripeShared(NonNull<stripes::Slot>),
    /// Shared, one of the readers of each of these slots of its few stripes: no node.
    StripesShared(stripes::Claimed),
    /// Exclusive, on the coarse table: these one (or, `two`, two) coarse slots, and counted
    /// as a list writer is. The range starts at `start`; its end is in the last slot's word
    /// (`Stripes::claimed_range`), so the token stays as small as a stripe claim's.
    Coarse { first: NonNull<stripes::Slot>, start: u64, two: bool },
    /// Shared, one of the readers of these coarse slots (as for `Coarse`), and counted.
    CoarseShared { first: NonNull<stripes::Slot>, start: u64, two: bool },
    /// Shared, this node announced in the reader table.
    Shared(NonNull<Node>),
    /// The lock's solo hold (`solo`): its state word, `HELD` in either mode.
    Solo(u64),
}

impl Kind {
    /// A one-stripe hold of `slot` in `mode`.
    #[inline]
    fn stripe(slot: NonNull<stripes::Slot>, mode: Mode) -> Kind {
        match mode {
            Mode::Exclusive => Kind::Stripe(slot),
            Mode::Shared => Kind::StripeShared(slot),
        }
    }
}

// SAFETY: the token only names a node or slot of its lock; releasing from another thread is
// part of the protocol (any thread may mark a node or free a slot).
unsafe impl Send for SkipToken {}

impl fmt::Debug for SkipToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SkipToken").field(&self.0).finish()
    }
}

impl SkipList {
    /// A lock with the default height ([`DEFAULT_MAX_HEIGHT`]).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        // Nothing to check or allocate: the defaults are valid, and the core is built on
        // first need.
        SkipList { state: solo::State::new(), config: Builder::DEFAULT }
    }

    /// A lock with the default options (under loom, whose atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::with_max_height(DEFAULT_MAX_HEIGHT)
    }

    /// A lock whose skip list uses `height` levels.
    ///
    /// # Panics
    ///
    /// If `height` is 0 or larger than 16.
    pub fn with_max_height(height: usize) -> Self {
        Builder::default().max_height(height).build_raw()
    }

    /// Stripe width (log2 units) and number of slots of the stripe table (0: no table).
    pub fn stripes(&self) -> (u32, usize) {
        (self.config.stripe_shift, self.config.stripe_slots)
    }

    /// How many windows may get a stripe table of their own ([`Builder::windows`]; 0 when
    /// there is no stripe table).
    pub fn stripe_windows(&self) -> usize {
        let c = &self.config;
        stripes::windows_of(c.stripe_shift, c.stripe_slots, c.stripe_windows)
    }

    /// The number of skip-list levels.
    pub fn max_height(&self) -> usize {
        self.config.max_height
    }

    /// Nodes allocated by this lock and not yet freed: held, pending, retired or pooled.
    /// It stays bounded by the peak number of simultaneously used nodes plus the retirement
    /// batches in flight; all of them are freed when the lock drops.
    pub fn allocated_nodes(&self) -> usize {
        self.built().map_or(0, |core| core.reclaim.allocated())
    }

    /// The core, built (adopting the solo hold) by the first call (`solo`).
    #[inline]
    fn core(&self) -> &Core {
        match self.state.built() {
            Some(core) => core,
            None => self.state.core(|| self.config.core()),
        }
    }

    /// The core if it has been built.
    #[inline]
    fn built(&self) -> Option<&Core> {
        self.state.built()
    }

    #[inline]
    fn acquire(&self, range: Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        // The safe `RawRangeLock` methods are reachable through `Lock::raw`: an empty or
        // inverted range must not wrap around into a range over every window.
        crate::raw::assert_valid(&range);
        let Some(core) = self.state.built() else {
            return self.acquire_solo(&range, mode, wait);
        };
        core.acquire(&range, mode, wait)
    }

    /// An acquisition on a lock without a core: a solo hold if there is no other, else the
    /// core, built now (`solo`).
    #[cold]
    #[inline(never)]
    fn acquire_solo(&self, range: &Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        if let Some(held) = self.state.claim(range, mode) {
            return Some(SkipToken(Kind::Solo(held)));
        }
        self.core().acquire_cold(range, mode, wait)
    }
}

impl Core {
    #[inline(always)]
    fn acquire(&self, range: &Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        match mode {
            Mode::Exclusive => self.acquire_exclusive(range, wait),
            Mode::Shared => self.acquire_shared_token(range, wait),
        }
    }

    /// [`acquire`](Self::acquire) for the cold callers (the first acquisitions on a new
    /// core, adoptions): one more inlined copy of the fast path made the compiler keep
    /// `stripe_attempt` out of line in the hot ones (`w1_loop`, callgrind: 128 instead of
    /// 115 instructions a lock+unlock exclusive, 190 instead of 155 shared).
    #[inline(never)]
    fn acquire_cold(&self, range: &Range<u64>, mode: Mode, wait: Wait) -> Option<SkipToken> {
        self.acquire(range, mode, wait)
    }

    /// Acquires `range` in `mode` for the solo hold this private core adopts (`solo`).
    fn adopt(&mut self, range: &Range<u64>, mode: Mode) {
        debug_assert!(self.adopted.is_none());
        // Nothing else is held on a private core: the first attempt holds.
        let token =
            self.acquire_cold(range, mode, Wait::Never).expect("a private core holds nothing");
        self.adopted = Some(token.0);
    }

    /// Releases the adopted hold of this private core, if any (`solo`).
    fn give_back_adopted(&mut self) {
        if let Some(kind) = self.adopted.take() {
            self.release(kind);
        }
    }

    /// The adopted hold, for its solo holder.
    fn adopted(&self) -> SkipToken {
        SkipToken(self.adopted.expect("a core that replaced a held word adopted it"))
    }

    /// Ends a hold of any kind but a solo one.
    fn release(&self, kind: Kind) {
        match kind {
            // SAFETY: as in `unlock`.
            Kind::Stripe(slot) => unsafe { slot.as_ref() }.release(),
            // SAFETY: as in `unlock`.
            Kind::StripeShared(slot) => unsafe { slot.as_ref() }.release_shared(),
            // SAFETY: as in `unlock`.
            Kind::Stripes(claimed) => unsafe { release_stripes(claimed) },
            other => self.release_other(other),
        }
    }

    #[inline]
    fn acquire_exclusive(&self, range: &Range<u64>, wait: Wait) -> Option<SkipToken> {
        if let Some(token) = self.stripe_attempt(range, Mode::Exclusive, wait) {
            return Some(token);
        }
        self.acquire_listed(self.list_node(range), range, wait, false)
    }

    /// A shared acquisition: the stripe slot if it can be had, else the reader table. Not
    /// inlined into `acquire`, which callers inline: the exclusive fast path stays small
    /// (inlined, it cost `mixed_loop 200000 rangelock 1 100 0..14` 32 instructions an
    /// exclusive operation and saved a shared one 3).
    fn acquire_shared_token(&self, range: &Range<u64>, wait: Wait) -> Option<SkipToken> {
        if let Some(token) = self.stripe_attempt(range, Mode::Shared, wait) {
            return Some(token);
        }
        self.acquire_announced(range, wait)
    }

    /// A shared acquisition in the reader table. Out of line: the stripe path keeps its
    /// registers.
    #[cold]
    #[inline(never)]
    fn acquire_announced(&self, range: &Range<u64>, wait: Wait) -> Option<SkipToken> {
        self.acquire_shared(range, wait).map(|node| SkipToken(Kind::Shared(node)))
    }

    /// A fresh private node for the list path.
    fn list_node(&self, range: &Range<u64>) -> NonNull<Node> {
        let node = self.reclaim.alloc();
        // SAFETY: the node is private until linked.
        unsafe { node.as_ref() }.init(range, rng::random_height(self.list.height()));
        node
    }

    /// The list path of an exclusive acquisition: count the range in the stripe table,
    /// link the (private, initialized) node, then wait out overlapping stripe holders and
    /// drain overlapping readers. `ordered`: the caller holds list nodes of lower ranges
    /// (`ordered`), so the insertion waits for no intent.
    fn acquire_listed(
        &self,
        node: NonNull<Node>,
        range: &Range<u64>,
        wait: Wait,
        ordered: bool,
    ) -> Option<SkipToken> {
        // Counted before the link (part of the handshake with stripe holders: see
        // `stripes`), uncounted only after the unlink (`release_exclusive`).
        self.stripes.count(range);
        let mut listed = Listed { ordered, ..Listed::default() };
        loop {
            // Every wait (a conflict, or a full epoch table) is bounded by `wait`.
            let Some(guard) = self.reclaim.pin_for(wait) else {
                self.abandon_listed(node, listed);
                return None;
            };
            let attempt = self.listed_attempt(node, range, &mut listed, &guard);
            // Never wait inside a protected region.
            drop(guard);
            match attempt {
                Attempt::Holds => return Some(SkipToken(Kind::List(node))),
                Attempt::Again => {}
                Attempt::Wait(ticket) => {
                    if !wait_for(ticket, wait) {
                        self.abandon_listed(node, listed);
                        return None;
                    }
                }
            }
        }
    }

    /// One step of the list path that never waits: link `node` (unless linked), then look
    /// for a stripe holder and an announced reader in its way. Before linking, an older
    /// writer's intent that overlaps is waited for like a linked node (unless the step is
    /// `ordered`), and the first wait publishes our own intent (`intents`). Stripes
    /// before readers: a stripe
    /// holder that downgrades announces its reader before it frees its slot, so a step that
    /// finds the slot free finds the reader (module docs, "Downgrade").
    fn listed_attempt(
        &self,
        node: NonNull<Node>,
        range: &Range<u64>,
        listed: &mut Listed,
        guard: &reclaim::Guard<'_>,
    ) -> Attempt {
        if !listed.linked {
            // The first wait of any kind publishes our intent: from then on we respect only
            // older intents, and younger writers respect ours.
            let older = match listed.ordered {
                // Its writer may be waiting for a node we hold (`ordered`).
                true => None,
                false => self.intents.older_overlapping(range, listed.intent),
            };
            let ticket = match older {
                Some(ticket) => ticket,
                None => match self.list.insert(node, guard) {
                    Conflict::None => {
                        listed.linked = true;
                        self.intents.withdraw(&mut listed.intent);
                        return self.drain_attempt(range, guard);
                    }
                    Conflict::Held(ticket) => ticket,
                    Conflict::Gone => return Attempt::Again,
                },
            };
            if !listed.intent.is_some() {
                listed.intent = self.intents.publish(node, range);
            }
            return Attempt::Wait(ticket);
        }
        self.drain_attempt(range, guard)
    }

    /// The pending part of a list step: a stripe holder or an announced reader in the way.
    fn drain_attempt(&self, range: &Range<u64>, guard: &reclaim::Guard<'_>) -> Attempt {
        // Linked (pending): new readers and stripe holders back off; wait out those that
        // came first.
        match self.stripes.overlapping(range, Mode::Exclusive, guard) {
            Conflict::None => match self.coarse.overlapping(range, Mode::Exclusive, guard) {
                Conflict::None => Attempt::after(self.readers.overlapping(range, guard)),
                other => Attempt::after(other),
            },
            other => Attempt::after(other),
        }
    }

    /// Gives up the list path of an acquisition: withdraw its intent, unlink (if linked),
    /// uncount, and return or retire the node.
    fn abandon_listed(&self, node: NonNull<Node>, mut listed: Listed) {
        let had_intent = listed.intent.is_some();
        self.intents.withdraw(&mut listed.intent);
        if listed.linked {
            self.release_exclusive(node);
        } else {
            // SAFETY: the node is private (never linked) and initialized with its range.
            let node_ref = unsafe { node.as_ref() };
            if had_intent {
                // Wake the writers that waited for our intent.
                node_ref.release();
            }
            self.stripes.uncount(&node_ref.range());
            self.reclaim.free_private(node);
        }
    }

    fn acquire_shared(&self, range: &Range<u64>, wait: Wait) -> Option<NonNull<Node>> {
        // Counted before the announcement (the handshake with stripe holders, see
        // `stripes`), uncounted only after the slot is cleared for good (`release_shared`).
        self.stripes.count(range);
        let node = self.reclaim.alloc();
        // SAFETY: the node is private until announced.
        unsafe { node.as_ref() }.init(range, 0);
        let mut announced = false;
        loop {
            let Some(guard) = self.reclaim.pin_for(wait) else {
                self.abandon_shared(node, announced);
                return None;
            };
            let attempt = self.shared_attempt(node, range, &mut announced, &guard);
            // Never wait inside a protected region.
            drop(guard);
            match attempt {
                Attempt::Holds => return Some(node),
                Attempt::Again => {}
                Attempt::Wait(ticket) => {
                    if !wait_for(ticket, wait) {
                        self.abandon_shared(node, announced);
                        return None;
                    }
                }
            }
        }
    }

    /// One step of a shared acquisition that never waits: announce `node` (a new
    /// generation if it was announced before), then look for an exclusive holder in its
    /// way; on a conflict, retract (so the writer we will wait for does not wait for us).
    fn shared_attempt(
        &self,
        node: NonNull<Node>,
        range: &Range<u64>,
        announced: &mut bool,
        guard: &reclaim::Guard<'_>,
    ) -> Attempt {
        // SAFETY: the caller's node, private or retracted (ours to reuse).
        let node_ref = unsafe { node.as_ref() };
        if *announced {
            // A new generation *before* re-announcing: a writer that reads the slot must
            // not see a released state and skip us.
            node_ref.new_generation();
        }
        let claim = self.readers.announce(node.as_ptr(), rng::thread_index());
        node_ref.set_claim(claim);
        *announced = true;
        let conflict = match self.list.overlapping(range, guard) {
            Conflict::None => match self.stripes.overlapping(range, Mode::Shared, guard) {
                Conflict::None => self.coarse.overlapping(range, Mode::Shared, guard),
                other => other,
            },
            other => other,
        };
        let Conflict::Held(ticket) = conflict else {
            return Attempt::Holds;
        };
        // SAFETY: `claim` is ours, just announced in this lock's table.
        unsafe { Readers::clear(claim) };
        node_ref.release();
        Attempt::Wait(ticket)
    }

    /// Gives up a shared acquisition (its node retracted or never announced): uncount, and
    /// return or retire the node.
    fn abandon_shared(&self, node: NonNull<Node>, announced: bool) {
        // SAFETY: the caller's node, initialized with its range.
        self.stripes.uncount(&unsafe { node.as_ref() }.range());
        if announced {
            self.reclaim.retire(node);
        } else {
            self.reclaim.free_private(node);
        }
    }

    /// Ends an exclusive hold (or a pending node): mark, wake, unlink, uncount, retire.
    fn release_exclusive(&self, node: NonNull<Node>) {
        // SAFETY: the caller owns the held node; it stays valid (type-stable) throughout.
        let node_ref = unsafe { node.as_ref() };
        node_ref.mark();
        node_ref.release();
        {
            let guard = self.reclaim.pin();
            self.list.unlink(node, &guard);
        }
        self.stripes.uncount(&node_ref.range());
        self.reclaim.retire(node);
    }

    /// Ends a shared hold: clear the slot, wake, uncount, retire.
    fn release_shared(&self, node: NonNull<Node>) {
        // SAFETY: the caller owns the held node.
        let node_ref = unsafe { node.as_ref() };
        // SAFETY: the claim was recorded by `acquire_shared`, is still announced (the token
        // is released once) and slots live as long as the lock.
        unsafe { Readers::clear(node_ref.claim()) };
        node_ref.release();
        self.stripes.uncount(&node_ref.range());
        self.reclaim.retire(node);
    }
}

// SAFETY: the reader is announced (and counted) before the exclusive hold ends, so every
// writer that could take the range after that end meets the announcement (module docs,
// "Downgrade").
unsafe impl RawRangeLockDowngrade for SkipList {
    unsafe fn downgrade(&self, token: SkipToken, range: Range<u64>) -> SkipToken {
        let token = match token.0 {
            Kind::Solo(held) => match self.state.downgrade(held) {
                Ok(shared) => return SkipToken(Kind::Solo(shared)),
                // Adopted: downgrade the core's hold instead.
                Err(solo::Adopted(core)) => core.adopted(),
            },
            _ => token,
        };
        // Announce a reader of the range while still holding it exclusively: no overlapping
        // exclusive node is linked (ours excludes them), so there is nothing to check.
        let core = self.core();
        core.stripes.count(&range);
        let node = core.reclaim.alloc();
        // SAFETY: the node is private until announced.
        let node_ref = unsafe { node.as_ref() };
        node_ref.init(&range, 0);
        node_ref.set_claim(core.readers.announce(node.as_ptr(), rng::thread_index()));
        // Then end the exclusive hold: the writers it wakes drain readers and find ours.
        // SAFETY: the caller's token, released once, here.
        unsafe { self.unlock(token) };
        SkipToken(Kind::Shared(node))
    }
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SkipList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("max_height", &self.max_height())
            .field("allocated_nodes", &self.allocated_nodes())
            .finish_non_exhaustive()
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // No guard borrows the lock any more. Nodes still linked or announced belong to
        // guards that were forgotten (`mem::forget`); they go back to the pool, which frees
        // everything when `reclaim` drops.
        // (A forgotten stripe hold is only a word in a table, freed with it.)
        let (list, readers) = (self.list.drain(), self.readers.drain());
        for node in list.into_iter().chain(readers) {
            self.reclaim.free_private(node);
        }
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        // No guard borrows the lock any more.
        drop(self.state.take());
    }
}

// SAFETY: mutual exclusion and the happens-before edges are argued in the module docs
// (`# Consistency`): unmarked list nodes are disjoint, and readers and writers meet in a
// SeqCst Dekker handshake; unlock is a Release read by later acquisitions.
unsafe impl RawRangeLock for SkipList {
    type Token = SkipToken;

    const NAME: &'static str = "rangelock";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<SkipToken> {
        self.acquire(range, mode, Wait::Never)
    }

    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> SkipToken {
        match self.acquire(range, mode, Wait::Until(None)) {
            Some(token) => token,
            None => unreachable!("waiting without a deadline always acquires"),
        }
    }

    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<SkipToken> {
        self.acquire(range, mode, Wait::Until(Some(deadline)))
    }

    const ORDERED: bool = true;

    fn lock_ordered(
        &self,
        request: &[(Range<u64>, Mode)],
        deadline: Option<Instant>,
    ) -> Option<Vec<SkipToken>> {
        self.acquire_ordered(request, Wait::Until(deadline))
    }

    #[inline]
    unsafe fn unlock(&self, token: SkipToken) {
        // The one-stripe holds, tested one by one, and the rest out of line: a `match` over
        // every kind compiled to a jump table, which cost the one-stripe release 16
        // instructions exclusive and 10 shared (module docs, "What an uncontended
        // acquisition and release cost") and an indirect branch that mispredicts whenever
        // the kinds alternate (cachegrind's model, `valgrind --tool=cachegrind
        // --branch-sim=yes target/release/examples/mixed_loop 200000 rangelock 1 100
        // [0..14]`: 0.54 indirect mispredicts an operation, 0.2 with ranges of up to one
        // stripe; 0.18 and 0.003 since).
        match token.0 {
            // SAFETY: the slot of a stripe token is in one of this lock's tables, which live
            // as long as the lock; the token is released once, so the slot is still ours.
            Kind::Stripe(slot) => unsafe { slot.as_ref() }.release(),
            // SAFETY: as above; we are one of the slot's readers.
            Kind::StripeShared(slot) => unsafe { slot.as_ref() }.release_shared(),
            // SAFETY: the slots of a claim token are in one of this lock's tables, which live
            // as long as the lock; the token is released once, so they are still ours.
            Kind::Stripes(claimed) => unsafe { release_stripes(claimed) },
            other => self.release_other(other),
        }
    }
}

impl SkipList {
    /// [`unlock`](RawRangeLock::unlock) of every kind of hold but a one-stripe one and an
    /// exclusive multi-stripe one: a solo hold here (tested in `unlock`, it cost the
    /// one-stripe release 8 instructions, `w1_loop`), the others on the core.
    #[inline(never)]
    fn release_other(&self, kind: Kind) {
        match kind {
            Kind::Solo(held) => {
                // Ends the solo hold, or the core's adopted hold if a core adopted it.
                if let Err(solo::Adopted(core)) = self.state.release(held) {
                    core.release(core.adopted().0);
                }
            }
            other => self.core().release_other(other),
        }
    }
}

/// [`unlock`](RawRangeLock::unlock) of an exclusive multi-stripe hold: out of line, but
/// apart from `release_other`, whose other kinds make it save every callee-saved register
/// and dispatch through a jump table (17 instructions an operation over 2-9 stripes, and an
/// indirect branch).
///
/// # Safety
///
/// As `stripes::release_claimed`, exclusive.
#[inline(never)]
unsafe fn release_stripes(claimed: stripes::Claimed) {
    // SAFETY: the caller's contract.
    unsafe { stripes::release_claimed(claimed, Mode::Exclusive) }
}

impl Core {
    /// [`unlock`](RawRangeLock::unlock) of every kind of hold but a one-stripe one and an
    /// exclusive multi-stripe one.
    #[inline(never)]
    fn release_other(&self, kind: Kind) {
        match kind {
            Kind::List(node) => self.release_exclusive(node),
            // SAFETY: the slots of a claim token are in one of this lock's tables, which
            // live as long as the lock; the token is released once, so they are still ours;
            // we are one of each slot's readers.
            Kind::StripesShared(claimed) => unsafe {
                stripes::release_claimed(claimed, Mode::Shared)
            },
            Kind::Coarse { first, start, two } => {
                self.release_coarse(first, start, two, Mode::Exclusive);
            }
            Kind::CoarseShared { first, start, two } => {
                self.release_coarse(first, start, two, Mode::Shared);
            }
            Kind::Shared(node) => self.release_shared(node),
            Kind::Stripe(_) | Kind::StripeShared(_) | Kind::Stripes(_) | Kind::Solo(_) => {
                unreachable!("released by `unlock`")
            }
        }
    }
}
