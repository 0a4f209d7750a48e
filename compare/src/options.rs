//! What the command line parsed, turned into each command's options and
//! validated once: names resolved, files read, combinations refused with the
//! reason. The commands themselves never see clap.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use pingpong::client::Arrival;
use pingpong::protocol::MAX_IN_FLIGHT;
use pingpong::protocol::Protocol;
use pingpong::server::Shape;

use crate::cli::{
    self, BisectArgs, CheckArgs, Command, ExplainArgs, ExplainMethod, ExplainSettings, Precision,
    ReportArgs, RunArgs, SiteArgs, Timing,
};
use crate::{bisect, check, explain, run, site};
use measure::repetition::Side;
use measure::{environment, releases, remote};
use model::adapters::ADAPTERS;
use model::external::External;
use model::implementation::{Implementation, Spec, Versions, split_list};
use model::matrix::{Load, Rate};
use model::named::Named;
use model::preset::Preset;
use model::results::registry;
use model::results::{Config, ReleaseRange, Skipped};
use model::revision::{self, Source};
use model::shell::shell_words;
use model::{defaults, matrix, placement};

pub fn run(args: RunArgs) -> Result<run::Options> {
    let args = with_preset(args);
    let start = match args.resume {
        Some(ref dir) => run::Start::Resume(dir.clone()),
        None => run::Start::Fresh {
            config: Box::new(config(&args)?),
            out: args.out.clone().unwrap_or_else(default_out),
        },
    };
    let out = match &start {
        run::Start::Fresh { out, .. } | run::Start::Resume(out) => out,
    };
    Ok(run::Options {
        history: history_file(args.history, || Some(history::beside(out))),
        start,
        quiet: args.quiet,
        bin_dir: args.bin_dir,
        profile: args.profile,
    })
}

/// A new run's options, as its results file records them.
fn config(args: &RunArgs) -> Result<Config> {
    let externals = externals(args)?;
    let (servers, releases) = servers(args, &externals)?;
    check_protocols(args)?;
    let names: Vec<String> = servers.iter().map(Implementation::name).collect();
    if let Some(twice) = names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(n))
    {
        bail!("--runtimes names {twice} twice");
    }
    let client = client(args, &externals)?;
    let loads = loads(args)?;
    check_in_flight(args)?;
    let Repetitions {
        precision,
        repeat,
        max_repeat,
    } = repetitions(args)?;
    let counts: Vec<usize> = loads.iter().map(|l| l.connections).collect();
    if let Some(c) = args.handshakes.iter().find(|c| !counts.contains(c)) {
        bail!("--handshakes {c}: no load of the run has {c} connections");
    }
    let named = |e: &External| servers.iter().chain(&client).any(|i| i.name() == e.name);
    let client_hosts = client_hosts(args, &loads)?;
    Ok(Config {
        implementations: names,
        client: client.as_ref().map(Implementation::name),
        block: args.block[0],
        blocks: args.block.clone(),
        windows: args.window.clone(),
        windows_at: args
            .preset
            .map(|p| p.matrix().windows_at)
            .unwrap_or_default(),
        // TCP alone is what files from before UDP hold.
        protocols: match args.protocol[..] {
            [Protocol::Tcp] => Vec::new(),
            _ => args.protocol.clone(),
        },
        // The echo alone is what files from before shapes hold.
        shapes: match args.shapes[..] {
            [Shape::Echo] => Vec::new(),
            _ => args.shapes.clone(),
        },
        work: args.work,
        seconds: args.timing.seconds(),
        warmup: args.timing.warmup(),
        repeat,
        command: command_line(),
        started: chrono::Utc::now().to_rfc3339(),
        ended: None,
        pin: Some(args.client_cpus.as_ref().unwrap_or(&args.pin).to_string()),
        noisy_percent: Some(args.noisy),
        latency: Some(!args.no_latency),
        cost: Some(!args.no_cost),
        cost_runs: (!args.no_cost && args.cost_runs != 1).then_some(args.cost_runs),
        resumed: Vec::new(),
        precision_percent: precision,
        max_repeat: precision.map(|_| max_repeat),
        budget_seconds: precision.map(|_| args.budget.unwrap_or(defaults::BUDGET_MINUTES) * 60.0),
        counted_blocks: args.counted,
        arrival: Some(args.arrival),
        churn: args.churn,
        rates: (args.rates.iter())
            .filter_map(|r| match r {
                Rate::PerSecond(r) => Some(*r),
                Rate::Share(_) => None,
            })
            .collect(),
        rate_shares: (args.rates.iter())
            .filter_map(|r| match r {
                Rate::Share(p) => Some(*p),
                Rate::PerSecond(_) => None,
            })
            .collect(),
        tls: args
            .tls
            .then(|| environment::tls_settings(!args.no_handshakes, args.handshakes.clone())),
        releases,
        sources: sources(servers.iter().chain(&client)),
        p99_bound_us: (!args.rates.is_empty()).then_some(args.p99_bound * 1e3),
        // The ones the run names: an unused file is not the run's business.
        externals: externals
            .iter()
            .filter(|e| named(e))
            .map(|e| e.as_ref().clone())
            .collect(),
        remote: remote::record(
            args.server.as_deref(),
            args.remote.as_deref(),
            args.remote_bin_dir.as_deref(),
        ),
        client_hosts,
        loads,
    })
}

