//! Runs read on another thread, in the order the build takes them and a
//! few ahead of it: reading a run (its cells and repetitions decoded) was
//! 40% of building a site from nothing, and overlaps making the pages of
//! the runs before it.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::Scope;

use anyhow::{Context, Result};

use history::{History, Location};
use model::results::Results;

/// How many runs may wait read: enough to keep the reader busy, few
/// enough to hold little memory.
const WAITING: usize = 2;

/// A run and its cells' ids in the history, in the run's order.
pub type Read = (Results, Vec<i64>);

/// The runs the build is to read, each read ahead on its own connection.
pub struct Ahead {
    /// What is to come, in order: the build takes them so.
    ids: VecDeque<i64>,
    read: Receiver<Result<Read>>,
}

impl Ahead {
    /// Starts reading `ids` of the history at `location` in `scope`.
    pub fn start<'s>(scope: &'s Scope<'s, '_>, location: &Location, ids: Vec<i64>) -> Self {
        let (send, read) = sync_channel(WAITING);
        let (location, all) = (location.clone(), ids.clone());
        // Nothing to read: no connection of its own either.
        if !all.is_empty() {
            scope.spawn(move || {
                let history = match History::open(&location) {
                    Ok(history) => history,
                    Err(e) => return drop(send.send(Err(e))),
                };
                for id in all {
                    let run = history
                        .load(id)
                        .and_then(|results| Ok((results, history.cells_of(id)?)));
                    // A build that stopped no longer takes them.
                    if send.send(run).is_err() {
                        return;
                    }
                }
            });
        }
        Self {
            ids: ids.into(),
            read,
        }
    }

    /// The run `id`, where it is the next read ahead; none otherwise (a
    /// run read again out of order, as a baseline, is read directly).
    pub fn take(&mut self, id: i64) -> Option<Result<Read>> {
        if self.ids.front() != Some(&id) {
            return None;
        }
        self.ids.pop_front();
        Some(
            self.read
                .recv()
                .context("the thread reading runs ahead stopped")
                .and_then(|read| read.with_context(|| format!("reading run {id} ahead"))),
        )
    }
}
