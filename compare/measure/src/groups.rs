//! The process groups of ours that are alive (a repetition's processes, a
//! build's cargo and its compilers), killed together when we are told to
//! stop (Ctrl-C, SIGTERM): nothing outlives compare.

use std::process;
use std::sync::{Mutex, OnceLock};

use anyhow::Result;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The groups alive now.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Who is told of a stop instead of the process ending: a run, which saves
/// what it measured.
type Listener = Box<dyn Fn() + Send>;
static LISTENER: Mutex<Option<Listener>> = Mutex::new(None);

/// Kills every group alive now.
pub fn kill_all() {
    for &group in LIVE.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}

/// On Ctrl-C or SIGTERM, from now on: every group killed, then the
/// [`listen`]er told, or, where none listens, the process ended (130, as a
/// shell says an interrupted command). Installed once per process.
pub fn stop_on_signals() -> Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        ctrlc::set_handler(|| {
            kill_all();
            match LISTENER.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                Some(listener) => listener(),
                None => process::exit(130),
            }
        })
        .map_err(|e| format!("installing the Ctrl-C and SIGTERM handler: {e}"))
    });
    installed.clone().map_err(anyhow::Error::msg)
}

/// A stop is told to `listener` from now on, instead of ending the process.
pub fn listen(listener: impl Fn() + Send + 'static) {
    *LISTENER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(listener));
}

/// A process group of ours (its leader's pid): killed with the others on a
/// stop while this lives, and forgotten when it is dropped.
pub struct Group(i32);

impl Group {
    /// The group `child` leads (spawned with `process_group(0)`).
    pub fn led_by(child: &process::Child) -> Self {
        let group = child.id() as i32;
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(group);
        Self(group)
    }

    pub fn id(&self) -> i32 {
        self.0
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&g| g != self.0);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_live_group_is_killed_whole_and_a_dropped_one_is_forgotten() {
        // A shell that starts a sleep of its own: both in its group.
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Group::led_by(&child);
        let id = group.id();
        kill_all();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(10), "not killed");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Its other member went with it: signalling the group finds none.
        let start = Instant::now();
        while killpg(Pid::from_raw(id), None).is_ok() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "a member lived on"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(group);
        assert!(!LIVE.lock().unwrap().contains(&id));
    }
}
