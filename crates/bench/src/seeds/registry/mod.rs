//! The registry's data: every figure and every claim, one file per seed.
//!
//! Each file lists its seed's figures in the order of the seed's evaluation, and under
//! each figure every claim its text makes about a result, quoted verbatim: judged where
//! this machine can show it, "not testable here" with a measured reason where it cannot,
//! "not covered" with why otherwise. The constructors below keep the entries short.

mod epvs;
mod project;
mod range_thesis;
mod server_thesis;

use super::claims::{At, Band, Claim, Figure, Metric, Over, Ratio, Rule, Side, Test};

/// Every figure, in report order.
pub(super) const FIGURES: &[Figure] = &{
    const N: usize = range_thesis::FIGURES.len()
        + epvs::FIGURES.len()
        + server_thesis::FIGURES.len()
        + project::FIGURES.len();
    concat::<Figure, N>(&[
        range_thesis::FIGURES,
        epvs::FIGURES,
        server_thesis::FIGURES,
        project::FIGURES,
    ])
};

/// Every claim, in report order.
pub(super) const CLAIMS: &[Claim] = &{
    const N: usize = range_thesis::CLAIMS.len()
        + epvs::CLAIMS.len()
        + server_thesis::CLAIMS.len()
        + project::CLAIMS.len();
    concat::<Claim, N>(&[
        range_thesis::CLAIMS,
        epvs::CLAIMS,
        server_thesis::CLAIMS,
        project::CLAIMS,
    ])
};

/// The slices one after another, as one array (in a const: no allocation).
const fn concat<T: Copy, const N: usize>(parts: &[&[T]]) -> [T; N] {
    assert!(!parts.is_empty() && !parts[0].is_empty(), "the first part seeds the array");
    let mut out = [parts[0][0]; N];
    let (mut i, mut k) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(k == N, "N is the sum of the parts' lengths");
    out
}

/// `v!("a")`: variant `a`'s ops/s at the most threads within the cores;
/// `v!(min "a", "b")` / `v!(max "a", "b")`: the worst / best of several.
macro_rules! v {
    ($variant:literal) => {
        $crate::seeds::claims::Side {
            variants: &[$variant],
            pick: $crate::seeds::claims::Pick::Min,
            params: &[],
            at: $crate::seeds::claims::At::Cores,
            metric: $crate::seeds::claims::Metric::OpsPerSec,
        }
    };
    (min $($variant:literal),+) => {
        $crate::seeds::claims::Side { pick: $crate::seeds::claims::Pick::Min, variants: &[$($variant),+], ..v!("-") }
    };
    (max $($variant:literal),+) => {
        $crate::seeds::claims::Side { pick: $crate::seeds::claims::Pick::Max, variants: &[$($variant),+], ..v!("-") }
    };
}
use v;

impl Side {
    /// The same records with these params pinned.
    const fn with(self, params: &'static [(&'static str, &'static str)]) -> Side {
        Side { params, ..self }
    }

    /// The same records read at `at`.
    const fn at(self, at: At) -> Side {
        Side { at, ..self }
    }

    /// The same records read at exactly `n` threads (clients).
    const fn threads(self, n: usize) -> Side {
        self.at(At::Threads(n))
    }

    /// The same records read at the most clients measured.
    const fn most(self) -> Side {
        self.at(At::Most)
    }

    /// The same records, reading `metric`.
    const fn metric(self, metric: Metric) -> Side {
        Side { metric, ..self }
    }

    /// `self / den`.
    const fn over(self, den: Side) -> Ratio {
        Ratio { num: self, den }
    }
}

const fn ratio(r: Ratio) -> Rule {
    Rule::Ratio(r)
}

const fn contrast(first: Ratio, second: Ratio) -> Rule {
    Rule::Contrast { first, second }
}

/// Our band: the test and why it reads the seed's words.
const fn band(test: Test, reason: &'static str) -> Option<Band> {
    Some(Band { test, reason })
}

/// Scaling from 1 to 2 threads of `side` (pinned params kept).
const fn scaling(side: Side) -> Ratio {
    side.threads(2).over(side.threads(1))
}

/// Steps of `side` along a param.
const fn steps(side: Side, param: &'static str, points: &'static [&'static str]) -> Rule {
    Rule::Steps { side, over: Over::Param(param), points }
}

/// The spread of `side` along a param.
const fn spread(side: Side, param: &'static str, points: &'static [&'static str]) -> Rule {
    Rule::Spread { side, over: Over::Param(param), points }
}
