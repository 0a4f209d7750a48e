//! monoio on io_uring, owned-buffer IO, one runtime per thread.

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<pingpong_monoio::PerThread<monoio::IoUringDriver>>()
}
