use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(bbcheck::cli::main())
}
