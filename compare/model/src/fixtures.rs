//! The results the crates' tests read: a real run, committed beside
//! compare's integration tests (`compare/tests/fixtures`). Built for the
//! tests of this crate, and for those of the crates above it through the
//! `fixtures` feature of their dev-dependency.

use std::path::Path;

use crate::results::Results;

/// A real run: 3 implementations, 2 loads, 2 repetitions.
pub fn small() -> Results {
    Results::load(&small_path()).unwrap()
}

/// The small run's results.json.
pub fn small_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/small/results.json")
}
