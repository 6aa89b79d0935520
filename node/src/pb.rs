//! The etcd v3 protobuf types and gRPC service stubs, generated at build
//! time from the vendored protos in node/proto/ (see build.rs).

#![allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]

pub mod mvccpb {
    tonic::include_proto!("mvccpb");
}
pub mod authpb {
    tonic::include_proto!("authpb");
}
pub mod etcdserverpb {
    tonic::include_proto!("etcdserverpb");
}
pub mod v3lockpb {
    tonic::include_proto!("v3lockpb");
}
