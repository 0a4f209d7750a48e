//! Every default of `compare`, in one place: the command line shows them,
//! and results files written before an option existed read as these.

/// Length of the measurement window, in seconds.
pub const SECONDS: f64 = 1.0;
/// Pingpong after connecting and before the window, in seconds.
pub const WARMUP: f64 = 0.25;
/// Repetitions of each cell: exactly, with `--repeat`; at least, in
/// pursuit of a precision.
pub const REPEAT: usize = 3;
/// The half-width, in percent of the median, of the 95% interval of each
/// cell's median MiB/s that a run repeats cells for.
pub const PRECISION_PERCENT: f64 = 5.0;
/// The most repetitions a cell gets in pursuit of the precision.
pub const MAX_REPEAT: usize = 12;
/// Bytes per block: the muduo article's 16 KiB.
pub const BLOCK: usize = 16384;
/// Blocks in flight per connection: one, as in muduo's pingpong.
pub const WINDOW: usize = 1;
/// A cell is noisy when its max MiB/s exceeds its min by more than this.
pub const NOISY_PERCENT: f64 = 10.0;
/// CPU placement.
pub const PIN: &str = "auto";
/// The smallest change `compare check` calls a regression or improvement.
pub const THRESHOLD_PERCENT: f64 = 5.0;
/// Confidence of `compare check`'s intervals.
pub const CONFIDENCE: f64 = 0.95;
/// The implementation relative tables divide by, when the run has it.
pub const REFERENCE: &str = "mio";
/// The cargo profile the runtime binaries are built with: every published
/// figure comes from it.
pub const PROFILE: &str = "release";
/// The environment variable that sets `--profile`.
pub const PROFILE_ENV: &str = "COMPARE_PROFILE";
