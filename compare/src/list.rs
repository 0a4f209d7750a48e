//! `compare list`: our implementations, what they are built on, their IO
//! models, what to know before picking one, and the knobs a configuration
//! of each may turn.

use crate::adapters::ADAPTERS;
use crate::report::terminal;

pub fn list() -> String {
    let mut table = terminal::new_table();
    table.set_header(["implementation", "built on", "IO model", "note"]);
    for a in ADAPTERS {
        let note = if a.threads_matter {
            a.note
        } else {
            "--threads has no effect"
        };
        table.add_row([
            a.name.to_string(),
            format!("{} {}", a.krate, a.version()),
            a.model.to_string(),
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
    format!(
        "{table}\n\nKnobs: name a configuration as IMPLEMENTATION{{KNOB=VALUE,...}} wherever an \
         implementation's name goes, e.g. --runtimes 'tokio,tokio{{event_interval=1}}' (quoted: \
         the shell expands braces).\n{knobs}\n"
    )
}
