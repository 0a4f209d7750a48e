//! An implementation, as a run names it: one of ours (`tokio`), one of ours
//! built against an exact crate version (`tokio@1.47.0`), one of ours with
//! its runtime's knobs set (`tokio{event_interval=1}`, or both:
//! `tokio@1.47.0{event_interval=1}`), or an external program described by a
//! file (`--external muduo=muduo.toml`). Unreleased code is a version too:
//! `tokio@git:URL#REV` (a commit, tag or branch) and `tokio@path:DIR` (a
//! checkout as it stands), which resolve to a [`Source`]. A name is parsed
//! once, into a [`Spec`]; a range of releases (`tokio@1.45.0..1.54.1`) or
//! of commits (`tokio@git:URL#A..B`) is one spec that stands for one
//! implementation per release or commit.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use pingpong::knobs::Settings;
use semver::Version;

use crate::adapters::{ADAPTERS, Adapter, GENERATOR};
use crate::defaults;
use crate::external::External;
use crate::revision::{Origin, Source};

/// The name of an implementation as a run names it, without its version
/// or configuration: `tokio` of `tokio@1.47.0` and of `tokio{event_interval=1}`.
pub fn base_name(implementation: &str) -> &str {
    let end = implementation
        .find(['@', '{'])
        .unwrap_or(implementation.len());
    &implementation[..end]
}

/// A name as `--runtimes` spells it: `NAME`, `NAME@VERSION` (an exact
/// release), `NAME@A..B` (every release from A to B), `NAME@git:URL#REV`,
/// `NAME@git:URL#A..B` (the first-parent commits from A to B) or
/// `NAME@path:DIR`, each followed by `{KNOB=VALUE,...}` or not.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub base: String,
    pub versions: Versions,
    /// What the braces hold (`event_interval=1`), if there are braces.
    pub knobs: Option<String>,
}

/// Which versions of its crate a spec names.
#[derive(Debug, Clone, PartialEq)]
pub enum Versions {
    /// The one the workspace locks.
    Locked,
    Exact(Version),
    /// Every release from the first to the second, inclusive.
    Range(Version, Version),
    /// Unreleased code: one revision of a repository, or a checkout.
    Unreleased(Origin),
    /// The first-parent commits of a repository from one revision to another.
    Commits {
        url: String,
        from: String,
        to: String,
    },
}

impl Spec {
    pub fn parse(spec: &str) -> Result<Self> {
        let (head, knobs) = match spec.split_once('{') {
            Some((head, rest)) => {
                let Some(knobs) = rest.strip_suffix('}') else {
                    bail!(
                        "{spec:?}: the knobs end with a closing brace, as in tokio{{event_interval=1}}"
                    );
                };
                (head, Some(knobs.to_string()))
            }
            None => (spec, None),
        };
        let (base, versions) = match head.split_once('@') {
            None => (head, Versions::Locked),
            Some((base, dir)) if dir.starts_with("path:") => {
                let dir = &dir["path:".len()..];
                ensure!(
                    !dir.is_empty(),
                    "{spec:?}: path: names a folder, as in {base}@path:../{base}"
                );
                (base, Versions::Unreleased(Origin::Path(dir.into())))
            }
            Some((base, git)) if git.starts_with("git:") => {
                let Some((url, rev)) = git["git:".len()..].rsplit_once('#') else {
                    bail!(
                        "{spec:?}: git: names a repository and a revision, as in {base}@git:URL#main"
                    );
                };
                ensure!(
                    !url.is_empty() && !rev.is_empty(),
                    "{spec:?}: git: names a repository and a revision, as in {base}@git:URL#main"
                );
                let versions = match rev.split_once("..") {
                    Some((from, to)) => Versions::Commits {
                        url: url.into(),
                        from: from.into(),
                        to: to.into(),
                    },
                    None => Versions::Unreleased(Origin::Git {
                        url: url.into(),
                        rev: rev.into(),
                    }),
                };
                (base, versions)
            }
            Some((base, range)) => match range.split_once("..") {
                Some((from, to)) => {
                    let version = |v: &str| {
                        Version::parse(v).with_context(|| {
                            format!("{spec:?}: {v:?} is not a version, as in {base}@1.2.3..1.4.0")
                        })
                    };
                    let (from, to) = (version(from)?, version(to)?);
                    ensure!(from <= to, "{spec:?}: the range ends before it starts");
                    (base, Versions::Range(from, to))
                }
                None => match Version::parse(range) {
                    Ok(version) => (base, Versions::Exact(version)),
                    Err(_) => bail!("{spec:?}: the version must be exact, as in {base}@1.2.3"),
                },
            },
        };
        Ok(Self {
            base: base.into(),
            versions,
            knobs,
        })
    }

