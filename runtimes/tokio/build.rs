//! Whether the tokio this crate is built against has
//! `Builder::max_io_events_per_busy_tick` (from 1.54.0 on): the lockfile of
//! the workspace building it says which tokio that is, the suite's own or
//! an exact release in an isolated build (`tokio@1.47.0`).

use std::path::Path;

use cargo_lock::Lockfile;
use cargo_lock::package::Version;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tokio_busy_tick)");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    // An isolated build's adapter sits beside its lockfile; ours two folders down.
    let Some(lock) = ["../Cargo.lock", "../../Cargo.lock"]
        .iter()
        .map(|p| Path::new(&dir).join(p))
        .find(|p| p.is_file())
    else {
        return;
    };
    println!("cargo::rerun-if-changed={}", lock.display());
    let lockfile = Lockfile::load(&lock).expect("reading the lockfile");
    // An isolated build names its copy of this crate after the release.
    let me = std::env::var("CARGO_PKG_NAME").expect("cargo sets CARGO_PKG_NAME");
    let tokio = lockfile
        .packages
        .iter()
        .find(|p| p.name.as_str() == me)
        .and_then(|p| p.dependencies.iter().find(|d| d.name.as_str() == "tokio"));
    if tokio.is_some_and(|d| d.version >= Version::new(1, 54, 0)) {
        println!("cargo::rustc-cfg=tokio_busy_tick");
    }
}
