//! `compare`: runs the pingpong matrix over the runtimes and tabulates it.

mod binaries;
mod check;
mod cli;
mod environment;
mod external;
mod implementations;
mod matrix;
mod placement;
mod progress;
mod remote;
mod report;
mod results;
mod run;
mod runner;
mod stats;
mod usage;
mod versions;

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
            Ok(run::Outcome::Interrupted) => ExitCode::from(130),
            Err(e) => user_error(e),
        },
        Command::Check(args) => match check::check(args) {
            Ok(check::Outcome::Clean) => ExitCode::SUCCESS,
            Ok(check::Outcome::Regressed) => ExitCode::from(1),
            Err(e) => user_error(e),
        },
        Command::Report(args) => match report_command(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => user_error(e),
        },
    }
}

fn user_error(e: anyhow::Error) -> ExitCode {
    eprintln!("compare: {e:#}");
    ExitCode::from(2)
}

fn report_command(args: cli::ReportArgs) -> anyhow::Result<()> {
    let path = report::results_file(&args.results);
    let results = results::Results::load(&path)?;
    let reference = report::reference(&results, args.reference.as_deref())?;
    let out = match args.out {
        Some(out) => out,
        None => path
            .parent()
            .map_or_else(|| ".".into(), std::path::Path::to_path_buf),
    };
    for file in report::write(&results, &args.format, &out, &reference)? {
        println!("{}", file.display());
    }
    Ok(())
}

fn list() {
    let mut table = report::terminal::new_table();
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
