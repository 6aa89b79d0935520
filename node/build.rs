//! Compiles the vendored etcd protos (node/proto/) with protox, a protobuf
//! compiler written in Rust, so a clean machine needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/etcdserverpb/rpc.proto", "proto/v3lockpb/v3lock.proto"];
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_build::configure().build_client(true).build_server(true).compile_fds(descriptors)?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
