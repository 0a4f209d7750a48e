//! `compare explain`: why a cell moved between two implementations of one
//! run. Each side (server, client) of both is run again under callgrind,
//! counted by call stack, several times and interleaved (or, where valgrind
//! cannot run it or when asked, sampled by perf: CPU time by call stack,
//! the kernel's included); the functions whose own figure per block moved
//! by more than the runs vary are named, largest first, beside a
//! differential flame graph of each side and the run's own system calls
//! and context switches per block.

mod flame;
pub mod moved;
mod programs;
mod stacks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use measure::callgrind;
use measure::pair::{ProcessPair, Profile};
use measure::perf::{self, Perf};
use measure::place::mode::Span;
use measure::prices::Prices;
use measure::remote::ServerAt;
use measure::repetition::{Job, Side};
use model::defaults;
use model::placement::{self, Pin, Placement};
use model::program::{Program, Programs};
use model::results::key::CellKey;
use model::results::registry::Figure;
use model::results::{Cell, Config, Results, Status};
use model::stats;
use moved::{Function, Kind};
use programs::{Programmed, Wanted};
use stacks::PerBlock;

/// What `compare explain` explains, and how.
pub struct Options {
    /// The run's results file (between two runs, the baseline's).
    pub results: PathBuf,
    /// Between two runs: the candidate's results file.
    pub candidate_results: Option<PathBuf>,
    pub baseline: String,
    pub candidate: String,
    /// The cells to explain, by what they measure (`1 thread, 10
    /// connections, 16384 B`); none: every cell both ran.
    pub cells: Vec<String>,
    /// Where the explanations go; each cell's in a folder of its own.
    pub out: PathBuf,
    pub settings: Settings,
}

/// How each side is measured again: one set for `explain`, `check
/// --explain` and `bisect --explain`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The sides counted.
    pub sides: Vec<Side>,
    /// Counted runs of each side of each implementation.
    pub repeat: usize,
    /// Blocks per connection of the shorter count.
    pub blocks: u64,
    /// The cargo profile the binaries are built with.
    pub profile: String,
    /// Every side sampled by perf (CPU time, the kernel's included), not
    /// only those callgrind cannot run.
    pub sampled: bool,
    /// Seconds of a sampled side's shorter count, at the cell's rate.
    pub sample_seconds: f64,
    /// Each side's wake-ups and sleeps traced too, by code path.
    pub wakes: bool,
}

impl Options {
    /// The results file of each side: the baseline's, the candidate's
    /// (the same file, inside one run).
    fn files(&self) -> [&PathBuf; 2] {
        let candidate = self.candidate_results.as_ref();
        [&self.results, candidate.unwrap_or(&self.results)]
    }
}

/// One cell's explanation, as its folder keeps it (`explain.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Explained {
    /// What the cell measures (its key without the implementation).
    pub cell: String,
    pub baseline: String,
    pub candidate: String,
    /// The command that made it.
    pub command: String,
    pub sides: Vec<Explanation>,
    /// The run's cost figures per block, each side's, both implementations'.
    pub costs: Vec<CostRow>,
    /// What each kind of event cost on the machine when it was explained:
    /// the told moves are ranked by their estimated nanoseconds per block.
    /// None in explanations made before prices were measured, which rank
    /// by kind (system calls, then instructions).
    #[serde(default)]
    pub prices: Option<Prices>,
}

/// One side's functions, or why it was not counted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Explanation {
    pub side: String,
    /// Counted runs of each implementation.
    pub runs: usize,
    /// Counted, per block in all, medians: instructions, then system calls;
    /// each baseline, candidate.
    pub totals: Option<[[f64; 2]; 2]>,
    /// The functions by their instructions (sampled: their CPU time), then
    /// by their system calls (none sampled).
    pub functions: Vec<Function>,
    pub syscalls: Vec<Function>,
    /// Why the side was not counted, where it was not.
    pub absent: Option<String>,
    /// Where perf sampled it rather than callgrind counting it, how.
    #[serde(default)]
    pub sampled: Option<Sampling>,
    /// Its wake-ups and sleeps by code path, where they were traced.
    #[serde(default)]
    pub woken: Option<Woken>,
}

/// One side's wake-ups issued and sleeps taken, traced by perf, by the
/// path in the program's own code that caused each; or why not.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Woken {
    /// Traced runs of each implementation.
    pub runs: usize,
    /// Blocks per connection of the shorter count.
    pub blocks: u64,
    /// In the open loop: seconds of the shorter count's window.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Per block in all, medians: wake-ups, then sleeps; each baseline,
    /// candidate.
    pub totals: [[f64; 2]; 2],
    pub wakes: Vec<Function>,
    pub sleeps: Vec<Function>,
    /// Why they were not traced, where they were not.
    pub absent: Option<String>,
    /// Whether its wake-ups' flame graph was drawn (none where no stack
    /// issued a hundredth of one a block).
    #[serde(default)]
    pub graph: bool,
}

impl Woken {
    /// None traced, and why.
    fn absent(why: String) -> Self {
        Self {
            absent: Some(why),
            ..Self::default()
        }
    }
}

impl Explanation {
    /// What its functions' first figure is.
    pub fn kind(&self) -> Kind {
        match self.sampled {
            Some(_) => Kind::Cpu,
            None => Kind::Instructions,
        }
    }
}

/// A cost figure of the run (medians of its cost runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CostRow {
    pub label: String,
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    /// What one of its units costs at the machine's prices, in ns: a
    /// microsecond of CPU, a switch, a system call.
    #[serde(default)]
    pub price_ns: Option<f64>,
}

