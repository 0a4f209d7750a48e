//! Faults on purpose, for the suite's reliability tests and for measuring
//! what its checks can see (a documented hidden mode, off unless asked
//! for). `PINGPONG_FAULT=<binary>:<fault>` makes the binary whose path ends
//! with `<binary>` (`pingpong-tokio`, or a longer end that names one build,
//! `pingpong-mio-1.2.5/target/release/pingpong-mio`) misbehave, and no other:
//!
//! - `crash-after=<ms>`: the server aborts that long after its ready line;
//! - `hang-before-ready`: the server never prints its ready line;
//! - `refuse`: the server reports an address where nothing listens;
//! - `flip-byte=<n>`: the server flips byte `n` of every connection's echo;
//! - `client-abort-after=<ms>`: the client aborts that long after starting;
//! - `untrusted-certificate`: with TLS, the client trusts another
//!   certificate than the server's, so that every handshake fails;
//! - `close-notify-after=<n>`: the server ends each connection once it has
//!   echoed `n` bytes, with TLS by a close_notify alert mid-stream;
//! - `drop-every=<n>`: the server drops every `n`th UDP datagram it
//!   receives (on each of its sockets' threads), unanswered;
//! - `malformed-answer`: over HTTP and WebSocket, the server answers each
//!   connection's first request with a head no HTTP parser takes;
//! - `slow=<units>`: the server does that many units of CPU work (as
//!   `--work`) per block on top of what it was asked: a slowdown of known
//!   size, for measuring what `compare check` catches;
//! - `client-slow=<units>`: the client does that many units of CPU work
//!   per block it gets back over a stream: a client that sets the pace,
//!   for the client-bound rule's validation;
//! - `wake-every=<n>`: every `n`th block the server echoes wakes a thread
//!   of its own that has nothing to do and parks again: an idle worker
//!   woken for no work, a wake-up (a futex call and two context switches)
//!   of known frequency, for measuring what the cost verdicts catch, issued
//!   from a function of its own, [`injected_wake`], for proving what
//!   `compare explain --wakes` names;
//! - `costly=<units>`: the server does that many units of work per block
//!   in a function of its own, [`injected_work`], and `client-costly=<units>`
//!   the client, per block back: a cost whose place is known, for proving
//!   what `compare explain` names;
//! - `syscall`: the server makes one system call more per block, from a
//!   function of its own, [`injected_syscall`].

use std::hint::black_box;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::Thread;
use std::time::Duration;

pub const ENV: &str = "PINGPONG_FAULT";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    CrashAfter(Duration),
    HangBeforeReady,
    Refuse,
    FlipByte(u64),
    ClientAbortAfter(Duration),
    UntrustedCertificate,
    CloseNotifyAfter(u64),
    Slow(u64),
    ClientSlow(u64),
    DropEvery(u64),
    WakeEvery(u64),
    MalformedAnswer,
    Costly(u64),
    ClientCostly(u64),
    Syscall,
}

static FAULT: OnceLock<Option<Fault>> = OnceLock::new();

/// Reads the fault asked of this binary, once, at start.
pub fn init() -> Result<(), String> {
    let fault = match std::env::var(ENV) {
        Ok(spec) => parse_for_me(&spec)?,
        Err(_) => None,
    };
    let _ = FAULT.set(fault);
    Ok(())
}

/// The fault this process was asked for, if any.
pub fn get() -> Option<Fault> {
    FAULT.get().copied().flatten()
}

fn parse_for_me(spec: &str) -> Result<Option<Fault>, String> {
    let (binary, fault) = spec
        .split_once(':')
        .ok_or_else(|| format!("{ENV}={spec:?} is not <binary>:<fault>"))?;
    let me = std::env::current_exe().unwrap_or_default();
    if !me.ends_with(Path::new(binary)) {
        return Ok(None);
    }
    let units = |v: &str| {
        v.parse()
            .map_err(|_| format!("{ENV}: {v:?} is not a number of work units"))
    };
    let ms = |v: &str| {
        v.parse()
            .map(Duration::from_millis)
            .map_err(|_| format!("{ENV}: {v:?} is not a number of milliseconds"))
    };
    Ok(Some(match fault.split_once('=') {
        Some(("crash-after", v)) => Fault::CrashAfter(ms(v)?),
        Some(("client-abort-after", v)) => Fault::ClientAbortAfter(ms(v)?),
        Some(("flip-byte", v)) => Fault::FlipByte(
            v.parse()
                .map_err(|_| format!("{ENV}: {v:?} is not a byte offset"))?,
        ),
        Some(("close-notify-after", v)) => Fault::CloseNotifyAfter(
            v.parse()
                .map_err(|_| format!("{ENV}: {v:?} is not a byte count"))?,
        ),
        Some(("drop-every", v)) => Fault::DropEvery(
            v.parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{ENV}: {v:?} is not a positive count of datagrams"))?,
        ),
        Some(("slow", v)) => Fault::Slow(units(v)?),
        Some(("wake-every", v)) => Fault::WakeEvery(
            v.parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{ENV}: {v:?} is not a positive count of blocks"))?,
        ),
        Some(("client-slow", v)) => Fault::ClientSlow(units(v)?),
        Some(("costly", v)) => Fault::Costly(units(v)?),
        Some(("client-costly", v)) => Fault::ClientCostly(units(v)?),
        None if fault == "syscall" => Fault::Syscall,
        None if fault == "hang-before-ready" => Fault::HangBeforeReady,
        None if fault == "refuse" => Fault::Refuse,
        None if fault == "untrusted-certificate" => Fault::UntrustedCertificate,
        None if fault == "malformed-answer" => Fault::MalformedAnswer,
        _ => return Err(format!("{ENV}: unknown fault {fault:?}")),
    }))
}

