//! `rangelock bench <suite> [--quick] [--threads 1,2,4] [--out DIR] [--rounds N] [--duration-ms N]
//! [--min-ops N]`, and `rangelock bench report [--out DIR] [--from DIR] [--allow-missing]`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use rangelock_bench::harness::{run_suite, BenchError, Options};
use rangelock_bench::{seeds, suites};

/// Arguments of `rangelock bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Suite to run; `list` lists the suites, `quick` runs every suite in quick mode
    /// (50 ms per measurement, a few minutes at most), `report` runs every suite and
    /// writes report.html and report.md (see --from), `claims` lists every claim of the
    /// seeds with its quote and rule (see --json).
    pub suite: String,
    /// `claims` only: print the claims as a JSON array (fields seed, figure, section,
    /// suite, quote, gist, row, seed_ratio, seed_says, our_band, rule, judged).
    #[arg(long)]
    pub json: bool,
    /// Short measurements and smaller sweeps (200 ms x 3 rounds unless overridden), and a
    /// work budget of 1 s of CPU time per measurement: a case that spends more is cut (left
    /// out of the records; the table says so).
    #[arg(long)]
    pub quick: bool,
    /// Thread counts, comma-separated, taken as given (default 1,2 plus the oversubscribed
    /// 8,16 where a suite asks for them).
    #[arg(long, value_delimiter = ',', value_parser = positive)]
    pub threads: Option<Vec<usize>>,
    /// Report directory (default target/rangelock-report).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Interleaved rounds; medians over rounds are reported (default 5, quick 3).
    #[arg(long, value_parser = positive)]
    pub rounds: Option<usize>,
    /// Duration of one measurement in milliseconds (default 1000, quick 200).
    #[arg(long = "duration-ms", value_parser = positive)]
    pub duration_ms: Option<usize>,
    /// A measurement also lasts until every thread has completed N operations (default 0:
    /// the duration alone); for tiny runs on a busy machine. The rate is still operations
    /// over the elapsed time.
    #[arg(long = "min-ops")]
    pub min_ops: Option<u64>,
    /// `report` only: read the suites' JSON from DIR instead of running them (the report
    /// goes to --out if given, else to DIR).
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// `report` only: write the report even when the records lack a comparator of a
    /// seed's claim (say `dslr-redis` without redis-server), listing what is missing at
    /// its top. Without it such a report is refused (exit code 1).
    #[arg(long = "allow-missing")]
    pub allow_missing: bool,
    /// `aliasing-txns` only (hidden: what the `aliasing-counts` suite runs under
    /// cachegrind): the `aliasing` variant.
    #[arg(long, hide = true)]
    pub variant: Option<String>,
    /// `aliasing-txns` only: the number of transactions.
    #[arg(long, hide = true)]
    pub txns: Option<u64>,
}

fn positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a positive integer: {e}")),
    }
}

impl BenchArgs {
    fn options(&self, quick: bool) -> Options {
        let mut opts = if quick { Options::quick() } else { Options::full() };
        if let Some(threads) = &self.threads {
            opts.threads.clone_from(threads);
            opts.oversubscribe = false; // an explicit list is taken as given
        }
        if let Some(out) = &self.out {
            opts.out.clone_from(out);
        }
        if let Some(rounds) = self.rounds {
            opts.rounds = rounds;
        }
        if let Some(ms) = self.duration_ms {
            opts.duration = Duration::from_millis(ms as u64);
        }
        if let Some(n) = self.min_ops {
            opts.min_ops = n;
        }
        opts
    }
}

/// Measurement length of the `quick` tour (every suite): with the quick sweeps and work
/// budget, the whole tour takes about two minutes on 2 cores (three at most), each suite's
/// time printed after its table and the total at the end.
const TOUR_DURATION: Duration = Duration::from_millis(50);

