//! The report's parts in order, as every renderer of a whole report draws
//! them: the sections of tables, and the notes that explain their marks.

use pingpong::client::open_loop::GENERATOR_BUSY;
use pingpong::protocol::Protocol;

use super::grid::{DETAIL_LEGEND, Grid, View, bound, status, udp_legend};
use super::{arrivals, cost, open_loop, shapes, tls, trend};
use model::results::figures::{ROOM, SATURATED};
use model::results::{Cell, Results, Status};

/// The report's sections in order, every workload's tables in each: heading and tables.
pub fn report_sections(views: &[View], reference: &str) -> Vec<(String, Vec<Grid>)> {
    let all = |grids: &dyn Fn(&View) -> Vec<Grid>| -> Vec<Grid> {
        views.iter().flat_map(grids).collect()
    };
    let results = views.first().map(|v| v.results);
    vec![
        (
            "Latency against offered load (open loop)".into(),
            results.map(open_loop::tables).unwrap_or_default(),
        ),
        (
            "Releases".into(),
            results.map(trend::tables).unwrap_or_default(),
        ),
        // An open-loop workload's throughput is its rate, or the latency
        // tables say it was not sustained: nothing to rank.
        ("Throughput".into(), all(&|v| closed(v, |v| v.throughput()))),
        (
            format!("Relative to {reference}"),
            all(&|v| closed(v, |v| v.relative(reference))),
        ),
        (
            "TLS against plain TCP".into(),
            results.map(tls::tables).unwrap_or_default(),
        ),
        (
            "Shapes against the echo".into(),
            results.map(shapes::tables).unwrap_or_default(),
        ),
        ("Every figure, load by load".into(), all(&|v| v.details())),
        ("Cost per block".into(), all(&|v| cost::tables(v))),
        ("Connection arrivals".into(), all(&|v| arrivals::tables(v))),
    ]
    .into_iter()
    .filter(|(_, grids)| !grids.is_empty())
    .collect()
}

/// A run's throughput tables, each workload's: the run in brief.
pub fn headline(results: &Results) -> Vec<Grid> {
    View::all(results)
        .iter()
        .flat_map(|v| closed(v, |v| v.throughput()))
        .collect()
}

/// `tables` of a closed-loop workload; none of an open-loop one.
fn closed(view: &View, tables: impl Fn(&View) -> Vec<Grid>) -> Vec<Grid> {
    match view.workload.rate {
        Some(_) => Vec::new(),
        None => tables(view),
    }
}

/// What the marks mean (only those in use), the legend of the detailed
/// tables where they are shown, then every cell without a figure.
pub fn notes(results: &Results, details: bool) -> Vec<String> {
    let sections: [fn(&Results, bool) -> Vec<String>; 8] = [
        marks,
        precision_note,
        external_notes,
        legends,
        release_notes,
        arrivals_legend,
        not_counted,
        failures,
    ];
    sections
        .iter()
        .flat_map(|notes| notes(results, details))
        .collect()
}

/// A mark's note: the cells that carry it, and what it says.
type Mark = (fn(&Cell) -> bool, fn(&Results) -> String);

/// The marks of the tables, each noted where a cell carries it.
const MARKS: [Mark; 6] = [
    (
        |c| c.placement.oversubscribed,
        |results| {
            format!(
                "* oversubscribed: more threads than CPUs per side ({} CPUs here); these \
                 figures measure contention for cores as much as the runtime",
                results.host.cpus.len()
            )
        },
    ),
    (
        |c| !c.threads_matter,
        |_| "† one thread per connection: the thread count has no effect".into(),
    ),
    (
        |c| c.noisy,
        |results| {
            format!(
                "~ noisy: the runs' max exceeds their min by more than {}%; compare such cells \
                 with care",
                results.config.noisy_percent()
            )
        },
    ),
    (
        |c| !bound(c).is_empty(),
        |_| {
            format!(
                "^ client-bound: the client, not the server, was saturated in half its runs or \
                 more (its CPU at {:.0}% or more of its threads' or cores' capacity while the \
                 server's stayed at {:.0}% of its own or less; in the open loop, the generator \
                 busy over {:.0}% of the window): the figure is a lower bound for the server, \
                 and a row with such a cell behind its leaders names none",
                SATURATED * 100.0,
                ROOM * 100.0,
                GENERATOR_BUSY * 100.0
            )
        },
    ),
    (
        |c| c.rate.is_none(),
        |_| {
            "Bold: the best of a row, where its interval (95% of its median from six runs on, \
             else its runs' [min, max]) clears every other's; = marks leaders whose intervals \
             reach the best's: the runs cannot tell them apart"
                .into()
        },
    ),
    (
        |c| c.modes.is_some(),
        |_| {
            "two modes: the runs fell into two groups far apart (by 15% of the median or more, \
             and by twice either group's width); a median of such runs would flip between them"
                .into()
        },
    ),
];

fn marks(results: &Results, _: bool) -> Vec<String> {
    MARKS
        .iter()
        .filter(|(marked, _)| results.cells.iter().any(marked))
        .map(|(_, note)| note(results))
        .collect()
}