/// The client `--client` names, or the one the open loop or a storm of
/// arrivals needs.
fn client(args: &RunArgs, externals: &[Arc<External>]) -> Result<Option<Implementation>> {
    let client = args
        .client
        .as_deref()
        .map(|c| Implementation::parse(c, externals))
        .transpose()?;
    Ok(match (args.rates.is_empty(), args.arrival) {
        (false, _) => Some(open_loop_client(args, client)?),
        (true, Arrival::Storm) => Some(storm_client(args, client)?),
        (true, _) => client,
    })
}

/// The loads --threads and --connections cross (the matrix's where
/// neither is given), each with its client threads.
fn loads(args: &RunArgs) -> Result<Vec<Load>> {
    let loads = match (&args.threads[..], &args.connections[..]) {
        ([], []) => matrix_loads(args)?,
        ([], connections) => matrix::cross(&[1], connections),
        (threads, []) => matrix::cross(threads, &[100, 1000]),
        (threads, connections) => matrix::cross(threads, connections),
    };
    Ok(matrix::with_client_threads(loads, &args.client_threads))
}

/// The programs `--external` describes, each named once and none as ours.
fn externals(args: &RunArgs) -> Result<Vec<Arc<External>>> {
    let externals = args
        .external
        .iter()
        .map(|arg| External::from_arg(arg).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    for (i, e) in externals.iter().enumerate() {
        if ADAPTERS.iter().any(|a| a.name == e.name) {
            bail!(
                "--external {}: the name is one of ours; choose another",
                e.name
            );
        }
        if externals[..i].iter().any(|other| other.name == e.name) {
            bail!("--external names {} twice", e.name);
        }
    }
    Ok(externals)
}

/// The servers `--runtimes` names (every one where it names none), its
/// ranges of releases and commits expanded, and those ranges.
fn servers(
    args: &RunArgs,
    externals: &[Arc<External>],
) -> Result<(Vec<Implementation>, Vec<ReleaseRange>)> {
    let runtimes: Vec<String> = args.runtimes.iter().flat_map(|r| split_list(r)).collect();
    if args.server.is_some() && runtimes.len() != 1 {
        bail!(
            "--server runs one implementation's server, started by hand: name it alone in --runtimes"
        );
    }
    if args.server.is_some() && args.shapes != [Shape::Echo] {
        bail!(
            "--server measures a server started by hand, in the shape it was started with \
             (pingpong-<name> server --shape ...): leave --shapes out"
        );
    }
    if runtimes.is_empty() {
        let all = ADAPTERS
            .iter()
            .map(Implementation::from)
            .chain(externals.iter().cloned().map(Implementation::External));
        return Ok((all.collect(), Vec::new()));
    }
    let (mut servers, mut releases) = (Vec::new(), Vec::new());
    for spec in &runtimes {
        if let Some(range) = release_range(spec, args.pre_releases)? {
            for name in range.names() {
                servers.push(Implementation::parse(&name, externals)?);
            }
            releases.push(range);
        } else if let Some(commits) = commit_range(spec, args.step as usize)? {
            let mut names = Vec::new();
            for commit in commits {
                let implementation = Implementation::parse(&commit, externals)?;
                names.push(implementation.name());
                servers.push(implementation);
            }
            releases.push(ReleaseRange {
                spec: spec.clone(),
                krate: Spec::parse(spec)?.base,
                versions: names,
                skipped: Vec::new(),
            });
        } else {
            servers.push(Implementation::parse(spec, externals)?);
        }
    }
    Ok((servers, releases))
}

/// Every block size and window the run crosses fit a connection's buffer.
fn check_in_flight(args: &RunArgs) -> Result<()> {
    for &block in &args.block {
        for &window in &args.window {
            if block * window > MAX_IN_FLIGHT {
                bail!(
                    "--block {block} with --window {window} puts {} bytes in flight per connection; \
                     the most is {MAX_IN_FLIGHT}",
                    block * window
                );
            }
        }
    }
    Ok(())
}

/// How often a cell repeats: until precise (to `precision` percent, from
/// `repeat` rounds up to `max_repeat`), or `repeat` times.
struct Repetitions {
    precision: Option<f64>,
    repeat: usize,
    max_repeat: usize,
}

/// An explicit --repeat alone is a fixed count; otherwise cells repeat
/// until precise, the --repeat first rounds (or the default) at least.
fn repetitions(args: &RunArgs) -> Result<Repetitions> {
    let precision = match (args.precision, args.repeat) {
        (Some(Precision::Percent(p)), _) => Some(p),
        (Some(Precision::Off), _) | (None, Some(_)) => None,
        (None, None) => Some(defaults::PRECISION_PERCENT),
    };
    let repeat = args.repeat.unwrap_or(match precision {
        Some(_) => defaults::PRECISE_REPEAT,
        None => defaults::REPEAT,
    });
    let max_repeat = match precision {
        Some(_) => args.max_repeat.unwrap_or(defaults::MAX_REPEAT),
        None => repeat,
    };
    if max_repeat < repeat {
        bail!("--max-repeat {max_repeat} is below --repeat {repeat}");
    }
    if precision.is_none() && (args.max_repeat.is_some() || args.budget.is_some()) {
        bail!("--max-repeat and --budget bound the repetitions for --precision, which is off here");
    }
    Ok(Repetitions {
        precision,
        repeat,
        max_repeat,
    })
}

/// Where each implementation built from a source (a commit, a path) came
/// from, each source once.
fn sources<'a>(implementations: impl Iterator<Item = &'a Implementation>) -> Vec<Source> {
    let mut sources: Vec<Source> = Vec::new();
    for source in implementations.filter_map(Implementation::source) {
        if !sources.iter().any(|s| s.name == source.name) {
            sources.push(source.clone());
        }
    }
    sources
}

