//! The implementations `compare` knows: one `pingpong-<name>` binary each.

use anyhow::{Result, bail};

include!(concat!(env!("OUT_DIR"), "/locked.rs"));

#[derive(Debug)]
pub struct Implementation {
    pub name: &'static str,
    /// The cargo package that builds the binary.
    pub package: &'static str,
    /// The crate whose version the results name.
    pub krate: &'static str,
    /// The IO model, in words.
    pub model: &'static str,
}

pub const ALL: &[Implementation] = &[
    Implementation {
        name: "tokio",
        package: "pingpong-tokio",
        krate: "tokio",
        model: "work-stealing multi-thread runtime, one shared IO driver and listener (1 context / N threads)",
    },
    Implementation {
        name: "tokio-local",
        package: "pingpong-tokio",
        krate: "tokio",
        model: "one current-thread runtime per thread, SO_REUSEPORT listener per thread (N contexts / N threads)",
    },
    Implementation {
        name: "mio",
        package: "pingpong-mio",
        krate: "mio",
        model: "baseline: raw mio event loop per thread, no async runtime, SO_REUSEPORT listener per thread",
    },
];

impl Implementation {
    pub fn binary(&self) -> String {
        format!("pingpong-{}", self.name)
    }

    /// The locked version of the crate it is built on.
    pub fn version(&self) -> &'static str {
        LOCKED
            .iter()
            .find(|(package, dep, _)| *package == self.package && *dep == self.krate)
            .map_or("unknown", |(_, _, version)| version)
    }
}

/// Looks an implementation up by name; an unknown name gets the list and the nearest match.
pub fn find(name: &str) -> Result<&'static Implementation> {
    if let Some(found) = ALL.iter().find(|i| i.name == name) {
        return Ok(found);
    }
    let known: Vec<_> = ALL.iter().map(|i| i.name).collect();
    let nearest = known
        .iter()
        .map(|k| (strsim::levenshtein(name, k), k))
        .min()
        .filter(|(distance, _)| *distance <= 3)
        .map(|(_, k)| format!(" (did you mean {k}?)"))
        .unwrap_or_default();
    bail!(
        "unknown implementation {name:?}{nearest}; known: {}",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implementation_has_a_locked_version() {
        for i in ALL {
            assert_ne!(i.version(), "unknown", "{}", i.name);
        }
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let e = find("tokyo").unwrap_err().to_string();
        assert!(e.contains("did you mean tokio?"), "{e}");
        assert!(e.contains("known: tokio, tokio-local, mio"), "{e}");
    }
}
