//! What the seeds claim, and how a claim is judged: the registry's types.
//!
//! The report shows **figures** ([`Figure`]: one seed figure or table, the suite whose
//! records reproduce it, the records shown, and the caveats that hold for every verdict on
//! it) and under each figure its **claims** ([`Claim`]). A claim is one sentence of the
//! seed's evaluation, quoted verbatim (`quote`), and one [`Rule`] that decides it:
//!
//! - what is measured: a [`Ratio`] of two selections of records, a [`Rule::Contrast`] of
//!   two ratios ("which one falls more"), [`Rule::Steps`] along a parameter (a trend),
//!   [`Rule::Spread`] over points (flat), [`Rule::Peak`];
//! - against what: the seed's number when the quote states one ([`SeedNumber`]: "four
//!   times" is at least 4; a table's two values give their ratio), and always our band
//!   ([`Band`]), the threshold we chose for the seed's *direction*, with its reason. A band
//!   never admits the outcome the seed argues against: "outperforms" is above 1, never 1.
//!
//! Every value is taken at the extremes of the rounds as well as at the medians: a ratio
//! `a / b` spans `a_min / b_max ..= a_max / b_min` ([`super::check`]). A verdict holds only
//! if it holds over that whole span; where the span straddles a threshold, it reads
//! "inconclusive".
//!
//! Claims this machine cannot test say so with a measured reason ([`Rule::NotTestable`]:
//! say, more threads than the records' machine has cores), and claims no suite measures
//! are listed as [`Rule::NotCovered`], so the report accounts for every claim of each
//! seed's evaluation. The data lives in `seeds::registry`, one file per seed.
//!
//! **The seed's design in the seed's row.** A claim about a seed's own system judges the
//! variant that implements the seed's design ([`Row::Seed`]; for the range-lock thesis the
//! list algorithm, `rangelock-list`). Where the product differs from it (the product
//! `rangelock` adds a stripe table; the `rangelockd` combiner pushes grants where the
//! thesis's clients poll), the product is judged by the same rule in a separate claim,
//! [`Row::Beyond`].

/// A seed paper (or the project itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seed {
    /// *Concurrent Range Locking* (Nguyen): W1, W2, height, LeanStore aliasing.
    RangeThesis,
    /// The EPVS paper (*Performant almost-latch-free data structures using epoch protection
    /// in more depth*, Li et al.), §6.
    Epvs,
    /// *Server-sided range locking is better than client-sided locking* (Dezalos), chapter 5;
    /// "Server-sided Range Locking" for short.
    ServerThesis,
    /// No seed figure: suites of this project's own, with bars we chose.
    Project,
}

impl Seed {
    /// Every seed, in report order.
    pub const ALL: [Seed; 4] = [Seed::RangeThesis, Seed::Epvs, Seed::ServerThesis, Seed::Project];

    /// The name `rangelock bench claims` and the report's tables use.
    pub fn short(self) -> &'static str {
        match self {
            Seed::RangeThesis => "Concurrent Range Locking",
            Seed::Epvs => "EPVS",
            Seed::ServerThesis => "Server-sided Range Locking",
            Seed::Project => "project",
        }
    }

    /// The section title: the work's short name, its title and authors.
    pub fn title(self) -> &'static str {
        match self {
            Seed::RangeThesis => "Concurrent Range Locking (T.-D. Nguyen, TU Munich), §5",
            Seed::Epvs => {
                "The EPVS paper: Performant almost-latch-free data structures using epoch \
                 protection in more depth (Li, Chandramouli, Madden, VLDB Journal 2024), §6"
            }
            Seed::ServerThesis => {
                "Server-sided Range Locking: Server-sided range locking is better than \
                 client-sided locking (J. Dezalos, EPFL), ch. 5"
            }
            Seed::Project => "Project suites (no seed figure)",
        }
    }

    /// The seed's setup, against which our 2-core machine is read.
    pub fn setup(self) -> &'static str {
        match self {
            Seed::RangeThesis => {
                "AMD Ryzen 9 7950X, 16 cores / 32 threads, up to 32 worker threads"
            }
            Seed::Epvs => "Azure D48s_v3, 48 vCPUs on one socket, C#; tables of 4096 entries",
            Seed::ServerThesis => {
                "two Xeon Platinum 8468 machines (2 x 48 cores), ConnectX-6 RDMA, eRPC; \
                 18 server threads"
            }
            Seed::Project => "this project's own questions",
        }
    }
}

/// Which design a claim judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// The seed's own design (or, for a project suite, the project's bar).
    Seed,
    /// The product where it goes beyond the seed's design, judged by the seed's rule.
    Beyond,
}

/// At which thread (client) count a side is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The most threads that do not oversubscribe the cores (else the most there are).
    Cores,
    /// The most threads (clients) measured, oversubscribed or not: for claims about many
    /// clients that mostly wait on the network.
    Most,
    /// Exactly this many.
    Threads(usize),
}

