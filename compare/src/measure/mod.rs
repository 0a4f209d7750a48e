//! The instruments: what each process of a repetition spent and did, read
//! from the outside. CPU time and memory from /proc ([`usage`]), system
//! calls and context switches as the kernel counts them ([`counters`]),
//! user-space instructions under valgrind ([`callgrind`]), CPU time
//! sampled by call stack ([`perf`]), and the kernel's TCP counters
//! ([`tcp_stats`]) and a listener's accept queue ([`accept_queue`]). What
//! they read is the schema's ([`crate::results`]); the schema knows
//! nothing of them.

pub mod accept_queue;
pub mod call_sites;
pub mod callgrind;
pub mod counters;
pub mod perf;
pub mod prices;
pub mod tcp_stats;
pub mod usage;
