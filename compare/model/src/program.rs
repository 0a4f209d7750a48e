//! How an implementation runs, once its binary is built or found.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pingpong::knobs::Settings;

use crate::adapters::Adapter;
use crate::external::External;

#[derive(Debug, Clone)]
pub enum Program {
    /// One of our `pingpong-<name>` binaries, the version of the crate it
    /// was built on, its adapter, and the knobs it is told.
    Binary {
        path: PathBuf,
        version: String,
        adapter: &'static Adapter,
        knobs: Settings,
        /// The Cargo.lock of an isolated build (an exact release, or
        /// unreleased code); absent: the workspace's.
        lock: Option<PathBuf>,
    },
    /// An external program, run through its file's command lines.
    External(Arc<External>),
    /// A release of a runtime crate the adapter could not be built
    /// against (an API that did not exist yet): its cells are unavailable
    /// with the reason, and a sweep of releases goes on.
    Unbuilt { version: String, reason: String },
}

/// Every implementation's program, by the implementation's name.
pub type Programs = HashMap<String, Program>;

impl Program {
    /// The version the results record.
    pub fn version(&self) -> &str {
        match self {
            Self::Binary { version, .. } => version,
            Self::External(e) => &e.version,
            Self::Unbuilt { version, .. } => version,
        }
    }
}