/// The figures of each side the costs table shows: CPU, switches and
/// system calls by kind, per block.
const COST_FIGURES: [&str; 9] = [
    "cpu_us_per_block",
    "voluntary_switches_per_block",
    "involuntary_switches_per_block",
    "syscalls_per_block",
    "reads_per_block",
    "writes_per_block",
    "waits_per_block",
    "futex_per_block",
    "other_syscalls_per_block",
];

/// The name of an explanation's file in its folder.
pub const FILE: &str = "explain.json";
/// And of its page.
pub const PAGE: &str = "README.md";

impl Explained {
    /// Its functions that moved past the runs' variation, on either side,
    /// in the order they are named in ([`first`]).
    pub fn told(&self) -> Vec<(&str, &Function)> {
        let mut told: Vec<(&str, &Function)> = self
            .sides
            .iter()
            .flat_map(|s| {
                let side = s.side.as_str();
                let woken = s.woken.iter().flat_map(|w| w.wakes.iter().chain(&w.sleeps));
                s.syscalls
                    .iter()
                    .chain(&s.functions)
                    .chain(woken)
                    .filter(|f| f.told)
                    .map(move |f| (side, f))
            })
            .collect();
        told.sort_by(|a, b| first(a.1, b.1, self.prices.as_ref()));
        told
    }

    /// Reads the explanation in `folder`.
    pub fn load(folder: &Path) -> Result<Self> {
        let path = folder.join(FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is no explanation", path.display()))
    }
}

/// The folder of `cell`'s explanation under `out`.
pub fn folder(out: &Path, cell: &str) -> PathBuf {
    let slug: String = cell
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    out.join(slug)
}

/// The default folder of explanations of `baseline` against `candidate`,
/// whose results are `files` (baseline's, candidate's; one file inside one
/// run): `explain/` beside the candidate's. Between two runs its name
/// says the baseline's run too: a candidate checked against two baselines
/// keeps both.
pub fn default_out(files: [&Path; 2], baseline: &str, candidate: &str) -> PathBuf {
    let run = |file: &Path| file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let label = match files[0] == files[1] {
        true => format!("{baseline} vs {candidate}"),
        false => {
            let of = run(files[0]);
            let name = of.file_name().unwrap_or(of.as_os_str()).to_string_lossy();
            format!("{baseline} of {name} vs {candidate}")
        }
    };
    folder(&run(files[1]).join("explain"), &label)
}

/// Explains every cell asked for; says each step on `progress`.
pub fn explain(options: &Options, mut progress: impl FnMut(&str)) -> Result<Vec<Explained>> {
    let baseline = Results::load(&options.results)?;
    let candidate = match &options.candidate_results {
        Some(file) => Some(Results::load(file)?),
        None => None,
    };
    if let Some(c) = &candidate
        && let Some(differ) = baseline.host.differs_from(&c.host)
    {
        bail!(
            "the two runs ran on different machines ({differ}): explain runs both sides \
             again on one machine, which says nothing of a move between two"
        );
    }
    let runs = [&baseline, candidate.as_ref().unwrap_or(&baseline)];
    let pairs = pairs(runs, options)?;
    let names = |side: usize| -> Vec<&str> {
        let cells = pairs.iter().map(|pair| [pair.0, pair.1][side]);
        cells
            .flat_map(|c| [c.implementation.as_str(), c.client.as_str()])
            .collect()
    };
    let files = options.files();
    let wanted = Wanted {
        profile: &options.settings.profile,
        wakes: options.settings.wakes,
        between: candidate.is_some(),
    };
    let programmed = match candidate {
        None => {
            let both: Vec<&str> = names(0).into_iter().chain(names(1)).collect();
            let one = Rc::new(programs::programmed(&baseline, files[0], &both, wanted)?);
            [one.clone(), one]
        }
        Some(_) => {
            let of = |i: usize| programs::programmed(runs[i], files[i], &names(i), wanted);
            [Rc::new(of(0)?), Rc::new(of(1)?)]
        }
    };
    let cpus = placement::available_cpus()?;
    let prices = Prices::measure(&cpus).map_err(anyhow::Error::msg)?;
    progress(&format!("prices here: {}", prices.said()));
    let explainer = Explainer {
        options,
        pin: Plan::of(&baseline.config)?.pin,
        cpus,
        prices,
        pair: ProcessPair::new(ServerAt::Local, Vec::new(), None),
        programmed,
        configs: [&runs[0].config, &runs[1].config],
    };
    pairs
        .into_iter()
        .map(|(b, c)| explainer.cell([b, c], &mut progress))
        .collect()
}

/// What explains each cell: the options, the machine and its prices, and
/// each side's programs and run settings.
struct Explainer<'a> {
    options: &'a Options,
    pin: Pin,
    cpus: Vec<usize>,
    prices: Prices,
    pair: ProcessPair,
    programmed: [Rc<Programmed>; 2],
    configs: [&'a Config; 2],
}

impl Explainer<'_> {
    /// The explanation of one pair of cells (baseline, candidate), written
    /// into its folder.
    fn cell(&self, cells: [&Cell; 2], progress: &mut impl FnMut(&str)) -> Result<Explained> {
        let options = self.options;
        let what = CellKey::of(cells[0]).what();
        progress(&format!(
            "explaining {what}: {} -> {}",
            options.baseline, options.candidate
        ));
        let load = cells[0].load();
        let placement = self
            .pin
            .place(&self.cpus, load.threads, load.client_threads());
        let plain = [0, 1].map(|i| {
            let programs = &self.programmed[i].plain;
            job(cells[i], programs, self.configs[i], &placement)
        });
        let dir = folder(&options.out, &what);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut sides = Vec::new();
        for &side in &options.settings.sides {
            let title = format!(
                "{side}: {} -> {}, {what}",
                options.baseline, options.candidate
            );
            let mut explanation = self.profiled(&plain, cells, side, &title, &dir, progress)?;
            let traced = match self.programmed.each_ref().map(|p| p.traced.as_ref()) {
                [None, _] | [_, None] => None,
                [Some(Ok(b)), Some(Ok(c))] => {
                    let jobs = [
                        job(cells[0], b, self.configs[0], &placement),
                        job(cells[1], c, self.configs[1], &placement),
                    ];
                    let traced = woken(&self.pair, &jobs, side, &options.settings, progress);
                    Some(match traced {
                        Ok(t) => t.drawn(&format!("{title}, wake-ups"), &dir, side)?,
                        Err(why) => Woken::absent(why),
                    })
                }
                [Some(Err(why)), _] | [_, Some(Err(why))] => Some(Woken::absent(why.clone())),
            };
            explanation.woken = traced;
            sides.push(explanation);
        }
        let one = Explained {
            cell: what.clone(),
            baseline: options.baseline.clone(),
            candidate: options.candidate.clone(),
            command: command(options),
            sides,
            costs: costs(cells[0], cells[1], &self.prices),
            prices: Some(self.prices),
        };
        std::fs::write(dir.join(FILE), serde_json::to_string(&one)?)?;
        std::fs::write(dir.join(PAGE), page(&one))?;
        progress(&format!("  {}", one.summary()));
        Ok(one)
    }

