//! Ctrl-C and SIGTERM: the repetition in flight dies with its processes,
//! and the run stops, saving what it has measured.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use crate::process;

/// Whether the run was told to stop.
#[derive(Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Raised by Ctrl-C or SIGTERM, which also kill every child process:
    /// nothing outlives the run. Once per process.
    pub fn install() -> Result<Self> {
        let interrupt = Self::default();
        let raised = interrupt.clone();
        ctrlc::set_handler(move || {
            raised.raise();
            process::kill_all();
        })
        .context("installing the Ctrl-C handler")?;
        Ok(interrupt)
    }

    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
