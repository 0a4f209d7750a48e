//! `compare`: runs the pingpong matrix over the runtimes and tabulates it.
//!
//! The layers, each using only those below it:
//! - the command line ([`cli`]) and the options it becomes ([`options`]);
//! - the commands: [`run`] (plan, prepare, execute, finish), [`check`],
//!   [`report`], [`list`];
//! - a run's parts: its [`plan`], the [`runner`] of one repetition (real:
//!   [`processes`], over [`process`]), where servers go ([`remote`]),
//!   what the processes spent ([`usage`], [`counters`], [`callgrind`]), the
//!   machine ([`environment`]),
//!   the programs ([`binaries`], [`cargo`], [`versions`], [`program`]);
//! - the crates: their releases ([`releases`]) and upkeep ([`upkeep`]);
//! - the data: [`results`] (the file every reader reads), [`stats`];
//! - the vocabulary: [`adapters`] (our implementations, the one list),
//!   [`implementation`], [`external`], [`matrix`], [`placement`], [`defaults`], [`shell`],
//!   [`named`].

pub mod adapters;
pub mod binaries;
pub mod bisect;
pub mod cargo;
pub mod check;
pub mod child;
pub mod cli;
pub mod defaults;
pub mod environment;
pub mod external;
pub mod implementation;
pub mod list;
pub mod matrix;
pub mod measure;
pub mod named;
pub mod options;
pub mod pair;
pub mod placement;
pub mod plan;
pub mod program;
pub mod progress;
pub mod releases;
pub mod remote;
pub mod repetition;
pub mod report;
pub mod results;
pub mod run;
pub mod shell;
pub mod stats;
pub mod upkeep;
pub mod versions;
