//! A team's own service, built and loaded. [`build`]: at a version of one
//! of its dependencies (`tokio@1.50.0`), its cargo project copied under
//! `target/services/NAME/CRATE-VERSION/` with its own Cargo.lock, the
//! crate required at exactly that version (a requirement added where the
//! service depends on it only through others), and cargo moving what else
//! it must, which is recorded: an upgrade often moves more crates than the
//! one named. Every version builds into one target folder per service, so
//! that what they have in common is compiled once, and each binary is
//! copied out beside its copy, which the next build keeps. [`load`]: one
//! repetition, the service started from its file's command, ready, loaded
//! by `pingpong-load`, its CPU read over the load, stopped.

pub mod build;
pub mod load;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use semver::Version;

    use super::build;
    use super::load::{Shape, Sides, once};
    use crate::cargo::{self, Binary, Flags};
    use model::service::{Protocol, Service};

    fn example() -> Service {
        let root = model::defaults::source_tree().expect("a source tree");
        Service::load(&root.join("services/example/example.toml")).unwrap()
    }

    /// The load's binary, built as the tests build ours.
    fn load_binary(root: &Path) -> PathBuf {
        let binary = Binary {
            package: "pingpong-load".into(),
            name: "pingpong-load".into(),
        };
        let built = cargo::build(root, None, "dev", &[binary], &Flags::default()).unwrap();
        built["pingpong-load"].clone()
    }

    fn shape() -> Shape {
        Shape {
            threads: 1,
            connections: 2,
            load_threads: 1,
            warmup: Duration::from_millis(100),
            seconds: Duration::from_millis(300),
            rate: None,
        }
    }

    /// One test builds the example (a minute the first time) and loads
    /// what it built: two tests would build one folder at once.
    #[test]
    fn the_example_builds_at_two_releases_of_tokio_and_each_is_loaded_closed_and_open() {
        let service = example();
        let root = model::defaults::source_tree().unwrap();
        let load = load_binary(&root);
        let mut binaries = Vec::new();
        // The service's lock holds a tokio-util that asks for tokio 1.51 or
        // later: at 1.50.0 it moves too, and is recorded; at 1.51.0 not.
        for (version, util_moves) in [("1.50.0", true), ("1.51.0", false)] {
            let version = Version::parse(version).unwrap();
            let built = build::build(
                &service,
                "tokio",
                &version,
                &root.join("target/services"),
                "dev",
            )
            .unwrap();
            let moved = |name: &str| built.moved.iter().find(|m| m.name == name);
            let tokio = moved("tokio").and_then(|m| m.to.clone());
            assert_eq!(tokio, Some(version.to_string()), "{:?}", built.moved);
            assert_eq!(
                moved("tokio-util").is_some(),
                util_moves,
                "{version}: {:?}",
                built.moved
            );
            let sides = Sides {
                service: &built.binary,
                load: &load,
                service_cpus: &[],
                load_cpus: &[],
            };
            // Over HTTP/1.1 as its file says, and over HTTP/2 (h2c); closed
            // loop, and open at 200 requests a second.
            let open = Shape {
                rate: Some(200.0),
                ..shape()
            };
            for (protocol, shape) in [
                (Protocol::Http1, shape()),
                (Protocol::Http2, shape()),
                (Protocol::Http1, open),
            ] {
                let mut service = service.clone();
                service.load.protocol = protocol;
                let loaded = once(&service, &sides, &shape).unwrap();
                assert_eq!(loaded.outcome.rate, shape.rate);
                assert!(
                    loaded.outcome.answered > 0,
                    "{version} {protocol:?}: {loaded:?}"
                );
                let per_answer = loaded.cpu_ns_per_answer.unwrap();
                // Each answer parses JSON, hashes 2,000 rounds and sleeps:
                // some CPU, never a second of it.
                assert!(
                    per_answer > 0.0 && per_answer < 1e9,
                    "{version} {protocol:?}: {loaded:?}"
                );
            }
            binaries.push(built.binary);
        }
        assert_ne!(
            std::fs::read(&binaries[0]).unwrap(),
            std::fs::read(&binaries[1]).unwrap()
        );
        a_bad_service_fails_with_what_it_said(&binaries[1], &load);
    }

    /// A route it does not have, a command it refuses, a ready line it never
    /// prints: each an error that says so.
    fn a_bad_service_fails_with_what_it_said(binary: &Path, load: &Path) {
        let sides = Sides {
            service: binary,
            load,
            service_cpus: &[],
            load_cpus: &[],
        };
        let failed = |edit: fn(&mut Service)| {
            let mut service = example();
            edit(&mut service);
            format!("{:#}", once(&service, &sides, &shape()).unwrap_err())
        };
        let said = failed(|s| s.load.requests[0].path = "/nope".into());
        assert!(
            said.contains("were bad: status 404") && said.contains("no such route"),
            "{said}"
        );
        let said = failed(|s| s.start.command.push_str(" --bogus 1"));
        assert!(
            said.contains("the service exited") && said.contains("unknown argument --bogus"),
            "{said}"
        );
        let said = failed(|s| s.start.ready = Some("never printed".into()));
        assert!(
            said.contains("service start: the service passed its deadline"),
            "{said}"
        );
    }
}
