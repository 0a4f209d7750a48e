//! What a run does, resolved from its recorded options: the implementations
//! and the groups of cells, in the order they run. Repetitions interleave
//! the implementations within a group (A B C, A B C, ...), so that the
//! machine's drift over time hits every implementation alike; a group holds
//! its workload over plain TCP and inside TLS, in every server shape, so
//! that those interleave too and each is read against its plain echo twin
//! from the same rounds.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};

use model::external::External;
use model::implementation::Implementation;
use model::matrix::{Load, Workload};
use model::placement::Pin;
use model::results::{Config, Remote};
use model::revision::Source;

pub struct Plan {
    /// The implementations measured, in the tables' order.
    pub servers: Vec<Implementation>,
    /// The one client every closed-loop cell uses, when fixed.
    pub client: Option<Implementation>,
    /// The client of every open-loop cell, where the run has any.
    pub generator: Option<Implementation>,
    /// The groups of cells, in order: every implementation at one load of
    /// one workload, plain and inside TLS, in each of its shapes.
    pub groups: Vec<(Vec<Workload>, Load)>,
    /// Repetitions of every cell: exactly, or at least with a precision.
    pub repeat: usize,
    /// Repeat cells until their median is this precise (percent), if set,
    pub precision: Option<f64>,
    /// up to this many repetitions,
    pub max_repeat: usize,
    /// and this long for all the repetitions beyond `repeat`.
    pub budget: Option<Duration>,
    pub pin: Pin,
    pub noisy_percent: f64,
    pub latency: bool,
    /// Cost runs of every cell, after its timed ones (with `--no-cost`,
    /// where the kernel cannot count, or the clients run elsewhere, each
    /// cell says why it has none instead).
    pub cost_runs: usize,
}

impl Plan {
    /// The plan of a run, from its options as the results file records them
    /// (a new run's, or one resumed).
    pub fn of(config: &Config) -> Result<Self> {
        let externals: Vec<Arc<External>> =
            config.externals.iter().cloned().map(Arc::new).collect();
        let sources: Vec<Arc<Source>> = config.sources.iter().cloned().map(Arc::new).collect();
        let parse = |name: &str| Implementation::parse_known(name, &externals, &sources);
        let servers: Vec<Implementation> = config
            .implementations
            .iter()
            .map(|n| parse(n))
            .collect::<Result<_>>()?;
        let client = config.client.as_deref().map(parse).transpose()?;
        if let (Some(Remote::Ssh { .. }), Some(Implementation::External(e))) = (
            &config.remote,
            servers
                .iter()
                .find(|i| matches!(i, Implementation::External(_))),
        ) {
            bail!(
                "--remote starts our servers only; start {}'s server on the other host by hand \
                 and use --server",
                e.name
            );
        }
        let generator = config
            .workloads()
            .iter()
            .any(|w| w.rate.is_some())
            .then(Implementation::generator);
        let groups = side_by_side(config.workloads())
            .into_iter()
            .flat_map(|twins| {
                // TLS and the shapes change what a connection does, never the loads.
                let loads = config.loads_of(twins[0]);
                loads.into_iter().map(move |l| (twins.clone(), l))
            })
            .collect();
        Ok(Self {
            servers,
            client,
            generator,
            groups,
            repeat: config.repeat,
            precision: config.precision_percent,
            max_repeat: config.max_repeat.unwrap_or(config.repeat),
            budget: config.budget_seconds.map(Duration::from_secs_f64),
            pin: config.pin().parse().map_err(anyhow::Error::msg)?,
            noisy_percent: config.noisy_percent(),
            latency: config.latency.unwrap_or(true),
            cost_runs: config.cost_runs.unwrap_or(1),
        })
    }

    /// Every implementation with a program to prepare: the servers, the
    /// fixed client and the generator.
    pub fn implementations(&self) -> Vec<Implementation> {
        let mut all = self.servers.clone();
        for client in self.client.iter().chain(&self.generator) {
            if !all.contains(client) {
                all.push(client.clone());
            }
        }
        all
    }

    /// The client of `server`'s cells of `workload`: the generator in the
    /// open loop.
    pub fn client_of<'a>(
        &'a self,
        server: &'a Implementation,
        workload: &Workload,
    ) -> &'a Implementation {
        match (&self.generator, workload.rate) {
            (Some(generator), Some(_)) => generator,
            _ => self.client.as_ref().unwrap_or(server),
        }
    }

    /// How many repetitions the whole run has at least, and at most.
    pub fn runs(&self) -> (usize, usize) {
        let workloads: usize = self.groups.iter().map(|(w, _)| w.len()).sum();
        let cells = workloads * self.servers.len();
        (cells * self.repeat, cells * self.max_repeat)
    }

    /// How many workloads (block size, window, shape, ...) the run has.
    pub fn workloads(&self) -> usize {
        let mut workloads: Vec<Workload> =
            self.groups.iter().flat_map(|(w, _)| w.clone()).collect();
        workloads.sort();
        workloads.dedup();
        workloads.len()
    }
}

/// The workloads in their order, those that differ only in TLS or in the
/// server's shape together.
fn side_by_side(workloads: Vec<Workload>) -> Vec<Vec<Workload>> {
    let twin = |w: Workload| w.echo().plain();
    let mut groups: Vec<Vec<Workload>> = Vec::new();
    for w in workloads {
        match groups.iter_mut().find(|g| twin(g[0]) == twin(w)) {
            Some(group) => group.push(w),
            None => groups.push(vec![w]),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use pingpong::server::Shape;

    use super::*;
    use model::matrix::Tls;

    #[test]
    fn twins_in_tls_and_shape_run_side_by_side_and_other_blocks_apart() {
        let w = |block, tls, shape| Workload {
            block,
            window: 1,
            tls,
            shape,
            ..Workload::default()
        };
        let (plain, spawn) = (w(16384, None, Shape::Echo), w(16384, None, Shape::Spawn));
        let (small, tls) = (
            w(4096, None, Shape::Echo),
            w(16384, Some(Tls::Full), Shape::Echo),
        );
        assert_eq!(
            side_by_side(vec![plain, spawn, small, tls]),
            [vec![plain, spawn, tls], vec![small]]
        );
    }
}