    /// One side's functions, counted or sampled, its flame graph drawn
    /// into `dir`; or why it was not.
    fn profiled(
        &self,
        jobs: &[Job; 2],
        [b, c]: [&Cell; 2],
        side: Side,
        title: &str,
        dir: &Path,
        progress: &mut impl FnMut(&str),
    ) -> Result<Explanation> {
        let settings = &self.options.settings;
        let profiled = method(jobs, side, settings.sampled).and_then(|method| {
            let (span, repeat) = match method {
                Method::Counted => (Span::Blocks(settings.blocks), settings.repeat),
                Method::Sampled(_) => (
                    sampled_span(b, c, settings.sample_seconds, settings.blocks),
                    settings.repeat.max(SAMPLED_RUNS),
                ),
            };
            let runs = Runs { side, span, repeat };
            profiled(&self.pair, jobs, &method, runs, progress)
        });
        Ok(match profiled {
            Ok(profiled) => {
                let explanation = profiled.explanation(side);
                let [b, c] = profiled.runs.each_ref().map(|r| flame::mean(r));
                let svg = flame::svg(title, explanation.kind(), &b, &c)?;
                std::fs::write(dir.join(format!("{side}.svg")), svg)?;
                explanation
            }
            Err(why) => Explanation {
                side: side.to_string(),
                runs: 0,
                totals: None,
                functions: Vec::new(),
                syscalls: Vec::new(),
                absent: Some(why),
                sampled: None,
                woken: None,
            },
        })
    }
}

/// `cell`'s pair of processes, once, of `programs`: the server's threads,
/// the connections and the workload as it ran them.
fn job<'j>(
    cell: &Cell,
    programs: &'j Programs,
    config: &Config,
    placement: &'j Placement,
) -> Job<'j> {
    Job {
        server: &programs[&cell.implementation],
        client: &programs[&cell.client],
        load: cell.load(),
        workload: cell.workload(),
        rate: cell.rate,
        work: config.work,
        warmup: Duration::from_secs_f64(config.warmup),
        seconds: Duration::from_secs_f64(config.seconds),
        latency: false,
        arrival: config.arrival(),
        placement,
        counting: false,
    }
}

impl Explained {
    /// One line: the functions that moved most, or that none moved past
    /// the runs' variation.
    pub fn summary(&self) -> String {
        most_moved(std::slice::from_ref(self))
    }
}

/// One line: the three functions that moved most in any of `explained`
/// (each named once), or that none moved past the runs' variation.
pub fn most_moved(explained: &[Explained]) -> String {
    let mut told: Vec<(&str, &Function, Option<&Prices>)> = explained
        .iter()
        .flat_map(|e| e.told().into_iter().map(|(s, f)| (s, f, e.prices.as_ref())))
        .collect();
    told.sort_by(|a, b| first(a.1, b.1, a.2.or(b.2)));
    let mut seen = std::collections::BTreeSet::new();
    told.retain(|(side, f, _)| seen.insert((*side, f.name.as_str(), f.kind == Kind::Syscalls)));
    if told.is_empty() {
        return "no function moved past the runs' variation".into();
    }
    let named: Vec<String> = told
        .iter()
        .take(3)
        .map(|(side, f, prices)| {
            let moved = format!("{:+.*}", f.kind.decimals(), f.own_moved());
            let ns = match (prices, f.kind) {
                (Some(p), kind) if kind != Kind::Cpu => {
                    format!(", ~{:+.0} ns", f.ns_moved(p))
                }
                _ => String::new(),
            };
            format!("{} ({side}, {moved} {}/block{ns})", f.name, f.kind.unit())
        })
        .collect();
    named.join(", ")
}

/// The order moves are named in: by what they cost, in nanoseconds per
/// block at the machine's `prices`, largest first; without prices (an
/// explanation made before they were measured), system calls first, then
/// instructions, each largest first.
fn first(a: &Function, b: &Function, prices: Option<&Prices>) -> std::cmp::Ordering {
    match prices {
        Some(p) => b.ns_moved(p).abs().total_cmp(&a.ns_moved(p).abs()),
        None => (b.kind == Kind::Syscalls)
            .cmp(&(a.kind == Kind::Syscalls))
            .then(b.own_moved().abs().total_cmp(&a.own_moved().abs())),
    }
}

