//! Records the commit the binary is built from, so `leasesim study` can
//! write it into results.json (a results file names the code that measured
//! it). `LEASESIM_BUILD_COMMIT` in the environment wins (builds outside a
//! git checkout); otherwise `git describe --always --dirty`; "unknown" if
//! neither is available. Never fails the build.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=LEASESIM_BUILD_COMMIT");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
    };
    // Re-run when HEAD moves or the index changes (commits, checkouts).
    for what in ["HEAD", "index"] {
        if let Some(path) = git(&["rev-parse", "--git-path", what]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let describe = std::env::var("LEASESIM_BUILD_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["describe", "--always", "--dirty"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LEASESIM_GIT_DESCRIBE={describe}");
}