/// What a side reads from a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Median ops/s; rounds span `ops_per_sec_min..=ops_per_sec_max`.
    OpsPerSec,
    /// Sampled p50 latency; rounds span `p50_ns_min..=p50_ns_max` where recorded.
    P50,
    /// Sampled p99 latency; rounds span `p99_ns_min..=p99_ns_max` where recorded.
    P99,
    /// A numeric extra field (median over rounds; no spread is recorded for it).
    Extra(&'static str),
}

/// Of several variants, which one a side takes (per group of records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The smallest value ("every server-sided lock beats ...": the worst of them).
    Min,
    /// The largest value ("... beats every client-sided one": the best of those).
    Max,
}

/// Records of one variant (or the worst or best of several) with these params, read at
/// `at`.
#[derive(Clone, Copy, Debug)]
pub struct Side {
    /// The variant, or the variants `pick` chooses among.
    pub variants: &'static [&'static str],
    /// Which of several variants counts.
    pub pick: Pick,
    /// Params that must equal these values (numbers compare numerically).
    pub params: &'static [(&'static str, &'static str)],
    /// The thread count.
    pub at: At,
    /// What is read.
    pub metric: Metric,
}

/// `num / den`. Where records hold params neither side pins (say a `background` of
/// `held`), one ratio is taken per group of those params, and every one must pass.
#[derive(Clone, Copy, Debug)]
pub struct Ratio {
    /// Numerator.
    pub num: Side,
    /// Denominator.
    pub den: Side,
}

/// Along what a trend or a spread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// The values of a param (`points` are its values).
    Param(&'static str),
    /// Thread (client) counts (`points` are counts).
    Threads,
    /// Variants (`points` are variant names; the side's own variant is ignored).
    Variants,
}

/// What a claim measures.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// One value (an absolute bar: "no lock lost").
    Value(Side),
    /// One ratio.
    Ratio(Ratio),
    /// `first / second`, each a ratio: "which one falls more", "which lead grows".
    Contrast {
        /// The first ratio.
        first: Ratio,
        /// The second.
        second: Ratio,
    },
    /// Each step along `points`: the value at a point over the value at the one before
    /// (every step must pass: "runtime falls as height rises" covers every point).
    Steps {
        /// The records (`over` overrides its param, thread count or variant).
        side: Side,
        /// Along what.
        over: Over,
        /// The points, in order.
        points: &'static [&'static str],
    },
    /// The largest value over the points divided by the smallest ("flat": at most the band;
    /// "no clear winner" among variants likewise).
    Spread {
        /// The records (`over` overrides its param, thread count or variant).
        side: Side,
        /// Along what.
        over: Over,
        /// The points.
        points: &'static [&'static str],
    },
    /// The best value over the `inside` points divided by the best over the other
    /// `points` ("peaks at 16 to 24 clients": above 1).
    Peak {
        /// The records (`over` overrides its param, thread count or variant).
        side: Side,
        /// Along what.
        over: Over,
        /// Every point measured.
        points: &'static [&'static str],
        /// Where the seed puts the peak.
        inside: &'static [&'static str],
    },
    /// This machine cannot test the claim; the reason is measured from the records.
    NotTestable(Needs),
    /// No suite measures the claim: why not.
    NotCovered(&'static str),
}

/// What a claim that cannot be tested here would need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// This many threads (or clients, or server threads) on as many cores: the records'
    /// machine block says how many cores it had.
    Cores(usize),
    /// Hardware counters: the suite's records say whether `perf` could read them
    /// (`hardware_counters`).
    HardwareCounters,
}

/// A threshold test on a value's span `lo..=hi`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Test {
    /// At least this: passes when `lo >= x`, fails when `hi < x`.
    AtLeast(f64),
    /// Above this: passes when `lo > x`, fails when `hi <= x`.
    Above(f64),
    /// At most this: passes when `hi <= x`, fails when `lo > x`.
    AtMost(f64),
    /// Below this: passes when `hi < x`, fails when `lo >= x`.
    Below(f64),
    /// Strictly between `lo` and `hi`: passes when the span lies inside, fails when it lies
    /// outside (ends excluded: "slightly better" is above 1, never 1).
    Within(f64, f64),
}

/// A band we chose (never the seed's number), with why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    /// The test.
    pub test: Test,
    /// Why this band reads the seed's words.
    pub reason: &'static str,
}

/// The number a quote states, and what reaching it means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SeedNumber {
    /// A ratio the sentence states in words or digits ("four times more" is at least 4).
    Stated {
        /// As the quote writes it (a whole token of the quote).
        written: &'static str,
        /// Its test: `AtLeast`/`AtMost` with the written value.
        test: Test,
    },
    /// A range the sentence states ("two to nine times").
    Range {
        /// The low end as written.
        lo: &'static str,
        /// The high end as written.
        hi: &'static str,
    },
    /// The ratio of two values the quote states (a table's row against another's).
    Derived {
        /// Numerator as written.
        num: &'static str,
        /// Denominator as written.
        den: &'static str,
        /// `true`: ours reaches the seed's when at least its ratio; `false`: at most.
        at_least: bool,
    },
}

