//! A run's series of releases: each range it swept (`tokio@1.45.0..1.54.1`),
//! and releases of one runtime named one by one (`tokio@1.50.0,tokio@1.52.2`),
//! which are read the same way: in version order, each against the one
//! before. A sweep that skips releases (the first of each minor version)
//! is such a list.

use std::collections::BTreeMap;

use semver::Version;

use super::{ReleaseRange, Results};
use crate::adapters::Adapter;
use crate::implementation::{Spec, Versions};

impl Results {
    /// The ranges the run swept, then each runtime configuration with two
    /// or more releases named one by one, oldest first.
    pub fn release_series(&self) -> Vec<ReleaseRange> {
        let ranges = &self.config.releases;
        let swept: Vec<String> = ranges.iter().flat_map(|r| r.names()).collect();
        // Each runtime configuration (base and knobs), its releases.
        let mut named: BTreeMap<(String, Option<String>), Vec<Version>> = BTreeMap::new();
        for name in &self.config.implementations {
            let Ok(spec) = Spec::parse(name) else {
                continue;
            };
            if let Versions::Exact(version) = spec.versions
                && !swept.contains(name)
            {
                named
                    .entry((spec.base, spec.knobs))
                    .or_default()
                    .push(version);
            }
        }
        let listed = named
            .into_iter()
            .filter_map(|((base, knobs), mut versions)| {
                versions.sort();
                versions.dedup();
                let krate = Adapter::find(&base)?.krate;
                let (first, last) = (versions.first()?, versions.last()?);
                (versions.len() > 1).then(|| ReleaseRange {
                    spec: Spec {
                        base,
                        versions: Versions::Range(first.clone(), last.clone()),
                        knobs,
                    }
                    .to_string(),
                    krate: krate.into(),
                    versions: versions.iter().map(Version::to_string).collect(),
                    skipped: Vec::new(),
                })
            });
        ranges.iter().cloned().chain(listed).collect()
    }

    /// Whether `series` is releases named one by one, not a range swept.
    pub fn is_listed(&self, series: &ReleaseRange) -> bool {
        !self.config.releases.contains(series)
    }
}

#[cfg(test)]
mod tests {
    use crate::results::{ReleaseRange, Results};

    /// The series of a run of `implementations` that swept `ranges`.
    fn series(implementations: &[&str], ranges: Vec<ReleaseRange>) -> Vec<(String, Vec<String>)> {
        let path = crate::fixtures::small_path();
        let mut results = Results::load(&path).unwrap();
        results.config.implementations = implementations.iter().map(|s| s.to_string()).collect();
        results.config.releases = ranges;
        results
            .release_series()
            .into_iter()
            .map(|s| (s.spec.clone(), s.names()))
            .collect()
    }

    #[test]
    fn releases_named_one_by_one_are_a_series_in_version_order() {
        let found = series(
            &[
                "tokio@1.52.0",
                "mio",
                "tokio@1.9.0",
                "tokio@1.50.0{event_interval=1}",
                "tokio@1.51.0{event_interval=1}",
                "smol@2.0.0",
                "tokio@1.50.0",
            ],
            Vec::new(),
        );
        assert_eq!(
            found,
            [
                (
                    "tokio@1.9.0..1.52.0".to_string(),
                    vec!["tokio@1.9.0", "tokio@1.50.0", "tokio@1.52.0"]
                        .into_iter()
                        .map(String::from)
                        .collect::<Vec<_>>()
                ),
                (
                    "tokio@1.50.0..1.51.0{event_interval=1}".to_string(),
                    vec![
                        "tokio@1.50.0{event_interval=1}".to_string(),
                        "tokio@1.51.0{event_interval=1}".to_string()
                    ]
                ),
            ]
        );
    }

    #[test]
    fn a_range_swept_stays_as_it_was_and_its_releases_are_in_no_list() {
        let range = ReleaseRange {
            spec: "tokio@1.50.0..1.51.0".into(),
            krate: "tokio".into(),
            versions: vec!["1.50.0".into(), "1.51.0".into()],
            skipped: Vec::new(),
        };
        let found = series(
            &["tokio@1.50.0", "tokio@1.51.0", "tokio@1.52.2"],
            vec![range.clone()],
        );
        assert_eq!(found, [(range.spec.clone(), range.names())]);
    }
}
