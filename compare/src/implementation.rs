//! An implementation, as a run names it: one of ours (`tokio`), one of ours
//! built against an exact crate version (`tokio@1.47.0`), one of ours with
//! its runtime's knobs set (`tokio{event_interval=1}`, or both:
//! `tokio@1.47.0{event_interval=1}`), or an external program described by a
//! file (`--external muduo=muduo.toml`).

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use pingpong::knobs::Settings;

use crate::adapters::{ADAPTERS, Adapter};
use crate::external::External;

#[derive(Debug, Clone, PartialEq)]
pub enum Implementation {
    Ours {
        adapter: &'static Adapter,
        /// The exact version of its crate to build against, if not the locked one.
        pinned: Option<String>,
        /// Its runtime's builder settings (none: the adapter's own).
        knobs: Settings,
    },
    External(Arc<External>),
}

impl Implementation {
    /// Parses `NAME`, `NAME@VERSION` (an exact version: 1.47.0), either
    /// followed by `{KNOB=VALUE,...}`, where NAME is one of ours or of
    /// `externals`.
    pub fn parse(spec: &str, externals: &[Arc<External>]) -> Result<Self> {
        if let Some(external) = externals.iter().find(|e| e.name == spec) {
            return Ok(Self::External(external.clone()));
        }
        let (spec_base, knobs) = match spec.split_once('{') {
            Some((base, rest)) => {
                let Some(knobs) = rest.strip_suffix('}') else {
                    bail!(
                        "{spec:?}: the knobs end with a closing brace, as in tokio{{event_interval=1}}"
                    );
                };
                (base, Some(knobs))
            }
            None => (spec, None),
        };
        let (name, pinned) = match spec_base.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (spec_base, None),
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
        let knobs = match knobs {
            Some(text) => Settings::parse(text, adapter.knobs)
                .with_context(|| format!("{spec:?}: {name}'s knobs (compare list shows them)"))?,
            None => Settings::default(),
        };
        if knobs.is_empty() && spec.contains('{') {
            bail!("{spec:?}: the braces set no knob; leave them out");
        }
        Ok(Self::Ours {
            adapter,
            pinned: pinned.map(Into::into),
            knobs,
        })
    }

    /// Its name, knobs in the order their runtime declares them.
    pub fn name(&self) -> String {
        match self {
            Self::Ours {
                adapter,
                pinned,
                knobs,
            } => {
                let version = pinned.as_ref().map(|v| format!("@{v}")).unwrap_or_default();
                format!("{}{version}{knobs}", adapter.name)
            }
            Self::External(e) => e.name.clone(),
        }
    }

    /// The knobs a configuration sets, by name, with their values.
    pub fn knobs(&self) -> BTreeMap<String, String> {
        match self {
            Self::Ours { knobs, .. } => knobs.pairs().map(|(k, v)| (k.into(), v)).collect(),
            Self::External(_) => BTreeMap::new(),
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
            knobs: Settings::default(),
        }
    }
}

/// Splits a comma-separated list of implementations, keeping the commas
/// inside a configuration's braces (`tokio,tokio{a=1,b=2}`: two).
pub fn split_list(list: &str) -> Vec<String> {
    let mut items = vec![String::new()];
    let mut depth = 0usize;
    for c in list.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(String::new());
                continue;
            }
            _ => {}
        }
        items.last_mut().expect("never empty").push(c);
    }
    items.into_iter().map(|s| s.trim().to_string()).collect()
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
        let Implementation::Ours {
            adapter, pinned, ..
        } = &v
        else {
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

    #[test]
    fn configurations_name_their_knobs_in_declaration_order() {
        let c = Implementation::parse("tokio{max_io_events_per_tick=8,event_interval=1}", &[]);
        assert_eq!(
            c.unwrap().name(),
            "tokio{event_interval=1,max_io_events_per_tick=8}"
        );
        let c = Implementation::parse("tokio@1.47.0{event_interval=1}", &[]).unwrap();
        assert_eq!(c.name(), "tokio@1.47.0{event_interval=1}");
        for (bad, says) in [
            (
                "tokio{event_intervall=1}",
                "unknown knob \"event_intervall\"",
            ),
            ("tokio{event_interval=0}", "must be 1..=4294967295"),
            ("tokio{event_interval=1", "closing brace"),
            ("tokio{}", "set no knob"),
            ("smol{a=1}", "this runtime has no knobs"),
            ("tokio-local{disable_lifo_slot=true}", "unknown knob"),
        ] {
            let e = format!("{:#}", Implementation::parse(bad, &[]).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn lists_split_outside_braces() {
        assert_eq!(
            split_list("tokio, tokio{event_interval=1,max_io_events_per_tick=8},mio"),
            [
                "tokio",
                "tokio{event_interval=1,max_io_events_per_tick=8}",
                "mio"
            ]
        );
    }
}
