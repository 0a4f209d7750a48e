//! Round-trip times of blocks: one histogram per client thread (up to
//! [`HISTOGRAMS`], then shared), merged into one at the end of the run
//! (percentiles are never averaged).
//!
//! A block's round-trip time runs from the moment the client starts sending
//! it until the whole block has come back. The client sends the first
//! `window` blocks at once, then each block again as it comes back (it
//! echoes as it reads); so with one block in flight a round trip is the time
//! between two consecutive whole blocks coming back, and by Little's law a
//! connection's rate of blocks is `window` over its mean round-trip time.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// Round-trip times in nanoseconds.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Three significant digits from 1 ns to an hour.
pub fn histogram() -> Histogram {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("constant bounds are valid")
}

type Shared = Arc<Mutex<Histogram>>;

fn lock(h: &Mutex<Histogram>) -> MutexGuard<'_, Histogram> {
    h.lock().unwrap_or_else(|e| e.into_inner())
}

/// The most histograms one client keeps. An event loop's client has a few
/// threads, each with its own; a thread-per-connection client has 10,000,
/// which share these round robin. Each histogram is 260 KiB: one each would
/// hold 2.6 GB for a few blocks apiece, and adding them up at the end took
/// longer than the run.
pub const HISTOGRAMS: usize = 64;

/// The histograms of one client, one for each thread that started sessions
/// (or shared, past [`HISTOGRAMS`]).
pub struct Recorders {
    id: u64,
    pool: Mutex<Pool>,
}

/// The histograms made, and how many threads have been handed one.
#[derive(Default)]
struct Pool {
    all: Vec<Shared>,
    handed: usize,
}

thread_local! {
    /// This thread's histogram and the id of the client it belongs to.
    static MINE: RefCell<Option<(u64, Shared)>> = const { RefCell::new(None) };
}

impl Default for Recorders {
    fn default() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            pool: Mutex::default(),
        }
    }
}

impl Recorders {
    /// The calling thread's histogram, chosen on first use: a new one for
    /// each of the first [`HISTOGRAMS`] threads, then the existing ones in
    /// turn. Few threads record into one (or a thread a task was stolen
    /// to), so its lock is all but free. Never inlined, for may's
    /// coroutines: see `server::tally`'s `bump`.
    #[inline(never)]
    fn mine(&self) -> Shared {
        MINE.with_borrow_mut(|mine| match mine {
            Some((id, h)) if *id == self.id => h.clone(),
            _ => {
                let mut pool = self.pool();
                let n = pool.handed;
                pool.handed += 1;
                let h = if n < HISTOGRAMS {
                    let h = Shared::new(Mutex::new(histogram()));
                    pool.all.push(h.clone());
                    h
                } else {
                    pool.all[n % HISTOGRAMS].clone()
                };
                *mine = Some((self.id, h.clone()));
                h
            }
        })
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every histogram added into one.
    pub fn merged(&self) -> Histogram {
        let mut merged = histogram();
        for h in &self.pool().all {
            merged
                .add(&*lock(h))
                .expect("histograms of equal bounds add");
        }
        merged
    }
}

/// One connection's clock: when each block in flight was sent, oldest first.
pub struct Clock {
    histogram: Shared,
    sent: VecDeque<Instant>,
}

impl Clock {
    pub fn new(recorders: &Recorders) -> Self {
        Self {
            histogram: recorders.mine(),
            sent: VecDeque::new(),
        }
    }

    /// The connection sends its first `window` blocks.
    pub fn start(&mut self, window: usize) {
        let now = Instant::now();
        self.sent = std::iter::repeat_n(now, window).collect();
    }

    /// A whole block came back; `record` says whether its time counts. The
    /// client echoes it at once: it goes out again as the newest block.
    pub fn block_completed(&mut self, record: bool) {
        let now = Instant::now();
        if let (true, Some(&sent)) = (record, self.sent.front()) {
            let ns = (now - sent).as_nanos().try_into().unwrap_or(u64::MAX);
            lock(&self.histogram).saturating_record(ns.max(1));
        }
        if self.sent.pop_front().is_some() {
            self.sent.push_back(now);
        }
    }
}

/// A histogram in the HdrHistogram V2 encoding, compressed (deflate), as
/// base64: any percentile can be recomputed from it later, and a results
/// file of thousands of runs stays small.
pub fn encode(h: &Histogram) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into memory succeeds");
    STANDARD.encode(bytes)
}