/// The two implementations' cells asked for, the baseline's of the first
/// of `runs`, the candidate's of the second (the same run, or another),
/// matched by what they measure.
fn pairs<'r>(runs: [&'r Results; 2], options: &Options) -> Result<Vec<(&'r Cell, &'r Cell)>> {
    let files = options.files();
    let of = |i: usize, name: &str| -> Result<BTreeMap<CellKey, &'r Cell>> {
        let cells: BTreeMap<CellKey, &Cell> = runs[i]
            .cells
            .iter()
            .filter(|c| c.implementation == name)
            .map(|c| (CellKey::of(c).unnamed(), c))
            .collect();
        if cells.is_empty() {
            bail!(
                "{} has no implementation {name}; it has {}",
                files[i].display(),
                runs[i].config.implementations.join(", ")
            );
        }
        Ok(cells)
    };
    let (baseline, candidate) = (of(0, &options.baseline)?, of(1, &options.candidate)?);
    let both: Vec<(&Cell, &Cell)> = baseline
        .iter()
        .filter_map(|(key, b)| Some((*b, *candidate.get(key)?)))
        .filter(|(b, c)| b.status == Status::Ok && c.status == Status::Ok)
        .collect();
    if options.cells.is_empty() {
        ensure!(
            !both.is_empty(),
            "{} and {} ran no cell alike that both ran well",
            options.baseline,
            options.candidate
        );
        return Ok(both);
    }
    let mut chosen = Vec::new();
    for asked in &options.cells {
        let found = both.iter().find(|(b, _)| CellKey::of(b).what() == *asked);
        let Some(found) = found else {
            let known: Vec<String> = both.iter().map(|(b, _)| CellKey::of(b).what()).collect();
            bail!(
                "no cell {asked:?} that both ran well; they have: {}",
                known.join("; ")
            );
        };
        chosen.push(*found);
    }
    Ok(chosen)
}

/// How a side is profiled.
enum Method {
    /// Under callgrind: instructions and system calls by call stack.
    Counted,
    /// Sampled by perf: CPU time by call stack.
    Sampled(Perf),
}

/// Sampled where asked, in the open loop (under callgrind, some fifty
/// times slower, no rate holds), or where either job's side runs on
/// io_uring (valgrind cannot run it); counted otherwise.
fn method(jobs: &[Job; 2], side: Side, sampled: bool) -> Result<Method, String> {
    let io_uring = jobs.iter().find_map(|job| match side_program(job, side) {
        Program::Binary { adapter, .. } if adapter.io_uring => Some(adapter.name),
        _ => None,
    });
    let open = jobs[0].rate.is_some();
    if !sampled && !open && io_uring.is_none() {
        return Ok(Method::Counted);
    }
    Perf::find()
        .map(Method::Sampled)
        .map_err(|why| match (io_uring, open) {
            (Some(name), _) => {
                format!("{name} runs on io_uring, which callgrind cannot run, and {why}")
            }
            (None, true) => format!(
                "an open loop is sampled (under callgrind, some fifty times slower, no rate \
                 holds), and {why}"
            ),
            (None, false) => why,
        })
}

fn side_program<'j>(job: &Job<'j>, side: Side) -> &'j Program {
    [job.server, job.client][usize::from(side == Side::Client)]
}

/// Runs of each implementation a sampled side takes at least: on the VM,
/// the kernel's time where interrupts come back on (and the clock's
/// samples held while they were off land) moves between runs of the same
/// build past twice the range of three runs each in about one pair of a
/// hundred (monoio against itself); of four, in none of 105.
const SAMPLED_RUNS: usize = 4;

/// A sampled side's shorter count: in the open loop, a window of
/// `seconds` at the cell's rate; in the closed loop, the blocks per
/// connection of `seconds` at the faster of the two cells' throughput (so
/// that the count gathers samples), and `least` at least.
fn sampled_span(b: &Cell, c: &Cell, seconds: f64, least: u64) -> Span {
    if b.rate.is_some() {
        return Span::Seconds(seconds);
    }
    let Some(figure) = Figure::named("mib_per_s") else {
        return Span::Blocks(least);
    };
    let rate = [b, c]
        .iter()
        .filter_map(|cell| {
            let mib = cell.summary(figure)?.median;
            Some(mib * 1024.0 * 1024.0 / cell.workload().block.max(1) as f64)
        })
        .fold(0.0, f64::max);
    let per_connection = rate * seconds / b.load().connections.max(1) as f64;
    Span::Blocks((per_connection.ceil() as u64).max(least))
}

/// A traced side's shorter count: `blocks` per connection in the closed
/// loop, a window of `seconds` at the cell's rate in the open.
fn traced_span(job: &Job, blocks: u64, seconds: f64) -> Span {
    match job.rate {
        Some(_) => Span::Seconds(seconds),
        None => Span::Blocks(blocks),
    }
}

/// What a side's shorter count was, as its figures record it: blocks per
/// connection, and in the open loop the window's seconds.
fn recorded(span: Span, short: &[Profile; 2], connections: usize) -> (u64, Option<f64>) {
    match span {
        Span::Blocks(n) => (n, None),
        Span::Seconds(s) => (
            (short[0].blocks / connections.max(1) as f64).round() as u64,
            Some(s),
        ),
    }
}

