//! `compare list`: our implementations, what they are built on, their IO
//! models, what to know before picking one (their crates' upkeep among
//! it), and the knobs a configuration of each may turn; with `--figures`,
//! the registry of figures.

use anyhow::{Context, Result};

use measure::{releases, upkeep};
use model::adapters::{ADAPTERS, GENERATOR};
use model::results::registry::{self, Better, Merge, Source};
use report::terminal;

pub fn list(refresh: bool) -> Result<String> {
    if refresh {
        for a in ADAPTERS.iter().filter(|a| a.krate != "std") {
            releases::refresh(a.krate).with_context(|| format!("refreshing {}", a.krate))?;
        }
    }
    let mut table = terminal::new_table();
    table.set_header([
        "implementation",
        "built on",
        "IO model",
        "upkeep (crates.io, as cargo last fetched it)",
        "note",
    ]);
    for a in ADAPTERS {
        let note = if a.threads_matter {
            ""
        } else {
            "--threads has no effect"
        };
        table.add_row([
            a.name.to_string(),
            format!("{} {}", a.krate, a.version()),
            a.model.to_string(),
            upkeep::of(a),
            note.to_string(),
        ]);
    }
    let mut knobs = terminal::new_table();
    knobs.set_header(["implementation", "knob", "values", "sets"]);
    for a in ADAPTERS {
        for k in a.knobs {
            knobs.add_row([
                a.name.to_string(),
                k.name.to_string(),
                k.values.to_string(),
                k.sets.to_string(),
            ]);
        }
    }
    let generator = format!(
        "The open loop's client for every server (--rates): {}, built on {} {}: {}; an \
         instrument, never one of the implementations compared.",
        GENERATOR.binary(),
        GENERATOR.krate,
        GENERATOR.version(),
        GENERATOR.model
    );
    Ok(format!(
        "{table}\n\n{generator}\n\nKnobs: name a configuration as IMPLEMENTATION{{KNOB=VALUE,...}} wherever an \
         implementation's name goes, e.g. --runtimes 'tokio,tokio{{event_interval=1}}' (quoted: \
         the shell expands braces).\n{knobs}\n"
    ))
}

/// The registry of figures as a markdown table, as the book's page on the
/// figures shows it.
pub fn figures() -> String {
    let mut out = String::from(
        "| key | label | unit | better | from | with client hosts | judged |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for f in registry::figures() {
        let better = match f.better {
            Better::Higher => "higher",
            Better::Lower => "lower",
        };
        let source = match f.source {
            Source::Runs => "every repetition",
            Source::CostRuns => "the cost runs",
        };
        let merge = match f.merge {
            Merge::Summed => "summed",
            Merge::Histograms => "histograms merged",
            Merge::Connections => "over every connection",
            Merge::Slowest => "the slowest host's",
            Merge::Absent => "absent",
        };
        let judged = f.judged.map_or("no", |j| j.word());
        out += &format!(
            "| `{}` | {} | {} | {better} | {source} | {merge} | {judged} |\n",
            f.key, f.label, f.unit
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_book_lists_every_figure_as_the_registry_has_it() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/src/methodology/figures.md");
        let page = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            page.contains(&super::figures()),
            "{} does not hold the registry's table: write it anew from \
             `cargo run -p compare -- list --figures`",
            path.display()
        );
    }
}
