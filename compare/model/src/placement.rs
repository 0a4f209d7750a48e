//! Which CPUs the server and the client run on.

use std::fmt;
use std::str::FromStr;

use anyhow::{Context, Result, bail, ensure};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The CPUs each side of a cell was confined to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Placement {
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    /// A side has more threads than CPUs (or both sides share CPUs).
    pub oversubscribed: bool,
}

/// The CPUs this process may run on.
pub fn available_cpus() -> Result<Vec<usize>> {
    pingpong::affinity::of(0).context("reading the CPU affinity")
}

/// `--pin`: how server and client are placed on CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pin {
    /// Disjoint sets, as many CPUs per side as threads where there are enough.
    Auto,
    /// These CPUs for the client (`--client-cpus`, or `auto/CLIENT_CPUS`);
    /// the server's from the others, as many as its threads.
    Client(Vec<usize>),
    /// No pinning: both processes may run on every available CPU.
    None,
    /// These CPUs for the server, these for the client.
    Fixed {
        server: Vec<usize>,
        client: Vec<usize>,
    },
}

impl FromStr for Pin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "none" => Ok(Self::None),
            _ => {
                let (server, client) = s.split_once('/').ok_or_else(|| {
                    format!(
                        "{s:?} is not auto, none, SERVER_CPUS/CLIENT_CPUS (e.g. 0-3/4-7) or \
                         auto/CLIENT_CPUS"
                    )
                })?;
                match server {
                    "auto" => Ok(Self::Client(cpu_list(client)?)),
                    _ => Ok(Self::Fixed {
                        server: cpu_list(server)?,
                        client: cpu_list(client)?,
                    }),
                }
            }
        }
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |cpus: &[usize]| {
            cpus.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Self::Auto => write!(f, "auto"),
            Self::None => write!(f, "none"),
            Self::Client(client) => write!(f, "auto/{}", list(client)),
            Self::Fixed { server, client } => write!(f, "{}/{}", list(server), list(client)),
        }
    }
}

