//! The `leasesim` binary. It only works as a simulator: built without
//! `--cfg madsim` (an exported RUSTFLAGS replaces the project's
//! `.cargo/config.toml` flags) it refuses to run and says how to fix it.

#[cfg(madsim)]
fn main() {
    use clap::Parser;
    let cli = leasesim::cli::Cli::parse();
    std::process::exit(leasesim::cli::main_with(cli));
}

#[cfg(not(madsim))]
fn main() {
    eprintln!(
        "leasesim: this binary was built without `--cfg madsim`, so it would run on real time and real \
         sockets instead of the simulator.\n\
         This happens when RUSTFLAGS is exported: it replaces the `--cfg madsim` set in .cargo/config.toml.\n\
         Fix: `unset RUSTFLAGS` and rebuild, or keep your flags and add the cfg: \
         RUSTFLAGS=\"$RUSTFLAGS --cfg madsim\" cargo build --release"
    );
    std::process::exit(2);
}
