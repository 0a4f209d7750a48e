//! The vocabulary of the suite and its results, as data: every default
//! ([`defaults`]), choices by name ([`named`]), shell quoting ([`shell`]),
//! statistics ([`stats`]), our implementations, the one list ([`adapters`]),
//! what `--runtimes` names ([`implementation`], [`revision`], [`external`],
//! [`program`]), a team's own [`service`], loads and workloads ([`matrix`], [`preset`]), CPU
//! placement ([`placement`]); the results' schema, figures and file
//! ([`results`]), and the verdicts of two sides ([`verdicts`]). It measures,
//! stores and renders nothing: the crates above it do.

pub mod adapters;
pub mod defaults;
pub mod external;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod implementation;
pub mod matrix;
pub mod named;
pub mod placement;
pub mod preset;
pub mod program;
pub mod results;
pub mod revision;
pub mod service;
pub mod shell;
pub mod stats;
pub mod verdicts;
