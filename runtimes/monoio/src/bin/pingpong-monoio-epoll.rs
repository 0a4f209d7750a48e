//! The same monoio code on its legacy epoll driver.

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<pingpong_monoio::PerThread<monoio::LegacyDriver>>()
}
