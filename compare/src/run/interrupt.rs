//! Ctrl-C and SIGTERM: the repetition in flight dies with its processes,
//! and the run stops, saving what it has measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Result;

use measure::groups;

/// Whether the run was told to stop.
#[derive(Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Raised by Ctrl-C or SIGTERM, which also kill every group of ours
    /// ([`groups`]): nothing outlives the run. Told once per process;
    /// every run of it (bisect's steps) shares it.
    pub fn install() -> Result<Self> {
        static INSTALLED: OnceLock<Interrupt> = OnceLock::new();
        if let Some(interrupt) = INSTALLED.get() {
            return Ok(interrupt.clone());
        }
        groups::stop_on_signals()?;
        let interrupt = Self::default();
        let raised = interrupt.clone();
        groups::listen(move || raised.raise());
        Ok(INSTALLED.get_or_init(|| interrupt).clone())
    }

    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
