//! `compare`: runs the pingpong matrix over the runtimes and tabulates it.
//!
//! The layers, top first, each using only those below it (`tests/layout.rs`
//! checks the ranks):
//! - the command line ([`cli`]) and the options it becomes ([`options`]);
//! - the commands: [`run`] (plan, prepare, execute, finish), [`bisect`],
//!   [`list`], [`site`];
//! - the readers of results: [`report`], [`check`], [`history`];
//! - one repetition and the plan of a run: [`plan`], [`repetition`] (what
//!   the loop asks of a [`repetition::Measure`]; real: [`pair`], over
//!   [`child`], with [`client_hosts`] where clients run elsewhere), [`progress`];
//! - the programs and the machine: [`binaries`], [`cargo`], [`versions`],
//!   [`releases`], [`upkeep`], [`environment`], and our processes'
//!   [`groups`], killed together on a stop;
//! - the instruments ([`measure`]) and where servers run ([`remote`]);
//! - the results, as data: [`results`] (the schema; its figures and its
//!   file);
//! - the vocabulary: [`adapters`] (our implementations, the one list),
//!   [`implementation`], [`revision`], [`external`], [`program`], [`matrix`],
//!   [`preset`], [`placement`], [`defaults`], [`shell`], [`named`], [`stats`].

pub mod adapters;
pub mod binaries;
pub mod bisect;
pub mod cargo;
pub mod check;
pub mod child;
pub mod cli;
pub mod client_hosts;
pub mod defaults;
pub mod environment;
pub mod explain;
pub mod external;
pub mod groups;
pub mod history;
pub mod implementation;
pub mod list;
pub mod matrix;
pub mod measure;
pub mod named;
pub mod options;
pub mod pair;
pub mod placement;
pub mod plan;
pub mod preset;
pub mod program;
pub mod progress;
pub mod releases;
pub mod remote;
pub mod repetition;
pub mod report;
pub mod results;
pub mod revision;
pub mod run;
pub mod shell;
pub mod site;
pub mod stats;
pub mod upkeep;
pub mod versions;
