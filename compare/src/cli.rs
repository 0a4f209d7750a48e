//! The command line of `compare`.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand};
use pingpong::protocol::MAX_BLOCK;

#[derive(Debug, Parser)]
#[command(
    name = "compare",
    version,
    about = "Runs the muduo pingpong benchmark over Rust async runtimes and tabulates the results"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The implementations, their IO models and the crate versions they are built on.
    List,
    /// Runs the matrix: every implementation at every load, server and client
    /// in separate pinned processes.
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Implementations to compare (comma-separated); default: all.
    #[arg(long, value_delimiter = ',')]
    pub runtimes: Vec<String>,
    /// Use this implementation's client against every server (default: each its own).
    #[arg(long)]
    pub client: Option<String>,
    /// Connection counts; with --threads, the matrix is their cross product
    /// (alone: 1 thread). Default: the muduo article's matrix.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..).map(|v| v as usize))]
    pub connections: Vec<usize>,
    /// Thread counts, the same on both sides (alone: at 100 and 1000 connections).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024).map(|v| v as usize))]
    pub threads: Vec<usize>,
    /// Bytes each connection keeps in flight.
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(1..=MAX_BLOCK as i64).map(|v| v as usize))]
    pub block: usize,
    /// Length of the measurement window, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = pingpong::cli::seconds(true))]
    pub seconds: f64,
    /// Seconds of pingpong after connecting, before the window.
    #[arg(long, default_value_t = 0.25, value_parser = pingpong::cli::seconds(false))]
    pub warmup: f64,
    /// Repetitions of each cell; the cell's figure is their median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000).map(|v| v as usize))]
    pub repeat: usize,
    /// Folder for results.json (default: results/<UTC timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Take the pingpong-<name> binaries from this folder instead of building them.
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
}