    /// The same spec at `version`: one release of a range.
    pub fn at(&self, version: Version) -> Self {
        Self {
            versions: Versions::Exact(version),
            ..self.clone()
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)?;
        match &self.versions {
            Versions::Locked => {}
            Versions::Exact(v) => write!(f, "@{v}")?,
            Versions::Range(from, to) => write!(f, "@{from}..{to}")?,
            Versions::Unreleased(Origin::Git { url, rev }) => write!(f, "@git:{url}#{rev}")?,
            Versions::Unreleased(Origin::Path(dir)) => write!(f, "@path:{}", dir.display())?,
            Versions::Commits { url, from, to } => write!(f, "@git:{url}#{from}..{to}")?,
        }
        match &self.knobs {
            Some(knobs) => write!(f, "{{{knobs}}}"),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Implementation {
    Ours {
        adapter: &'static Adapter,
        /// The version of its crate to build against, if not the locked one.
        pinned: Option<Pin>,
        /// Its runtime's builder settings (none: the adapter's own).
        knobs: Settings,
    },
    External(Arc<External>),
}

/// A version of a runtime crate other than the one the workspace locks.
#[derive(Debug, Clone, PartialEq)]
pub enum Pin {
    /// An exact release.
    Release(String),
    /// Unreleased code, as it resolved.
    Source(Arc<Source>),
}

impl Implementation {
    /// Parses `NAME`, `NAME@VERSION` (an exact version: 1.47.0), either
    /// followed by `{KNOB=VALUE,...}`, where NAME is one of ours or of
    /// `externals`. A `git:` or `path:` version resolves here, through git
    /// (a remote repository is cloned under `cache`).
    pub fn parse(spec: &str, externals: &[Arc<External>]) -> Result<Self> {
        Self::parse_known(spec, externals, &[])
    }

    /// The open loop's generator, the client of every open-loop cell.
    pub fn generator() -> Self {
        Self::from(&GENERATOR)
    }

    /// [`Self::parse`], where `sources` are unreleased versions resolved
    /// before, by name (`tokio@main(3f2a9c1)`, a run's results record them).
    pub fn parse_known(
        spec: &str,
        externals: &[Arc<External>],
        sources: &[Arc<Source>],
    ) -> Result<Self> {
        if let Some(external) = externals.iter().find(|e| e.name == spec) {
            return Ok(Self::External(external.clone()));
        }
        let (head, knobs) = match spec.split_once('{') {
            Some((head, _)) => (head, &spec[head.len()..]),
            None => (spec, ""),
        };
        if let Some(source) = sources.iter().find(|s| s.name == head) {
            let base = head.split_once('@').map_or(head, |(base, _)| base);
            let mut parsed = Spec::parse(&format!("{base}{knobs}"))?;
            parsed.versions = Versions::Locked;
            return Self::of(&parsed, externals, Some(Pin::Source(source.clone())));
        }
        let parsed = Spec::parse(spec)?;
        let pin = match &parsed.versions {
            Versions::Unreleased(origin) => {
                let source =
                    Source::resolve(&parsed.base, spec, origin, &defaults::versions_folder()?)?;
                Some(Pin::Source(Arc::new(source)))
            }
            _ => None,
        };
        Self::of(&parsed, externals, pin)
    }

    /// The implementation a spec of one version names; `source` where that
    /// version is unreleased code, resolved.
    fn of(spec: &Spec, externals: &[Arc<External>], source: Option<Pin>) -> Result<Self> {
        let name = spec.base.as_str();
        let adapter = ours(name, externals)?;
        let pinned = match &spec.versions {
            Versions::Locked => source,
            Versions::Exact(version) => Some(Pin::Release(version.to_string())),
            Versions::Unreleased(_) => source,
            Versions::Range(..) | Versions::Commits { .. } => {
                bail!("{spec}: a range stands for one implementation per release or commit")
            }
        };
        if pinned.is_some() && adapter.krate == "std" {
            bail!(
                "{spec:?}: {name} is built on the standard library, which has no crate version to pin",
                spec = spec.to_string()
            );
        }
        let knobs = match &spec.knobs {
            Some(text) => Settings::parse(text, adapter.knobs).with_context(|| {
                format!(
                    "{:?}: {name}'s knobs (compare list shows them)",
                    spec.to_string()
                )
            })?,
            None => Settings::default(),
        };
        if knobs.is_empty() && spec.knobs.is_some() {
            bail!(
                "{:?}: the braces set no knob; leave them out",
                spec.to_string()
            );
        }
        Ok(Self::Ours {
            adapter,
            pinned,
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
            } => match pinned {
                None => format!("{}{knobs}", adapter.name),
                Some(Pin::Release(v)) => format!("{}@{v}{knobs}", adapter.name),
                Some(Pin::Source(source)) => format!("{}{knobs}", source.name),
            },
            Self::External(e) => e.name.clone(),
        }
    }

    /// The unreleased code it is built from, if any.
    pub fn source(&self) -> Option<&Source> {
        match self {
            Self::Ours {
                pinned: Some(Pin::Source(source)),
                ..
            } => Some(source),
            _ => None,
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
    if name == GENERATOR.name {
        bail!(
            "{name} is the open loop's client for every server (--rates), an instrument: \
             it serves nothing, and a run names it nowhere"
        );
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
        assert_eq!(
            (adapter.name, pinned),
            ("tokio", &Some(Pin::Release("1.47.0".into())))
        );
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
    fn a_spec_parses_into_its_parts_and_prints_back() {
        for text in [
            "tokio",
            "tokio@1.47.0",
            "tokio@1.3.0-rc.1",
            "tokio@1.45.0..1.54.1",
            "tokio@1.45.0..1.54.1{event_interval=1}",
        ] {
            assert_eq!(Spec::parse(text).unwrap().to_string(), text);
        }
        let range = Spec::parse("tokio@1.45.0..1.54.1{event_interval=1}").unwrap();
        assert_eq!(
            range.versions,
            Versions::Range(Version::new(1, 45, 0), Version::new(1, 54, 1))
        );
        assert_eq!(
            range.at(Version::new(1, 50, 0)).to_string(),
            "tokio@1.50.0{event_interval=1}"
        );
        for (bad, says) in [
            ("tokio@1.45..1.46.0", "is not a version"),
            ("tokio@1.46.0..1.45.0", "ends before it starts"),
            ("tokio@x..1.0.0", "is not a version"),
            ("tokio@1.47", "must be exact"),
        ] {
            let e = format!("{:#}", Spec::parse(bad).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn unreleased_versions_parse_into_their_origin_and_print_back() {
        for text in [
            "tokio@git:../tokio#main",
            "tokio@git:git@github.com:tokio-rs/tokio.git#3f2a9c1{event_interval=1}",
            "tokio@git:file:///src/tokio#tokio-1.47.0..tokio-1.48.0",
            "tokio@path:../tokio",
        ] {
            assert_eq!(Spec::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            Spec::parse("tokio@git:a@b:c#d..e").unwrap().versions,
            Versions::Commits {
                url: "a@b:c".into(),
                from: "d".into(),
                to: "e".into()
            }
        );
        for (bad, says) in [
            ("tokio@git:../tokio", "a repository and a revision"),
            ("tokio@git:#main", "a repository and a revision"),
            ("tokio@path:", "names a folder"),
        ] {
            let e = format!("{:#}", Spec::parse(bad).unwrap_err());
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