/// Aborts the process after `after`, from a thread of its own.
pub fn abort_after(after: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        std::process::abort();
    });
}

/// Whether a connection that has echoed `echoed` bytes is to end now.
pub fn ends_connection(echoed: u64) -> bool {
    matches!(get(), Some(Fault::CloseNotifyAfter(after)) if echoed >= after)
}

/// After the server echoed `n` bytes from stream offset `offset`, for
/// every block boundary they crossed: with `wake-every`, a wake-up of the
/// idle thread every `every`th; with `costly`, the injected work; with
/// `syscall`, the injected system call.
pub fn on_echo(offset: u64, n: usize, block: usize) {
    // Every echo of every server passes here: nothing to count without a fault.
    let Some(fault) = get() else {
        return;
    };
    let crossed = crossed(offset, n, block);
    match fault {
        Fault::WakeEvery(every) => injected_wake(every, crossed),
        Fault::Costly(units) => (0..crossed).for_each(|_| injected_work(units)),
        Fault::Syscall => (0..crossed).for_each(|_| injected_syscall()),
        _ => {}
    }
}

/// After the client got `n` bytes back from stream offset `offset`: with
/// `client-costly`, the injected work for every block boundary crossed.
pub fn on_block_back(offset: u64, n: usize, block: usize) {
    if let Some(Fault::ClientCostly(units)) = get() {
        (0..crossed(offset, n, block)).for_each(|_| injected_work(units));
    }
}

/// The block boundaries `n` bytes from stream offset `offset` cross.
fn crossed(offset: u64, n: usize, block: usize) -> u64 {
    let block = block.max(1) as u64;
    (offset + n as u64) / block - offset / block
}

/// The `costly` faults' work: `units` rounds of xorshift64, in a function
/// never inlined and calling none (operators and a while loop, which even
/// an unoptimised build keeps in place), so that a profile finds every
/// instruction of it here, by this name.
#[inline(never)]
pub fn injected_work(units: u64) {
    let (mut x, mut i) = (0x9e37_79b9_7f4a_7c15u64, 0);
    while i < units {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        i += 1;
    }
    black_box(x);
}

/// The `syscall` fault's system call (getpid), made by this function's
/// own instructions rather than through libc's wrapper, so that a profile
/// counts it here by this name.
#[inline(never)]
pub fn injected_syscall() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: getpid takes no arguments, touches no memory and cannot fail;
    // the kernel clobbers rcx and r11 on the way back, as declared.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") 39i64 => _,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    black_box(std::process::id());
}

/// A wake-up of the idle thread for every `every`th of the `crossed`
/// blocks: never inlined, so that a trace of wake-ups finds them issued
/// here, by this name.
#[inline(never)]
pub fn injected_wake(every: u64, crossed: u64) {
    static BLOCKS: AtomicU64 = AtomicU64::new(0);
    static IDLE: OnceLock<Thread> = OnceLock::new();
    for _ in 0..crossed {
        if BLOCKS.fetch_add(1, Ordering::Relaxed) % every == every - 1 {
            let idle = IDLE.get_or_init(|| {
                // It parks again as soon as it wakes: a wake-up with no work.
                std::thread::spawn(|| {
                    loop {
                        std::thread::park();
                    }
                })
                .thread()
                .clone()
            });
            idle.unpark();
        }
    }
}

/// Whether the datagram just received is to be dropped unanswered.
/// Never inlined, for may's coroutines: see `server::tally`'s `bump`.
#[inline(never)]
pub fn drops_datagram() -> bool {
    let Some(Fault::DropEvery(every)) = get() else {
        return false;
    };
    thread_local! {
        static RECEIVED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    RECEIVED.with(|received| {
        received.set(received.get() + 1);
        received.get() % every == 0
    })
}

/// Flips the asked-for byte if it lies in `data`, which starts at stream
/// offset `offset`.
pub fn corrupt(data: &mut [u8], offset: u64) {
    if let Some(Fault::FlipByte(at)) = get()
        && let Some(i) = at.checked_sub(offset).filter(|&i| i < data.len() as u64)
    {
        data[i as usize] ^= 0xff;
    }
}