/// Why a serialized histogram could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("not an HdrHistogram V2 encoding: {0:?}")]
    Hdr(hdrhistogram::serialization::DeserializeError),
    #[error("its values lie outside a round-trip histogram's bounds (1 ns to an hour)")]
    Bounds,
    #[error("its compressed counts do not inflate: {0}")]
    Inflate(std::io::Error),
    #[error("it inflates past {MAX_INFLATED} bytes, more than any histogram of ours")]
    Inflated,
    #[error("its header claims {claimed} bytes of counts where {present} follow")]
    Claims { claimed: usize, present: usize },
}

/// The V2 encoding's cookies (HdrHistogram's format): plain, and deflated.
const V2: u32 = 0x1c84_9313;
const V2_DEFLATED: u32 = 0x1c84_9314;
/// A plain V2 encoding's header: cookie, the counts' length, normalizing
/// offset, significant digits, lowest and highest value, ratio.
const V2_HEADER: usize = 40;
/// The most a histogram's encoding may inflate to: a round-trip histogram
/// of ours holds 33,000 counts, at most 9 bytes each encoded.
const MAX_INFLATED: u64 = 4 << 20;

/// A histogram from its base64 V2 encoding, compressed or (as files written
/// before compression) not. hdrhistogram makes room for the counts a header
/// claims before reading them: a claim past the bytes there is refused
/// here, and deflated counts inflate to [`MAX_INFLATED`] at most, so that a
/// line of a few bytes cannot make it allocate gigabytes.
pub fn decode(text: &str) -> Result<Histogram, DecodeError> {
    let bytes = STANDARD.decode(text)?;
    let plain = match cookie(&bytes) {
        Some(V2_DEFLATED) => inflate(&bytes[8.min(bytes.len())..])?,
        _ => bytes,
    };
    if cookie(&plain) == Some(V2) {
        let claimed = plain.get(4..8).map_or(0, |n| {
            u32::from_be_bytes(n.try_into().expect("four bytes")) as usize
        });
        let present = plain.len().saturating_sub(V2_HEADER);
        if claimed > present {
            return Err(DecodeError::Claims { claimed, present });
        }
    }
    Deserializer::new()
        .deserialize(&mut plain.as_slice())
        .map_err(DecodeError::Hdr)
}

/// The cookie an encoding starts with.
fn cookie(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// Deflated counts (zlib), inflated within [`MAX_INFLATED`].
fn inflate(deflated: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut plain = Vec::new();
    flate2::read::ZlibDecoder::new(deflated)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut plain)
        .map_err(DecodeError::Inflate)?;
    match plain.len() as u64 > MAX_INFLATED {
        true => Err(DecodeError::Inflated),
        false => Ok(plain),
    }
}

