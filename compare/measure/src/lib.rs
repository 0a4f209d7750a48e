//! Measurement: a repetition run by real processes, and what they cost.
//! One repetition behind the [`repetition::Measure`] trait; what the real
//! pair of processes measures ([`pair`]); where each side runs, one
//! [`place::Place`] each (here, over ssh, an external program, a server
//! started by hand), over a child process in its own group ([`child`]),
//! ssh ([`remote`]) and the clients' hosts ([`client_hosts`]); a team's
//! own [`service`], built at a version of a dependency and loaded; the
//! programs and the machine ([`cargo`], [`versions`], [`binaries`],
//! [`releases`], [`upkeep`], [`environment`], and our processes'
//! [`groups`], killed together on a stop).
//!
//! The instruments: what each process of a repetition spent and did, read
//! from the outside. CPU time and memory from /proc ([`usage`]), system
//! calls and context switches as the kernel counts them ([`counters`]),
//! user-space instructions under valgrind ([`callgrind`]), CPU time
//! sampled by call stack ([`perf`]), and the kernel's TCP counters
//! ([`tcp_stats`]) and a listener's accept queue ([`accept_queue`]). What
//! they read is the schema's ([`model::results`]); the schema knows
//! nothing of them.

pub mod accept_queue;
pub mod call_sites;
pub mod callgrind;
pub mod counters;
pub mod perf;
pub mod prices;
pub mod tcp_stats;
pub mod usage;

pub mod binaries;
pub mod cargo;
pub mod child;
pub mod client_hosts;
pub mod environment;
pub mod groups;
pub mod pair;
pub mod place;
pub mod releases;
pub mod remote;
pub mod repetition;
pub mod service;
pub mod upkeep;
pub mod versions;
