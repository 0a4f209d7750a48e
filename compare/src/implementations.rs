//! The implementations `compare` knows: one `pingpong-<name>` binary each.

use std::sync::Arc;

use anyhow::{Result, bail};

use crate::external::External;

include!(concat!(env!("OUT_DIR"), "/locked.rs"));

#[derive(Debug, PartialEq, Eq)]
pub struct Implementation {
    pub name: &'static str,
    /// The cargo package that builds the binary.
    pub package: &'static str,
    /// The crate whose version the results name.
    pub krate: &'static str,
    /// The IO model, in words.
    pub model: &'static str,
    /// Whether `--threads` changes what runs (it does not for thread-per-connection).
    pub threads_matter: bool,
    /// What a user should know before picking it.
    pub note: &'static str,
}

const fn implementation(
    name: &'static str,
    package: &'static str,
    krate: &'static str,
    model: &'static str,
) -> Implementation {
    Implementation {
        name,
        package,
        krate,
        model,
        threads_matter: true,
        note: "",
    }
}

pub const ALL: &[Implementation] = &[
    implementation(
        "tokio",
        "pingpong-tokio",
        "tokio",
        "work-stealing multi-thread runtime, one shared IO driver and listener (1 context / N threads)",
    ),
    implementation(
        "tokio-local",
        "pingpong-tokio",
        "tokio",
        "one current-thread runtime per thread, SO_REUSEPORT listener per thread (N contexts / N threads)",
    ),
    implementation(
        "mio",
        "pingpong-mio",
        "mio",
        "baseline: raw mio event loop per thread, no async runtime, SO_REUSEPORT listener per thread",
    ),
    Implementation {
        note: "discontinued upstream in favour of smol",
        ..implementation(
            "async-std",
            "pingpong-async-std",
            "async-std",
            "global executor on N threads, one shared async-io reactor and listener",
        )
    },
    implementation(
        "smol",
        "pingpong-smol",
        "smol",
        "one async-executor run by N threads, one shared async-io reactor and listener",
    ),
    implementation(
        "glommio",
        "pingpong-glommio",
        "glommio",
        "io_uring thread-per-core executor per thread, SO_REUSEPORT listener per thread",
    ),
    implementation(
        "monoio",
        "pingpong-monoio",
        "monoio",
        "io_uring runtime per thread, owned-buffer IO, SO_REUSEPORT listener per thread",
    ),
    implementation(
        "monoio-epoll",
        "pingpong-monoio",
        "monoio",
        "the monoio code on its legacy epoll driver, runtime and listener per thread",
    ),
    implementation(
        "compio",
        "pingpong-compio",
        "compio",
        "completion-based io_uring runtime per thread, SO_REUSEPORT listener per thread",
    ),
    Implementation {
        threads_matter: false,
        ..implementation(
            "std-threads",
            "pingpong-std-threads",
            "std",
            "baseline: blocking std::net, one OS thread per connection on both sides, no event loop",
        )
    },
];

impl Implementation {
    pub fn binary(&self) -> String {
        format!("pingpong-{}", self.name)
    }

    /// The version of the crate it is built on: locked, or the compiler's for std.
    pub fn version(&self) -> &'static str {
        if self.krate == "std" {
            return RUSTC_VERSION;
        }
        LOCKED
            .iter()
            .find(|(package, dep, _)| *package == self.package && *dep == self.krate)
            .map_or("unknown", |(_, _, version)| version)
    }
}

/// An implementation as a run names it: `tokio`, built from the workspace;
/// `tokio@1.47.0`, its adapter built against exactly that crate version; or
/// an external program described by a file (`--external muduo=muduo.toml`).
#[derive(Debug, Clone, PartialEq)]
pub enum Variant {
    Ours {
        base: &'static Implementation,
        pinned: Option<String>,
    },
    External(Arc<External>),
}

impl Variant {
    /// Parses `NAME` or `NAME@VERSION` (an exact version: 1.47.0), where
    /// NAME is one of ours or of `externals`.
    pub fn parse(spec: &str, externals: &[Arc<External>]) -> Result<Self> {
        if let Some(external) = externals.iter().find(|e| e.name == spec) {
            return Ok(Self::External(external.clone()));
        }
        let (name, pinned) = match spec.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (spec, None),
        };
        let base = find(name, externals)?;
        if let Some(version) = pinned {
            let parts: Vec<&str> = version.split('.').collect();
            if parts.len() != 3 || parts.iter().any(|p| p.parse::<u64>().is_err()) {
                bail!("{spec:?}: the version must be exact, as in {name}@1.2.3");
            }
            if base.krate == "std" {
                bail!(
                    "{spec:?}: {name} is built on the standard library, which has no crate version to pin"
                );
            }
        }
        Ok(Self::Ours {
            base,
            pinned: pinned.map(Into::into),
        })
    }

    pub fn name(&self) -> String {
        match self {
            Self::Ours {
                base,
                pinned: Some(version),
            } => format!("{}@{version}", base.name),
            Self::Ours { base, pinned: None } => base.name.into(),
            Self::External(e) => e.name.clone(),
        }
    }

    pub fn model(&self) -> String {
        match self {
            Self::Ours { base, .. } => base.model.into(),
            Self::External(e) => format!("external: {}", e.model),
        }
    }

    pub fn threads_matter(&self) -> bool {
        match self {
            Self::Ours { base, .. } => base.threads_matter,
            Self::External(_) => true,
        }
    }
}

impl From<&'static Implementation> for Variant {
    fn from(base: &'static Implementation) -> Self {
        Self::Ours { base, pinned: None }
    }
}

/// Looks an implementation up by name; an unknown name gets the list and the nearest match.
pub fn find(name: &str, externals: &[Arc<External>]) -> Result<&'static Implementation> {
    if let Some(found) = ALL.iter().find(|i| i.name == name) {
        return Ok(found);
    }
    if externals.iter().any(|e| e.name == name) {
        bail!("{name} is an external implementation: it has no crate version to pin");
    }
    let known: Vec<&str> = ALL
        .iter()
        .map(|i| i.name)
        .chain(externals.iter().map(|e| e.name.as_str()))
        .collect();
    let nearest = known
        .iter()
        .map(|k| (strsim::levenshtein(name, k), k))
        .min()
        .filter(|(distance, _)| *distance <= 3)
        .map(|(_, k)| format!(" (did you mean {k}?)"))
        .unwrap_or_default();
    bail!(
        "unknown implementation {name:?}{nearest}; known: {} (or --external NAME=FILE)",
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
    fn variants_pin_exact_versions_only() {
        let v = Variant::parse("tokio@1.47.0", &[]).unwrap();
        let Variant::Ours { base, pinned } = &v else {
            panic!("{v:?}")
        };
        assert_eq!((base.name, pinned.as_deref()), ("tokio", Some("1.47.0")));
        assert_eq!(v.name(), "tokio@1.47.0");
        assert_eq!(Variant::parse("mio", &[]).unwrap().name(), "mio");
        for bad in [
            "tokio@1.47",
            "tokio@^1",
            "tokio@",
            "std-threads@1.0.0",
            "tokyo@1.0.0",
        ] {
            assert!(Variant::parse(bad, &[]).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let e = find("tokyo", &[]).unwrap_err().to_string();
        assert!(e.contains("did you mean tokio?"), "{e}");
        assert!(
            e.contains("known: tokio, tokio-local, mio, async-std"),
            "{e}"
        );
    }
}
