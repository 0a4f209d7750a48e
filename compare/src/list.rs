//! `compare list`: our implementations, what they are built on, their IO
//! models, what to know before picking one (their crates' upkeep among
//! it), and the knobs a configuration of each may turn.

use anyhow::{Context, Result};

use crate::adapters::ADAPTERS;
use crate::report::terminal;
use crate::{releases, upkeep};

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
    Ok(format!(
        "{table}\n\nKnobs: name a configuration as IMPLEMENTATION{{KNOB=VALUE,...}} wherever an \
         implementation's name goes, e.g. --runtimes 'tokio,tokio{{event_interval=1}}' (quoted: \
         the shell expands braces).\n{knobs}\n"
    ))
}