/// "of 100 and 200 blocks per connection", or the open loop's windows.
fn counts_said(blocks: u64, seconds: Option<f64>) -> String {
    match seconds {
        None => format!("of {blocks} and {} blocks per connection", 2 * blocks),
        Some(s) => format!(
            "of windows of {s} s and {} s at the cell's rate, with no warm-up ({blocks} \
             blocks per connection in the first shorter one)",
            2.0 * s
        ),
    }
}

/// How many runs of what.
struct Runs {
    side: Side,
    /// The shorter count.
    span: Span,
    /// Runs of each implementation.
    repeat: usize,
}

/// A side's runs of both implementations, each its figures per block by
/// call stack.
struct Profiled {
    runs: [Vec<PerBlock>; 2],
    /// Where sampled, how.
    sampling: Option<Sampling>,
}

/// How a sampled side was sampled, and so how precise its figures are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sampling {
    /// As `perf --version` says it.
    pub perf: String,
    pub period_ns: u64,
    /// Blocks per connection of the shorter count.
    pub blocks: u64,
    /// In the open loop: seconds of the shorter count's window.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// CPU clock samples of both counts of a run, the median of
    /// every run's.
    pub samples: u64,
    /// Nanoseconds of CPU per block in all, medians: baseline, candidate.
    pub cpu_ns: [f64; 2],
}

/// The `repeat` runs of `side` of each of the two jobs, taken in turns,
/// each its figures per block by call stack.
fn profiled(
    pair: &ProcessPair,
    jobs: &[Job; 2],
    method: &Method,
    runs: Runs,
    progress: &mut impl FnMut(&str),
) -> Result<Profiled, String> {
    let Runs { side, span, repeat } = runs;
    let dir = tempfile::tempdir().map_err(|e| format!("a folder for the profiles: {e}"))?;
    let mut profiled: [Vec<PerBlock>; 2] = Default::default();
    let mut samples = Vec::new();
    let mut first = None;
    for round in 1..=repeat {
        for (i, job) in jobs.iter().enumerate() {
            progress(&format!(
                "  {side}, run {round} of {repeat}, {}",
                ["baseline", "candidate"][i]
            ));
            let (per_block, counts) = match method {
                Method::Counted => {
                    let Span::Blocks(blocks) = span else {
                        return Err("a counted side counts blocks".into());
                    };
                    let counts = pair.counted_stacks(job, blocks, side, dir.path())?;
                    let [short, long] = &counts;
                    let per_block = stacks::per_block(
                        &callgrind::stacks(&short.file)?,
                        &callgrind::stacks(&long.file)?,
                        [short.blocks, long.blocks],
                    );
                    (per_block, counts)
                }
                Method::Sampled(perf) => {
                    let counts = pair.sampled_stacks(job, span, side, perf, dir.path())?;
                    let [short, long] = counts.each_ref().map(|c| perf.sampled(&c.file));
                    // A run's samples take hundreds of megabytes: gone once read.
                    counts
                        .iter()
                        .for_each(|c| drop(std::fs::remove_file(&c.file)));
                    let (short, long) = (short?, long?);
                    let ns = |s: &perf::Sampled| s.values().sum::<u64>();
                    samples.push((ns(&long) + ns(&short)) / perf::PERIOD_NS);
                    let blocks = counts.each_ref().map(|c| c.blocks);
                    (stacks::per_block_sampled(&short, &long, blocks), counts)
                }
            };
            first.get_or_insert_with(|| recorded(span, &counts, job.load.connections));
            profiled[i].push(per_block);
        }
    }
    let (blocks, seconds) = first.unwrap_or_default();
    let sampling = match method {
        Method::Counted => None,
        Method::Sampled(perf) => Some(Sampling {
            perf: perf.version.clone(),
            period_ns: perf::PERIOD_NS,
            blocks,
            seconds,
            samples: stats::median(&samples.iter().map(|&n| n as f64).collect::<Vec<_>>())
                .unwrap_or(0.0) as u64,
            cpu_ns: [0.0; 2],
        }),
    };
    Ok(Profiled {
        runs: profiled,
        sampling,
    })
}

/// Runs of each implementation a traced side takes: whether a worker was
/// parked when a task came moves with the machine's timing, so wake-ups
/// vary between runs as CPU time does. tokio 1.51.0's futex wake-up of a
/// parked worker (0.33 to 0.50 a block in six runs, none in 1.50.0's) was
/// not told from four runs a side, whose trimmed range still held 0.25;
/// from six it was.
const TRACED_RUNS: usize = 6;

/// A side's traced wake-ups and sleeps, and its runs' wake-ups by stack
/// for the flame graph.
struct Traced {
    woken: Woken,
    stacks: [Vec<PerBlock>; 2],
}

impl Traced {
    /// Its wake-ups, with their flame graph drawn into `dir` where some
    /// stack issued a hundredth of a wake-up a block or more (inferno
    /// draws no empty one).
    fn drawn(self, title: &str, dir: &Path, side: Side) -> Result<Woken> {
        let [b, c] = self.stacks.each_ref().map(|r| flame::mean(r));
        let graph = match flame::svg(title, Kind::Wakes, &b, &c) {
            Ok(svg) => {
                std::fs::write(dir.join(format!("{side}-wakes.svg")), svg)?;
                true
            }
            Err(_) => false,
        };
        Ok(Woken {
            graph,
            ..self.woken
        })
    }
}