/// `--client-host`'s hosts, where the run can split its clients among them.
fn client_hosts(args: &RunArgs, loads: &[Load]) -> Result<Vec<String>> {
    let hosts = &args.client_hosts;
    if hosts.is_empty() {
        return Ok(Vec::new());
    }
    if args.server.is_none() && args.remote.is_none() {
        bail!(
            "--client-host: the server must be on a host the clients reach; add --remote \
             ssh://HOST (or --server HOST:PORT)"
        );
    }
    let refused = [
        (
            !args.rates.is_empty(),
            "--rates: the open loop's generator runs on one host",
        ),
        (
            args.counted.is_some(),
            "--counted: no client on another host is counted",
        ),
    ];
    if let Some((_, why)) = refused.iter().find(|(given, _)| *given) {
        bail!("--client-host does not run with {why}");
    }
    if let Some(load) = loads.iter().find(|l| l.connections < hosts.len()) {
        bail!(
            "--client-host: {} connection(s) cannot be split among {} client hosts",
            load.connections,
            hosts.len()
        );
    }
    Ok(hosts.clone())
}

/// The loads of `--matrix`, for the CPUs here unless the server runs
/// elsewhere; a note names the thread counts this machine left out.
/// The options with `--preset`'s matrix and method in place of their own
/// (the command line refuses a preset beside the options it sets).
fn with_preset(mut args: RunArgs) -> RunArgs {
    let Some(preset) = args.preset else {
        return args;
    };
    let m = preset.matrix();
    args.protocol = m.protocols;
    args.tls = m.tls;
    args.no_handshakes = m.tls;
    args.block = m.blocks;
    args.connections = m.connections;
    args.threads = m.threads;
    args.window = m.windows_at.iter().map(|w| w.window).collect();
    args.client_threads = m.client_threads;
    args.shapes = m.shapes;
    args.rates = m.rates;
    args.timing = Timing {
        seconds: Some(m.seconds),
        warmup: Some(m.warmup),
    };
    args.repeat = args.repeat.or(Some(m.repeat));
    args.cost_runs = m.cost_runs;
    args
}

