//! mx2d command line (minimal: `bench` only on the gpu branch).
use clap::Parser;

#[derive(Parser)]
enum Cli {
    /// CPU against GPU: fields, broadphase, both.
    Bench(mx2d::bench::BenchArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse() {
        Cli::Bench(args) => mx2d::bench::run(&args),
    }
}