/// `side`'s wake-ups and sleeps, traced in runs of each implementation
/// taken in turns, each of `settings.blocks` blocks per connection and of
/// twice as many: their difference per block, by path.
fn woken(
    pair: &ProcessPair,
    jobs: &[Job; 2],
    side: Side,
    settings: &Settings,
    progress: &mut impl FnMut(&str),
) -> Result<Traced, String> {
    let perf = Perf::find()?.tracing_wakes();
    let dir = tempfile::tempdir().map_err(|e| format!("a folder for the traces: {e}"))?;
    let span = traced_span(&jobs[0], settings.blocks, settings.sample_seconds);
    let repeat = settings.repeat.max(TRACED_RUNS);
    let mut paths: [Vec<PerBlock>; 2] = Default::default();
    let mut stacks: [Vec<PerBlock>; 2] = Default::default();
    let mut first = None;
    for round in 1..=repeat {
        for (i, job) in jobs.iter().enumerate() {
            progress(&format!(
                "  {side}, wake-ups traced, run {round} of {repeat}, {}",
                ["baseline", "candidate"][i]
            ));
            let counts = pair.sampled_stacks(job, span, side, &perf, dir.path())?;
            let [short, long] = counts.each_ref().map(|c| perf.traced(&c.file));
            counts
                .iter()
                .for_each(|c| drop(std::fs::remove_file(&c.file)));
            let blocks = counts.each_ref().map(|c| c.blocks);
            let [by_path, by_stack] = stacks::per_block_traced(&short?, &long?, blocks);
            first.get_or_insert_with(|| recorded(span, &counts, job.load.connections));
            paths[i].push(by_path);
            stacks[i].push(by_stack);
        }
    }
    let (blocks, seconds) = first.unwrap_or_default();
    let [b, c] = &paths;
    let (mut wakes, wake_totals) = moved::compare(b, c, Kind::Wakes);
    let (mut sleeps, sleep_totals) = moved::compare(b, c, Kind::Sleeps);
    // A path that only sleeps is no wake-up, and the other way round.
    wakes.retain(|f| f.baseline[0] != 0.0 || f.candidate[0] != 0.0);
    sleeps.retain(|f| f.baseline[0] != 0.0 || f.candidate[0] != 0.0);
    wakes.truncate(KEPT);
    sleeps.truncate(KEPT);
    Ok(Traced {
        woken: Woken {
            runs: repeat,
            blocks,
            seconds,
            totals: [wake_totals, sleep_totals],
            wakes,
            sleeps,
            absent: None,
            graph: false,
        },
        stacks,
    })
}

impl Profiled {
    /// The side's functions that moved, and its totals.
    fn explanation(&self, side: Side) -> Explanation {
        let [b, c] = &self.runs;
        let (kind, syscalls) = match self.sampling {
            Some(_) => (Kind::Cpu, (Vec::new(), [0.0; 2])),
            None => (Kind::Instructions, moved::compare(b, c, Kind::Syscalls)),
        };
        let (mut functions, figure) = moved::compare(b, c, kind);
        let (mut syscalls, calls) = syscalls;
        functions.truncate(KEPT);
        syscalls.truncate(KEPT);
        let sampled = self.sampling.clone().map(|s| Sampling {
            cpu_ns: figure,
            ..s
        });
        Explanation {
            side: side.to_string(),
            runs: b.len(),
            totals: sampled.is_none().then_some([figure, calls]),
            functions,
            syscalls,
            absent: None,
            sampled,
            woken: None,
        }
    }
}

/// The run's cost figures of both cells, each side's.
fn costs(b: &Cell, c: &Cell, prices: &Prices) -> Vec<CostRow> {
    let mut rows = Vec::new();
    for side in ["server", "client"] {
        for name in COST_FIGURES {
            let Some(figure) = Figure::named(&format!("{side}_{name}")) else {
                continue;
            };
            let median = |cell: &Cell| cell.summary(figure).map(|s| s.median);
            // A futex call is priced as a call: whether it woke a thread
            // the count does not say.
            let price_ns = match name {
                "cpu_us_per_block" => 1000.0,
                "voluntary_switches_per_block" | "involuntary_switches_per_block" => {
                    prices.switch_ns
                }
                _ => prices.syscall_ns,
            };
            rows.push(CostRow {
                label: figure.label.to_string(),
                baseline: median(b),
                candidate: median(c),
                price_ns: Some(price_ns),
            });
        }
    }
    rows.retain(|r| r.baseline.is_some() || r.candidate.is_some());
    rows
}

/// The command line that explains what `options` asks.
fn command(options: &Options) -> String {
    // A run's folder, where the results are its own file.
    let run = |file: &PathBuf| {
        let folder = match file.file_name().and_then(|n| n.to_str()) {
            Some("results.json" | "results.json.gz") => file.parent(),
            _ => None,
        };
        folder.unwrap_or(file).display().to_string()
    };
    let mut words = vec!["compare".to_string(), "explain".into()];
    words.extend(
        std::iter::once(&options.results)
            .chain(&options.candidate_results)
            .map(run),
    );
    words.extend([
        "--baseline".into(),
        options.baseline.clone(),
        "--candidate".into(),
        options.candidate.clone(),
    ]);
    for cell in &options.cells {
        words.extend(["--cell".into(), cell.clone()]);
    }
    let settings = &options.settings;
    if let [side] = settings.sides[..] {
        words.extend(["--side".into(), side.to_string()]);
    }
    words.extend([
        "--repeat".into(),
        settings.repeat.to_string(),
        "--blocks".into(),
        settings.blocks.to_string(),
    ]);
    if settings.sampled {
        words.push("--sampled".into());
    }
    if settings.wakes {
        words.push("--wakes".into());
    }
    if settings.sample_seconds != defaults::SAMPLE_SECONDS {
        words.extend([
            "--sample-seconds".into(),
            settings.sample_seconds.to_string(),
        ]);
    }
    model::shell::shell_words(words.iter().map(String::as_str))
}