/// Refuses a run whose protocols have nothing to run of what it asks,
/// and block sizes no datagram carries.
fn check_protocols(args: &RunArgs) -> Result<()> {
    if args.protocol.contains(&Protocol::Udp) {
        for &block in &args.block {
            pingpong::datagram::check_size(block)
                .map_err(|e| anyhow::anyhow!("--protocol udp: {e}"))?;
        }
    }
    let tcp = args.protocol.contains(&Protocol::Tcp);
    let secured = args.protocol.iter().any(|p| *p != Protocol::Udp);
    let asked = [
        (args.tls && !secured, "--tls"),
        (args.churn.is_some() && !tcp, "--churn"),
        (!args.rates.is_empty() && !tcp, "--rates"),
        (
            !args.shapes.contains(&Shape::Echo) && !tcp,
            "--shapes without echo",
        ),
    ];
    if let Some((_, flag)) = asked.iter().find(|(asked, _)| *asked) {
        let names: Vec<&str> = args.protocol.iter().map(|p| p.label()).collect();
        bail!(
            "{flag} has nothing to run over {}: UDP has no connections to close or secure, \
             HTTP and WebSocket run the closed-loop echo alone (their one server answers each \
             message itself), and neither has an open loop; add tcp to --protocol, or leave \
             {flag} out",
            names.join(" and ")
        );
    }
    Ok(())
}

fn matrix_loads(args: &RunArgs) -> Result<Vec<Load>> {
    if args.server.is_some() || args.remote.is_some() {
        return Ok(args.matrix.loads(None));
    }
    let cpus = placement::available_cpus()?.len();
    let loads = args.matrix.loads(Some(cpus));
    let mut threads: Vec<usize> = args
        .matrix
        .loads(None)
        .iter()
        .filter(|l| !loads.contains(l))
        .map(|l| l.threads)
        .collect();
    threads.sort();
    threads.dedup();
    let left_out: Vec<String> = threads.iter().map(usize::to_string).collect();
    if let Some((last, rest)) = left_out.split_last() {
        let threads = match rest {
            [] => last.clone(),
            _ => format!("{} and {last}", rest.join(", ")),
        };
        eprintln!(
            "note: {cpus} CPUs here: the quick matrix leaves out {threads} threads (more threads \
             than CPUs measure the machine's time slicing more than a runtime); --threads or \
             --matrix muduo runs them"
        );
    }
    Ok(loads)
}