/// A CPU list as the kernel writes them: `0-3,6`.
pub fn cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let number = |n: &str| {
            n.trim()
                .parse::<usize>()
                .map_err(|_| format!("{n:?} in CPU list {s:?} is not a CPU number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("CPU range {part:?} runs backwards"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

impl Pin {
    /// Fails when fixed CPUs are not all available to this process, or
    /// the client's leave the server none.
    pub fn check(&self, available: &[usize]) -> Result<()> {
        let (server, client): (&[usize], &[usize]) = match self {
            Self::Auto | Self::None => return Ok(()),
            Self::Fixed { server, client } => (server, client),
            Self::Client(client) => (&[], client),
        };
        for cpu in server.iter().chain(client) {
            ensure!(
                available.contains(cpu),
                "--pin names CPU {cpu}, but this process may only use CPUs {available:?}"
            );
        }
        match self {
            Self::Client(client) if client.is_empty() || client.len() >= available.len() => bail!(
                "--client-cpus {} leaves the server none of the CPUs {available:?}",
                self.to_string().trim_start_matches("auto/")
            ),
            Self::Fixed { server, client } if server.is_empty() || client.is_empty() => {
                bail!("--pin needs at least one CPU on each side")
            }
            _ => Ok(()),
        }
    }

    /// Where a load runs: `server` threads on the server, `client` on the client.
    pub fn place(&self, cpus: &[usize], server: usize, client: usize) -> Placement {
        match self {
            Self::Auto => place(cpus, server, client),
            Self::Client(client_cpus) => {
                let others: Vec<usize> = cpus
                    .iter()
                    .copied()
                    .filter(|c| !client_cpus.contains(c))
                    .collect();
                let server_cpus = others[..server.min(others.len())].to_vec();
                Placement {
                    oversubscribed: server > server_cpus.len() || client > client_cpus.len(),
                    server_cpus,
                    client_cpus: client_cpus.clone(),
                }
            }
            Self::None => Placement {
                server_cpus: cpus.to_vec(),
                client_cpus: cpus.to_vec(),
                oversubscribed: server + client > cpus.len(),
            },
            Self::Fixed {
                server: server_cpus,
                client: client_cpus,
            } => Placement {
                server_cpus: server_cpus.clone(),
                client_cpus: client_cpus.clone(),
                oversubscribed: server > server_cpus.len()
                    || client > client_cpus.len()
                    || server_cpus.iter().any(|c| client_cpus.contains(c)),
            },
        }
    }

    /// Where the client of a load runs when the server runs on another host:
    /// the CPUs are all the client's, and no server CPUs are recorded.
    pub fn place_client(&self, cpus: &[usize], threads: usize) -> Placement {
        let client_cpus = match self {
            Self::Auto => cpus[..threads.min(cpus.len())].to_vec(),
            Self::None => cpus.to_vec(),
            Self::Fixed { client, .. } | Self::Client(client) => client.clone(),
        };
        Placement {
            server_cpus: Vec::new(),
            oversubscribed: threads > client_cpus.len(),
            client_cpus,
        }
    }
}

/// Disjoint CPU sets for server and client, a CPU per thread when there
/// are enough CPUs, else the CPUs shared in proportion to the threads (at
/// least one each); one CPU is shared by both.
fn place(cpus: &[usize], server: usize, client: usize) -> Placement {
    let n = cpus.len();
    if n < 2 {
        return Placement {
            server_cpus: cpus.to_vec(),
            client_cpus: cpus.to_vec(),
            oversubscribed: true,
        };
    }
    let (s, c) = match server + client <= n {
        true => (server, client),
        false => {
            let share = |threads: usize| (n * threads / (server + client)).clamp(1, threads);
            (share(server), share(client))
        }
    };
    Placement {
        server_cpus: cpus[..s].to_vec(),
        client_cpus: cpus[s..s + c].to_vec(),
        oversubscribed: server > s || client > c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_alone_gets_the_cpus_its_threads_need() {
        let p = Pin::Auto.place_client(&[0, 1], 1);
        assert_eq!((p.client_cpus, p.server_cpus), (vec![0], vec![]));
        let p = Pin::Auto.place_client(&[0, 1], 2);
        assert_eq!((p.client_cpus, p.oversubscribed), (vec![0, 1], false));
        assert!(Pin::Auto.place_client(&[0, 1], 3).oversubscribed);
    }

    #[test]
    fn two_cpus_put_one_thread_on_each() {
        let p = place(&[0, 1], 1, 1);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0], vec![1], false)
        );
    }

    #[test]
    fn more_threads_than_cpus_is_oversubscribed_but_disjoint() {
        let p = place(&[0, 1], 4, 4);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0], vec![1], true)
        );
    }

    #[test]
    fn sixteen_cpus_fit_four_threads_a_side() {
        let cpus: Vec<_> = (0..16).collect();
        let p = place(&cpus, 4, 4);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0, 1, 2, 3], vec![4, 5, 6, 7], false)
        );
    }

    #[test]
    fn one_cpu_is_shared() {
        assert!(place(&[3], 1, 1).oversubscribed);
    }

    #[test]
    fn pin_parses_and_prints_cpu_lists() {
        let pin: Pin = "0-2,5/6,7".parse().unwrap();
        assert_eq!(
            pin,
            Pin::Fixed {
                server: vec![0, 1, 2, 5],
                client: vec![6, 7]
            }
        );
        assert_eq!(pin.to_string(), "0,1,2,5/6,7");
        assert_eq!("auto".parse(), Ok(Pin::Auto));
        assert_eq!("none".parse(), Ok(Pin::None));
        for bad in ["", "0-3", "a/1", "3-1/0", "0/"] {
            assert!(bad.parse::<Pin>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fixed_pins_are_checked_and_marked() {
        let pin: Pin = "0/0".parse().unwrap();
        assert!(pin.check(&[0, 1]).is_ok());
        assert!(pin.place(&[0, 1], 1, 1).oversubscribed, "shared CPU");
        assert!("0/2".parse::<Pin>().unwrap().check(&[0, 1]).is_err());
        let none = Pin::None.place(&[0, 1, 2, 3], 2, 2);
        assert_eq!((none.server_cpus.len(), none.oversubscribed), (4, false));
        assert!(Pin::None.place(&[0, 1], 2, 2).oversubscribed);
        assert!(Pin::None.place(&[0, 1, 2, 3], 1, 4).oversubscribed);
    }

    #[test]
    fn a_client_of_other_threads_gets_its_own_share() {
        let cpus: Vec<_> = (0..16).collect();
        let p = place(&cpus, 4, 8);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            ((0..4).collect(), (4..12).collect(), false)
        );
        // Too few CPUs: shared in proportion, at least one each.
        let p = place(&[0, 1], 1, 2);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0], vec![1], true)
        );
        let p = place(&(0..6).collect::<Vec<_>>(), 2, 4);
        assert_eq!(
            (p.server_cpus, p.client_cpus),
            (vec![0, 1], vec![2, 3, 4, 5])
        );
        let p = place(&(0..4).collect::<Vec<_>>(), 1, 8);
        assert_eq!((p.server_cpus, p.client_cpus.len()), (vec![0], 3));
    }

    #[test]
    fn client_cpus_leave_the_server_the_others() {
        let pin: Pin = "auto/4-7".parse().unwrap();
        assert_eq!(pin, Pin::Client(vec![4, 5, 6, 7]));
        assert_eq!(pin.to_string().parse::<Pin>().unwrap(), pin);
        let cpus: Vec<_> = (0..8).collect();
        assert!(pin.check(&cpus).is_ok());
        let p = pin.place(&cpus, 2, 4);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0, 1], vec![4, 5, 6, 7], false)
        );
        assert!(pin.place(&cpus, 2, 8).oversubscribed);
        assert!(pin.place(&cpus, 5, 4).oversubscribed);
        let e = "auto/0-7".parse::<Pin>().unwrap().check(&cpus).unwrap_err();
        assert!(e.to_string().contains("leaves the server none"), "{e}");
        assert!("auto/9".parse::<Pin>().unwrap().check(&cpus).is_err());
    }
}
