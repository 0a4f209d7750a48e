//! `compare`: the command line over the library.

use std::process::ExitCode;

use compare::cli::{self, Command, HistoryCommand};
use compare::{bisect, check, explain, list, options, run, site};
use history::History;
use measure::groups;

fn main() -> ExitCode {
    let cli = cli::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    // Ctrl-C and SIGTERM kill every process group of ours (servers,
    // clients, a build's cargo) before compare goes: a run saves first.
    if let Err(e) = groups::stop_on_signals() {
        eprintln!("compare: {e:#}");
        return ExitCode::from(2);
    }
    let outcome = match cli.command {
        Command::List { figures: true, .. } => {
            print!("{}", list::figures());
            Ok(0)
        }
        Command::List { refresh, .. } => list::list(refresh).map(|text| {
            print!("{text}");
            0
        }),
        Command::Run(args) => options::run(*args)
            .and_then(run::run)
            .map(|o| o.exit_code()),
        Command::Check(args) => options::check(args)
            .and_then(check::check)
            .map(|o| u8::from(o == check::Outcome::Regressed)),
        Command::Explain(args) => options::explain(args)
            .and_then(|o| explain::explain(&o, |line| eprintln!("{line}")))
            .map(|explained| {
                for e in explained {
                    println!("{}: {}", e.cell, e.summary());
                }
                0
            }),
        Command::Bisect(args) => options::bisect(args)
            .and_then(|o| bisect::bisect(&o))
            .map(|_| 0),
        Command::History(args) => History::open(&args.history.path).and_then(|mut h| {
            match args.command {
                HistoryCommand::Import { dirs } => {
                    history::import::folders(&mut h, &dirs, |line| println!("{line}"))?
                }
                HistoryCommand::List => print!("{}", history::list(&h)?),
                HistoryCommand::Steps => print!("{}", history::steps(&h)?),
            }
            Ok(0)
        }),
        Command::Site(args) => {
            site::build(&options::site(args), |line| println!("{line}")).map(|_| 0)
        }
        Command::Report(args) => {
            options::report(args)
                .and_then(|o| report::report(&o))
                .map(|files| {
                    for file in files {
                        println!("{}", file.display());
                    }
                    0
                })
        }
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Bad input, or a machine that cannot run what was asked.
            eprintln!("compare: {e:#}");
            ExitCode::from(2)
        }
    }
}