/// Runs `rangelock bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.suite.as_str() {
        "list" => {
            for suite in suites::all() {
                println!("{:<10} {}", suite.name(), suite.about());
            }
            println!(
                "{:<10} every suite above in quick mode, 50 ms per measurement (about 2 minutes)",
                "quick"
            );
            println!(
                "{:<10} every suite, then report.html + report.md (--from DIR: no run)",
                "report"
            );
            println!(
                "{:<10} every claim of the seeds: quote, number, our band, rule (--json)",
                "claims"
            );
            Ok(())
        }
        "report" => report(&args),
        "claims" => {
            if args.json {
                let entries = seeds::listing::entries();
                println!("{}", serde_json::to_string_pretty(&entries)?);
            } else {
                print!("{}", seeds::listing::text());
            }
            Ok(())
        }
        // Not a suite: exactly --txns aliasing transactions on this thread, for cachegrind.
        "aliasing-txns" => {
            let (Some(variant), Some(txns)) = (&args.variant, args.txns) else {
                bail!("aliasing-txns needs --variant and --txns");
            };
            let failed = suites::aliasing::run_transactions(variant, txns)?;
            println!("{txns} aliasing transactions of {variant}, {failed} failed tries");
            Ok(())
        }
        "quick" => {
            let mut opts = args.options(true);
            if args.duration_ms.is_none() {
                opts.duration = TOUR_DURATION;
            }
            run_all(&opts)
        }
        name => {
            if args.json {
                bail!("--json is only for `rangelock bench claims`");
            }
            if args.from.is_some() {
                bail!("--from is only for `rangelock bench report`");
            }
            let Some(suite) = suites::find(name) else {
                let names: Vec<&str> = suites::all().iter().map(|s| s.name()).collect();
                bail!("no suite named {name:?}; suites: {}, quick, report, list", names.join(", "));
            };
            let opts = args.options(args.quick);
            let report = run_suite(suite.as_ref(), &opts)
                .with_context(|| format!("running suite {name}"))?;
            println!("\nreport: {} and {}", report.json.display(), report.svg.display());
            Ok(())
        }
    }
}

/// Runs every suite; a suite with no registered variant is noted and skipped. Each suite's
/// time follows its table (`run_suite`); the total comes last.
fn run_all(opts: &Options) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut written = 0;
    for suite in suites::all() {
        match run_suite(suite.as_ref(), opts) {
            Ok(_) => written += 1,
            Err(BenchError::NoCases(name)) => {
                eprintln!("{name}: skipped, no registered variant applies to it");
            }
            Err(e) => return Err(e).with_context(|| format!("running suite {}", suite.name())),
        }
    }
    println!("\n{written} suite reports in {}", opts.out.display());
    println!("quick: {written} suites in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// `rangelock bench report`: runs every suite (with the usual flags; `--quick` for a short
/// one, 50 ms per measurement like the `quick` tour) unless `--from DIR` names existing JSON, then writes the report.
fn report(args: &BenchArgs) -> anyhow::Result<()> {
    let (from, out, notes) = match &args.from {
        Some(from) => {
            let out = args.out.clone().unwrap_or_else(|| from.clone());
            (from.clone(), out, Default::default())
        }
        None => {
            let mut opts = args.options(args.quick);
            if args.quick && args.duration_ms.is_none() {
                opts.duration = TOUR_DURATION; // as short as the `quick` tour
            }
            let notes = seeds::run_suites(&opts);
            (opts.out.clone(), opts.out, notes)
        }
    };
    let files = seeds::write_report(&from, &out, &notes, args.allow_missing)
        .with_context(|| format!("writing the report from {}", from.display()))?;
    let not_run: Vec<&str> = files
        .suites
        .iter()
        .filter(|(_, s)| *s != seeds::SuiteStatus::Ran)
        .map(|(n, _)| n.as_str())
        .collect();
    if !not_run.is_empty() {
        println!("not run: {}", not_run.join(", "));
    }
    println!("\nreport: {} and {}", files.html.display(), files.markdown.display());
    Ok(())
}
