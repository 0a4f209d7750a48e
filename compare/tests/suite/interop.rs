//! One protocol: every implementation's client against every
//! implementation's server exchanges verified bytes.

use crate::IMPLEMENTATIONS;
use crate::common::{QUICK, cells, compare, out_dir};

#[test]
fn every_client_against_every_server() {
    let mut failures = Vec::new();
    let mut pairs = 0;
    for client in IMPLEMENTATIONS {
        let out = out_dir(&format!("interop-{client}"));
        let mut args = vec!["run", "--client", client, "--out", out.to_str().unwrap()];
        args.extend(["--connections", "1,16", "--threads", "1,2"]);
        args.extend(QUICK);
        let output = compare(&args);
        let text = std::fs::read_to_string(out.join("results.json"))
            .unwrap_or_else(|e| panic!("client {client}: no results.json ({e}): {output:?}"));
        let results: serde_json::Value = serde_json::from_str(&text).expect("results.json is JSON");
        for cell in cells(&results) {
            pairs += 1;
            assert_eq!(cell["client"], client);
            let connections = cell["connections"].as_u64().unwrap();
            let verified = cell["runs"]
                .get(0)
                .map(|r| r["verified_connections"].as_u64().unwrap());
            if cell["status"] != "ok" || verified != Some(connections) {
                failures.push(format!(
                    "server {} / client {client} at {} threads, {connections} connections: {} ({:?} verified)",
                    cell["runtime"], cell["threads"], cell["status"], verified
                ) + &format!(": {}", cell["error"]));
            }
        }
    }
    assert_eq!(pairs, IMPLEMENTATIONS.len() * IMPLEMENTATIONS.len() * 4);
    assert!(
        failures.is_empty(),
        "{} failing pairs:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
