//! The `leasesim` binary. It only works as a simulator: built without
//! `--cfg madsim` (an exported RUSTFLAGS replaces the project's
//! `.cargo/config.toml` flags) it refuses to run and says how to fix it.

#[cfg(madsim)]
fn main() {
    use clap::Parser;
    // `leasesim sweep ... | head` closes the pipe early: die of SIGPIPE as
    // other Unix tools do instead of panicking in println!. The binary
    // writes to no socket, so no other write can be hit by this.
    // SAFETY: restoring a signal's default disposition at start-up, before
    // any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = match leasesim::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // A bad flag asked for JSON is answered in JSON (exit 2), like any
        // other bad input; help and version stay text.
        Err(e) if e.use_stderr() && std::env::args().any(|a| a == "--json") => {
            let message = e.render().to_string();
            let first = message.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
            println!(
                "{}",
                serde_json::json!({ "verdict": "error", "file": null, "line": null, "column": null, "message": first, "fix": message.trim() })
            );
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    };
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