/// The explanation as markdown: the run's costs, then each side's functions
/// and its flame graph.
fn page(e: &Explained) -> String {
    let mut out = format!(
        "# Why it moved: {}, {} -> {}\n\n`{}`\n\n",
        e.cell, e.baseline, e.candidate, e.command
    );
    out += &format!("Summary: {}.\n\n", e.summary());
    if let Some(p) = &e.prices {
        out += &format!(
            "Told moves are ranked by what they cost, in nanoseconds per block, at the \
             prices measured on this machine when it was explained: {}.\n\n",
            p.said()
        );
        let told = e.told();
        if !told.is_empty() {
            out += "| side | function | moved per block | ~ ns per block |\n|---|---|---:|---:|\n";
            for (side, f) in told {
                out += &format!(
                    "| {side} | `{}` | {:+.*} {} | {:+.0} |\n",
                    f.name.replace('|', "\\|"),
                    f.kind.decimals(),
                    f.own_moved(),
                    f.kind.unit(),
                    f.ns_moved(p)
                );
            }
            out += "\n";
        }
    }
    if !e.costs.is_empty() {
        out += "## Per block, from the run's cost runs (medians)\n\n\
                | figure | baseline | candidate | moved | ~ ns moved |\n|---|---:|---:|---:|---:|\n";
        for r in &e.costs {
            let (moved, ns) = match (r.baseline, r.candidate) {
                (Some(b), Some(c)) => (
                    format!("{:+.2}", c - b),
                    r.price_ns
                        .map_or("-".into(), |p| format!("{:+.0}", (c - b) * p)),
                ),
                _ => ("-".into(), "-".into()),
            };
            let show = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
            out += &format!(
                "| {} | {} | {} | {moved} | {ns} |\n",
                r.label,
                show(r.baseline),
                show(r.candidate)
            );
        }
        out += "\n~ ns moved: each figure's move at the machine's prices (a microsecond \
                of CPU is 1,000 ns; a switch, voluntary or not, a voluntary switch's price; \
                a system call of any kind, futex calls included, a call's entry). Switches \
                and calls are spent inside the CPU time: the column ranks them, it does \
                not add up.\n\n";
    }
    for side in &e.sides {
        out += &format!("## {}: per block, by function\n\n", side.side);
        if let Some(why) = &side.absent {
            out += &format!("Not counted: {why}.\n\n");
            out += &side
                .woken
                .as_ref()
                .map_or(String::new(), |w| woken_page(&side.side, w));
            continue;
        }
        out += &method_said(side);
        match &side.sampled {
            Some(_) => {
                out += &table("CPU time, sampled (ns)", &side.functions, 0, true);
                out += "System calls: the sampled runs trace none (each traced call cost \
                        about 0.9 µs of perf's own here, more than most calls); the table \
                        above the sides has them by kind, counted by the kernel in the run's \
                        cost runs.\n\n";
            }
            None => {
                out += &table("Instructions", &side.functions, 0, false);
                out += &table("System calls", &side.syscalls, 2, false);
            }
        }
        out += &format!("![{0}: differential flame graph]({0}.svg)\n\n", side.side);
        out += &side
            .woken
            .as_ref()
            .map_or(String::new(), |w| woken_page(&side.side, w));
    }
    out
}

/// A side's wake-ups and sleeps: how they were traced, the paths'
/// tables, and the flame graph of its wake-ups.
fn woken_page(side: &str, w: &Woken) -> String {
    let mut out = format!("### {side}: wake-ups and sleeps, by code path\n\n");
    if let Some(why) = &w.absent {
        return out + &format!("Not traced: {why}.\n\n");
    }
    let [[wb, wc], [sb, sc]] = w.totals;
    out += &format!(
        "Traced by perf: every wake-up the side's threads issue (the scheduler's \
         `sched_waking`, in the waker's context, whichever thread it wakes) and every \
         sleep they take (`sched_switch` away from a waiting thread), each with its \
         call stack walked by frame pointers (both implementations built with them \
         for this), {} runs of each implementation, in turns, {}; the difference per \
         block. A path is the system call it was made in, then the innermost frames of \
         the program's own code (the runtime's, the application's: not the kernel's, \
         the standard library's or C's), innermost first (the function that called \
         C's wrapper, which the walk skips, read back from the call before its \
         caller's return address); `[interrupt]` where an interrupt raised the \
         wake-up. {wb:.2} -> {wc:.2} wake-ups and {sb:.2} -> {sc:.2} sleeps per block in \
         all. Told: every run of one side past every run of the other, and a path's \
         figure moved by more than the widest range of either side's runs (less the \
         run farthest from their median) and by {} per block at least.\n\n",
        w.runs,
        counts_said(w.blocks, w.seconds),
        moved::FLOOR_EVENTS,
    );
    out += &table("Wake-ups issued", &w.wakes, 2, false);
    out += &table("Sleeps taken", &w.sleeps, 2, false);
    match w.graph {
        true => {
            out + &format!("![{side}: wake-ups, differential flame graph]({side}-wakes.svg)\n\n")
        }
        false => out,
    }
}

