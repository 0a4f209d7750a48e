//! Whether the tokio this crate is built against has
//! `Builder::max_io_events_per_busy_tick` (from 1.54.0 on): the lockfile of
//! the workspace building it says which tokio that is, the suite's own or
//! an exact release in an isolated build (`tokio@1.47.0`).

use std::path::Path;

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
    let text = std::fs::read_to_string(&lock).expect("reading the lockfile");
    if tokio_version(&text).is_some_and(|version| version >= (1, 54)) {
        println!("cargo::rustc-cfg=tokio_busy_tick");
    }
}

/// The major and minor version of the tokio pingpong-tokio depends on.
fn tokio_version(lock: &str) -> Option<(u64, u64)> {
    let field = |package: &str, key: &str| {
        package.lines().find_map(|l| {
            let value = l.trim().strip_prefix(key)?.trim().strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
    };
    let packages: Vec<&str> = lock.split("[[package]]").collect();
    let tokios: Vec<String> = packages
        .iter()
        .filter(|p| field(p, "name").as_deref() == Some("tokio"))
        .filter_map(|p| field(p, "version"))
        .collect();
    // With several tokios locked, pingpong-tokio's entry names its own: "tokio 1.54.1".
    let version = match &tokios[..] {
        [one] => one.clone(),
        _ => packages
            .iter()
            .find(|p| field(p, "name").as_deref() == Some("pingpong-tokio"))?
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("\"tokio ")?
                    .split('"')
                    .next()
                    .map(String::from)
            })?,
    };
    let mut parts = version.split('.').map(|n| n.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??))
}
