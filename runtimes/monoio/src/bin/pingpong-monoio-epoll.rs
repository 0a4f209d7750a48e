//! The same monoio code on its legacy epoll driver.

use pingpong::async_runtime::Async;
use pingpong_monoio::PerThread;

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<PerThread<monoio::LegacyDriver>>>()
}
