//! `compare list`: our implementations, what they are built on, their IO
//! models, and what to know before picking one.

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
    format!("{table}\n")
}
