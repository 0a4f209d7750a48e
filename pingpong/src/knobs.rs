//! Knobs: settings of a runtime's builder that a run may turn. Each
//! runtime's are declared here once, so that the binary refuses what its
//! runtime does not have and the orchestrator can list, check and name
//! them (`tokio{event_interval=1}`) without building anything.

use std::fmt;

/// One setting of a runtime's builder.
#[derive(Debug, PartialEq, Eq)]
pub struct Knob {
    pub name: &'static str,
    /// What it sets, in the runtime's own words (its builder call).
    pub sets: &'static str,
    pub values: Values,
    /// A compiler flag the runtime needs before it has this knob
    /// (`--cfg tokio_unstable`): such a configuration has a build of its own.
    pub cfg: Option<&'static str>,
}

/// The values a knob takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// A whole number in this range, both ends included.
    Range(u64, u64),
    /// `true` or `false`.
    Switch,
}

impl fmt::Display for Values {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Self::Range(low, high) => write!(f, "{low}..={high}"),
            Self::Switch => f.write_str("true|false"),
        }
    }
}

const fn knob(name: &'static str, sets: &'static str, values: Values) -> Knob {
    Knob {
        name,
        sets,
        values,
        cfg: None,
    }
}

const U32: u64 = u32::MAX as u64;

const EVENT_INTERVAL: Knob = knob(
    "event_interval",
    "Builder::event_interval: tasks run between polls of the IO driver (default 61)",
    Values::Range(1, U32),
);
const GLOBAL_QUEUE_INTERVAL: Knob = knob(
    "global_queue_interval",
    "Builder::global_queue_interval: tasks run between looks at the global queue (default: 31 current-thread, self-tuned multi-thread)",
    Values::Range(1, U32),
);
const MAX_IO_EVENTS_PER_TICK: Knob = knob(
    "max_io_events_per_tick",
    "Builder::max_io_events_per_tick: IO events taken per poll of the driver (default 1024)",
    Values::Range(1, 1 << 20),
);
const MAX_IO_EVENTS_PER_BUSY_TICK: Knob = knob(
    "max_io_events_per_busy_tick",
    "Builder::max_io_events_per_busy_tick: IO events taken per poll while tasks wait to run (default: max_io_events_per_tick)",
    Values::Range(1, 1 << 20),
);

const ACCEPT_UNCONSTRAINED: Knob = knob(
    "accept_unconstrained",
    "tokio::task::unconstrained around the server's accept loop: it accepts until the queue is empty instead of yielding after its budget of 128 (default false; not a builder setting)",
    Values::Switch,
);

/// tokio's multi-thread runtime.
pub const TOKIO: &[Knob] = &[
    EVENT_INTERVAL,
    GLOBAL_QUEUE_INTERVAL,
    MAX_IO_EVENTS_PER_TICK,
    MAX_IO_EVENTS_PER_BUSY_TICK,
    ACCEPT_UNCONSTRAINED,
    Knob {
        cfg: Some("tokio_unstable"),
        ..knob(
            "disable_lifo_slot",
            "Builder::disable_lifo_slot: a woken task goes to the back of the queue, not next (unstable: its own build with --cfg tokio_unstable)",
            Values::Switch,
        )
    },
];

/// tokio's current-thread runtime (it has no LIFO slot).
pub const TOKIO_LOCAL: &[Knob] = &[
    EVENT_INTERVAL,
    GLOBAL_QUEUE_INTERVAL,
    MAX_IO_EVENTS_PER_TICK,
    MAX_IO_EVENTS_PER_BUSY_TICK,
    ACCEPT_UNCONSTRAINED,
];

pub const GLOMMIO: &[Knob] = &[
    knob(
        "spin_before_park_us",
        "LocalExecutorBuilder::spin_before_park: microseconds an idle executor spins before it sleeps (default: none)",
        Values::Range(0, 1_000_000),
    ),
    knob(
        "ring_depth",
        "LocalExecutorBuilder::ring_depth: entries of each io_uring (default 128)",
        Values::Range(8, 32_768),
    ),
    knob(
        "accept_latency_us",
        "the server's accept loop in a task queue of its own, Latency::Matters(this many microseconds): the connections' queue is preempted for it at least that often (default: one queue for all; not a builder setting)",
        Values::Range(1, 1_000_000),
    ),
];

/// monoio on io_uring and on its epoll driver alike.
pub const MONOIO: &[Knob] = &[knob(
    "entries",
    "RuntimeBuilder::with_entries: io_uring entries, or the epoll driver's events per poll (default here 16384; monoio's 1024)",
    Values::Range(256, 32_768),
)];

pub const COMPIO: &[Knob] = &[knob(
    "capacity",
    "ProactorBuilder::capacity: io_uring entries (default here 16384; compio's 1024)",
    Values::Range(8, 32_768),
)];

pub const MAY: &[Knob] = &[
    knob(
        "stack_words",
        "Config::set_stack_size: each coroutine's stack, in 8-byte words (default here 16384 = 128 KiB; may's 4096)",
        Values::Range(1024, 1 << 20),
    ),
    knob(
        "accept_thread",
        "the server's accept loop on an OS thread of its own, blocking in the kernel's accept as muduo's acceptor does, not in a coroutine among the connections' (default false; not a Config setting)",
        Values::Switch,
    ),
];

pub const KIMOJIO: &[Knob] = &[knob(
    "busy_poll_us",
    "Configuration::set_busy_poll(BusyPoll::Until): microseconds the loop polls the ring without sleeping after its last completion (default: never)",
    Values::Range(1, 1_000_000),
)];