/// The releases of `NAME@A..B`, if `spec` is a range: every one cargo's
/// index lists between A and B, the yanked (and pre-releases unless asked
/// for) left out and named.
fn release_range(text: &str, pre: bool) -> Result<Option<ReleaseRange>> {
    // An external's name may hold anything; ours are specs.
    let Ok(spec) = Spec::parse(text) else {
        return Ok(None);
    };
    let Versions::Range(from, to) = &spec.versions else {
        return Ok(None);
    };
    let (spec, name) = (text, spec.base.as_str());
    let Implementation::Ours { adapter, .. } = Implementation::parse(name, &[])? else {
        bail!("{spec:?}: only our implementations have releases");
    };
    if adapter.krate == "std" {
        bail!("{spec:?}: {name} is built on the standard library, which has no releases to sweep");
    }
    let found = releases::between(adapter.krate, from, to, pre)?;
    for (version, why) in &found.skipped {
        eprintln!("{} {version} left out: {why}", adapter.krate);
    }
    Ok(Some(ReleaseRange {
        spec: spec.into(),
        krate: adapter.krate.into(),
        versions: found.versions,
        skipped: found
            .skipped
            .into_iter()
            .map(|(version, reason)| Skipped { version, reason })
            .collect(),
    }))
}

/// The commits of `NAME@git:URL#A..B`, if `text` is such a range: each as
/// the spec of one commit (`NAME@git:URL#HASH{knobs}`), oldest first, every
/// `step`th.
fn commit_range(text: &str, step: usize) -> Result<Option<Vec<String>>> {
    let Ok(spec) = Spec::parse(text) else {
        return Ok(None);
    };
    let Versions::Commits { url, from, to } = &spec.versions else {
        return Ok(None);
    };
    let commits = revision::commits(url, from, to, step, &defaults::versions_folder()?)
        .with_context(|| format!("{text:?}"))?;
    eprintln!("{text}: {} first-parent commit(s)", commits.len());
    let knobs = spec
        .knobs
        .as_ref()
        .map(|k| format!("{{{k}}}"))
        .unwrap_or_default();
    Ok(Some(
        commits
            .iter()
            .map(|c| format!("{}@git:{url}#{c}{knobs}", spec.base))
            .collect(),
    ))
}

/// The fixed client of an open-loop run, that of its closed-loop cells:
/// mio's for every server (the open loop's own is the generator); the
/// options the open loop cannot run with refused.
fn open_loop_client(args: &RunArgs, asked: Option<Implementation>) -> Result<Implementation> {
    let fixed = defaults::CAPACITY_CLIENT;
    if let Some(asked) = asked.filter(|c| c.name() != fixed) {
        bail!(
            "--rates: the open loop's client is the generator for every server, and the \
             closed loop's beside it {fixed}'s; --client {} cannot run it",
            asked.name()
        );
    }
    if args.window != [1] {
        bail!(
            "--rates sends blocks on their schedule, pipelined as they fall due; --window does not apply"
        );
    }
    let conflicts = [
        (args.churn.is_some(), "--churn"),
        (args.no_latency, "--no-latency"),
        (args.counted.is_some(), "--counted"),
    ];
    if let Some((_, option)) = conflicts.iter().find(|(given, _)| *given) {
        bail!("--rates times every block; it does not run with {option}");
    }
    Implementation::parse(fixed, &[])
}