/// How a side was counted or sampled, its totals and what tells a move.
fn method_said(side: &Explanation) -> String {
    let moved = |[b, c]: [f64; 2]| (c / b - 1.0) * 100.0;
    match (&side.sampled, side.totals) {
        (None, Some([[b, c], [bs, cs]])) => format!(
            "Counted under callgrind, {} runs of each, in turns: {b:.0} -> {c:.0} \
             instructions ({:+.1}%) and {bs:.2} -> {cs:.2} system calls per block in all. \
             Told: a function's own figure moved by more than {}, and by {} instructions \
             (or {:.1}% of the baseline's) or {} system calls at least.\n\n",
            side.runs,
            moved([b, c]),
            moved::variation_said(side.runs),
            moved::FLOOR_INSTRUCTIONS,
            moved::FLOOR_SHARE * 100.0,
            moved::FLOOR_SYSCALLS,
        ),
        (Some(s), _) => {
            // A function with 1% of the samples, at 95%.
            let hundredth = s.samples as f64 / 100.0;
            let precise = 2.0 / hundredth.sqrt().max(f64::MIN_POSITIVE) * 100.0;
            let [b, c] = s.cpu_ns;
            format!(
                "Sampled by perf ({}) on the kernel's CPU clock, every {} µs of CPU, the \
                 kernel's time included: {} runs of each, in turns, {}, {} samples a run in both (median), pooled. A figure of k \
                 samples is known to about ±2√k: a function with 1% of the time, to \
                 ±{precise:.0}% of itself; the table's ± is a move's sampling error (one \
                 standard deviation, one run of each). {b:.0} -> {c:.0} ns of CPU per block \
                 in all ({:+.1}%): CPU time moves with the machine, where instructions \
                 barely do. Told: a function's own figure moved by more than {}, by {} times \
                 its sampling error, and by {} ns (or {:.0}% of the baseline's) at least.\n\n",
                s.perf,
                s.period_ns / 1000,
                side.runs,
                counts_said(s.blocks, s.seconds),
                s.samples,
                moved([b, c]),
                moved::variation_said(side.runs),
                moved::SAMPLING_ERRORS,
                moved::FLOOR_CPU_NS,
                moved::FLOOR_CPU_SHARE * 100.0,
            )
        }
        (None, None) => String::new(),
    }
}

/// A table of `functions` by one kind, their figures with `decimals`, and
/// where `sampled`, each move's sampling error.
fn table(title: &str, functions: &[Function], decimals: usize, sampled: bool) -> String {
    let (error, rule) = match sampled {
        true => (" ± |", "---:|"),
        false => ("", ""),
    };
    let mut out = format!(
        "{title}:\n\n| function | crate | own: baseline | candidate | moved |{error} with \
         callees: baseline | candidate | moved | runs vary by | told |\n\
         |---|---|---:|---:|---:|{rule}---:|---:|---:|---:|---|\n"
    );
    let shown = functions
        .iter()
        .filter(|f| f.baseline[1] != 0.0 || f.candidate[1] != 0.0)
        .take(ROWS);
    for f in shown {
        let d = decimals;
        let error = match sampled {
            true => format!(" {:.d$} |", f.error),
            false => String::new(),
        };
        out += &format!(
            "| `{}` | {} | {:.d$} | {:.d$} | {:+.d$} |{error} {:.d$} | {:.d$} | {:+.d$} | {:.d$} | {} |\n",
            f.name.replace('|', "\\|"),
            f.krate.as_deref().unwrap_or("-"),
            f.baseline[0],
            f.candidate[0],
            f.own_moved(),
            f.baseline[1],
            f.candidate[1],
            f.inclusive_moved(),
            f.variation,
            if f.told { "yes" } else { "no" }
        );
    }
    out + "\n"
}

/// The functions a side's table shows,
const ROWS: usize = 25;
/// and those its file keeps, of each kind: every one that moved, in a
/// run that moved, and the largest of those that did not.
const KEPT: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    fn told(name: &str, kind: Kind, moved: f64) -> Function {
        Function {
            name: name.into(),
            krate: None,
            kind,
            baseline: [0.0; 2],
            candidate: [moved; 2],
            variation: 0.0,
            error: 0.0,
            runs: Default::default(),
            told: true,
        }
    }

    #[test]
    fn told_moves_rank_by_what_they_cost_at_the_machines_prices() {
        let side = |functions, syscalls| Explanation {
            side: "server".into(),
            runs: 3,
            totals: None,
            functions,
            syscalls,
            absent: None,
            sampled: None,
            woken: None,
        };
        let mut e = Explained {
            cell: "1 thread, 1 connection, 16384 B".into(),
            baseline: "a".into(),
            candidate: "b".into(),
            command: String::new(),
            sides: vec![side(
                vec![told("poll", Kind::Instructions, 110_000.0)],
                vec![told("epoll_wait", Kind::Syscalls, 0.64)],
            )],
            costs: vec![CostRow {
                label: "futex/block srv".into(),
                baseline: Some(0.4),
                candidate: Some(1.5),
                price_ns: Some(450.0),
            }],
            prices: None,
        };
        // Without prices, by kind: the system call first.
        let names = |e: &Explained| {
            e.told()
                .iter()
                .map(|(_, f)| f.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&e), ["epoll_wait", "poll"]);
        // At 0.3 ns an instruction and 450 ns a call: 33,000 ns against 288.
        e.prices = Some(Prices {
            instruction_ns: 0.3,
            syscall_ns: 450.0,
            handoff_ns: 5_000.0,
            switch_ns: 3_000.0,
        });
        assert_eq!(names(&e), ["poll", "epoll_wait"]);
        let summary = e.summary();
        assert!(
            summary.starts_with("poll (server, +110000 instr/block, ~+33000 ns)"),
            "{summary}"
        );
        let page = page(&e);
        assert!(
            page.contains("| server | `poll` | +110000 instr | +33000 |"),
            "{page}"
        );
        assert!(page.contains("a system call 450 ns (getppid)"), "{page}");
        // Each cost figure's move at its price: 1.1 futex calls at 450 ns.
        assert!(
            page.contains("| futex/block srv | 0.40 | 1.50 | +1.10 | +495 |"),
            "{page}"
        );
    }
}
