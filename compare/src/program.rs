//! How an implementation runs, once its binary is built or found.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::adapters::Adapter;
use crate::external::External;

#[derive(Debug, Clone)]
pub enum Program {
    /// One of our `pingpong-<name>` binaries, the version of the crate it
    /// was built on, and its adapter.
    Binary {
        path: PathBuf,
        version: String,
        adapter: &'static Adapter,
    },
    /// An external program, run through its file's command lines.
    External(Arc<External>),
}

/// Every implementation's program, by the implementation's name.
pub type Programs = HashMap<String, Program>;

impl Program {
    /// The version the results record.
    pub fn version(&self) -> &str {
        match self {
            Self::Binary { version, .. } => version,
            Self::External(e) => &e.version,
        }
    }
}