impl SeedNumber {
    /// The tokens of the quote this number is read from.
    pub fn written(&self) -> Vec<&'static str> {
        match *self {
            SeedNumber::Stated { written, .. } => vec![written],
            SeedNumber::Range { lo, hi } => vec![lo, hi],
            SeedNumber::Derived { num, den, .. } => vec![num, den],
        }
    }

    /// The test reaching the seed's magnitude means (`None` if a written number does not
    /// read as one: the quote test catches that).
    pub fn test(&self) -> Option<Test> {
        let n = super::quote::number;
        Some(match *self {
            SeedNumber::Stated { test, .. } => test,
            SeedNumber::Range { lo, hi } => Test::Within(n(lo)?, n(hi)?),
            SeedNumber::Derived { num, den, at_least } => {
                let r = n(num)? / n(den)?;
                if at_least {
                    Test::AtLeast(r)
                } else {
                    Test::AtMost(r)
                }
            }
        })
    }

    /// The seed's ratio as one number (a range: `None`; see [`SeedNumber::test`]).
    pub fn value(&self) -> Option<f64> {
        match self.test()? {
            Test::AtLeast(x) | Test::AtMost(x) | Test::Above(x) | Test::Below(x) => Some(x),
            Test::Within(..) => None,
        }
    }
}

/// One figure or table of a seed, and the suite that reproduces it.
#[derive(Clone, Copy, Debug)]
pub struct Figure {
    /// The suite (`<suite>.json`).
    pub suite: &'static str,
    /// `Fig. 5.2`, `Table 5`, or `-` for a project suite.
    pub figure: &'static str,
    /// Whose figure.
    pub seed: Seed,
    /// The seed's section (`§5.3.3`).
    pub section: &'static str,
    /// The seed's caption, or one line on what a project suite asks.
    pub caption: &'static str,
    /// The records shown (params that must match; empty: all).
    pub show: &'static [(&'static str, &'static str)],
    /// What holds for every verdict on the figure (stand-ins, oversubscription, the
    /// threads compared), printed with each, "reproduced" included.
    pub caveats: &'static [&'static str],
    /// Measured context: ratios from the same run shown with the verdicts, never judged
    /// (how close each lock comes to the no-lock run, round trips per lock, ...).
    pub context: &'static [(&'static str, Ratio)],
}

/// One claim: a sentence of the seed, and the rule that decides it.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// The figure's suite.
    pub suite: &'static str,
    /// The figure (with `suite`, the key of its [`Figure`]).
    pub figure: &'static str,
    /// The seed's sentence, verbatim (whitespace aside) from its evaluation text; for a
    /// project suite, our bar in our words.
    pub quote: &'static str,
    /// What the claim says, in a few words (the summary's line).
    pub gist: &'static str,
    /// The seed's design, or the product beyond it.
    pub row: Row,
    /// The seed's number in the quote, if it states one.
    pub seed: Option<SeedNumber>,
    /// Our band for the seed's direction (`None` only for claims not tested here).
    pub band: Option<Band>,
    /// What decides.
    pub rule: Rule,
}

impl Claim {
    /// Its figure.
    pub fn figure(&self) -> &'static Figure {
        figure(self.suite, self.figure).expect("every claim's figure is registered")
    }
}

/// Every figure, in report order.
pub fn figures() -> &'static [Figure] {
    super::registry::FIGURES
}

/// Every claim, in report order within each figure.
pub fn claims() -> &'static [Claim] {
    super::registry::CLAIMS
}

/// The figure of `suite` called `figure`.
pub fn figure(suite: &str, figure: &str) -> Option<&'static Figure> {
    figures().iter().find(|f| f.suite == suite && f.figure == figure)
}

/// The figures of `suite`, in registry order.
pub fn for_suite(suite: &str) -> impl Iterator<Item = &'static Figure> + '_ {
    figures().iter().filter(move |f| f.suite == suite)
}

/// The claims of one figure, in registry order.
pub fn of_figure(f: &Figure) -> impl Iterator<Item = &'static Claim> + '_ {
    claims().iter().filter(move |c| c.suite == f.suite && c.figure == f.figure)
}

/// The distinct suite names of the registry, in order of first appearance.
pub fn suites() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for f in figures() {
        if !out.contains(&f.suite) {
            out.push(f.suite);
        }
    }
    out
}

/// The client-sided locks in local shared memory (no network): shown only as labelled
/// references, never as the Server-sided Range Locking comparator.
pub const LOCAL_MEMORY: &[&str] = &["dslr-shm", "citron-like", "shm-read", "shm-cas", "shm-faa"];
