//! `compare`: runs the pingpong matrix over the runtimes and tabulates it.

mod binaries;
mod cli;
mod environment;
mod implementations;
mod matrix;
mod placement;
mod progress;
mod results;
mod run;
mod runner;
mod table;
mod usage;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::List => {
            list();
            ExitCode::SUCCESS
        }
        Command::Run(args) => match run::run(*args) {
            Ok(run::Outcome::AllOk) => ExitCode::SUCCESS,
            Ok(run::Outcome::SomeFailed) => ExitCode::from(1),
            Err(e) => {
                eprintln!("compare: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}

fn list() {
    let mut table = table::new_table();
    table.set_header(["implementation", "built on", "IO model", "note"]);
    for i in implementations::ALL {
        let note = if i.threads_matter {
            i.note
        } else {
            "--threads has no effect"
        };
        table.add_row([
            i.name.to_string(),
            format!("{} {}", i.krate, i.version()),
            i.model.to_string(),
            note.to_string(),
        ]);
    }
    println!("{table}");
}
