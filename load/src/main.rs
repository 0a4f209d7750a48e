//! `pingpong-load`: loads a service as a plan says and prints what it
//! counted as one JSON line (`pingpong_load::Outcome`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use pingpong_load::{Config, Plan};

/// Loads a service: every connection asks, reads the answer whole, checks
/// it and asks again, for the warm-up and then the window.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// The plan: what each connection sends and what a good answer is (JSON).
    #[arg(long)]
    plan: PathBuf,
    /// The service's address.
    #[arg(long)]
    connect: SocketAddr,
    #[arg(long, default_value_t = 1)]
    connections: usize,
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds before the window, not counted.
    #[arg(long, default_value_t = 0.0)]
    warmup: f64,
    /// The window's seconds.
    #[arg(long)]
    seconds: f64,
    /// The open loop: requests a second over all connections, each
    /// connection on its share of the schedule, every answer timed from
    /// when its request was due. Without: the closed loop.
    #[arg(long, value_parser = positive)]
    rate: Option<f64>,
}

fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is no rate above 0")),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("pingpong-load: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<String, String> {
    let text = std::fs::read_to_string(&args.plan)
        .map_err(|e| format!("reading {}: {e}", args.plan.display()))?;
    let plan: Plan =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", args.plan.display()))?;
    let seconds = |s: f64, name: &str| {
        Duration::try_from_secs_f64(s).map_err(|_| format!("--{name} {s} is no time"))
    };
    let config = Config {
        connect: args.connect,
        connections: args.connections.max(1),
        threads: args.threads.clamp(1, args.connections.max(1)),
        warmup: seconds(args.warmup, "warmup")?,
        seconds: seconds(args.seconds, "seconds")?,
        rate: args.rate,
    };
    let outcome = pingpong_load::run(&plan, &config).map_err(|e| e.to_string())?;
    serde_json::to_string(&outcome).map_err(|e| e.to_string())
}
