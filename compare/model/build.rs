//! Embeds, from the workspace's Cargo.lock, the version of every crate each
//! runtime binary depends on, so that results name the exact runtime version.

use std::env;
use std::fmt::Write;
use std::fs;
use std::path::Path;

use cargo_lock::Lockfile;

fn main() {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../Cargo.lock");
    println!("cargo::rerun-if-changed={}", lock.display());
    let lockfile = Lockfile::load(&lock).expect("reading Cargo.lock");
    let mut rows = String::new();
    for package in &lockfile.packages {
        let name = package.name.as_str();
        if !name.starts_with("pingpong-") {
            continue;
        }
        for dep in &package.dependencies {
            let (dep, version) = (dep.name.as_str(), dep.version.to_string());
            let _ = writeln!(rows, "    ({name:?}, {dep:?}, {version:?}),");
        }
    }
    let rustc = std::process::Command::new(env::var("RUSTC").unwrap())
        .arg("--version")
        .output()
        .expect("running rustc --version");
    let rustc = String::from_utf8(rustc.stdout).unwrap();
    // "rustc 1.95.0 (59807616e 2026-04-14)": the version is the second word.
    let rustc = rustc.split_whitespace().nth(1).expect("a rustc version");
    let code = format!(
        "/// (runtime package, dependency, locked version)\n\
         pub const LOCKED: &[(&str, &str, &str)] = &[\n{rows}];\n\n\
         /// The compiler the runtime binaries are built with.\n\
         pub const RUSTC_VERSION: &str = {rustc:?};\n"
    );
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("locked.rs");
    fs::write(out, code).expect("writing locked.rs");
}
