//! Hosts for the tests that need more than one: network namespaces joined
//! by veth pairs, a delayed link where the kernel has no netem (tun devices
//! whose packets this process forwards after the delay), and sshd in a
//! namespace. Each is removed when dropped. Needs root.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use model::results::Results;

use crate::common::{self, assert_ok, compare_with, load, out_dir};

/// `ip ARGS`, its error with ip's own words.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A network namespace of this test process, its loopback up.
pub struct Namespace {
    pub name: String,
}

impl Namespace {
    /// `pp<pid><suffix>`: a test's own, whatever else runs beside it.
    pub fn new(suffix: &str) -> Result<Self, String> {
        let name = format!("pp{}{suffix}", std::process::id());
        ip(&["netns", "add", &name])?;
        let ns = Self { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// A veth pair to `other`: `dev` here at `addr`/24, `other_dev` there
    /// at `other_addr`/24.
    pub fn link(
        &self,
        dev: &str,
        addr: &str,
        other: &Namespace,
        other_dev: &str,
        other_addr: &str,
    ) -> Result<(), String> {
        ip(&[
            "link",
            "add",
            dev,
            "netns",
            &self.name,
            "type",
            "veth",
            "peer",
            "name",
            other_dev,
            "netns",
            &other.name,
        ])?;
        self.up(dev, addr)?;
        other.up(other_dev, other_addr)
    }

    /// Device `dev` here at `addr`/24, up.
    fn up(&self, dev: &str, addr: &str) -> Result<(), String> {
        let addr = format!("{addr}/24");
        ip(&["-n", &self.name, "addr", "add", &addr, "dev", dev])?;
        ip(&["-n", &self.name, "link", "set", dev, "up"])
    }

    /// `command ARGS` inside the namespace, to its end; its error with its words.
    pub fn run(&self, command: &[&str]) -> Result<(), String> {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(command)
            .output()
            .map_err(|e| format!("{}: {e}", command[0]))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}: {}",
                command.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A link between two namespaces over tun devices, whose packets this
/// process forwards after `delay`: netem's job, in user space.
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl DelayLine {
    /// A tun device in `a` at `a_addr`/24 and one in `b` at `b_addr`/24.
    pub fn new(
        a: &Namespace,
        a_addr: &str,
        b: &Namespace,
        b_addr: &str,
        delay: Duration,
    ) -> Result<Self, String> {
        let names = Self::devices();
        let ends = [Arc::new(tun(&names[0])?), Arc::new(tun(&names[1])?)];
        for (ns, dev, addr) in [(a, &names[0], a_addr), (b, &names[1], b_addr)] {
            ip(&["link", "set", dev, "netns", &ns.name])?;
            ns.up(dev, addr)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let [from_a, from_b] = ends;
        for (from, to) in [(from_a.clone(), from_b.clone()), (from_b, from_a)] {
            let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
            let stop_reading = stop.clone();
            threads.push(thread::spawn(move || {
                forward_reads(&from, &tx, delay, &stop_reading)
            }));
            threads.push(thread::spawn(move || {
                for (due, packet) in rx {
                    thread::sleep(due.saturating_duration_since(Instant::now()));
                    // SAFETY: writes one whole packet from a live buffer to an open tun fd.
                    unsafe { libc::write(to.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
                }
            }));
        }
        Ok(Self { stop, threads })
    }

    /// The device names of its ends in `a` and in `b`, made here before
    /// they move: named for this process alone.
    pub fn devices() -> [String; 2] {
        ["a", "b"].map(|end| format!("pt{}{end}", std::process::id()))
    }
}

/// Reads packets until stopped, each sent on with the time it is due.
fn forward_reads(
    from: &OwnedFd,
    tx: &mpsc::Sender<(Instant, Vec<u8>)>,
    delay: Duration,
    stop: &AtomicBool,
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let mut poll = libc::pollfd {
            fd: from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, alive for the call.
        if unsafe { libc::poll(&mut poll, 1, 100) } <= 0 {
            continue;
        }
        // SAFETY: reads into a buffer of the length given.
        let n = unsafe { libc::read(from.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0
            && tx
                .send((Instant::now() + delay, buf[..n as usize].to_vec()))
                .is_err()
        {
            return;
        }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A tun device (IP packets, no header), open in this process.
fn tun(name: &str) -> Result<OwnedFd, String> {
    // SAFETY: opens a device file; the fd is owned at once.
    let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR) };
    if fd < 0 {
        return Err(format!("/dev/net/tun: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd was just opened and is owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut ifr = [0u8; 40];
    ifr[..name.len()].copy_from_slice(name.as_bytes());
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as u16;
    ifr[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which the 40 bytes hold.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, ifr.as_mut_ptr()) } < 0 {
        return Err(format!(
            "TUNSETIFF {name}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(fd)
}

/// The keys and ssh client configuration every sshd of a test shares, in
/// the test's folder `dir`.
pub struct Keys {
    dir: PathBuf,
    /// For `ssh -F`: the client key, no host key checks.
    pub client_config: PathBuf,
}

impl Keys {
    pub fn new(dir: &str) -> Result<Self, String> {
        let dir = out_dir(dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        for key in ["host_key", "client_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .output()
                .map_err(|e| format!("ssh-keygen: {e}"))?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into());
            }
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let client_config = dir.join("ssh_config");
        std::fs::write(
            &client_config,
            format!(
                "Host *\n  IdentityFile {}/client_key\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  ConnectTimeout 5\n",
                dir.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        Ok(Self { dir, client_config })
    }
}

/// sshd in a namespace, listening at one address; stopped when dropped.
pub struct Sshd {
    pub child: Child,
}

impl Sshd {
    /// sshd in `ns` at `listen` with `keys`, `extra` lines appended to its
    /// configuration; up once a login from `from` works, within 10 s.
    pub fn start(
        keys: &Keys,
        ns: &Namespace,
        listen: &str,
        from: &Namespace,
        extra: &str,
    ) -> Result<Self, String> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.is_file() {
            return Err(
                "no /usr/sbin/sshd (Debian's openssh-server; scripts/test.sh installs it)".into(),
            );
        }
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        let d = keys.dir.display();
        let server_config = keys.dir.join(format!("sshd_config-{listen}"));
        std::fs::write(
            &server_config,
            format!(
                "ListenAddress {listen}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n{extra}"
            ),
        )
        .map_err(|e| e.to_string())?;
        let child = Command::new("ip")
            .args(["netns", "exec", &ns.name])
            .arg(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&server_config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting sshd: {e}"))?;
        let sshd = Self { child };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = Command::new("ip")
                .args(["netns", "exec", &from.name, "ssh", "-F"])
                .arg(&keys.client_config)
                .args([&format!("root@{listen}"), "true"])
                .output()
                .map_err(|e| format!("ssh: {e}"))?;
            if ok.status.success() {
                return Ok(sshd);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "sshd at {listen} did not let us in: {}",
                    String::from_utf8_lossy(&ok.stderr).trim()
                ));
            }
            thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `compare run ARGS` in namespace `ns` (or here), 0.5 s windows: its
/// output, and the folder of its results.
pub fn compare_run(
    ns: Option<&Namespace>,
    test: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, PathBuf) {
    let out = out_dir(test);
    let compare = env!("CARGO_BIN_EXE_compare");
    let mut all: Vec<&str> = match ns {
        Some(ns) => vec!["netns", "exec", &ns.name, compare],
        None => vec![compare],
    };
    all.extend(["run", "--out", out.to_str().unwrap(), "--quiet"]);
    all.extend(args);
    all.extend(["--seconds", "0.5", "--warmup", "0.1", "--repeat", "1"]);
    let output = match ns {
        Some(_) => Command::new("ip")
            .args(&all)
            .env(model::defaults::PROFILE_ENV, common::PROFILE)
            .envs(env.iter().copied())
            .output()
            .unwrap(),
        None => compare_with(&all[1..], env),
    };
    (output, out)
}

/// [`compare_run`], which must succeed: its results.
pub fn compare_in(
    ns: Option<&Namespace>,
    test: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Results {
    let (output, out) = compare_run(ns, test, args, env);
    assert_ok(&output, args);
    load(&out)
}