/// Knobs set, in the order their runtime declares them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings(Vec<(&'static Knob, u64)>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KnobError {
    #[error("{0:?} is not NAME=VALUE")]
    Syntax(String),
    #[error("this runtime has no knobs")]
    None,
    #[error("unknown knob {name:?}; this runtime has: {known}")]
    Unknown { name: String, known: String },
    #[error("{name}={value}: the value must be {values}")]
    Value {
        name: &'static str,
        value: String,
        values: Values,
    },
    #[error("{0} is set twice")]
    Twice(&'static str),
}

impl Settings {
    /// Parses `name=value,name=value` (empty: nothing set) against the
    /// knobs a runtime declares.
    pub fn parse(text: &str, declared: &'static [Knob]) -> Result<Self, KnobError> {
        let mut set: Vec<(&'static Knob, u64)> = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .map(|(n, v)| (n.trim(), v.trim()))
                .ok_or_else(|| KnobError::Syntax(pair.into()))?;
            if declared.is_empty() {
                return Err(KnobError::None);
            }
            let knob =
                declared
                    .iter()
                    .find(|k| k.name == name)
                    .ok_or_else(|| KnobError::Unknown {
                        name: name.into(),
                        known: declared
                            .iter()
                            .map(|k| format!("{} ({})", k.name, k.values))
                            .collect::<Vec<_>>()
                            .join(", "),
                    })?;
            let bad = || KnobError::Value {
                name: knob.name,
                value: value.into(),
                values: knob.values,
            };
            let parsed = match knob.values {
                Values::Switch => match value {
                    "true" => 1,
                    "false" => 0,
                    _ => return Err(bad()),
                },
                Values::Range(low, high) => value
                    .parse::<u64>()
                    .ok()
                    .filter(|v| (low..=high).contains(v))
                    .ok_or_else(bad)?,
            };
            if set.iter().any(|(k, _)| k.name == knob.name) {
                return Err(KnobError::Twice(knob.name));
            }
            set.push((knob, parsed));
        }
        set.sort_by_key(|(k, _)| declared.iter().position(|d| d.name == k.name));
        Ok(Self(set))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of knob `name`, if set (a switch: 1 or 0).
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(k, _)| k.name == name).map(|(_, v)| *v)
    }

    /// Each knob set and its value, as text.
    pub fn pairs(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        self.0.iter().map(|(k, v)| {
            let value = match k.values {
                Values::Switch => (*v == 1).to_string(),
                Values::Range(..) => v.to_string(),
            };
            (k.name, value)
        })
    }

    /// The compiler flags the set knobs need, each once.
    pub fn cfgs(&self) -> Vec<&'static str> {
        let mut cfgs: Vec<&'static str> = self.0.iter().filter_map(|(k, _)| k.cfg).collect();
        cfgs.dedup();
        cfgs
    }

    /// `name=value,name=value`, as [`Settings::parse`] reads it.
    pub fn to_arg(&self) -> String {
        self.pairs()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `{name=value,...}`, or nothing where no knob is set: what follows a
/// runtime's name to name its configuration.
impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.is_empty() {
            return Ok(());
        }
        write!(f, "{{{}}}", self.to_arg())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_take_declaration_order_and_name_themselves() {
        let s = Settings::parse("max_io_events_per_tick=8, event_interval=1", TOKIO).unwrap();
        assert_eq!(s.to_string(), "{event_interval=1,max_io_events_per_tick=8}");
        assert_eq!(s.get("max_io_events_per_tick"), Some(8));
        assert_eq!(s.get("global_queue_interval"), None);
        assert!(s.cfgs().is_empty());
        assert_eq!(Settings::parse(&s.to_arg(), TOKIO).unwrap(), s);
        assert_eq!(Settings::parse("", TOKIO).unwrap().to_string(), "");
    }

    #[test]
    fn switches_read_true_or_false_and_may_need_a_build_flag() {
        let s = Settings::parse("disable_lifo_slot=true", TOKIO).unwrap();
        assert_eq!(s.get("disable_lifo_slot"), Some(1));
        assert_eq!(s.cfgs(), ["tokio_unstable"]);
        assert_eq!(s.to_string(), "{disable_lifo_slot=true}");
        assert!(Settings::parse("disable_lifo_slot=1", TOKIO).is_err());
    }

    #[test]
    fn what_a_runtime_lacks_is_refused_with_what_it_has() {
        let e = Settings::parse("event_intervall=1", TOKIO).unwrap_err();
        assert!(
            e.to_string().contains("unknown knob \"event_intervall\""),
            "{e}"
        );
        assert!(
            e.to_string().contains("event_interval (1..=4294967295)"),
            "{e}"
        );
        let e = Settings::parse("disable_lifo_slot=true", TOKIO_LOCAL).unwrap_err();
        assert!(matches!(e, KnobError::Unknown { .. }), "{e}");
        for bad in ["event_interval=0", "event_interval=x", "event_interval=-1"] {
            let e = Settings::parse(bad, TOKIO).unwrap_err();
            assert!(
                e.to_string().contains("must be 1..=4294967295"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            Settings::parse("event_interval", TOKIO),
            Err(KnobError::Syntax("event_interval".into()))
        );
        assert_eq!(
            Settings::parse("event_interval=1,event_interval=2", TOKIO),
            Err(KnobError::Twice("event_interval"))
        );
        assert_eq!(Settings::parse("a=1", &[]), Err(KnobError::None));
    }
}
