fn main() -> std::process::ExitCode {
    pingpong::cli::main::<pingpong_mio::EventLoop>()
}