/// Whether every cell reached the run's precision, and which did not.
fn precision_note(results: &Results, _: bool) -> Vec<String> {
    let Some(target) = results.config.precision_percent else {
        return Vec::new();
    };
    let short: Vec<String> = results
        .cells
        .iter()
        .filter(|c| c.short_of(target))
        .map(|c| {
            let reached = c
                .precision()
                .map_or("no 95% interval yet".into(), |p| format!("+-{p:.1}%"));
            format!(
                "{} at {} ({reached} after {} runs)",
                c.implementation,
                c.load().label(),
                c.runs.len()
            )
        })
        .collect();
    let ok = results
        .cells
        .iter()
        .filter(|c| c.status == Status::Ok)
        .count();
    vec![match short.is_empty() {
        true => format!("? Every cell reached the run's precision, +-{target}%"),
        false => format!(
            "? short of the run's precision, +-{target}%: {} of {ok} cells: {}",
            short.len(),
            short.join("; ")
        ),
    }]
}

/// What an external program's own client measures, and each external.
fn external_notes(results: &Results, _: bool) -> Vec<String> {
    let externals = &results.config.externals;
    let mut notes = Vec::new();
    if results
        .cells
        .iter()
        .any(|c| externals.iter().any(|e| e.name == c.client))
    {
        notes.push(
            "‡ measured by an external program's own client: its throughput over its whole run, \
             connecting included; it reports no other figure"
                .into(),
        );
    }
    for e in externals {
        notes.push(format!(
            "{} (external, version {}): {}",
            e.name, e.version, e.model
        ));
    }
    notes
}

/// The legends of the tables the report shows: the detailed ones', the
/// costs', the open loop's, TLS's and the shapes'.
fn legends(results: &Results, details: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if details {
        notes.push(DETAIL_LEGEND.into());
        if results.cells.iter().any(|c| c.protocol == Protocol::Udp) {
            notes.push(udp_legend());
        }
    }
    let counted = results.cells.iter().any(cost::has_cost);
    if details && counted {
        notes.push(cost::LEGEND.into());
        let no_cost_runs = results
            .cells
            .iter()
            .all(|c| c.cost_runs.is_empty() && c.cost_absent.is_none());
        if no_cost_runs {
            notes.push(
                "These results hold no cost runs (compare made none before it counted \
                 system calls): calls and switches are not known"
                    .into(),
            );
        }
    }
    if !results.config.rates.is_empty() {
        notes.push(open_loop::LEGEND.into());
    }
    if let Some(settings) = tls::settings(results) {
        notes.push(settings);
        notes.push(tls::LEGEND.into());
    }
    if !shapes::tables(results).is_empty() {
        notes.extend(shapes::channel(results));
        notes.push(shapes::LEGEND.into());
    }
    notes
}

/// Each range of releases: what it expanded to, or how it was named.
fn release_notes(results: &Results, _: bool) -> Vec<String> {
    let series = results.release_series();
    series
        .iter()
        .map(|range| {
            let (spec, n, krate) = (&range.spec, range.versions.len(), &range.krate);
            if results.is_listed(range) {
                return format!(
                    "{spec}: {n} release(s) of {krate} named one by one, read in version order, \
                     each against the one before"
                );
            }
            let skipped: Vec<String> = range
                .skipped
                .iter()
                .map(|s| format!("{} ({})", s.version, s.reason))
                .collect();
            let left_out = match skipped.is_empty() {
                true => String::new(),
                false => format!("; left out: {}", skipped.join(", ")),
            };
            format!("{spec}: {n} release(s) of {krate} from cargo's index{left_out}")
        })
        .collect()
}

/// The arrivals' legend, where the detailed tables show them.
fn arrivals_legend(results: &Results, details: bool) -> Vec<String> {
    let shown = View::all(results)
        .iter()
        .any(|v| !arrivals::tables(v).is_empty());
    match details && shown {
        true => vec![arrivals::legend(results)],
        false => Vec::new(),
    }
}

/// Every cell without a figure, and why.
fn failures(results: &Results, _: bool) -> Vec<String> {
    let failed = results.cells.iter().filter(|c| c.status != Status::Ok);
    failed
        .map(|c| {
            let why = c.error.as_deref().unwrap_or("no reason recorded");
            let (at, status) = (c.load().label(), status(c.status));
            format!("{} at {at}: {status}: {why}", c.implementation)
        })
        .collect()
}

/// Why a cost or an instruction count is missing, each reason once.
fn not_counted(results: &Results, _: bool) -> Vec<String> {
    let mut absent: Vec<&str> = results
        .cells
        .iter()
        .filter_map(|c| c.cost_absent.as_deref())
        .collect();
    absent.sort_unstable();
    absent.dedup();
    let mut uncounted: Vec<&str> = results
        .cells
        .iter()
        .flat_map(|c| c.runs.iter().filter_map(|r| r.counted_absent.as_deref()))
        .collect();
    uncounted.sort_unstable();
    uncounted.dedup();
    let absent = absent
        .into_iter()
        .map(|why| format!("Not counted where it says \"-\": {why}"));
    let uncounted = uncounted
        .into_iter()
        .map(|why| format!("Instructions not counted: {why}"));
    absent.chain(uncounted).collect()
}
