//! The `leasesim-node` binary: one member of a leasesim cluster, serving
//! etcd's v3 API (flags after etcd's own).

use clap::Parser;
use leasesim_node::config::ServeArgs;

#[derive(Parser)]
#[command(
    name = "leasesim-node",
    version,
    about = "leasesim's lease and lock service, for real (etcd v3 API)"
)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leasesim-node: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(leasesim_node::serve::serve(cli.serve)) {
        eprintln!("leasesim-node: {e}");
        std::process::exit(2);
    }
}
