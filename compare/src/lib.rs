//! `compare`: runs the pingpong matrix over the runtimes and tabulates it.
//!
//! The commands, over the crates below them (Cargo keeps the order):
//! [`model`] (the vocabulary, the results as data and their verdicts),
//! [`measure`] (processes, pairs, instruments, builds of versions),
//! [`history`] and [`report`]. Here, top first, each layer using only those
//! below it (`tests/layout.rs` checks the ranks):
//! - the command line ([`cli`]) and the options it becomes ([`options`]);
//! - the commands: [`run`] (plan, prepare, execute, finish), [`bisect`],
//!   [`list`], [`site`], [`check`], [`explain`];
//! - the plan of a run and its progress: [`plan`], [`progress`].

pub mod bisect;
pub mod check;
pub mod cli;
pub mod explain;
pub mod list;
pub mod options;
pub mod plan;
pub mod progress;
pub mod run;
pub mod site;
