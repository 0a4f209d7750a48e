//! Embeds, from the workspace's Cargo.lock, the version of every crate each
//! runtime binary depends on, so that results name the exact runtime version.

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::path::Path;

fn main() {
    let lock = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("../Cargo.lock");
    println!("cargo::rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).expect("reading Cargo.lock");
    let lock: toml::Table = text.parse().expect("parsing Cargo.lock");
    let packages = lock["package"].as_array().expect("Cargo.lock packages");

    let mut versions_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in packages {
        versions_of
            .entry(p["name"].as_str().unwrap())
            .or_default()
            .push(p["version"].as_str().unwrap());
    }
    let mut rows = Vec::new();
    for p in packages {
        let name = p["name"].as_str().unwrap();
        if !name.starts_with("pingpong-") {
            continue;
        }
        for dep in p
            .get("dependencies")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
        {
            // "name" when one version is locked, "name version [(source)]" otherwise.
            let mut words = dep.as_str().unwrap().split(' ');
            let dep_name = words.next().unwrap();
            let version = words.next().unwrap_or_else(|| versions_of[dep_name][0]);
            rows.push(format!("    ({name:?}, {dep_name:?}, {version:?}),\n"));
        }
    }
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("locked.rs");
    let code = format!(
        "/// (runtime package, dependency, locked version)\npub const LOCKED: &[(&str, &str, &str)] = &[\n{}];\n",
        rows.concat()
    );
    let rustc = std::process::Command::new(env::var("RUSTC").unwrap())
        .arg("--version")
        .output()
        .expect("running rustc --version");
    let rustc = String::from_utf8(rustc.stdout).unwrap();
    // "rustc 1.95.0 (59807616e 2026-04-14)": the version is the second word.
    let rustc = rustc.split_whitespace().nth(1).expect("a rustc version");
    let code = format!(
        "{code}\n/// The compiler the runtime binaries are built with.\npub const RUSTC_VERSION: &str = {rustc:?};\n"
    );
    fs::write(out, code).expect("writing locked.rs");
}