/// Encoded histograms (of several processes, say) added into one: the
/// counts merged, never their percentiles averaged.
pub fn merge<'a>(encoded: impl IntoIterator<Item = &'a str>) -> Result<String, DecodeError> {
    let mut merged = histogram();
    for text in encoded {
        merged.add(decode(text)?).map_err(|_| DecodeError::Bounds)?;
    }
    Ok(encode(&merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_encodings_hold_every_count_of_each() {
        let mut fast = histogram();
        let mut slow = histogram();
        for ns in 1..=100 {
            fast.record(ns * 1_000).unwrap();
            slow.record(ns * 1_000_000).unwrap();
        }
        let merged =
            decode(&merge([encode(&fast).as_str(), encode(&slow).as_str()]).unwrap()).unwrap();
        assert_eq!(merged.len(), 200);
        assert_eq!(merged.min(), fast.min());
        assert_eq!(merged.max(), slow.max());
        // Half the round trips are the fast ones: the median lies between them.
        assert!(merged.value_at_quantile(0.5) <= 100_100);
        assert!(merged.value_at_quantile(0.51) >= 990_000);
        assert!(merge(["not base64!"]).is_err());
    }

    /// A copy of each histogram.
    fn histograms(recorders: &Recorders) -> Vec<Histogram> {
        recorders
            .pool()
            .all
            .iter()
            .map(|h| lock(h).clone())
            .collect()
    }

    /// Threads 1 to `threads`, thread t timing 100t completions.
    fn record_from_threads(threads: u64) -> Arc<Recorders> {
        let recorders = Arc::new(Recorders::default());
        let threads: Vec<_> = (1..=threads)
            .map(|t| {
                let recorders = recorders.clone();
                std::thread::spawn(move || {
                    let mut clock = Clock::new(&recorders);
                    // Before the clock starts, a completion is not timed.
                    clock.block_completed(true);
                    clock.start(1);
                    for i in 0..100 * t {
                        clock.block_completed(i % 2 == 0);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        recorders
    }

    #[test]
    fn merged_is_the_sum_of_every_threads_histogram() {
        let recorders = record_from_threads(4);
        let per_thread = histograms(&recorders);
        assert_eq!(per_thread.len(), 4);
        let merged = recorders.merged();
        let sum: u64 = per_thread.iter().map(|h| h.len()).sum();
        assert_eq!(merged.len(), sum);
        // Of 100t timed completions, the even ones were recorded.
        assert_eq!(sum, (1..=4).map(|t| 50 * t).sum::<u64>());
        for v in merged.iter_recorded() {
            let value = v.value_iterated_to();
            let parts: u64 = per_thread.iter().map(|h| h.count_at(value)).sum();
            assert_eq!(v.count_at_value(), parts, "count at {value} ns");
        }
    }

    #[test]
    fn threads_past_the_most_histograms_share_them_and_lose_nothing() {
        let threads = HISTOGRAMS as u64 + 6;
        let recorders = record_from_threads(threads);
        assert_eq!(histograms(&recorders).len(), HISTOGRAMS);
        assert_eq!(
            recorders.merged().len(),
            (1..=threads).map(|t| 50 * t).sum::<u64>()
        );
    }

    #[test]
    fn encoding_round_trips() {
        let mut h = histogram();
        for ns in [1, 999, 25_000, 25_001, 1_000_000_007] {
            h.record(ns).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        // What files written before compression hold still reads the same.
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        assert_eq!(decode(&STANDARD.encode(&plain)).unwrap(), h);
        // Round trips spread over two decades, as a window's are: smaller
        // compressed.
        let mut wide = histogram();
        for i in 0..10_000u64 {
            wide.record(20_000 + i.wrapping_mul(2_654_435_761) % 2_000_000)
                .unwrap();
        }
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&wide, &mut plain)
            .unwrap();
        let compressed = encode(&wide);
        assert_eq!(decode(&compressed).unwrap(), wide);
        assert!(
            compressed.len() < STANDARD.encode(&plain).len() * 3 / 4,
            "{} compressed, {} not",
            compressed.len(),
            STANDARD.encode(&plain).len()
        );
        assert!(decode("not base64!").is_err());
        assert!(decode(&STANDARD.encode(b"not a histogram")).is_err());
    }

    #[test]
    fn a_header_that_claims_more_than_it_holds_is_refused_before_any_room_is_made() {
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&histogram(), &mut plain)
            .unwrap();
        plain[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let claims = decode(&STANDARD.encode(&plain)).unwrap_err();
        assert!(
            matches!(claims, DecodeError::Claims { claimed, .. } if claimed == u32::MAX as usize)
        );
        // The same inside a deflated encoding.
        let mut deflated = V2_DEFLATED.to_be_bytes().to_vec();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut zlib, &plain).unwrap();
        let zlib = zlib.finish().unwrap();
        deflated.extend((zlib.len() as u32).to_be_bytes());
        deflated.extend(zlib);
        assert!(matches!(
            decode(&STANDARD.encode(&deflated)),
            Err(DecodeError::Claims { .. })
        ));
        // Zeros that inflate past the bound.
        let mut bomb = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut bomb, &vec![0; MAX_INFLATED as usize + 1]).unwrap();
        let mut deflated = V2_DEFLATED.to_be_bytes().to_vec();
        deflated.extend([0; 4]);
        deflated.extend(bomb.finish().unwrap());
        assert!(matches!(
            decode(&STANDARD.encode(&deflated)),
            Err(DecodeError::Inflated)
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_or_a_damaged_encoding_decode_or_are_refused(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            at in 0usize..4096,
            byte in proptest::num::u8::ANY,
            cut in 0usize..4096,
        ) {
            let _ = decode(&STANDARD.encode(&bytes));
            let mut h = histogram();
            for ns in [1_000, 20_000, 3_000_000] {
                h.record(ns).unwrap();
            }
            let mut damaged = STANDARD.decode(encode(&h)).unwrap();
            let at = at % damaged.len();
            damaged[at] = byte;
            damaged.truncate(cut.max(1));
            let _ = decode(&STANDARD.encode(&damaged));
        }
    }
}