/// The client of a connect storm: mio's for every server, or an external
/// client whose file says it connects in a storm (muduo's); the options a
/// storm does not run with refused.
fn storm_client(args: &RunArgs, asked: Option<Implementation>) -> Result<Implementation> {
    let storms = |c: &Implementation| match c {
        Implementation::External(e) => e.client.arrival == Some(Arrival::Storm),
        _ => c.name() == defaults::STORM_CLIENT,
    };
    if let Some(asked) = &asked
        && !storms(asked)
    {
        bail!(
            "--arrival storm: the storm is made by {}'s client for every server, or by an \
             external client whose file says arrival = \"storm\"; --client {} connects otherwise",
            defaults::STORM_CLIENT,
            asked.name()
        );
    }
    if args.churn.is_some() {
        bail!(
            "--arrival storm opens every connection once, in one burst; it does not run with --churn"
        );
    }
    if args.protocol.contains(&Protocol::Udp) {
        bail!("--arrival storm is a storm of TCP connects; UDP has none");
    }
    asked.map_or_else(|| Implementation::parse(defaults::STORM_CLIENT, &[]), Ok)
}

/// `--history FILE|none`: the file, none, or where it is not given the default.
fn history_file(
    arg: Option<PathBuf>,
    default: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    match arg {
        Some(file) if file.as_os_str() == "none" => None,
        Some(file) => Some(file),
        None => default(),
    }
}

/// `results/<UTC timestamp>`, numbered when taken.
fn default_out() -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = Path::new("results").join(stamp.to_string());
    (1..)
        .map(|n| {
            if n == 1 {
                base.clone()
            } else {
                base.with_extension(n.to_string())
            }
        })
        .find(|p| !p.exists())
        .expect("a free folder name")
}

