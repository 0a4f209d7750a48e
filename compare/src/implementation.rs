//! An implementation, as a run names it: one of ours (`tokio`), one of ours
//! built against an exact crate version (`tokio@1.47.0`), or an external
//! program described by a file (`--external muduo=muduo.toml`).

use std::sync::Arc;

use anyhow::{Result, bail};

use crate::adapters::{ADAPTERS, Adapter};
use crate::external::External;

#[derive(Debug, Clone, PartialEq)]
pub enum Implementation {
    Ours {
        adapter: &'static Adapter,
        /// The exact version of its crate to build against, if not the locked one.
        pinned: Option<String>,
    },
    External(Arc<External>),
}

impl Implementation {
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
        let adapter = ours(name, externals)?;
        if let Some(version) = pinned {
            let parts: Vec<&str> = version.split('.').collect();
            if parts.len() != 3 || parts.iter().any(|p| p.parse::<u64>().is_err()) {
                bail!("{spec:?}: the version must be exact, as in {name}@1.2.3");
            }
            if adapter.krate == "std" {
                bail!(
                    "{spec:?}: {name} is built on the standard library, which has no crate version to pin"
                );
            }
        }
        Ok(Self::Ours {
            adapter,
            pinned: pinned.map(Into::into),
        })
    }

    pub fn name(&self) -> String {
        match self {
            Self::Ours {
                adapter,
                pinned: Some(version),
            } => format!("{}@{version}", adapter.name),
            Self::Ours {
                adapter,
                pinned: None,
            } => adapter.name.into(),
            Self::External(e) => e.name.clone(),
        }
    }

    pub fn model(&self) -> String {
        match self {
            Self::Ours { adapter, .. } => adapter.model.into(),
            Self::External(e) => format!("external: {}", e.model),
        }
    }

    pub fn threads_matter(&self) -> bool {
        match self {
            Self::Ours { adapter, .. } => adapter.threads_matter,
            Self::External(_) => true,
        }
    }
}

impl From<&'static Adapter> for Implementation {
    fn from(adapter: &'static Adapter) -> Self {
        Self::Ours {
            adapter,
            pinned: None,
        }
    }
}

/// Our adapter named `name`; an unknown name gets the list and the nearest match.
fn ours(name: &str, externals: &[Arc<External>]) -> Result<&'static Adapter> {
    if let Some(found) = Adapter::find(name) {
        return Ok(found);
    }
    if externals.iter().any(|e| e.name == name) {
        bail!("{name} is an external implementation: it has no crate version to pin");
    }
    let known: Vec<&str> = ADAPTERS
        .iter()
        .map(|a| a.name)
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
    fn versions_are_pinned_exactly_or_not_at_all() {
        let v = Implementation::parse("tokio@1.47.0", &[]).unwrap();
        let Implementation::Ours { adapter, pinned } = &v else {
            panic!("{v:?}")
        };
        assert_eq!((adapter.name, pinned.as_deref()), ("tokio", Some("1.47.0")));
        assert_eq!(v.name(), "tokio@1.47.0");
        assert_eq!(Implementation::parse("mio", &[]).unwrap().name(), "mio");
        for bad in [
            "tokio@1.47",
            "tokio@^1",
            "tokio@",
            "std-threads@1.0.0",
            "tokyo@1.0.0",
        ] {
            assert!(Implementation::parse(bad, &[]).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let e = Implementation::parse("tokyo", &[]).unwrap_err().to_string();
        assert!(e.contains("did you mean tokio?"), "{e}");
        assert!(
            e.contains("known: tokio, tokio-local, mio, async-std"),
            "{e}"
        );
    }
}