pub fn bisect(args: BisectArgs) -> Result<bisect::Options> {
    // A service's partial loads where no load is named.
    let preset = match args.preset {
        None if args.connections.is_empty() && args.threads.is_empty() => Some(Preset::Services),
        preset => preset,
    };
    // Every step's run is a `compare run` of these options, made and
    // validated as run's own are; each step then names its implementations
    // and its folder.
    let Command::Run(mut step) = cli::parse_from(["compare", "run"])?.command else {
        unreachable!("a run's command line is a run")
    };
    let mut words: Vec<String> = Vec::new();
    let mut word = |option: &str, value: String| words.extend([option.to_string(), value]);
    match preset {
        Some(preset) => {
            step.preset = Some(preset);
            word("--preset", preset.name().into());
        }
        None => {
            step.connections = or(&args.connections, 1000);
            step.threads = or(&args.threads, 1);
            step.no_cost = true;
            word("--connections", commas(&step.connections));
            word("--threads", commas(&step.threads));
        }
    }
    let mut step = with_preset(*step);
    // A preset's repetitions, or the fewest that give an interval.
    step.repeat = (args.repeat.or(step.repeat)).or(Some(defaults::FEWEST_TIMED_RUNS));
    if let Some(seconds) = args.timing.seconds {
        step.timing.seconds = Some(seconds);
        word("--seconds", seconds.to_string());
    }
    if let Some(warmup) = args.timing.warmup {
        step.timing.warmup = Some(warmup);
        word("--warmup", warmup.to_string());
    }
    if let Some(repeat) = args.repeat {
        word("--repeat", repeat.to_string());
    }
    if let Some(blocks) = args.counted {
        step.counted = Some(blocks);
        word("--counted", blocks.to_string());
    }
    if step.no_cost {
        words.push("--no-cost".into());
    }
    let config = config(&step)?;
    // By default what `compare check` judges: every figure, those counted
    // under callgrind where the steps count.
    let metrics = match args.metric.is_empty() {
        false => args.metric,
        true => registry::Figure::judged()
            .filter(|f| !f.counted() || args.counted.is_some())
            .collect(),
    };
    if let Some(counted) = metrics.iter().find(|m| m.counted()) {
        ensure!(
            args.counted.is_some(),
            "--metric {} judges a counted figure: give --counted BLOCKS",
            counted.key
        );
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    Ok(bisect::Options {
        name: args.name,
        good: args.good,
        bad: args.bad,
        git: args.git,
        metrics,
        step: config,
        step_options: words,
        explain: args.explain.then(|| {
            let repeat = defaults::EXPLAIN_REPEAT as usize;
            explained_by(args.explain_method, repeat, step.profile.clone(), true)
        }),
        profile: step.profile,
        threshold: args.threshold.map(|t| t / 100.0),
        out: args
            .out
            .unwrap_or_else(|| Path::new("results").join(format!("bisect-{stamp}"))),
    })
}

/// `given`, or `default` alone where nothing is given.
fn or(given: &[usize], default: usize) -> Vec<usize> {
    match given.is_empty() {
        true => vec![default],
        false => given.to_vec(),
    }
}

/// "1,2": counts as the command line takes them.
fn commas(counts: &[usize]) -> String {
    let counts: Vec<String> = counts.iter().map(usize::to_string).collect();
    counts.join(",")
}

pub fn check(args: CheckArgs) -> Result<check::Options> {
    let pair = match (args.results.len(), args.baseline, args.candidate) {
        (1, Some(baseline), Some(candidate)) => Some((baseline, candidate)),
        (1, _, _) => bail!(
            "one results file needs --baseline NAME and --candidate NAME (two implementations of its run)"
        ),
        (2, None, None) => None,
        (2, _, _) => bail!(
            "--baseline and --candidate name implementations inside one results file; give one file with them, or two files without them"
        ),
        _ => bail!("give one or two results files"),
    };
    // The candidate's machine's history, where the two runs have one.
    let candidate = model::results::file::named(&args.results[args.results.len() - 1]);
    let beside = history::beside(candidate.parent().unwrap_or(Path::new(".")));
    let history = history_file(args.history, || {
        (pair.is_none() && beside.exists()).then_some(beside)
    });
    if history.is_some() && pair.is_some() {
        bail!("--history judges two runs; inside one run the sides are paired round by round");
    }
    Ok(check::Options {
        history,
        results: args.results,
        pair,
        threshold: args.threshold.map(|t| t / 100.0),
        cost_threshold: args.cost_threshold.map(|t| t / 100.0),
        counted_threshold: args.counted_threshold / 100.0,
        confidence: args.confidence,
        format: args.format,
        explain: args.explain.then(|| explain_settings(args.settings, true)),
    })
}

/// How explain measures each side again, as the command line asks.
fn explain_settings(args: ExplainSettings, wakes: bool) -> explain::Settings {
    explained_by(args.method, args.repeat as usize, args.profile, wakes)
}

/// Explain's settings: `method`'s sides and counts, `repeat` runs of each
/// built in `profile`.
fn explained_by(
    method: ExplainMethod,
    repeat: usize,
    profile: String,
    wakes: bool,
) -> explain::Settings {
    explain::Settings {
        sides: match method.side.as_deref() {
            Some("server") => vec![Side::Server],
            Some(_) => vec![Side::Client],
            None => vec![Side::Server, Side::Client],
        },
        repeat,
        blocks: method.blocks,
        profile,
        sampled: method.sampled,
        sample_seconds: method.sample_seconds,
        wakes,
    }
}

pub fn explain(args: ExplainArgs) -> Result<explain::Options> {
    let mut files = args.results.iter().map(|r| model::results::file::named(r));
    let results = files.next().context("no results named")?;
    let candidate_results = files.next();
    let out = args.out.unwrap_or_else(|| {
        let candidate = candidate_results.as_ref().unwrap_or(&results);
        explain::default_out([&results, candidate], &args.baseline, &args.candidate)
    });
    Ok(explain::Options {
        results,
        candidate_results,
        baseline: args.baseline,
        candidate: args.candidate,
        cells: args.cells,
        out,
        settings: explain_settings(args.settings, args.wakes),
    })
}

pub fn report(args: ReportArgs) -> Result<report::Options> {
    let results = model::results::file::named(&args.results);
    let out = match args.out {
        Some(out) => out,
        None => results
            .parent()
            .map_or_else(|| ".".into(), Path::to_path_buf),
    };
    Ok(report::Options {
        results,
        formats: args.format,
        out,
        reference: args.reference,
    })
}

pub fn site(args: SiteArgs) -> site::Options {
    site::Options {
        history: args.history.path,
        out: args.out,
        book: (args.book != "none").then(|| args.book.into()),
    }
}

/// This process's command line as a shell reads it back: words quoted
/// where they need it (a configuration's braces), and a PostgreSQL URL's
/// password left out (the results and the history keep this line).
fn command_line() -> String {
    let words: Vec<String> = std::env::args().map(|w| without_password(&w)).collect();
    shell_words(words.iter().map(String::as_str))
}

/// `word`, or where it is a PostgreSQL URL (`--history=URL` too), the URL
/// without its password.
fn without_password(word: &str) -> String {
    let (flag, value) = match word.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (format!("{flag}="), value),
        _ => (String::new(), word),
    };
    match history::Location::from(Path::new(value)) {
        location @ history::Location::Postgres(_) => format!("{flag}{location}"),
        history::Location::File(_) => word.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_command_keeps_no_password() {
        for (word, kept) in [
            (
                "postgres://bench:secret@db:5432/h",
                "postgres://bench@db:5432/h",
            ),
            (
                "--history=postgresql://b:secret@db/h?sslmode=require",
                "--history=postgresql://b@db/h?sslmode=require",
            ),
            ("results/history.sqlite", "results/history.sqlite"),
            ("--runtimes=tokio", "--runtimes=tokio"),
        ] {
            assert_eq!(without_password(word), kept);
        }
    }

    fn fresh(args: &[&str]) -> Config {
        let words = ["compare", "run", "--history", "none"].iter().chain(args);
        let Command::Run(args) = cli::parse_from(words).unwrap().command else {
            unreachable!()
        };
        match run(*args).unwrap().start {
            run::Start::Fresh { config, .. } => *config,
            run::Start::Resume(_) => unreachable!(),
        }
    }

    fn refused(args: &[&str]) -> String {
        let words = ["compare", "run", "--history", "none"].iter().chain(args);
        let Command::Run(args) = cli::parse_from(words).unwrap().command else {
            unreachable!()
        };
        format!("{:#}", run(*args).err().expect("refused"))
    }

    #[test]
    fn a_storm_is_mio_s_client_s_and_refuses_what_it_cannot_run() {
        let config = fresh(&["--arrival", "storm", "--runtimes", "tokio,smol"]);
        assert_eq!(config.client.as_deref(), Some("mio"));
        let e = refused(&["--arrival", "storm", "--client", "tokio"]);
        assert!(e.contains("--client tokio connects otherwise"), "{e}");
        let e = refused(&["--arrival", "storm", "--churn", "3"]);
        assert!(e.contains("--churn"), "{e}");
        let e = refused(&["--arrival", "storm", "--protocol", "udp"]);
        assert!(e.contains("UDP"), "{e}");
    }

    #[test]
    fn the_loopback_preset_runs_the_references_loads_and_nothing_else() {
        let config = fresh(&["--preset", "loopback-bench", "--runtimes", "mio"]);
        assert_eq!(
            (config.seconds, config.warmup, config.repeat),
            (1.0, 0.25, 3)
        );
        let mut cells = Vec::new();
        for w in config.workloads() {
            for load in config.loads_of(w) {
                assert_eq!(load.threads, 1);
                cells.push((
                    w.protocol,
                    w.tls.is_some(),
                    w.block,
                    w.window,
                    load.connections,
                ));
            }
        }
        let mut expected = Vec::new();
        for block in [64, 1024, 16384] {
            for protocol in [Protocol::Tcp, Protocol::Http, Protocol::WebSocket] {
                for tls in [false, true] {
                    expected.extend([(protocol, tls, block, 1, 1), (protocol, tls, block, 16, 16)]);
                }
            }
            expected.extend([
                (Protocol::Udp, false, block, 1, 1),
                (Protocol::Udp, false, block, 1, 16),
            ]);
        }
        cells.sort();
        expected.sort();
        assert_eq!(cells, expected);
    }
}
